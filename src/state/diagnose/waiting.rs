//! Deliveries of one flow waiting for their settlement (a disposition, a confirm, an ack), as
//! the frame context says they start and end, oldest first; and the condition that the oldest
//! has waited too long.
//!
//! Bounded by the frame context: only deliveries it follows to a settlement
//! ([`crate::base::Awaits::Settlement`], at most `state::context::MAX_OPEN` a connection) are
//! kept.

use std::collections::BTreeSet;

use crate::base::{Check, EndWhy, FrameRef, Timestamp};

use super::cond::{Cond, Ctx};

/// One flow's waiting deliveries (see the module doc).
#[derive(Debug, Default)]
pub struct Waiting {
    set: BTreeSet<(i64, FrameRef)>,
    /// The oldest waits (since it started).
    pub cond: Option<Cond>,
}

impl Waiting {
    /// A delivery started by `at` at `ts` waits.
    pub fn add(&mut self, ts: i64, at: FrameRef) {
        self.set.insert((ts, at));
    }

    /// The delivery started by `at` at `ts` was settled.
    pub fn remove(&mut self, ts: i64, at: FrameRef) {
        self.set.remove(&(ts, at));
    }

    /// How many wait.
    pub fn waiting(&self) -> usize {
        self.set.len()
    }

    /// After adds and removes at `ts` (by the frame `frame`): the condition follows the oldest
    /// delivery (a settled oldest ends it, cleared; the next oldest holds since its own start).
    pub fn refresh(
        &mut self,
        cx: &mut Ctx<'_>,
        check: &'static Check,
        ts: Timestamp,
        frame: FrameRef,
    ) {
        let oldest = self.set.first().copied();
        let held = self
            .cond
            .as_ref()
            .and_then(|c| c.ev[0].map(|a| (c.since.0, a)));
        let n = self.set.len() as u64;
        if held == oldest {
            if let Some(c) = &mut self.cond {
                c.n = n;
            }
            return;
        }
        cx.end(&mut self.cond, ts, Some(frame), EndWhy::Cleared);
        if let Some((since, at)) = oldest {
            self.cond = cx
                .arm(check, Timestamp(since), at, None)
                .map(|c| c.with_n(n));
        }
    }

    /// Forget every delivery (their scope closed, or a gap).
    pub fn clear(&mut self) {
        self.set.clear();
    }
}
