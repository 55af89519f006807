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

/// A waiting delivery: when it started (µs) and the frame that started it; ordered by both.
type Key = (i64, FrameRef);

/// One flow's waiting deliveries (see the module doc).
///
/// Deliveries start in key order as a rule (one direction's frames, in time), so they are kept
/// in a run, a vector read from `head` on: an add is a push at the back, a settlement finds its
/// delivery by binary search and marks it settled in place, settled ones are passed over once
/// they reach the front (the vector is emptied once all are, and its settled front cut off once
/// it is most of it), and the run is compacted when settled entries are most of it. Every
/// operation is O(log n) amortised, with no tree node to allocate or rebalance, and the
/// in-order add and the settlement of the oldest are a few instructions inlined into their
/// callers. A delivery that starts before the last one added (a capture's clock running back)
/// goes to an ordered set beside it, so no order of adds can make an insert cost more than
/// O(log n).
#[derive(Debug, Default)]
pub struct Waiting {
    /// `run[head..]`, in key order, each with whether it still waits; its first one waits (or
    /// none is held, and `run` is empty).
    run: Vec<(Key, bool)>,
    /// Where the held part of `run` starts.
    head: usize,
    /// Entries of `run[head..]` that still wait.
    live: usize,
    /// The deliveries added out of order.
    late: BTreeSet<Key>,
    /// The oldest waits (since it started). A started one follows every change; one not
    /// started may be behind them (`behind`): [`Waiting::current`] brings it up to date before
    /// it is judged.
    pub cond: Option<Cond>,
    /// Deliveries came or went since `cond`, not started, was last made.
    behind: bool,
    /// A delivery added since the last refresh may be the oldest: its due time is to be told
    /// to the clock.
    earlier: bool,
}

/// The settled front of a run is cut off once it is this long and half the vector, at least.
pub(super) const CUT: usize = 64;

impl Waiting {
    /// A delivery started by `at` at `ts` waits.
    ///
    /// Inlined: the rule (a delivery after the last one added, none held out of order) is a
    /// push; anything else is [`Waiting::add_other`].
    #[inline(always)]
    pub fn add(&mut self, ts: i64, at: FrameRef) {
        let key = (ts, at);
        if self.late.is_empty() && self.run.last().is_none_or(|(last, _)| *last < key) {
            self.earlier |= self.run.is_empty();
            self.run.push((key, true));
            self.live += 1;
        } else {
            self.add_other(key);
        }
    }

    /// [`Waiting::add`] of a delivery that starts before the last one added, or while
    /// deliveries added out of order are held.
    #[inline(never)]
    fn add_other(&mut self, key: Key) {
        match self.run.last() {
            Some((last, _)) if *last >= key => self.add_before(key),
            // Once the run has emptied, a delivery added late may come again: it is held once.
            _ if !self.late.is_empty() && self.late.contains(&key) => {}
            _ => {
                self.earlier |= self.run.is_empty();
                self.run.push((key, true));
                self.live += 1;
            }
        }
    }

    /// [`Waiting::add`] of a delivery that starts before the last one added.
    #[inline(never)]
    fn add_before(&mut self, key: Key) {
        self.earlier = true;
        if let Ok(i) = self.find(key) {
            if !self.run[i].1 {
                self.run[i].1 = true;
                self.live += 1;
            }
        } else {
            self.late.insert(key);
        }
    }

    /// The delivery started by `at` at `ts` was settled.
    #[inline]
    pub fn remove(&mut self, ts: i64, at: FrameRef) {
        let key = (ts, at);
        if let Some((front, true)) = self.run.get(self.head)
            && *front == key
        {
            self.head += 1;
            self.live -= 1;
            self.trim();
            return;
        }
        self.remove_other(key);
    }

    /// The deliveries `keys` (each as when it started, and the frame that started it) were
    /// settled, in turn: as [`Waiting::remove`] of each, with the settled front passed over
    /// once, after the last (a disposition settles a run of deliveries, oldest first as a
    /// rule: each is then the next of the run). Until then the front may be a settled entry:
    /// a key that does not match it is searched for, as one that is not the oldest.
    #[inline]
    pub fn remove_each(&mut self, keys: impl Iterator<Item = (i64, FrameRef)>) {
        for key in keys {
            if let Some((front, true)) = self.run.get(self.head)
                && *front == key
            {
                self.head += 1;
                self.live -= 1;
            } else {
                self.remove_other(key);
            }
        }
        self.trim();
    }

    /// [`Waiting::remove`] of a delivery that is not the oldest of the run.
    #[inline(never)]
    fn remove_other(&mut self, key: Key) {
        match self.find(key) {
            Ok(i) if self.run[i].1 => {
                self.run[i].1 = false;
                self.live -= 1;
                self.trim();
            }
            _ => {
                self.late.remove(&key);
            }
        }
    }

