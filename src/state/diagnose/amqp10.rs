//! AMQP 1.0 diagnoses: link credit (never granted, exhausted, a flow without delivery-count,
//! drain), session windows, unsettled deliveries, idle time-outs, links detached with an
//! error, CBS tokens near their expiry, redelivery loops.
//!
//! Links are keyed as the frame context names them ([`FlowKey`]: name and the direction its
//! transfers go); a link whose attach was not seen is not judged (its credit, counts and roles
//! are unknown).

use crate::base::escape::Quoted;
use crate::hash::HashMap;

use crate::base::{Dir, EndWhy, FlowKey, FrameRef, ScopeKind, Timestamp};
use crate::codec::amqp10::views::code;
use crate::codec::amqp10::{Frame, Performative, Role};
use crate::protocol::{AnyMessage, FrameEvent};

use super::catalog as cat;
use super::cond::{Cond, Ctx};
use super::{Idle, MAX_NAMES, MAX_SCOPES};

pub mod link;
pub mod quiet;
pub mod session;
use link::Link;
use quiet::Quiet;
use session::Sessions;

/// One AMQP 1.0 connection's diagnoses.
#[derive(Debug, Default)]
pub struct Diag10 {
    links: Links,
    sessions: Sessions,
    /// The silence of each peer (by the direction it sends), against its partner's
    /// idle-time-out.
    idle: [Idle; 2],
    /// Links detached with an error, by name, until re-attached.
    detached: HashMap<Box<str>, Cond>,
    /// CBS put-tokens by audience, until refreshed.
    tokens: HashMap<Box<str>, Cond>,
    /// The run of quiet transfers of each direction (by the direction they go), whose counts
    /// are applied ([`Diag10::settle_quiet`]) before any other frame or the clock reads them.
    quiet: [Option<Quiet>; 2],
}

#[cfg(test)]
mod tests;

