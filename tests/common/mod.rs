//! Helpers shared by the proxy tests: an in-process proxy with an event collector, and broker
//! reachability (the recording relay and the broker check live in `support`, which every test
//! crate using this module declares too).
#![allow(dead_code)]

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::pipeline::Sink;
use amqpeek::proxy::{BoxSink, Proxy, ProxyConfig, RunSummary};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A sink that keeps every event.
#[derive(Clone, Default)]
pub struct Collect(pub Arc<Mutex<Vec<Event>>>);

impl Sink for Collect {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.0.lock().unwrap().push(ev.clone());
        Ok(())
    }
}

/// A collector standing for a live view (the TUI): it can do without frames, so the proxy's
/// inspection skims what it cannot keep up with; `delay` slows it down per frame.
#[derive(Clone, Default)]
pub struct LiveCollect {
    pub events: Collect,
    pub delay: Duration,
}

impl Sink for LiveCollect {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if matches!(ev.kind, EventKind::Frame(_)) {
            std::thread::sleep(self.delay);
        }
        self.events.event(ev)
    }
    fn needs_every_frame(&self) -> bool {
        false
    }
}

/// Every violation in `events`, as `rule at offset: message`.
pub fn violation_lines(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Violation(v) => Some(format!("{} at {}: {}", v.rule, v.offset, v.message)),
            _ => None,
        })
        .collect()
}

/// A `Write` into a shared buffer (for the trace sink).
#[derive(Clone, Default)]
pub struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A proxy running in-process.
pub struct Running {
    pub addr: SocketAddr,
    pub events: Arc<Mutex<Vec<Event>>>,
    stop: oneshot::Sender<()>,
    handle: JoinHandle<io::Result<RunSummary>>,
}

impl Running {
    /// Stop it (graceful) and return every event.
    pub async fn stop(self) -> (RunSummary, Vec<Event>) {
        let _ = self.stop.send(());
        let summary = tokio::time::timeout(Duration::from_secs(20), self.handle)
            .await
            .expect("proxy stops in time")
            .unwrap()
            .unwrap();
        let events = self.events.lock().unwrap().clone();
        (summary, events)
    }
}

/// Start a proxy to `upstream` with a collector plus `extra` sinks.
pub async fn start_proxy(upstream: SocketAddr, extra: Vec<BoxSink>) -> Running {
    start_proxy_with(
        ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream),
        extra,
    )
    .await
}

/// Start a proxy with `config` with a collector plus `extra` sinks.
pub async fn start_proxy_with(config: ProxyConfig, extra: Vec<BoxSink>) -> Running {
    let collect = Collect::default();
    let events = collect.0.clone();
    let mut sinks: Vec<BoxSink> = vec![Box::new(collect)];
    sinks.extend(extra);
    start_proxy_sinks(config, events, sinks).await
}

/// Start a proxy with `config` whose only sink is a live view collecting into `Running::events`.
pub async fn start_live_proxy(config: ProxyConfig, delay: Duration) -> Running {
    let live = LiveCollect {
        events: Collect::default(),
        delay,
    };
    let events = live.events.0.clone();
    start_proxy_sinks(config, events, vec![Box::new(live)]).await
}

async fn start_proxy_sinks(
    config: ProxyConfig,
    events: Arc<Mutex<Vec<Event>>>,
    sinks: Vec<BoxSink>,
) -> Running {
    let proxy = Proxy::bind(config).await.unwrap();
    let addr = proxy.local_addr().unwrap();
    let (stop, rx) = oneshot::channel();
    let handle = tokio::spawn(proxy.run(sinks, async {
        let _ = rx.await;
    }));
    Running {
        addr,
        events,
        stop,
        handle,
    }
}

/// Bytes of every `Data` event of `conn` in `dir`, checked contiguous.
pub fn data_of(events: &[Event], conn: u64, dir: Dir) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.conn == conn) {
        if let EventKind::Data {
            dir: d,
            offset,
            bytes,
        } = &e.kind
            && *d == dir
        {
            assert_eq!(*offset as usize, out.len(), "data events contiguous");
            out.extend_from_slice(bytes);
        }
    }
    out
}

/// The broker address for end-to-end tests, or `None` (with a note) when it is unreachable
/// and CI is not set. Panics when CI is set and the broker is down.
pub async fn broker() -> Option<SocketAddr> {
    crate::support::broker_or_skip()
        .await
        .then(crate::support::broker_addr)
}

impl Running {
    /// Wait (up to 10 s) until connection `conn` has its close event.
    pub async fn wait_closed(&self, conn: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let done = self
                .events
                .lock()
                .unwrap()
                .iter()
                .any(|e| e.conn == conn && matches!(e.kind, EventKind::Close(_)));
            if done {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "connection #{conn} did not close"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