    /// Where `key` is in `run` (at `head` or after), if there. Deliveries are settled oldest
    /// first as a rule: the front is looked at before searching.
    fn find(&self, key: Key) -> Result<usize, usize> {
        match self.run.get(self.head) {
            Some((front, _)) if *front == key => Ok(self.head),
            _ => self.run[self.head..]
                .binary_search_by(|(k, _)| k.cmp(&key))
                .map(|i| i + self.head)
                .map_err(|i| i + self.head),
        }
    }

    /// Settled entries leave the front; the run is compacted once they are most of it.
    #[inline]
    fn trim(&mut self) {
        while let Some((_, false)) = self.run.get(self.head) {
            self.head += 1;
        }
        if self.head == self.run.len() {
            self.run.clear();
            self.head = 0;
        } else if self.head >= CUT || self.run.len() - self.head > 2 * self.live + 16 {
            self.compact();
        }
    }

    /// Drop the settled entries, the front passed over with them, once they are most of the
    /// run or of the vector.
    #[inline(never)]
    fn compact(&mut self) {
        if self.run.len() - self.head <= 2 * self.live + 16 && 2 * self.head < self.run.len() {
            return;
        }
        let head = self.head;
        let mut i = 0;
        self.run.retain(|(_, waits)| {
            i += 1;
            i > head && *waits
        });
        self.head = 0;
    }

    /// The oldest waiting delivery.
    #[inline]
    fn oldest(&self) -> Option<Key> {
        let run = self.run.get(self.head).map(|(k, _)| *k);
        if self.late.is_empty() {
            return run;
        }
        match (run, self.late.first()) {
            (Some(r), Some(l)) => Some(r.min(*l)),
            (r, l) => r.or(l.copied()),
        }
    }

    /// How many wait.
    #[inline]
    pub fn waiting(&self) -> usize {
        self.live + self.late.len()
    }

    /// Whether [`Waiting::refresh`] may wait until the last of a frame's changes: the condition
    /// held (if any) has not started, so ending or arming one in between reports nothing, and
    /// the last refresh leaves the condition as refreshing after each change would have.
    #[inline]
    pub fn quiet(&self) -> bool {
        self.cond.as_ref().is_none_or(|c| c.started.is_none())
    }

    /// After adds and removes at `ts` (by the frame `frame`): the condition follows the oldest
    /// delivery (a settled oldest ends it, cleared; the next oldest holds since its own start).
    ///
    /// A condition not started reports nothing as it changes: it is only marked behind, and,
    /// when a delivery added may be the oldest, the clock is told the oldest's due time (the
    /// earliest the condition can start).
    #[inline(always)]
    pub fn refresh(
        &mut self,
        cx: &mut Ctx<'_>,
        check: &'static Check,
        ts: Timestamp,
        frame: FrameRef,
    ) {
        let started = self.cond.as_ref().is_some_and(|c| c.started.is_some());
        if !self.earlier && !started {
            self.behind = true;
        } else if self.cond.is_none() && self.late.is_empty() {
            // A delivery that may be the oldest, with no condition and none held out of
            // order: the oldest is the run's front, told to the clock here as `refresh_now`
            // would (a delivery acknowledged before the next comes makes this the rule).
            self.earlier = false;
            self.behind = true;
            if let Some(((since, _), _)) = self.run.get(self.head) {
                due_from(cx, check, *since);
            }
        } else {
            self.refresh_now(cx, check, ts, frame);
        }
    }

    /// [`Waiting::refresh`] of a started condition, or after a delivery that may be the oldest.
    #[inline(never)]
    fn refresh_now(
        &mut self,
        cx: &mut Ctx<'_>,
        check: &'static Check,
        ts: Timestamp,
        frame: FrameRef,
    ) {
        self.earlier = false;
        if self.cond.as_ref().is_some_and(|c| c.started.is_some()) {
            self.follow_started(cx, check, ts, frame);
            return;
        }
        self.behind = true;
        if let Some((since, _)) = self.oldest() {
            due_from(cx, check, since);
        }
    }

    /// A started condition after changes: it ends (cleared by `frame`) once its
    /// oldest is settled, and the next oldest (if any) holds since its own start.
    fn follow_started(
        &mut self,
        cx: &mut Ctx<'_>,
        check: &'static Check,
        ts: Timestamp,
        frame: FrameRef,
    ) {
        let oldest = self.oldest();
        let n = self.waiting() as u64;
        if let Some(c) = &mut self.cond
            && c.ev[0].map(|a| (c.since.0, a)) == oldest
        {
            c.n = n;
            return;
        }
        cx.end(&mut self.cond, ts, Some(frame), EndWhy::Cleared);
        self.behind = false;
        if let Some((since, at)) = oldest {
            self.cond = cx
                .arm(check, Timestamp(since), at, None)
                .map(|c| c.with_n(n));
        }
    }

