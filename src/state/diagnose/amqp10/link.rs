//! One AMQP 1.0 link's credit as both ends state it (AMQP 1.0 §2.6.7), its waiting deliveries,
//! and the conditions about it: never granted credit, credit used up while the sender has
//! messages, a flow without delivery-count the sender cannot use, an unanswered drain,
//! deliveries unsettled too long, a message redelivered again and again.

use crate::base::{EndWhy, FlowKey, FrameContext, FrameRef, ScopeKind, Settlement, Timestamp};
use crate::codec::amqp10::Flow;

use super::super::catalog as cat;
use super::super::cond::{Cond, Ctx};
use super::super::waiting::Waiting;
use crate::base::Awaits;
use crate::state::amqp10::serial::Grant;

/// What a condition's frames show, in words.
type Detail = dyn Fn(&Cond) -> String;

/// One link (see the module doc). Counts are serial numbers (they wrap).
#[derive(Debug, Default)]
pub struct Link {
    sender_attached: bool,
    receiver_attached: bool,
    /// The sender's initial-delivery-count.
    initial: Option<u32>,
    /// The sender's delivery-count.
    count: Option<u32>,
    /// The credit the receiver's last flow granted from its delivery-count (§2.6.7: "This
    /// identifies a delivery-limit that can be computed by adding the link-credit to the
    /// delivery-count"), judged in serial arithmetic as the state tracker judges it: credit of
    /// 2^31 or more, which receivers grant to mean "no limit", is never used up.
    limit: Option<Grant>,
    /// The receiver granted credit at least once.
    granted: bool,
    /// What the sender's last flow said it has.
    available: u32,
    /// The channel of the sending end's session (where its transfers go), once seen.
    channel: Option<u16>,
    no_credit: Option<Cond>,
    exhausted: Option<Cond>,
    idle_no_count: Option<Cond>,
    drain: Option<Cond>,
    waiting: Waiting,
    redelivered: Option<Cond>,
    /// The latest delivery of a message delivered the threshold's times or more: its
    /// acceptance ends the loop (an earlier attempt's start would never be settled again).
    redelivered_at: Option<FrameRef>,
}

impl Link {
    /// An attach of the sender (`sender`) or the receiver.
    pub fn attach(
        &mut self,
        cx: &mut Ctx<'_>,
        sender: bool,
        initial: Option<u32>,
        ts: Timestamp,
        at: FrameRef,
    ) {
        if sender {
            self.sender_attached = true;
            self.initial = initial;
            self.count = initial;
        } else {
            self.receiver_attached = true;
        }
        if self.sender_attached
            && self.receiver_attached
            && !self.granted
            && self.no_credit.is_none()
        {
            self.no_credit = cx.arm(&cat::NO_CREDIT, ts, at, None);
        }
    }

    /// The sending end's session channel is `channel` (its attach or a transfer came on it).
    pub fn sends_on(&mut self, channel: u16) {
        self.channel = Some(channel);
    }

    /// The sender could send now, as far as the link goes: it has credit left, or its last
    /// flow said it has messages (`available`). A session window is only a stall for a link
    /// like this (§2.5.6: the window limits transfers, the link's credit limits them too).
    pub fn would_send_on(&self) -> Option<u16> {
        let credit_left = matches!(
            (self.limit, self.count),
            (Some(g), Some(c)) if !g.exceeded_by(c)
        );
        self.channel.filter(|_| credit_left || self.available > 0)
    }

    /// No credit left, as the sender counts it.
    #[inline]
    fn spent(&self) -> bool {
        matches!((self.limit, self.count), (Some(g), Some(c)) if g.exceeded_by(c))
    }

    /// A flow, from the sender (`from_sender`) or the receiver.
    pub fn flow(
        &mut self,
        cx: &mut Ctx<'_>,
        from_sender: bool,
        f: &Flow,
        ts: Timestamp,
        at: FrameRef,
    ) {
        if from_sender {
            self.available = f.available.unwrap_or(self.available);
            if f.delivery_count.is_some() {
                self.count = f.delivery_count;
            }
            cx.end(&mut self.drain, ts, Some(at), EndWhy::Cleared);
            self.judge_credit(cx, ts, at);
            return;
        }
        let credit = f.link_credit.unwrap_or(0);
        let was_spent = self.spent();
        if credit > 0 {
            self.granted = true;
            cx.end(&mut self.no_credit, ts, Some(at), EndWhy::Cleared);
        }
        match f.delivery_count {
            Some(dc) => {
                self.limit = Some(Grant {
                    base: dc,
                    amount: credit,
                });
                cx.end(&mut self.idle_no_count, ts, Some(at), EndWhy::Cleared);
            }
            None => {
                // §2.6.7: the sender assumes its initial-delivery-count; one that already sent
                // that many deliveries or more has no credit from this flow.
                self.limit = None;
                let sent = match (self.count, self.initial) {
                    (Some(c), Some(i)) => Some(c.wrapping_sub(i)),
                    _ => None,
                };
                let waits = was_spent || self.available > 0;
                if credit > 0
                    && waits
                    && sent.is_some_and(|s| s >= credit)
                    && self.idle_no_count.is_none()
                {
                    self.idle_no_count = cx
                        .arm(&cat::SENDER_IDLE_NO_COUNT, ts, at, None)
                        .map(|c| c.with_n(u64::from(credit)));
                }
            }
        }
        if f.drain && credit > 0 && self.drain.is_none() {
            self.drain = cx
                .arm(&cat::DRAIN_UNANSWERED, ts, at, None)
                .map(|c| c.with_n(u64::from(credit)));
        }
        self.judge_credit(cx, ts, at);
    }