#[cfg(test)]
thread_local! {
    /// No run of quiet transfers is made while set: every transfer is followed in full (the
    /// tests compare the diagnoses made both ways).
    static NO_RUNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a run of quiet transfers may start (always, but in the tests that turn runs off).
#[inline(always)]
fn runs_made() -> bool {
    #[cfg(test)]
    if NO_RUNS.with(|n| n.get()) {
        return false;
    }
    true
}

/// The frame `fe` as a reference.
fn at(fe: &FrameEvent) -> FrameRef {
    FrameRef {
        dir: fe.dir,
        offset: fe.offset,
    }
}

impl Diag10 {
    /// One frame: a transfer (most frames) by [`Diag10::transfer_frame`], any other
    /// performative by [`Diag10::performative`].
    #[inline]
    pub fn frame(&mut self, mut cx: Ctx<'_>, fe: &FrameEvent, f: &Frame, ts: Timestamp) {
        let idle = &mut self.idle[fe.dir.index()];
        idle.touch(cx.reborrow(), &cat::IDLE_TIMEOUT, ts, at(fe));
        match f.performative() {
            Some(Performative::Transfer(_)) => self.transfer_frame(cx, fe, f.channel(), ts),
            Some(p) => self.performative(cx, fe, f.channel(), p, ts),
            None => {}
        }
    }

    /// A transfer: its session's window and its link's credit, waiting deliveries and
    /// redelivery count, and a CBS put-token it carries. A transfer settles nothing (the frame
    /// context takes settlements from dispositions), so there are no settlements to follow.
    ///
    /// One that joins its direction's run of quiet transfers (see [`quiet`]) is only counted
    /// there (its delivery, if it awaits its settlement, joins the link's waiting ones); any
    /// other applies the runs' counts first, is followed in full, then, if of the kind a run
    /// holds, may start one.
    #[inline(never)]
    fn transfer_frame(&mut self, mut cx: Ctx<'_>, fe: &FrameEvent, channel: u16, ts: Timestamp) {
        let cx = &mut cx;
        if let Some(link) = self.quiet_transfer(fe, channel) {
            if let Some(d) = fe.context.delivery
                && d.awaits == Some(crate::base::Awaits::Settlement)
                && let Some((_, l)) = self.links.list.get_mut(link)
            {
                l.waits(cx, d.start, ts, at(fe));
            }
            return self.message(cx, fe, link, ts);
        }
        self.settle_quiet();
        self.sessions.transfer(cx, fe.dir, channel, ts, at(fe));
        let link = self.transfer(cx, fe, channel, ts);
        if !fe.context.settles.is_empty() {
            self.settlements(cx, fe, ts);
        }
        if let Some(link) = link.filter(|_| Quiet::may_join(&fe.context) && runs_made()) {
            let (session, room) = self.sessions.quiet_room(fe.dir, channel);
            let room = room.min(self.links.list.get(link).map_or(0, |(_, l)| l.quiet_room()));
            self.quiet[fe.dir.index()] = Quiet::new(channel, link, session, room);
        }
    }

    /// A transfer that joins its direction's run of quiet transfers, and whose message (if it
    /// completes one) has neither a header nor application-properties, is taken here whole
    /// ([`super::Diagnosing::quiet`]): [`Diag10::frame`] would only note its time against the
    /// idle time-out, count it in the run, and find no delivery-count or put-token in its
    /// message. Anything else, or a time-out watch that would start over, is left to it.
    #[inline]
    fn quiet(&mut self, fe: &FrameEvent, ts: Timestamp) -> bool {
        let crate::protocol::AnyFrame::Amqp10(f) = &fe.frame else {
            return false;
        };
        if !matches!(f.performative(), Some(Performative::Transfer(_))) {
            return false;
        }
        // A delivery awaiting its settlement joins a waiting set, which needs the context.
        if !self.idle[fe.dir.index()].notes_only() || !fe.context.starts_unawaited() {
            return false;
        }
        if let Some(Ok(AnyMessage::Amqp10(m))) = &fe.message
            && (m.has_section(code::HEADER) || m.has_section(code::APPLICATION_PROPERTIES))
        {
            return false;
        }
        if self.quiet_transfer(fe, f.channel()).is_none() {
            return false;
        }
        self.idle[fe.dir.index()].note(ts, at(fe));
        true
    }

    /// The position of the link of `fe`, a transfer on `channel`, when it joins its
    /// direction's run of quiet transfers.
    #[inline(always)]
    fn quiet_transfer(&mut self, fe: &FrameEvent, channel: u16) -> Option<usize> {
        let q = self.quiet[fe.dir.index()].as_mut()?;
        let key = fe.context.flow.as_ref()?;
        let link = q.link;
        let same = self
            .links
            .list
            .get(link)
            .is_some_and(|(k, _)| shared_key(k, key));
        (same && q.take(channel, &fe.context)).then_some(link)
    }

    /// The counts of the runs of quiet transfers applied: the sessions' next-outgoing-ids and
    /// the links' delivery-counts are what each transfer in turn would have left. The runs
    /// end (what comes next may change their room).
    #[inline]
    fn settle_quiet(&mut self) {
        for q in self.quiet.iter_mut().filter_map(Option::take) {
            if q.pending > 0 {
                if let Some((_, link)) = self.links.list.get_mut(q.link) {
                    link.started(q.pending);
                }
                if let Some(i) = q.session {
                    self.sessions.sent(i, q.pending);
                }
            }
        }
    }

    /// Any performative but a transfer, then the deliveries the frame settles.
    #[inline(never)]
    fn performative(
        &mut self,
        mut cx: Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        p: &Performative,
        ts: Timestamp,
    ) {
        let cx = &mut cx;
        self.settle_quiet();
        let here = at(fe);
        match p {
            Performative::Open(o) => {
                if let Some(ms) = o.idle_time_out.filter(|&ms| ms > 0) {
                    // The partner of the open's sender must send within it.
                    let watched = &mut self.idle[fe.dir.flip().index()];
                    watched.watch(cx, &cat::IDLE_TIMEOUT, ts, here, i64::from(ms) * 1000);
                }
            }
            Performative::Close(_) => {
                for i in &mut self.idle {
                    i.stop(cx, ts, EndWhy::ScopeClosed);
                }
            }
            Performative::Begin(b) => self.sessions.begin(fe.dir, channel, b),
            Performative::End(_) => self.sessions.end(cx, fe.dir, channel, ts, here),
            Performative::Attach(a) => self.attach(cx, fe, channel, a, ts),
            Performative::Flow(fl) => {
                self.sessions.flow(cx, fe.dir, channel, fl, ts, here);
                if let Some(key) = fe.context.flow.as_ref().filter(|k| k.link_name().is_some())
                    && let Some(link) = self.links.get_mut(key)
                {
                    link.flow(cx, fe.dir == link_sender(key), fl, ts, here);
                }
            }
            Performative::Transfer(_) => {
                return self.transfer_frame(cx.reborrow(), fe, channel, ts);
            }
            Performative::Disposition(_) => {}
            Performative::Detach(d) => {
                if let Some(key) = fe.context.flow.clone() {
                    if let Some(mut link) = self.links.remove(&key) {
                        link.close(cx, ts, Some(here), EndWhy::ScopeClosed);
                    }
                    if let (Some(e), Some(name)) = (&d.error, key.link_name()) {
                        let c = cx.arm(&cat::DETACHED, ts, here, None);
                        if let Some(c) = c {
                            cap(&mut self.detached, cx, ts);
                            let note = Quoted(e.condition.as_str()).to_string();
                            self.detached.insert(name.into(), c.noting(note));
                        }
                    }
                }
            }
        }
        if !fe.context.settles.is_empty() {
            self.settlements(cx, fe, ts);
        }
    }

    fn attach(
        &mut self,
        cx: &mut Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        a: &crate::codec::amqp10::Attach,
        ts: Timestamp,
    ) {
        let Some(key) = fe.context.flow.clone() else {
            return;
        };
        if let Some(c) = self.detached.remove(a.name.as_str()) {
            cx.finish(c, ts, Some(at(fe)), EndWhy::Cleared);
        }
        let from_sending_end = fe.dir == link_sender(&key);
        let Some(link) = self.links.get_or_add(key) else {
            return;
        };
        let sender = a.role == Role::Sender;
        if from_sending_end {
            link.sends_on(channel);
        }
        link.attach(cx, sender, a.initial_delivery_count, ts, at(fe));
    }

    /// A transfer of a link followed (its position returned): its credit and waiting
    /// deliveries, then [`Diag10::message`].
    #[inline(always)]
    fn transfer(
        &mut self,
        cx: &mut Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        ts: Timestamp,
    ) -> Option<usize> {
        let key = fe.context.flow.as_ref()?;
        let i = self.links.position(key)?;
        let (_, link) = self.links.list.get_mut(i)?;
        link.sends_on(channel);
        link.transfer(cx, &fe.context, ts, at(fe));
        self.message(cx, fe, i, ts);
        Some(i)
    }

    /// The message a transfer of the link at `link` completes, if any: its redelivery count,
    /// and a CBS put-token it carries (to any address).
    #[inline(always)]
    fn message(&mut self, cx: &mut Ctx<'_>, fe: &FrameEvent, link: usize, ts: Timestamp) {
        let Some(Ok(AnyMessage::Amqp10(m))) = &fe.message else {
            return;
        };
        if let Some(count) = m.delivery_count() {
            let n = cx.core.limits.count(&cat::REDELIVERED);
            if let Some((_, l)) = self.links.list.get_mut(link) {
                l.redelivered(cx, count, n, ts, at(fe));
            }
        }
        // A put-token request names its operation in the application-properties: a message
        // without them (the rule) is not looked into.
        if m.has_section(code::APPLICATION_PROPERTIES)
            && let Some((name, expires_ms)) = crate::codec::amqp10::cbs::put_token(m)
        {
            self.put_token(cx, name, expires_ms, ts, at(fe));
        }
    }

    /// A put-token for `name`, expiring at `expires_ms` (ms since the epoch): the earlier one
    /// for the name is refreshed; this one is due its threshold before it expires.
    fn put_token(
        &mut self,
        cx: &mut Ctx<'_>,
        name: &str,
        expires_ms: Option<i64>,
        ts: Timestamp,
        here: FrameRef,
    ) {
        if let Some(c) = self.tokens.remove(name) {
            cx.finish(c, ts, Some(here), EndWhy::Cleared);
        }
        let (Some(ms), crate::base::Limit::Before(lead)) =
            (expires_ms, cx.core.limits.limit(&cat::TOKEN_EXPIRING))
        else {
            return;
        };
        let expires = ms.saturating_mul(1000);
        cap(&mut self.tokens, cx, ts);
        let c = cx.at(&cat::TOKEN_EXPIRING, ts, here, expires.saturating_sub(lead));
        self.tokens.insert(name.into(), c.with_n(expires as u64));
    }

    /// The deliveries `fe` settles leave their links' waiting sets. A disposition settles a
    /// range of deliveries, of one link as a rule: a link is looked up once for a run of
    /// settlements of it, and given the run.
    #[inline(never)]
    fn settlements(&mut self, cx: &mut Ctx<'_>, fe: &FrameEvent, ts: Timestamp) {
        let settles = fe.context.settles.as_slice();
        let mut i = 0;
        while let Some(first) = settles.get(i) {
            let len = settles[i + 1..]
                .iter()
                .position(|s| !same_key(&s.flow, &first.flow))
                .map_or(settles.len() - i, |n| n + 1);
            if let Some(link) = self.links.get_mut(&first.flow) {
                link.settled_run(cx, &settles[i..i + len], ts, at(fe));
            }
            i += len;
        }
    }

    /// The entries held (see [`super::Diagnoser::entries`]).
    pub fn entries(&self) -> usize {
        self.links.len() + self.sessions.entries() + self.detached.len() + self.tokens.len()
    }

    /// Start what is due at `now`.
    pub fn due(&mut self, cx: &mut Ctx<'_>, now: i64) {
        self.settle_quiet();
        for (d, i) in self.idle.iter_mut().enumerate() {
            i.due(cx, now, if d == 0 { Dir::C2S } else { Dir::S2C });
        }
        for (key, link) in self.links.iter_mut() {
            link.due(cx, key, now);
        }
        if self.sessions.any_window_shut() {
            // The sending ends (direction, channel) with a link that could send now.
            let sending: crate::hash::HashSet<(Dir, u16)> = self
                .links
                .iter()
                .filter_map(|(key, l)| Some((link_sender(key), l.would_send_on()?)))
                .collect();
            self.sessions.due(cx, now, |end| sending.contains(&end));
        }
        for (name, c) in &mut self.detached {
            let name = || format!("link {}", Quoted(name));
            let detail = |c: &Cond| {
                format!(
                    "detached with error {} at {}, not re-attached",
                    c.note.as_deref().unwrap_or("?"),
                    c.place()
                )
            };
            cx.fire(c, now, ScopeKind::Link, &name, &detail);
        }
        for (name, c) in &mut self.tokens {
            let name = || format!("token {}", Quoted(name));
            let detail = |c: &Cond| {
                format!(
                    "put-token at {} expires at {}, and no put-token refreshed it",
                    c.place(),
                    Timestamp(c.n as i64).rfc3339()
                )
            };
            cx.fire(c, now, ScopeKind::Connection, &name, &detail);
        }
    }

    /// End every diagnosis at `ts`, for `why`.
    pub fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        self.settle_quiet();
        for i in &mut self.idle {
            i.stop(cx, ts, why);
        }
        for (_, mut link) in self.links.drain() {
            link.close(cx, ts, None, why);
        }
        self.sessions.end_all(cx, ts, why);
        for (_, c) in self.detached.drain().chain(self.tokens.drain()) {
            cx.finish(c, ts, None, why);
        }
    }
}

