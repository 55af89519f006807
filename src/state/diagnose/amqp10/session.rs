//! AMQP 1.0 session windows (§2.5.6): each endpoint's next-outgoing-id and the transfer-id
//! limit it accepts (next-incoming-id plus incoming-window), from the begins and the flows; a
//! receiving endpoint whose window the partner's transfers used up, and that does not reopen
//! it, is diagnosed.

use crate::hash::HashMap;

use crate::base::{Dir, EndWhy, FrameRef, ScopeKind, Timestamp};
use crate::codec::amqp10::{Begin, Flow};

use super::super::catalog as cat;
use super::super::cond::{Cond, Ctx};
use crate::state::amqp10::serial::Grant;

/// One session endpoint, by the direction it sends.
#[derive(Debug, Default)]
struct End {
    next_outgoing: Option<u32>,
    /// What it accepts (§2.5.6: "The remote-incoming-window is computed as follows:
    /// next-incoming-id(flow) + incoming-window(flow) - next-outgoing-id(endpoint)"), judged
    /// in serial arithmetic as the state tracker judges it: a window of 2^31 or more, which
    /// clients grant to mean "no limit", is never used up.
    grant: Option<Grant>,
    /// Its begin's incoming-window, until the partner's begin tells where it starts.
    pending_window: Option<u32>,
    /// Its incoming window is used up.
    window: Option<Cond>,
}

/// The sessions of one connection.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Endpoints, each with its key: (the direction it sends, its channel).
    list: Vec<((Dir, u16), End)>,
    /// Positions in `list`, by key.
    index: HashMap<(Dir, u16), usize>,
    /// The partner endpoint's channel, by (direction, channel).
    peer: HashMap<(Dir, u16), u16>,
    /// The route of the sending endpoint the last transfer of each direction came from (see
    /// [`Sessions::route_of`]), by direction. Until a begin or an end changes `list` or
    /// `peer`: transfers come in runs from one endpoint each way, which find both endpoints
    /// without hashing, also when the runs of the two directions alternate.
    route: [Option<(u16, Option<Route>)>; 2],
}

/// A sending endpoint's position in `list`, and, when `peer` names its partner, that partner
/// is held and `peer` names the partner's partner: the partner's position and its partner's
/// channel.
type Route = (usize, Option<(usize, u16)>);

impl Sessions {
    /// The session endpoints held.
    pub fn entries(&self) -> usize {
        self.list.len()
    }

    /// The endpoint `key`, if held.
    fn get(&self, key: &(Dir, u16)) -> Option<&End> {
        let &i = self.index.get(key)?;
        Some(&self.list[i].1)
    }

    /// The endpoint `key`, added when new.
    fn get_or_add(&mut self, key: (Dir, u16)) -> &mut End {
        let i = *self.index.entry(key).or_insert_with(|| {
            self.list.push((key, End::default()));
            self.list.len() - 1
        });
        &mut self.list[i].1
    }

    /// Take the endpoint `key` out (the last one of the list takes its place).
    fn remove(&mut self, key: &(Dir, u16)) -> Option<End> {
        let i = self.index.remove(key)?;
        let (_, end) = self.list.swap_remove(i);
        if let Some((moved, _)) = self.list.get(i)
            && let Some(at) = self.index.get_mut(moved)
        {
            *at = i;
        }
        Some(end)
    }

    /// A begin of `dir` on `channel`.
    pub fn begin(&mut self, dir: Dir, channel: u16, b: &Begin) {
        self.route = [None; 2];
        let me = self.get_or_add((dir, channel));
        me.next_outgoing = Some(b.next_outgoing_id);
        me.pending_window = Some(b.incoming_window);
        let Some(r) = b.remote_channel else {
            return;
        };
        self.peer.insert((dir, channel), r);
        self.peer.insert((dir.flip(), r), channel);
        let partner_next = self.get(&(dir.flip(), r)).and_then(|p| p.next_outgoing);
        let me = self.get_or_add((dir, channel));
        me.grant = partner_next.map(|base| Grant {
            base,
            amount: b.incoming_window,
        });
        if let Some(&i) = self.index.get(&(dir.flip(), r)) {
            let p = &mut self.list[i].1;
            if p.grant.is_none() {
                p.grant = p.pending_window.map(|amount| Grant {
                    base: b.next_outgoing_id,
                    amount,
                });
            }
        }
    }

