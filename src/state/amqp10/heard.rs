//! What a link's receiver has provably heard of the sender's delivery-count (AMQP 1.0 §2.5.6,
//! §2.6.7), proven by the receiver's own next-incoming-id.
//!
//! A receiver's flow may legitimately cross transfers still on the wire, so what the proxy has
//! forwarded proves nothing. Its next-incoming-id does: §2.5.6 "Upon receiving a transfer, the
//! receiving endpoint will increment the next-incoming-id to match the implicit transfer-id of
//! the incoming transfer plus one", so a flow with next-incoming-id `n` says its sender has
//! received every transfer with a transfer-id before `n` and, the connection being ordered,
//! every frame its partner sent before that transfer.
//!
//! Each event that moves the count a receiver must know is logged with the transfer-id that
//! proves it heard: a delivery's last transfer (its own transfer-id), the sender's attach or
//! flow (the transfer-id its partner's next transfer gets). Each entry holds the absolute count
//! the receiver knows once it heard the event, so an entry dropped (the log is capped) only
//! leaves the proven count lower, never wrong.
//!
//! Counted conservatively, as every implementation would: a delivery counts once its last
//! transfer was heard (a receiver may count it at its first), an aborted or resumed delivery
//! not at all (whether it moves the count is left open), and after the sender attaches the
//! same link again nothing is proven until its next flow states the count.

use std::collections::VecDeque;

use super::serial::after;

/// Most events logged per session and direction; beyond, new ones are not logged until the
/// receiver's flows prune the log (the proven counts then lag behind, never overshoot).
pub const MAX_UNHEARD: usize = 4096;

/// One event not yet known heard by the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unheard {
    /// Known heard once the receiver's next-incoming-id is after this transfer-id.
    pub tid: u32,
    /// The link (id within the session).
    pub link: u64,
    /// The delivery-count the receiver knows once it heard the event.
    pub count: u32,
}

/// The events of one sending direction of a session, in the order they were sent.
#[derive(Clone, Debug, Default)]
pub struct UnheardLog {
    entries: VecDeque<Unheard>,
}

impl UnheardLog {
    /// Log an event (dropped when the log is full).
    pub fn push(&mut self, e: Unheard) {
        if self.entries.len() < MAX_UNHEARD {
            self.entries.push_back(e);
        }
    }

    /// The events a next-incoming-id of `n` proves heard, in order, removed from the log.
    pub fn heard_before(&mut self, n: u32) -> Vec<Unheard> {
        let mut out = Vec::new();
        while let Some(e) = self.entries.front().copied().filter(|e| after(n, e.tid)) {
            self.entries.pop_front();
            out.push(e);
        }
        out
    }

    /// Forget the events of `link` (its count is no longer known).
    pub fn forget_link(&mut self, link: u64) {
        self.entries.retain(|e| e.link != link);
    }

    /// Forget everything (bytes were missed).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Events logged.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Nothing logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transfers_before_the_next_incoming_id_are_heard_and_the_log_is_capped() {
        let mut log = UnheardLog::default();
        for k in 0..(MAX_UNHEARD as u32 + 10) {
            log.push(Unheard {
                tid: (u32::MAX - 2).wrapping_add(k),
                link: 1,
                count: k + 1,
            });
        }
        assert_eq!(log.len(), MAX_UNHEARD);
        let heard = log.heard_before(u32::MAX);
        assert_eq!(
            heard.len(),
            2,
            "transfer-ids MAX-2 and MAX-1, not MAX itself"
        );
        let heard = log.heard_before(1);
        assert_eq!(
            heard.iter().map(|e| e.count).collect::<Vec<_>>(),
            [3, 4],
            "MAX and 0 (wrapped)"
        );
        assert!(log.heard_before(1).is_empty());
        log.forget_link(1);
        assert!(log.is_empty());
    }
}