    /// Credit used up while the sender has messages (available, or deliveries the receiver
    /// has not settled) holds since the frame that made it so; anything else clears it.
    /// Inlined: credit left and no condition held (the rule) is told by two tests.
    #[inline(always)]
    fn judge_credit(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, at: FrameRef) {
        if self.exhausted.is_some() || self.spent() {
            self.judge_spent(cx, ts, at);
        }
    }

    /// [`Link::judge_credit`] of a link with no credit left, or holding the condition.
    #[inline(never)]
    fn judge_spent(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, at: FrameRef) {
        let has = || u64::from(self.available) + self.waiting.waiting() as u64;
        if self.spent() && self.idle_no_count.is_none() && has() > 0 {
            if self.exhausted.is_none() {
                let n = has();
                self.exhausted = cx
                    .arm(&cat::CREDIT_EXHAUSTED, ts, at, None)
                    .map(|c| c.with_n(n));
            }
        } else if self.exhausted.is_some() {
            cx.end(&mut self.exhausted, ts, Some(at), EndWhy::Cleared);
        }
    }

    /// A transfer of the link, with its context.
    #[inline(always)]
    pub fn transfer(&mut self, cx: &mut Ctx<'_>, fcx: &FrameContext, ts: Timestamp, at: FrameRef) {
        let Some(d) = fcx.delivery else {
            return;
        };
        if d.starts {
            self.count = self.count.map(|c| c.wrapping_add(1));
            cx.end(&mut self.idle_no_count, ts, Some(at), EndWhy::Cleared);
            // §2.6.7: on drain the sender advances the delivery-count "consuming all
            // link-credit": transfers that consume it leave the receiver nothing to wait for.
            if self.spent() {
                cx.end(&mut self.drain, ts, Some(at), EndWhy::Cleared);
            }
        }
        if d.awaits == Some(Awaits::Settlement) {
            self.waits(cx, d.start, ts, at);
        }
        if d.starts {
            self.judge_credit(cx, ts, at);
        }
    }

    /// The delivery started by `start` (the transfer `at`, seen at `ts`) awaits its
    /// settlement: it joins the waiting deliveries. All a quiet transfer (see
    /// [`Link::quiet_room`]) does to the link besides its delivery-count.
    #[inline(always)]
    pub fn waits(&mut self, cx: &mut Ctx<'_>, start: FrameRef, ts: Timestamp, at: FrameRef) {
        self.waiting.add(ts.0, start);
        self.waiting.refresh(cx, &cat::UNSETTLED, ts, at);
    }

    /// How many more deliveries the sender can start that would change nothing but the
    /// delivery-count and the waiting deliveries ([`Link::waits`], for one that awaits its
    /// settlement), and end or start nothing else (see [`Link::transfer`]): none while it holds
    /// a sender-idle or a credit-exhausted diagnosis, else those that leave credit (§2.6.7:
    /// link-credit is the delivery-limit less the delivery-count); any number when the credit
    /// is unknown.
    pub fn quiet_room(&self) -> u32 {
        if self.idle_no_count.is_some() || self.exhausted.is_some() {
            return 0;
        }
        match (self.limit, self.count) {
            (Some(g), Some(c)) if !g.exceeded_by(c) => g.unchanged_after(c),
            (Some(_), Some(_)) => 0,
            _ => u32::MAX,
        }
    }

    /// `n` deliveries started, each quiet (see [`Link::quiet_room`]): the delivery-count
    /// moves past them.
    pub fn started(&mut self, n: u32) {
        self.count = self.count.map(|c| c.wrapping_add(n));
    }

