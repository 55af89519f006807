//! Prometheus metrics of a live run (`proxy --metrics ADDR`, `wrap --metrics ADDR`): counters
//! and gauges named `amqpeek_*`, served at `/metrics` with `/healthz` and `/readyz` beside it
//! (`serve.rs`), for a fleet of proxies watched from one Prometheus and one dashboard.
//!
//! ```text
//! pipeline events -> MetricsSink (a sink like the others) -> counters ─┐
//! relay -> RelayProbe (atomics: listening, latest connect, waits) ─────┴-> /metrics (own task)
//! ```
//!
//! Everything is counted from what the events already carry (see `sink.rs`): no decoding, no
//! protocol tracking, and no label a connection or a wire string can multiply, except the
//! opt-in top-N link label (`top.rs`). The names, types and labels are listed in
//! `docs/metrics.md`; the encoding is `prometheus-client`'s, Prometheus text by default and
//! OpenMetrics when the scraper asks for it.

mod families;
pub mod serve;
mod sink;
pub mod top;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::registry::Registry;

use crate::proxy::probe::{RelayProbe, Upstream};
use families::Families;

pub use sink::{MetricsSink, reason_class};

/// The OpenMetrics content type `/metrics` answers with when asked for it.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text content type `/metrics` answers with otherwise.
pub const PROMETHEUS_CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The exposition formats of `/metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text, version 0.0.4.
    Prometheus,
    /// OpenMetrics text, version 1.0.0.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names it (as Prometheus
    /// does, first), else Prometheus text.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => PROMETHEUS_CONTENT_TYPE,
            Format::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
        }
    }
}

/// The registry of one run's metrics, shared by its sink and its endpoint.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    families: Families,
    top_links: Option<usize>,
    probe: Option<Arc<RelayProbe>>,
    /// The relay's wait already added to the counter.
    waited: Mutex<Duration>,
}

impl Metrics {
    /// Every metric registered, at zero; with `top_links`, the per-link ones for that many
    /// links (the rest summed).
    pub fn new(top_links: Option<usize>) -> Self {
        let mut registry = Registry::with_prefix("amqpeek");
        let families = Families::register(&mut registry, top_links.is_some());
        Metrics {
            registry,
            families,
            top_links,
            probe: None,
            waited: Mutex::new(Duration::ZERO),
        }
    }

    /// Reading the relay's `probe` too: readiness and the back-pressure wait.
    pub fn with_probe(mut self, probe: Arc<RelayProbe>) -> Self {
        self.probe = Some(probe);
        self
    }

    /// A sink adding the pipeline's events to these metrics.
    pub fn sink(&self) -> MetricsSink {
        MetricsSink::new(self)
    }

    /// The metrics now, encoded in `format`.
    pub fn encode(&self, format: Format) -> String {
        self.refresh();
        let mut out = String::new();
        let encoded = match format {
            Format::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            }
            Format::OpenMetrics => {
                prometheus_client::encoding::text::encode(&mut out, &self.registry)
            }
        };
        // Writing into a String cannot fail; a metric that could not say its value would
        // show as a truncated body rather than a panic.
        if encoded.is_err() {
            tracing::warn!("encoding the metrics failed");
        }
        out
    }

    /// `Ok` when the proxy accepts connections and its latest upstream connect (if any) was
    /// answered; else why not.
    pub fn ready(&self) -> Result<(), &'static str> {
        let Some(p) = &self.probe else {
            return Ok(());
        };
        if !p.listening() {
            return Err("not accepting connections");
        }
        match p.upstream() {
            Upstream::Failed => Err("the upstream did not answer the latest connect"),
            Upstream::Answered | Upstream::Unknown => Ok(()),
        }
    }

    /// Brings the counters read from the relay's probe up to date.
    fn refresh(&self) {
        let Some(p) = &self.probe else {
            return;
        };
        let now = p.backpressure_wait();
        let mut seen = self.waited.lock().unwrap_or_else(|e| e.into_inner());
        if now > *seen {
            self.families
                .backpressure_wait
                .inc_by((now - *seen).as_secs_f64());
            *seen = now;
        }
    }
}
