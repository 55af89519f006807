//! Shutdown signals: the first Ctrl-C or SIGTERM asks the proxy to stop gracefully; a second
//! Ctrl-C exits the process at once. Only the CLI installs these; the library takes any future.

/// Completes on the first Ctrl-C (SIGINT) or SIGTERM, and arms a second Ctrl-C to exit the
/// process immediately with status 130.
pub async fn first_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("stopping (press Ctrl-C again to exit at once)");
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(130);
        }
    });
}