    /// A run of deliveries of the link was settled by the frame `at` (`run`, in the frame's
    /// order): each in turn, the last told it is (see [`Link::settled`]).
    ///
    /// A link in the common state (the unsettled condition, if any, not started; credit left
    /// and no credit diagnosis held; no redelivery loop to end) only has its deliveries leave
    /// the waiting set, and the condition refreshed once: in that state each settlement's
    /// judging finds nothing to do, and a removal cannot change it (it changes neither the
    /// credit nor the condition's start), so this reports what settling each in turn would.
    /// (With no redelivery loop held, a settlement has none to end.)
    pub fn settled_run(
        &mut self,
        cx: &mut Ctx<'_>,
        run: &[Settlement],
        ts: Timestamp,
        at: FrameRef,
    ) {
        if self.waiting.quiet()
            && self.exhausted.is_none()
            && self.redelivered.is_none()
            && !self.spent()
        {
            let keys = run.iter().map(|s| (ts.0 - s.after_us, s.start));
            self.waiting.remove_each(keys);
            self.waiting.refresh(cx, &cat::UNSETTLED, ts, at);
            return;
        }
        let last = run.len().saturating_sub(1);
        for (i, s) in run.iter().enumerate() {
            self.settled(cx, s, ts, at, i == last);
        }
    }

    /// A delivery of the link was settled by the frame `at`; `last`: the last the frame settles
    /// of the link (until then the unsettled condition is refreshed only when that reports
    /// something, see [`Waiting::quiet`]).
    #[inline]
    pub fn settled(
        &mut self,
        cx: &mut Ctx<'_>,
        s: &Settlement,
        ts: Timestamp,
        at: FrameRef,
        last: bool,
    ) {
        self.waiting.remove(ts.0 - s.after_us, s.start);
        if last || !self.waiting.quiet() {
            self.waiting.refresh(cx, &cat::UNSETTLED, ts, at);
        }
        if self.redelivered_at == Some(s.start) && s.outcome == "accepted" {
            cx.end(&mut self.redelivered, ts, Some(at), EndWhy::Cleared);
        }
        self.judge_credit(cx, ts, at);
    }

    /// A message of the link whose header says `count` earlier delivery attempts (`limit`:
    /// the threshold), started by `at`.
    pub fn redelivered(
        &mut self,
        cx: &mut Ctx<'_>,
        count: u32,
        limit: u32,
        ts: Timestamp,
        at: FrameRef,
    ) {
        if count < limit {
            return;
        }
        self.redelivered_at = Some(at);
        if self.redelivered.is_none() {
            self.redelivered = cx
                .arm(&cat::REDELIVERED, ts, at, None)
                .map(|c| c.with_n(u64::from(count)));
        }
    }

    /// Start what is due at `now`; `key` names the link.
    pub fn due(&mut self, cx: &mut Ctx<'_>, key: &FlowKey, now: i64) {
        let name = || key.label();
        self.waiting.current(cx, &cat::UNSETTLED);
        let conds: [(&mut Option<Cond>, &Detail); 6] = [
            (&mut self.no_credit, &|c| {
                format!(
                    "attached at {}; the receiver never granted link-credit",
                    c.place()
                )
            }),
            (&mut self.exhausted, &|c| {
                format!(
                    "link-credit used up at {} while the sender has {} message(s) available or unsettled; no flow renewed it",
                    c.place(),
                    c.n
                )
            }),
            (&mut self.idle_no_count, &|c| {
                format!(
                    "the receiver's flow at {} grants link-credit {} without delivery-count; the sender sent nothing since",
                    c.place(),
                    c.n
                )
            }),
            (&mut self.drain, &|c| {
                format!(
                    "drain asked at {} (link-credit {}); the sender sent no flow since",
                    c.place(),
                    c.n
                )
            }),
            (&mut self.waiting.cond, &|c| {
                format!(
                    "{} deliveries unsettled, the oldest since {}",
                    c.n,
                    c.place()
                )
            }),
            (&mut self.redelivered, &|c| {
                format!(
                    "the message at {} was delivered {} times before (header delivery-count)",
                    c.place(),
                    c.n
                )
            }),
        ];
        for (cond, detail) in conds {
            if let Some(c) = cond {
                cx.fire(c, now, ScopeKind::Link, &name, detail);
            }
        }
    }

    /// The link is gone (detached, or the connection ended): end every diagnosis of it.
    pub fn close(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, frame: Option<FrameRef>, why: EndWhy) {
        for c in [
            &mut self.no_credit,
            &mut self.exhausted,
            &mut self.idle_no_count,
            &mut self.drain,
            &mut self.waiting.cond,
            &mut self.redelivered,
        ] {
            cx.end(c, ts, frame, why);
        }
        self.waiting.clear();
    }
}