    /// The receiving endpoint `rcv`'s window against its partner's next-outgoing-id.
    fn judge(&mut self, cx: &mut Ctx<'_>, rcv: (Dir, u16), ts: Timestamp, at: FrameRef) {
        let (Some(&sc), Some(&i)) = (self.peer.get(&rcv), self.index.get(&rcv)) else {
            return;
        };
        self.judge_against(cx, i, sc, None, ts, at);
    }

    /// [`Sessions::judge`] of the receiving endpoint at `i` in `list`, whose partner's
    /// channel is `sc` (`sent`: a sending endpoint's channel and next-outgoing-id, known
    /// already to the caller).
    #[inline(always)]
    fn judge_against(
        &mut self,
        cx: &mut Ctx<'_>,
        i: usize,
        sc: u16,
        sent: Option<(u16, Option<u32>)>,
        ts: Timestamp,
        at: FrameRef,
    ) {
        let rdir = self.list[i].0.0;
        let next = match sent {
            Some((channel, next)) if channel == sc => next,
            _ => self.get(&(rdir.flip(), sc)).and_then(|s| s.next_outgoing),
        };
        let r = &mut self.list[i].1;
        let shut = matches!((r.grant, next), (Some(g), Some(n)) if g.exceeded_by(n));
        if shut {
            if r.window.is_none() {
                r.window = cx
                    .arm(&cat::SESSION_WINDOW, ts, at, None)
                    .map(|c| c.with_n(u64::from(next.unwrap_or(0))));
            }
        } else {
            cx.end(&mut r.window, ts, Some(at), EndWhy::Cleared);
        }
    }

    /// A flow of `dir` on `channel`.
    pub fn flow(
        &mut self,
        cx: &mut Ctx<'_>,
        dir: Dir,
        channel: u16,
        f: &Flow,
        ts: Timestamp,
        at: FrameRef,
    ) {
        let Some(&i) = self.index.get(&(dir, channel)) else {
            return;
        };
        let me = &mut self.list[i].1;
        me.next_outgoing = Some(f.next_outgoing_id);
        if let Some(ni) = f.next_incoming_id {
            me.grant = Some(Grant {
                base: ni,
                amount: f.incoming_window,
            });
        }
        self.judge(cx, (dir, channel), ts, at);
        if let Some(&r) = self.peer.get(&(dir, channel)) {
            self.judge(cx, (dir.flip(), r), ts, at);
        }
    }

    /// A transfer of `dir` on `channel`.
    #[inline(always)]
    pub fn transfer(
        &mut self,
        cx: &mut Ctx<'_>,
        dir: Dir,
        channel: u16,
        ts: Timestamp,
        at: FrameRef,
    ) {
        let route = match self.route[dir.index()] {
            Some((ch, route)) if ch == channel => route,
            _ => {
                let route = self.route_of((dir, channel));
                self.route[dir.index()] = Some((channel, route));
                route
            }
        };
        let Some((me, partner)) = route else {
            return;
        };
        let me = &mut self.list[me].1;
        let next = me.next_outgoing.map(|n| n.wrapping_add(1));
        me.next_outgoing = next;
        if let Some((r, sc)) = partner {
            self.judge_against(cx, r, sc, Some((channel, next)), ts, at);
        }
    }

