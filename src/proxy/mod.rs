//! The proxy: a transparent TCP relay between AMQP clients and their broker that inspects every
//! byte beside the forwarding path.
//!
//! ```text
//! client ⇄ relay (one task per connection, bytes forwarded as read) ⇄ upstream
//!             │ the same `Bytes`, no copy, a queue bounded per connection
//!             ▼
//!          the driver, live (`driver::live`): inspection workers -> sink writer
//! ```
//!
//! With TLS configured (see [`tls`]), either leg may be TLS and the inspector gets the
//! plaintext; AMQP's own TLS upgrade (`AMQP 2 1 0 0`) is terminated on both legs when there is
//! certificate material for the client side.
//!
//! The relay is sacred: it forwards bytes exactly as they came, immediately, propagating
//! half-close and reset; it never waits on decoding except through its own connection's queue budget
//! (back-pressure, so captures are lossless) and never lets one connection hold up another.

pub mod limits;
pub mod probe;
mod relay;
pub mod shutdown;
pub mod tls;
mod upgrade;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::driver::live::Live;
use crate::event::ConnId;
use crate::pipeline::InspectOptions;

pub use crate::driver::live::BoxSink;

/// How the proxy runs.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Address to listen on (loopback by default).
    pub listen: SocketAddr,
    /// The broker.
    pub upstream: SocketAddr,
    /// How long to wait for the broker to accept a connection.
    pub connect_timeout: Duration,
    /// What the inspector emits.
    pub inspect: InspectOptions,
    /// Size of each read (and so the largest chunk) in bytes.
    pub read_buffer: usize,
    /// How many messages queued at one inspection worker count as it falling behind (an
    /// eighth of this), for the live view's skimming.
    pub queue_chunks: usize,
    /// Inspection worker threads, each connection inspected on one of them (dealt in turn as
    /// connections open); one per CPU by default.
    pub jobs: std::num::NonZeroUsize,
    /// Bytes one connection may have queued for inspection before its relay waits (only that
    /// connection's: back-pressure never falls on the others); [`DEFAULT_CONN_QUEUE_BYTES`].
    pub conn_queue_bytes: usize,
    /// On shutdown, how long open connections get to finish before they are cut.
    pub drain_timeout: Duration,
    /// On shutdown, how long open connections may go on relaying before they are told to stop
    /// (zero: told at once). `wrap` gives its command's connections this long to close on
    /// their own, so their last frames are relayed and judged.
    pub close_grace: Duration,
    /// TLS on either leg (`None`: plain TCP both ways).
    pub tls: Option<Arc<tls::TlsConfig>>,
    /// Connections relayed at once; at the limit the listener stops accepting (clients wait
    /// in the kernel's backlog) until one closes.
    pub max_connections: usize,
    /// The handshake and idle deadlines of every connection.
    pub deadlines: limits::Deadlines,
    /// Where the relay tells whether it accepts, how its latest upstream connect went and how
    /// long it waited on the inspection (read by `--metrics`).
    pub probe: Arc<probe::RelayProbe>,
}

/// The bytes of relayed chunks one connection may have waiting for its inspection and
/// outputs: 4 MiB. A worker that finds its queue empty looks again a millisecond later, and a
/// relay moving a gigabyte a second fills a megabyte in that millisecond: with a budget of one
/// MiB, messages of a megabyte were relayed at the pace of those polls (`docs/benchmarks.md`,
/// "The binary, build against build"). The same as the default inspection budget
/// (`--inspect-memory`), which bounds what the connection's decoding holds beside it.
pub const DEFAULT_CONN_QUEUE_BYTES: usize = 4 << 20;

impl ProxyConfig {
    /// Defaults for everything but the addresses.
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> Self {
        ProxyConfig {
            listen,
            upstream,
            connect_timeout: Duration::from_secs(5),
            inspect: InspectOptions::default(),
            read_buffer: 64 * 1024,
            queue_chunks: 256,
            jobs: crate::replay::parallel::default_jobs(),
            conn_queue_bytes: DEFAULT_CONN_QUEUE_BYTES,
            drain_timeout: Duration::from_secs(2),
            close_grace: Duration::ZERO,
            tls: None,
            max_connections: usize::MAX,
            deadlines: limits::Deadlines {
                handshake: Some(Duration::from_secs(30)),
                idle: None,
            },
            probe: Arc::default(),
        }
    }
}

/// The warning to print when the proxy listens beyond this machine without TLS on both legs:
/// whoever can reach the listener, or sniff either leg, can read the credentials that clients
/// and brokers exchange in plaintext (SASL PLAIN, `connection.start-ok`).
pub fn exposure_warning(config: &ProxyConfig) -> Option<String> {
    if config.listen.ip().is_loopback() {
        return None;
    }
    let both_tls = config
        .tls
        .as_ref()
        .is_some_and(|t| t.upstream_tls && t.listen_tls && t.server.is_some());
    (!both_tls).then(|| {
        format!(
            "listening on {} beyond this machine: credentials pass through in plaintext unless TLS is on both legs (--listen-tls and --upstream-tls)",
            config.listen
        )
    })
}