/// The links followed (at most [`MAX_SCOPES`]), by key: kept in a list, with an index by key
/// and the position of the one looked up last for each direction transfers go. Transfers and
/// dispositions come in runs of one link each way: a run finds its link without hashing its
/// name.
#[derive(Debug, Default)]
struct Links {
    list: Vec<(FlowKey, Link)>,
    /// Positions in `list`, by key.
    index: HashMap<FlowKey, usize>,
    /// The position of the link looked up last, by the direction its transfers go.
    last: [Option<usize>; 2],
}

/// `a == b` known at once: both name a link by the same shared name (the frame context hands
/// out clones of one key per link and direction). False says nothing.
#[inline]
fn shared_key(a: &FlowKey, b: &FlowKey) -> bool {
    match (a, b) {
        (
            FlowKey::Link {
                name: Some(x),
                unnamed: ux,
                sender: sx,
            },
            FlowKey::Link {
                name: Some(y),
                unnamed: uy,
                sender: sy,
            },
        ) => std::sync::Arc::ptr_eq(x, y) && ux == uy && sx == sy,
        _ => false,
    }
}

/// `a == b`, by [`shared_key`] first.
#[inline]
fn same_key(a: &FlowKey, b: &FlowKey) -> bool {
    shared_key(a, b) || a == b
}