    /// The condition, up to date: one behind the deliveries is made again from the oldest (as
    /// refreshing after each change would have left it).
    pub fn current(&mut self, cx: &mut Ctx<'_>, check: &'static Check) -> Option<&mut Cond> {
        if self.behind {
            self.behind = false;
            let oldest = self.oldest();
            let n = self.waiting() as u64;
            match (&mut self.cond, oldest) {
                (Some(c), _) if c.ev[0].map(|a| (c.since.0, a)) == oldest => c.n = n,
                (_, None) => self.cond = None,
                (_, Some((since, at))) => {
                    self.cond = cx
                        .arm(check, Timestamp(since), at, None)
                        .map(|c| c.with_n(n));
                }
            }
        }
        self.cond.as_mut()
    }

    /// Forget every delivery (their scope closed, or a gap).
    pub fn clear(&mut self) {
        self.run.clear();
        self.head = 0;
        self.live = 0;
        self.late.clear();
    }
}

/// The clock is told when `check` can start for a delivery waiting since `since` (µs): its
/// threshold later, if that is sooner than what it is told already.
#[inline(always)]
fn due_from(cx: &mut Ctx<'_>, check: &'static Check, since: i64) {
    if let Some(wait) = cx.wait(check, None) {
        cx.core.next_due = cx.core.next_due.min(since.saturating_add(wait));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::Dir;

    /// Adds (mostly in order, some late, some again) and removes (present or not) leave the
    /// same oldest delivery and count as an ordered set of them.
    #[test]
    fn any_order_of_adds_and_removes_agrees_with_an_ordered_set() {
        let mut w = Waiting::default();
        let mut set = BTreeSet::new();
        let mut rng = crate::base::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n);
        let mut clock = 0i64;
        for step in 0..20_000 {
            let key = match next(10) {
                // In order, the rule.
                0..=5 => {
                    clock += next(3) as i64;
                    (clock, next(2))
                }
                // Late, or one seen before.
                _ => (clock - next(40) as i64, next(2)),
            };
            let at = FrameRef {
                dir: if key.1 == 0 { Dir::C2S } else { Dir::S2C },
                offset: key.0.unsigned_abs() * 2 + key.1,
            };
            let key = (key.0, at);
            if next(5) < 3 {
                w.add(key.0, key.1);
                set.insert(key);
            } else {
                w.remove(key.0, key.1);
                set.remove(&key);
            }
            if step % 5000 == 0 {
                w.clear();
                set.clear();
            }
            assert_eq!(w.oldest(), set.first().copied(), "step {step}");
            assert_eq!(w.waiting(), set.len(), "step {step}");
        }
    }

    /// A delivery held out of order that is added again after the run has moved below it (the
    /// run emptied, or holds only older ones) is still held once: the in-order push is not
    /// taken while deliveries are held out of order.
    #[test]
    fn a_late_delivery_added_again_behind_the_run_is_held_once() {
        let key = |t: i64| {
            let at = FrameRef {
                dir: Dir::C2S,
                offset: t.unsigned_abs(),
            };
            (t, at)
        };
        for again_after in [None, Some(3)] {
            let mut w = Waiting::default();
            for t in [10, 5] {
                w.add(key(t).0, key(t).1);
            }
            w.remove(key(10).0, key(10).1);
            if let Some(t) = again_after {
                w.add(key(t).0, key(t).1);
            }
            w.add(key(5).0, key(5).1);
            let held = 1 + usize::from(again_after.is_some());
            assert_eq!(w.waiting(), held, "{again_after:?}");
            w.remove(key(5).0, key(5).1);
            assert_eq!(w.waiting(), held - 1, "{again_after:?}");
            let rest = again_after.map(key);
            assert_eq!(w.oldest(), rest, "{again_after:?}");
        }
    }

    /// Runs of settlements removed at once (the oldest ones, some twice, some never added,
    /// some out of order) leave what removing each in turn leaves.
    #[test]
    fn a_run_of_removals_agrees_with_removing_each() {
        let (mut one, mut each) = (Waiting::default(), Waiting::default());
        let mut rng = crate::base::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        let key = |t: i64| {
            let at = FrameRef {
                dir: Dir::C2S,
                offset: t.unsigned_abs(),
            };
            (t, at)
        };
        let mut clock = 0i64;
        let mut settled = 0i64;
        for step in 0..4_000 {
            for _ in 0..next(20) {
                clock += 1 + next(2) as i64;
                let t = if next(10) == 0 { clock - 5 } else { clock };
                one.add(key(t).0, key(t).1);
                each.add(key(t).0, key(t).1);
            }
            let n = next(25) as i64;
            let mut run: Vec<(i64, FrameRef)> = (settled..settled + n).map(key).collect();
            if n > 2 && next(3) == 0 {
                run.swap(0, 1);
            }
            if n > 0 && next(4) == 0 {
                run.push(run[0]);
            }
            settled += n;
            one.remove_each(run.iter().copied());
            for &(t, at) in &run {
                each.remove(t, at);
            }
            assert_eq!(one.oldest(), each.oldest(), "step {step}");
            assert_eq!(one.waiting(), each.waiting(), "step {step}");
            assert_eq!(one.run.is_empty(), each.run.is_empty(), "step {step}");
        }
    }
}
