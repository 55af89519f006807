//! What protects the proxy from clients that hold a connection without using it: a deadline
//! for the client's protocol header (`--handshake-timeout`), an optional idle deadline
//! (`--idle-timeout`), and the default cap on concurrent connections (`--max-connections`).
//!
//! The relay's pumps record activity here (`Activity`); a `watchdog` beside them ends the
//! connection when a deadline passes, with a close reason that says which one. Nothing here
//! reads or holds relayed bytes: only their count and the time they passed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::event::{CloseReason, Timeout};

/// The length of every AMQP protocol header (`AMQP` and four version bytes): a client that has
/// sent this many bytes has sent its header, or something that is not AMQP at all (which the
/// inspection reports, not the watchdog).
pub(crate) const PROTOCOL_HEADER_LEN: u64 = 8;

/// Descriptors the proxy keeps for itself (listener, captures, terminal, runtime, logs) when it
/// derives `--max-connections` from the open-files limit.
const RESERVED_DESCRIPTORS: u64 = 64;

/// The default `--max-connections` for an open-files limit of `open_files`: every relayed
/// connection takes two descriptors (client and upstream socket), and some are kept for the
/// proxy's own files. Never less than one.
pub fn default_max_connections(open_files: u64) -> usize {
    let usable = open_files.saturating_sub(RESERVED_DESCRIPTORS) / 2;
    usize::try_from(usable).unwrap_or(usize::MAX).max(1)
}

/// The deadlines that apply to one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// How long after the accept the client has to send its protocol header.
    pub handshake: Option<Duration>,
    /// How long the connection may pass no byte in either direction.
    pub idle: Option<Duration>,
}

/// What the pumps of one connection report: bytes the client sent, and when a byte last passed
/// either way (milliseconds since the connection was accepted).
#[derive(Debug)]
pub(crate) struct Activity {
    accepted: Instant,
    client_bytes: AtomicU64,
    last_ms: AtomicU64,
}

impl Activity {
    /// Activity of a connection accepted at `accepted`.
    pub(crate) fn new(accepted: Instant) -> Self {
        Activity {
            accepted,
            client_bytes: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
        }
    }

    /// `n` bytes passed, from the client when `from_client`.
    pub(crate) fn passed(&self, n: usize, from_client: bool) {
        if from_client {
            self.client_bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        let ms = self.accepted.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn header_sent(&self) -> bool {
        self.client_bytes.load(Ordering::Relaxed) >= PROTOCOL_HEADER_LEN
    }

    fn last(&self) -> Instant {
        self.accepted + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// The earliest deadline still in force, with the close reason it would give; `None` when no
/// deadline applies any more (the header was sent and there is no idle timeout).
fn next_deadline(limits: Deadlines, activity: &Activity) -> Option<(Instant, CloseReason)> {
    let handshake = limits
        .handshake
        .filter(|_| !activity.header_sent())
        .map(|d| {
            (
                activity.accepted + d,
                CloseReason::Timeout(Timeout::Handshake(d)),
            )
        });
    let idle = limits
        .idle
        .map(|d| (activity.last() + d, CloseReason::Timeout(Timeout::Idle(d))));
    match (handshake, idle) {
        (Some(h), Some(i)) => Some(if h.0 <= i.0 { h } else { i }),
        (h, i) => h.or(i),
    }
}

/// Completes, with the close reason, when a deadline of `limits` passes; never when none
/// applies. Activity that moves a deadline on is seen when the old deadline is reached.
pub(crate) async fn watchdog(limits: Deadlines, activity: &Activity) -> CloseReason {
    loop {
        let Some((at, _)) = next_deadline(limits, activity) else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(at).await;
        if let Some((at, reason)) = next_deadline(limits, activity)
            && at <= Instant::now()
        {
            return reason;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_connections_leave_descriptors_for_the_proxy() {
        assert_eq!(default_max_connections(1024), 480);
        assert_eq!(default_max_connections(1_048_576), 524_256);
        assert_eq!(default_max_connections(10), 1);
    }

    fn limits(handshake: Option<u64>, idle: Option<u64>) -> Deadlines {
        Deadlines {
            handshake: handshake.map(Duration::from_millis),
            idle: idle.map(Duration::from_millis),
        }
    }

    #[test]
    fn a_silent_client_is_due_at_the_handshake_deadline() {
        let accepted = Instant::now();
        let activity = Activity::new(accepted);
        // Seven bytes are not a header yet.
        activity.passed(7, true);
        let (at, reason) = next_deadline(limits(Some(30_000), None), &activity).unwrap();
        assert_eq!(at, accepted + Duration::from_secs(30));
        assert_eq!(
            reason,
            CloseReason::Timeout(Timeout::Handshake(Duration::from_secs(30)))
        );
        assert_eq!(
            reason.to_string(),
            "handshake timeout: the client sent no protocol header within 30s"
        );
    }

    #[test]
    fn a_sent_header_ends_the_handshake_deadline() {
        let activity = Activity::new(Instant::now());
        activity.passed(8, true);
        assert_eq!(next_deadline(limits(Some(1000), None), &activity), None);
        // Bytes from the broker are not the client's header.
        let other = Activity::new(Instant::now());
        other.passed(100, false);
        assert!(next_deadline(limits(Some(1000), None), &other).is_some());
    }

    #[test]
    fn the_earlier_deadline_wins_and_traffic_moves_the_idle_one_on() {
        let accepted = Instant::now() - Duration::from_secs(10);
        let activity = Activity::new(accepted);
        let (at, reason) = next_deadline(limits(Some(30_000), Some(1500)), &activity).unwrap();
        assert_eq!(at, accepted + Duration::from_millis(1500));
        assert_eq!(
            reason,
            CloseReason::Timeout(Timeout::Idle(Duration::from_millis(1500)))
        );
        activity.passed(8, true);
        let (moved, _) = next_deadline(limits(Some(30_000), Some(1500)), &activity).unwrap();
        assert!(moved >= accepted + Duration::from_secs(10), "{moved:?}");
    }
}
