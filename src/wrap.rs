//! `amqpeek wrap`: the proxy on a free local port around one command. The command learns the
//! address from its environment, runs with the terminal's stdio, and gets SIGINT and SIGTERM
//! forwarded; when it exits, its connections get [`CLOSE_GRACE`] to close, the proxy stops as
//! on Ctrl-C, and the verdict is printed on stderr as `proxy --fail-on` prints it.

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::net::SocketAddr;
use std::process::{ExitCode, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use amqpeek::proxy::{BoxSink, Proxy, RunSummary};
use amqpeek::sinks::TraceSink;
use amqpeek::verdict::SharedReport;

use crate::cli::{WrapArgs, is_stdio};
use crate::run_bundle::RunCapture;
use crate::{EXIT_BAD_INPUT, gate};

/// How long the command's connections may go on relaying after it exited (a client's last
/// close handshake, a child process it left behind) before the proxy closes them.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Run `amqpeek wrap`: the status is the command's when it failed, else the verdict's.
pub fn run(args: WrapArgs) -> anyhow::Result<ExitCode> {
    crate::raise_open_files_limit();
    let WrapArgs {
        net,
        output,
        fail_on,
        policy,
        tls,
        jobs,
        bundle,
        metrics,
        command,
    } = args;
    for (flag, path) in [("--jsonl", &output.jsonl), ("--pcap", &output.pcap)] {
        if path.as_deref().is_some_and(is_stdio) {
            bail!("{flag} -: the command's output goes to stdout; give {flag} a file");
        }
    }
    let rt = crate::runtime()?;
    // Checked before listening: a bad config never runs the command.
    let policy = gate::policy(&policy, Some(fail_on))?;
    crate::check_outputs(None, &output, &tls.outputs())?;
    let mut config = crate::proxy_config(&rt, &net, &output, &tls, jobs, false)?;
    config.inspect.diagnosis = Some(Arc::new(policy.thresholds.clone()));
    config.inspect.diagnoses = policy.diagnoses;
    config.close_grace = CLOSE_GRACE;
    let upstream = config.upstream;
    let mut sinks = crate::file_sinks(&output)?;
    let run_capture = RunCapture::new(bundle.as_deref(), &output, &mut sinks)?;
    crate::metrics_endpoint(&rt, &metrics, &mut config, &mut sinks)?;
    if output.trace() {
        sinks.push(crate::filtered(
            &output,
            TraceSink::new(BufWriter::new(io::stdout())),
        ));
    }
    let report = SharedReport::default();
    sinks.push(Box::new(report.clone()));

    let proxy = rt
        .block_on(Proxy::bind(config))
        .with_context(|| format!("listening on {}", net.listen))?;
    let local = proxy.local_addr()?;
    // Caught from here on: a signal as soon as the proxy says it listens reaches the command.
    let signals = {
        let _runtime = rt.enter();
        Signals::new()?
    };
    tracing::info!("listening on {local}, relaying to {upstream}");
    let (status, summary) = rt.block_on(supervise(proxy, sinks, signals, local, &command))?;
    tracing::info!("stopped after {} connection(s)", summary.connections);
    let bundled = match (&bundle, run_capture) {
        (Some(path), Some(capture)) => {
            capture.bundle(path, &crate::run_bundle::options(&output, policy.clone()))
        }
        _ => true,
    };

    let verdict = {
        let report = report.0.lock().unwrap_or_else(|p| p.into_inner());
        gate::conclude(&report, &policy, true)
    };
    if let Some(code) = failed(status) {
        say!("{}: {}", shown(&command), describe(status));
        return Ok(ExitCode::from(code));
    }
    // A capture that is incomplete is a failure of the run, whatever the verdict (each was
    // named on stderr when it failed).
    if !summary.sink_failures.is_empty() || !bundled {
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    Ok(verdict)
}

/// Start the command with the proxy's address in its environment, relay until it exits
/// (forwarding SIGINT and SIGTERM to it), then stop the proxy.
async fn supervise(
    proxy: Proxy,
    sinks: Vec<BoxSink>,
    mut signals: Signals,
    local: SocketAddr,
    command: &[OsString],
) -> anyhow::Result<(ExitStatus, RunSummary)> {
    let (program, rest) = command.split_first().context("no command to run")?;
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .env("AMQP_URL", format!("amqp://{local}"))
        .env("AMQPEEK_LISTEN", local.to_string())
        .env("AMQPEEK_PORT", local.port().to_string())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", shown(command)))?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let relay = proxy.run(sinks, async {
        let _ = done_rx.await;
    });
    let waited = async {
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                sig = signals.recv() => forward(&mut child, sig),
            }
        };
        let _ = done_tx.send(());
        status
    };
    let (summary, status) = tokio::join!(relay, waited);
    let status = status.with_context(|| format!("waiting for {}", shown(command)))?;
    Ok((status, summary?))
}

/// SIGINT and SIGTERM, caught while the command runs (so they reach it, not end amqpeek).
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                int: signal(SignalKind::interrupt()).context("catching SIGINT")?,
                term: signal(SignalKind::terminate()).context("catching SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal's number.
    async fn recv(&mut self) -> i32 {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => 2,
                _ = self.term.recv() => 15,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            2
        }
    }
}

/// Send signal `sig` to the command (where signals cannot be sent, end it).
fn forward(child: &mut tokio::process::Child, sig: i32) {
    tracing::info!("signal {sig}: passing it to the command");
    #[cfg(target_os = "linux")]
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) takes plain integers; the pid is the command's, not yet reaped
        // (`wait` has not returned).
        unsafe { libc::kill(pid as libc::pid_t, sig) };
        return;
    }
    let _ = child.start_kill();
}

/// The status to exit with when the command failed: its own code, 128 + the signal that ended
/// it, or 2 when neither is known; `None` when it succeeded.
fn failed(status: ExitStatus) -> Option<u8> {
    if status.success() {
        return None;
    }
    if let Some(code) = status.code() {
        // Exit codes above 255 exist only on Windows; any failing one stays non-zero here.
        return Some(u8::try_from(code).ok().filter(|c| *c != 0).unwrap_or(1));
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Some(u8::try_from(128 + sig).unwrap_or(EXIT_BAD_INPUT));
    }
    Some(EXIT_BAD_INPUT)
}

/// How the command ended, for stderr.
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("ended by signal {sig}");
    }
    format!("{status}")
}

/// The command line, as given, for messages.
fn shown(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
