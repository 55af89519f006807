//! Shutdown signals: the first Ctrl-C or SIGTERM asks the proxy to stop gracefully; a second
//! Ctrl-C exits the process at once. Only the CLI installs these; the library takes any future.

/// Completes on the first Ctrl-C (SIGINT) or SIGTERM, and arms a second Ctrl-C to exit the
/// process immediately with status 130. The signals are caught from the call on, not from the
/// future's first poll: a Ctrl-C right after start-up stops the proxy gracefully (its captures
/// flushed) instead of killing it.
pub fn first_signal() -> impl std::future::Future<Output = ()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let early = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&early));
    }
    async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            // Listen first, then look at the flag: a signal is seen by one or the other.
            match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(mut int), Ok(mut term)) => {
                    if !early.load(Ordering::SeqCst) {
                        tokio::select! {
                            _ = int.recv() => {}
                            _ = term.recv() => {}
                        }
                    }
                }
                _ => {
                    if !early.load(Ordering::SeqCst) {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = early;
            let _ = tokio::signal::ctrl_c().await;
        }
        stopping();
    }
}

/// The first signal came: say so, and let a second Ctrl-C exit at once.
fn stopping() {
    tracing::info!("stopping (press Ctrl-C again to exit at once)");
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(130);
        }
    });
}
