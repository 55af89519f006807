//! What a link's receiver has provably heard of the sender's delivery-count (AMQP 1.0 §2.6.7,
//! §2.7.6), proven by the receiver's own dispositions.
//!
//! A receiver's flow may legitimately cross transfers still on the wire, and even a transfer
//! its session has received (its next-incoming-id counts it, §2.5.6) may not have reached the
//! link endpoint yet: implementations hand transfers from the session to the link, and a flow
//! joins the session's state of one moment with the link's. What the link endpoint has
//! received is proven by what it said of a delivery: a disposition from the receiver naming
//! it. A link's deliveries arrive in order, so the link then received every delivery before it
//! too, and every attach or flow of the sender sent before it.
//!
//! Each event that moves the count a receiver must know is logged per link: a delivery sent
//! unsettled (only those can be named by the receiver's disposition) when complete, with the
//! count after it, and the sender's attach or flow with the count it states. Each entry holds
//! the absolute count the receiver knows once it heard the event, so an entry left out (the log
//! is capped; deliveries sent settled are not logged) only leaves the proven count lower, never
//! wrong.
//!
//! Counted conservatively, as every implementation would: a delivery counts once complete (a
//! receiver may count it at its first transfer), an aborted or resumed delivery not at all
//! (whether it moves the count is left open), and after the sender attaches the same link again
//! nothing is proven until its next flow states the count.

use std::collections::VecDeque;

use super::serial::after;

/// Most events logged per link; beyond, new ones are not logged until the receiver's
/// dispositions prune the log (the proven count then lags behind, never overshoots).
pub const MAX_UNHEARD: usize = 4096;

/// One event not yet known heard by the receiving link endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unheard {
    /// The delivery-id of the delivery it completes; None: the sender's attach or flow.
    pub delivery: Option<u32>,
    /// The delivery-count the receiver knows once it heard the event.
    pub count: u32,
}

/// A link's events, in the order they were sent.
#[derive(Clone, Debug, Default)]
pub struct UnheardLog {
    entries: VecDeque<Unheard>,
}

impl UnheardLog {
    /// Log a count the sender stated (replacing one it stated before with no delivery since).
    pub fn stated(&mut self, count: u32) {
        if let Some(last) = self.entries.back_mut().filter(|e| e.delivery.is_none()) {
            last.count = count;
        } else {
            self.push(Unheard {
                delivery: None,
                count,
            });
        }
    }

    /// Log the complete delivery `id`, the count after it `count`.
    #[inline]
    pub fn delivered(&mut self, id: u32, count: u32) {
        self.push(Unheard {
            delivery: Some(id),
            count,
        });
    }

    #[inline]
    fn push(&mut self, e: Unheard) {
        if self.entries.len() < MAX_UNHEARD {
            self.entries.push_back(e);
        }
    }

    /// The receiver named delivery `id`: every event up to the last delivery not after `id` is
    /// heard; the count the last of them states, if any.
    pub fn heard_through(&mut self, id: u32) -> Option<u32> {
        // The last delivery before the first one after `id`: one pass, then one drain.
        let mut last = None;
        for (k, e) in self.entries.iter().enumerate() {
            match e.delivery {
                Some(d) if after(d, id) => break,
                Some(_) => last = Some(k),
                None => {}
            }
        }
        let k = last?;
        let count = self.entries[k].count;
        self.entries.drain(..=k);
        Some(count)
    }

    /// Forget everything (the count is no longer known).
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

    /// Draining delivery by delivery, as the log is specified: every event up to the first
    /// delivery, while that delivery is not after `id`.
    fn heard_stepwise(log: &mut UnheardLog, id: u32) -> Option<u32> {
        let mut count = None;
        loop {
            let Some(k) = log.entries.iter().position(|e| e.delivery.is_some()) else {
                return count;
            };
            if log.entries[k].delivery.is_some_and(|d| after(d, id)) {
                return count;
            }
            for e in log.entries.drain(..=k) {
                count = Some(e.count);
            }
        }
    }

    #[test]
    fn one_pass_agrees_with_draining_delivery_by_delivery() {
        let (mut a, mut b) = (UnheardLog::default(), UnheardLog::default());
        let mut rng = crate::base::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        let mut id = u32::MAX - 50;
        for step in 0..20_000 {
            match next(4) {
                0 => {
                    let c = next(1000) as u32;
                    a.stated(c);
                    b.stated(c);
                }
                1 | 2 => {
                    id = id.wrapping_add(1 + next(3) as u32);
                    a.delivered(id, step);
                    b.delivered(id, step);
                }
                _ => {
                    let named = id.wrapping_sub(next(20) as u32);
                    assert_eq!(
                        a.heard_through(named),
                        heard_stepwise(&mut b, named),
                        "step {step}"
                    );
                }
            }
            assert_eq!(a.entries, b.entries, "step {step}");
        }
    }

    #[test]
    fn a_named_delivery_proves_the_events_before_it_and_the_log_is_capped() {
        let mut log = UnheardLog::default();
        log.stated(7);
        log.stated(10);
        assert_eq!(log.len(), 1, "a later statement replaces an earlier one");
        for k in 0..(MAX_UNHEARD as u32 + 10) {
            log.delivered((u32::MAX - 1).wrapping_add(k), 11 + k);
        }
        assert_eq!(log.len(), MAX_UNHEARD);
        assert_eq!(
            log.heard_through(u32::MAX - 5),
            None,
            "before every delivery logged"
        );
        assert_eq!(log.heard_through(u32::MAX), Some(12));
        assert_eq!(log.heard_through(1), Some(14), "wrapped: MAX, 0 and 1");
        assert_eq!(log.heard_through(1), None);
        log.clear();
        assert!(log.is_empty());
    }
}
