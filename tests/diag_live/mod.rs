//! The real proxy with diagnosis thresholds, and the diagnoses it made, for the tests that
//! drive real clients through it to the broker.

use std::sync::Arc;

use amqpeek::event::{Diagnosis, EventKind};
use amqpeek::proxy::ProxyConfig;
use amqpeek::state::diagnose::Thresholds;

use crate::common::{self, Running, start_proxy_with};

/// A proxy to the broker with thresholds `limits`; `None` when the broker is away (not CI).
pub async fn proxy(limits: &[(&str, f64)]) -> Option<Running> {
    let broker = common::broker().await?;
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    let mut t = Thresholds::new();
    for (id, v) in limits {
        t.set(id, *v).unwrap();
    }
    cfg.inspect.diagnosis = Some(Arc::new(t));
    Some(start_proxy_with(cfg, vec![]).await)
}

/// Stop the proxy once its `conns` connections closed: the diagnosis events, in order.
pub async fn diagnoses(p: Running, conns: u64) -> Vec<Arc<Diagnosis>> {
    for c in 1..=conns {
        p.wait_closed(c).await;
    }
    let (_, events) = p.stop().await;
    events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Diagnosis(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// The ids of the diagnoses that started, sorted.
pub fn started(ds: &[Arc<Diagnosis>]) -> Vec<&'static str> {
    let mut v: Vec<_> = ds
        .iter()
        .filter(|d| d.ended.is_none())
        .map(|d| d.check.id)
        .collect();
    v.sort();
    v
}

/// The diagnoses in a line each, for assertion messages.
pub fn dump(ds: &[Arc<Diagnosis>]) -> String {
    ds.iter()
        .map(|d| {
            format!(
                "{} [{}] {} ended {:?}",
                d.check.id, d.name, d.detail, d.ended
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
