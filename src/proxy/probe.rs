//! What the relay tells an observer beside its events, through atomics it sets and never
//! waits on: whether the proxy is accepting, how its latest upstream connect went, and how
//! long the relay waited on the inspection (back-pressure). The metrics endpoint reads it
//! (`crate::metrics`); the relay pays one relaxed store per connect and two clock reads per
//! wait, and nothing per forwarded chunk.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

/// How the latest upstream connect went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// No connection was relayed yet.
    Unknown,
    /// The upstream accepted the latest connect.
    Answered,
    /// The latest connect was refused, unreachable or timed out.
    Failed,
}

/// The relay's side of what it tells (see the module doc).
#[derive(Debug, Default)]
pub struct RelayProbe {
    listening: AtomicBool,
    upstream: AtomicU8,
    backpressure_ns: AtomicU64,
}

impl RelayProbe {
    /// Whether the proxy's socket takes connections now (from its bind to its shutdown).
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::Relaxed)
    }

    pub(super) fn set_listening(&self, on: bool) {
        self.listening.store(on, Ordering::Relaxed);
    }

    /// How the latest upstream connect went.
    pub fn upstream(&self) -> Upstream {
        match self.upstream.load(Ordering::Relaxed) {
            1 => Upstream::Answered,
            2 => Upstream::Failed,
            _ => Upstream::Unknown,
        }
    }

    pub(super) fn connected(&self, ok: bool) {
        self.upstream
            .store(if ok { 1 } else { 2 }, Ordering::Relaxed);
    }

    /// Time the relay spent waiting for room in a connection's inspection queue, all
    /// connections summed.
    pub fn backpressure_wait(&self) -> Duration {
        Duration::from_nanos(self.backpressure_ns.load(Ordering::Relaxed))
    }

    pub(super) fn waited(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.backpressure_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_connect_and_the_waits_are_told() {
        let p = RelayProbe::default();
        assert_eq!(p.upstream(), Upstream::Unknown);
        p.connected(false);
        assert_eq!(p.upstream(), Upstream::Failed);
        p.connected(true);
        assert_eq!(p.upstream(), Upstream::Answered);
        p.waited(Duration::from_millis(3));
        p.waited(Duration::from_millis(4));
        assert_eq!(p.backpressure_wait(), Duration::from_millis(7));
    }
}