impl Links {
    fn len(&self) -> usize {
        self.list.len()
    }

    /// The position of the link `key`.
    #[inline(never)]
    fn find(&mut self, key: &FlowKey) -> Option<usize> {
        let last = &mut self.last[link_sender(key).index()];
        if let Some(i) = *last {
            let held = &mut self.list[i].0;
            if shared_key(held, key) {
                return Some(i);
            }
            if held == key {
                // Equal, with a name shared by other frames (each end's attach makes one): the
                // one just seen is kept, as the next frames of the run bring it too.
                *held = key.clone();
                return Some(i);
            }
        }
        let i = *self.index.get(key)?;
        *last = Some(i);
        Some(i)
    }

    /// The position of the link `key`: the one looked up last for its direction is compared
    /// inline, by its shared name.
    #[inline]
    fn position(&mut self, key: &FlowKey) -> Option<usize> {
        match self.last[link_sender(key).index()] {
            Some(i) if shared_key(&self.list[i].0, key) => Some(i),
            _ => self.find(key),
        }
    }

    /// The link `key` (see [`Links::position`]).
    #[inline]
    fn get_mut(&mut self, key: &FlowKey) -> Option<&mut Link> {
        let i = self.position(key)?;
        Some(&mut self.list[i].1)
    }

    /// The link `key`, added when new unless [`MAX_SCOPES`] are followed already.
    fn get_or_add(&mut self, key: FlowKey) -> Option<&mut Link> {
        let i = match self.find(&key) {
            Some(i) => i,
            None if self.list.len() >= MAX_SCOPES => return None,
            None => {
                let i = self.list.len();
                self.index.insert(key.clone(), i);
                self.list.push((key, Link::default()));
                i
            }
        };
        Some(&mut self.list[i].1)
    }