    /// After a transfer of `dir` on `channel`: the sending endpoint's position in `list` (if
    /// held), and how many more of its transfers would change nothing but its next-outgoing-id
    /// (see [`Sessions::transfer`]): while the partner's window stays open with no diagnosis
    /// held, or stays used up with one held (§2.5.6: the window is the partner's
    /// next-incoming-id plus its incoming-window, less the next-outgoing-id, in serial
    /// arithmetic). The transfer that changes which is not among them.
    pub fn quiet_room(&self, dir: Dir, channel: u16) -> (Option<usize>, u32) {
        let Some((me, partner)) = self.route_at(dir, channel) else {
            return (None, u32::MAX);
        };
        let Some((r, sc)) = partner else {
            return (Some(me), u32::MAX);
        };
        let rcv = self.list.get(r).map(|(_, e)| e);
        let sender = self.list.get(me).map(|(_, e)| e);
        let (Some(rcv), Some(sender)) = (rcv, sender) else {
            return (Some(me), 0);
        };
        if sc != channel {
            return (Some(me), 0);
        }
        let room = match (rcv.grant, sender.next_outgoing) {
            // Open with no diagnosis held, or used up with one held: as long as that lasts.
            (Some(g), Some(n)) if g.exceeded_by(n) == rcv.window.is_some() => g.unchanged_after(n),
            (Some(_), Some(_)) => 0,
            _ if rcv.window.is_some() => 0,
            _ => u32::MAX,
        };
        (Some(me), room)
    }

    /// `n` transfers of the sending endpoint at `i` in `list`, each quiet (see
    /// [`Sessions::quiet_room`]): its next-outgoing-id moves past them.
    pub fn sent(&mut self, i: usize, n: u32) {
        if let Some((_, me)) = self.list.get_mut(i) {
            me.next_outgoing = me.next_outgoing.map(|c| c.wrapping_add(n));
        }
    }

    /// The route of `dir`'s sending endpoint on `channel`: the one its direction's last
    /// transfer found, when of the same channel, else looked up ([`Sessions::route_of`]).
    #[inline]
    fn route_at(&self, dir: Dir, channel: u16) -> Option<Route> {
        match self.route[dir.index()] {
            Some((ch, route)) if ch == channel => route,
            _ => self.route_of((dir, channel)),
        }
    }

    /// The sending endpoint `end`'s route (see [`Route`]), if it is held.
    fn route_of(&self, end: (Dir, u16)) -> Option<Route> {
        let &me = self.index.get(&end)?;
        let partner = self.peer.get(&end).and_then(|&r| {
            let rcv = (end.0.flip(), r);
            Some((*self.index.get(&rcv)?, *self.peer.get(&rcv)?))
        });
        Some((me, partner))
    }

    /// An end of `dir` on `channel`: the session is over for both endpoints.
    pub fn end(&mut self, cx: &mut Ctx<'_>, dir: Dir, channel: u16, ts: Timestamp, at: FrameRef) {
        self.route = [None; 2];
        let partner = self.peer.remove(&(dir, channel));
        for key in std::iter::once((dir, channel)).chain(partner.map(|r| (dir.flip(), r))) {
            self.peer.remove(&key);
            if let Some(mut e) = self.remove(&key) {
                cx.end(&mut e.window, ts, Some(at), EndWhy::ScopeClosed);
            }
        }
    }

    /// Some endpoint's incoming window is used up.
    pub fn any_window_shut(&self) -> bool {
        self.list.iter().any(|(_, e)| e.window.is_some())
    }

    /// Start what is due at `now`. A used-up window is a stall only while the partner has a
    /// link that could send on it (`would_send`, by the partner's direction and channel): a
    /// window used up by the last transfer a sender had, or together with the links' credit,
    /// holds nothing back.
    pub fn due(&mut self, cx: &mut Ctx<'_>, now: i64, would_send: impl Fn((Dir, u16)) -> bool) {
        for &mut ((dir, ch), ref mut e) in &mut self.list {
            let partner = self.peer.get(&(dir, ch)).map(|&p| (dir.flip(), p));
            if !partner.is_some_and(&would_send) {
                continue;
            }
            if let Some(c) = &mut e.window {
                let name = || {
                    let who = if dir == Dir::C2S { "client" } else { "server" };
                    format!("session of the {who} on channel {ch}")
                };
                let detail = |c: &Cond| {
                    format!(
                        "the partner's transfers reached the incoming-window at transfer-id {} ({}); no flow reopened it",
                        c.n,
                        c.place()
                    )
                };
                cx.fire(c, now, ScopeKind::Session, &name, &detail);
            }
        }
    }

    /// End every diagnosis at `ts`, for `why`.
    pub fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        for (_, mut e) in self.list.drain(..) {
            cx.end(&mut e.window, ts, None, why);
        }
        self.index.clear();
        self.peer.clear();
        self.route = [None; 2];
    }
}