/// Whether connecting to `upstream` would reach the proxy's own listener at `bound`: the same
/// address, or the same port on a loopback or unspecified address while the listener takes
/// every address.
fn loops_back(bound: SocketAddr, upstream: SocketAddr) -> bool {
    if bound.port() != upstream.port() {
        return false;
    }
    let up = upstream.ip();
    bound.ip() == up || (bound.ip().is_unspecified() && (up.is_loopback() || up.is_unspecified()))
}

/// What a finished run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Connections accepted.
    pub connections: u64,
    /// Captures that could not be written, each with its error (naming it): the relay went
    /// on without them.
    pub sink_failures: Vec<String>,
}

/// A bound, not yet running proxy (bind first so callers learn the address, e.g. port 0).
#[derive(Debug)]
pub struct Proxy {
    listener: TcpListener,
    config: ProxyConfig,
}

impl Proxy {
    /// Bind the listening socket.
    pub async fn bind(config: ProxyConfig) -> io::Result<Proxy> {
        let listener = TcpListener::bind(config.listen).await?;
        let bound = listener.local_addr()?;
        if loops_back(bound, config.upstream) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the upstream {} is this proxy's own listening address {bound}: every connection would be relayed back into the proxy",
                    config.upstream
                ),
            ));
        }
        // Bound: clients are taken (into the backlog until `run` accepts them).
        config.probe.set_listening(true);
        Ok(Proxy { listener, config })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Relay connections until `shutdown` completes; then stop accepting, let open connections
    /// relay for `close_grace`, close the ones still open (after `drain_timeout` at most), let the inspection side drain and flush
    /// every sink. With no sinks, nothing is inspected.
    pub async fn run(
        self,
        sinks: Vec<BoxSink>,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<RunSummary> {
        let Proxy { listener, config } = self;
        let config = Arc::new(config);
        let live = (!sinks.is_empty()).then(|| {
            Live::start(
                sinks,
                config.inspect.clone(),
                config.jobs,
                config.queue_chunks,
            )
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        // Idle again after a burst: the memory the burst took goes back (see `reclaim`).
        let sweeper = tokio::spawn(crate::driver::reclaim::sweeper());
        let _sweeper = AbortOnDrop(sweeper);
        let mut tasks = JoinSet::new();
        let mut next: ConnId = 1;
        let mut shutdown = std::pin::pin!(shutdown);
        let max = config.max_connections.max(1);
        let mut at_limit = false;
        loop {
            if tasks.len() >= max && !at_limit {
                tracing::warn!(
                    "{max} connection(s) open (--max-connections): not accepting until one closes"
                );
            } else if at_limit && tasks.len() < max {
                tracing::debug!("below --max-connections again: accepting");
            }
            at_limit = tasks.len() >= max;
            tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                accepted = listener.accept(), if tasks.len() < max => match accepted {
                    Ok((client, addr)) => {
                        let conn = next;
                        next += 1;
                        tasks.spawn(relay::connection(
                            conn,
                            client,
                            addr,
                            config.clone(),
                            live.as_ref().map(|l| l.queue(conn)),
                            stop_rx.clone(),
                        ));
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: keep serving the others.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        drop(listener);
        config.probe.set_listening(false);
        if !tasks.is_empty() && !config.close_grace.is_zero() {
            let _ = tokio::time::timeout(config.close_grace, async {
                while tasks.join_next().await.is_some() {}
            })
            .await;
        }
        tracing::info!("shutting down: {} connection(s) open", tasks.len());
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(config.drain_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("{} connection(s) did not finish; cutting them", tasks.len());
            tasks.shutdown().await;
        }
        let sink_failures = match live {
            Some(live) => live.finish().await?,
            None => Vec::new(),
        };
        Ok(RunSummary {
            connections: next - 1,
            sink_failures,
        })
    }
}

/// Aborts a task when dropped (the proxy's background tasks end with it).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_beyond_loopback_in_plaintext_is_warned_about() {
        let upstream = "127.0.0.1:5672".parse().unwrap();
        let local = ProxyConfig::new("127.0.0.1:5673".parse().unwrap(), upstream);
        assert_eq!(exposure_warning(&local), None);
        let v6_local = ProxyConfig::new("[::1]:5673".parse().unwrap(), upstream);
        assert_eq!(exposure_warning(&v6_local), None);
        let open = ProxyConfig::new("0.0.0.0:5673".parse().unwrap(), upstream);
        let warning = exposure_warning(&open).expect("a warning");
        assert!(warning.contains("0.0.0.0:5673"), "{warning}");
        assert!(warning.contains("plaintext"), "{warning}");
    }

    #[test]
    fn an_upstream_that_is_the_listener_itself_is_told_apart() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(loops_back(at("127.0.0.1:5673"), at("127.0.0.1:5673")));
        assert!(loops_back(at("0.0.0.0:5673"), at("127.0.0.1:5673")));
        assert!(loops_back(at("[::]:5673"), at("[::1]:5673")));
        assert!(!loops_back(at("127.0.0.1:5673"), at("127.0.0.1:5672")));
        assert!(!loops_back(at("127.0.0.1:5673"), at("10.0.0.7:5673")));
    }

    #[tokio::test]
    async fn binding_refuses_to_relay_into_itself() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        drop(taken);
        let err = Proxy::bind(ProxyConfig::new(addr, addr)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