    /// Take the link `key` out (the last one of the list takes its place).
    fn remove(&mut self, key: &FlowKey) -> Option<Link> {
        let i = self.index.remove(key)?;
        self.last = [None; 2];
        let (_, link) = self.list.swap_remove(i);
        if let Some((moved, _)) = self.list.get(i)
            && let Some(at) = self.index.get_mut(moved)
        {
            *at = i;
        }
        Some(link)
    }

    fn iter(&self) -> impl Iterator<Item = (&FlowKey, &Link)> {
        self.list.iter().map(|(k, l)| (k, l))
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (&FlowKey, &mut Link)> {
        self.list.iter_mut().map(|(k, l)| (&*k, l))
    }

    /// Take every link out.
    fn drain(&mut self) -> impl Iterator<Item = (FlowKey, Link)> + '_ {
        self.index.clear();
        self.last = [None; 2];
        self.list.drain(..)
    }
}

/// The direction a link's transfers go.
fn link_sender(key: &FlowKey) -> Dir {
    match key {
        FlowKey::Link { sender, .. } => *sender,
        FlowKey::Channel(_) => Dir::S2C,
    }
}

/// Room for one more name in `names`: at [`MAX_NAMES`], the entries not started go (they are
/// only a watch), else all (each ends, as its state is no longer kept).
fn cap(names: &mut HashMap<Box<str>, Cond>, cx: &mut Ctx<'_>, ts: Timestamp) {
    if names.len() < MAX_NAMES {
        return;
    }
    names.retain(|_, c| c.started.is_some());
    if names.len() >= MAX_NAMES {
        for (_, c) in names.drain() {
            cx.finish(c, ts, None, EndWhy::Unknown);
        }
    }
}

impl super::Diagnosing for Diag10 {
    fn entries(&self) -> usize {
        Diag10::entries(self)
    }
    fn due(&mut self, cx: &mut Ctx<'_>, now: i64) {
        Diag10::due(self, cx, now)
    }
    fn frame(&mut self, cx: Ctx<'_>, fe: &FrameEvent, ts: Timestamp) {
        if let crate::protocol::AnyFrame::Amqp10(f) = &fe.frame {
            Diag10::frame(self, cx, fe, f, ts)
        }
    }
    fn quiet(&mut self, fe: &FrameEvent, ts: Timestamp) -> bool {
        Diag10::quiet(self, fe, ts)
    }
    fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        Diag10::end_all(self, cx, ts, why)
    }
}
