//! The connection's channel map (AMQP 1.0 §2.5, §2.7.2, §2.7.8): begin pairing by
//! remote-channel, end, and routing every other session frame by channel to the [`Session`]
//! it belongs to (learned after a gap, reported otherwise). Link names are unique across the
//! connection, so the attach's name and anonymous-relay checks are judged here too.

use crate::base::{Timestamp, Violation};
use crate::codec::amqp10::{Attach, Begin, Detach, Disposition, Flow, Message, Role, Transfer};

use super::flow_checks::flow_without_handle_check;
use super::link::{Link, role_name};
use super::session::Session;
use super::{At, ConnectionTracker, peer_name, rules};

/// Where a peer's transfer went: the channel and handle it named, and the session and link
/// they map to (each id with its slot, [`crate::base::id_map::IdMap::slot`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Route {
    channel: u16,
    handle: u32,
    sid: u64,
    lid: u64,
    session_slot: usize,
    link_slot: Option<usize>,
}

impl ConnectionTracker {
    /// The session `at.d` sends `name` on `channel` for; learned after a gap, reported otherwise.
    #[inline]
    pub(crate) fn session_for(
        &mut self,
        at: At,
        channel: u16,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        match self.channels[at.d.index()].get(&channel) {
            Some(id) => Some(*id),
            None => self.session_unmapped(at, channel, name, out),
        }
    }

    /// [`ConnectionTracker::session_for`] of a channel `at.d` has no session on.
    #[cold]
    #[inline(never)]
    fn session_unmapped(
        &mut self,
        at: At,
        channel: u16,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        let d = at.d;
        if at.sender_missed() {
            let id = self.new_id();
            self.sessions.insert(id, Session::new(d, channel, false));
            self.channels[d.index()].insert(channel, id);
            return Some(id);
        }
        out.push(rules::SESSION_FRAME_ON_UNMAPPED_CHANNEL.violation(
            d,
            at.offset(),
            format!(
                "{name} on channel {channel}, where the {} has no session (no begin sent, or already ended)",
                peer_name(d)
            ),
        ));
        None
    }

    /// The session `at.d`'s frame on `channel` is for (reported when there is none).
    fn routed(
        &mut self,
        at: At,
        channel: u16,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<&mut Session> {
        let id = self.session_for(at, channel, name, out)?;
        self.sessions.get_mut(&id)
    }

    pub(crate) fn on_begin(&mut self, at: At, channel: u16, b: &Begin, out: &mut Vec<Violation>) {
        let (d, p) = (at.d, at.d.flip());
        if let Some(old) = self.channels[d.index()].remove(&channel) {
            out.push(rules::SESSION_BEGIN_ON_CHANNEL_IN_USE.violation(
                d,
                at.offset(),
                format!(
                    "begin on channel {channel}, which the {} already uses for a session it has not ended",
                    peer_name(d)
                ),
            ));
            if let Some(s) = self.sessions.get_mut(&old) {
                s.ended[d.index()] = true;
            }
        }
        let mut id = None;
        if let Some(rc) = b.remote_channel {
            let pending = self.channels[p.index()].get(&rc).copied().filter(|sid| {
                self.sessions
                    .get(sid)
                    .is_some_and(|s| s.channel[d.index()].is_none() && !s.ended[d.index()])
            });
            match pending {
                Some(sid) => id = Some(sid),
                None if at.partner_missed() => {}
                None => out.push(rules::SESSION_REMOTE_CHANNEL_ON_LOCAL_BEGIN.violation(
                    d,
                    at.offset(),
                    format!(
                        "begin on channel {channel} has remote-channel {rc}, but the {} has no begin on channel {rc} awaiting an answer{}",
                        peer_name(p),
                        if self.channels[p.index()].contains_key(&rc) {
                            " (that session is already mapped)"
                        } else {
                            ""
                        }
                    ),
                )),
            }
        }
        let id = match id {
            Some(sid) => sid,
            None => {
                let sid = self.new_id();
                let mut s = Session::new(d, channel, true);
                if b.remote_channel.is_none() {
                    s.initiator = Some(d);
                } else {
                    s.known = !at.partner_missed();
                }
                self.sessions.insert(sid, s);
                sid
            }
        };
        self.channels[d.index()].insert(channel, id);
        if let Some(s) = self.sessions.get_mut(&id) {
            s.begun(d, channel, b);
        }
    }

    pub(crate) fn on_end(&mut self, at: At, channel: u16, out: &mut Vec<Violation>) {
        let d = at.d;
        let Some(id) = self.session_for(at, channel, "end", out) else {
            return;
        };
        self.channels[d.index()].remove(&channel);
        self.unclosed_judged(Some(d), Some(id), "ended the session", out);
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        if s.on_end(at, out) {
            if let Some(s) = self.sessions.remove(&id) {
                for (lid, l) in &s.links {
                    self.names.remove(id, *lid, l);
                }
            }
        } else {
            // Its links left with `d`'s end (a session's end is its links' end: they are
            // walked once, as they leave).
            for (lid, l) in &s.links {
                self.names.update(id, *lid, l);
            }
        }
    }

    /// Link `lid` of session `sid` changed: its entries in the name index follow.
    fn reindex(&mut self, sid: u64, lid: u64) {
        if let Some(l) = self.sessions.get(&sid).and_then(|s| s.links.get(&lid)) {
            self.names.update(sid, lid, l);
        }
    }

    pub(crate) fn on_attach(&mut self, at: At, channel: u16, a: &Attach, out: &mut Vec<Violation>) {
        let Some(sid) = self.session_for(at, channel, "attach", out) else {
            return;
        };
        let d = at.d;
        let sender = match a.role {
            Role::Sender => d,
            Role::Receiver => d.flip(),
        };
        let name = a.name.as_str();
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        let freed = s.handles[d.index()].get(&a.handle).copied();
        s.attach_checks(at, a, out);
        if let Some(old) = freed {
            self.reindex(sid, old);
        }
        self.name_in_use_check(at, a, sender, out);
        let paired = self.names.first_awaiting(sid, name, d, sender);
        let lid = match paired {
            Some(k) => k,
            None => {
                let k = self.new_id();
                if let Some(s) = self.sessions.get_mut(&sid) {
                    let mut l = Link::new(sid, name.to_owned(), sender, s.known);
                    l.initiator = Some(d);
                    s.links.insert(k, l);
                }
                k
            }
        };
        self.reattached(d, sid, name, sender);
        let info = super::link::AttachInfo::of(a);
        self.anonymous_seen |= info.is_anonymous_sender();
        // The anonymous terminus (ANONYMOUS-RELAY): only an attach that creates a sending link
        // counts, not a sender's answer to a receiver's attach.
        if info.is_anonymous_sender() && paired.is_none() {
            self.anonymous_relay_checks(at, name, out);
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.attached(d, a, lid, info);
        }
        self.reindex(sid, lid);
    }

    /// A link name is unique per direction across the connection (§2.6.1): judged against the
    /// first (by creation) of the links still known attached under that name.
    fn name_in_use_check(
        &self,
        at: At,
        a: &Attach,
        sender: crate::base::Dir,
        out: &mut Vec<Violation>,
    ) {
        let d = at.d;
        let name = a.name.as_str();
        if let Some(dup) = self
            .names
            .first_attached(name, d, sender)
            .and_then(|(lid, sid)| self.sessions.get(&sid)?.links.get(&lid))
        {
            out.push(rules::LINK_NAME_IN_USE.violation(
                d,
                at.offset(),
                format!(
                    "attach {name:?} ({} from the {}) while the {} still has that link attached on handle {}",
                    role_name(a.role),
                    peer_name(d),
                    peer_name(d),
                    dup.handle[d.index()].unwrap_or_default()
                ),
            ));
        }
    }

    /// A sending link to the anonymous terminus needs ANONYMOUS-RELAY offered by the partner's
    /// open and desired by the sender's.
    fn anonymous_relay_checks(&self, at: At, name: &str, out: &mut Vec<Violation>) {
        let (d, p) = (at.d, at.d.flip());
        if let Some(po) = &self.peer(p).open
            && !po.offered.iter().any(|c| c == "ANONYMOUS-RELAY")
        {
            out.push(rules::ANONYMOUS_RELAY_NOT_OFFERED.violation(
                d,
                at.offset(),
                format!(
                    "sending link {name:?} targets the anonymous terminus (null address), but the {}'s open offered {:?}",
                    peer_name(p),
                    po.offered
                ),
            ));
        }
        if let Some(mo) = &self.peer(d).open
            && !mo.desired.iter().any(|c| c == "ANONYMOUS-RELAY")
        {
            out.push(rules::ANONYMOUS_RELAY_NOT_DESIRED.violation(
                d,
                at.offset(),
                format!(
                    "sending link {name:?} targets the anonymous terminus, but the {}'s open desired {:?}",
                    peer_name(d),
                    mo.desired
                ),
            ));
        }
    }

    pub(crate) fn on_detach(&mut self, at: At, channel: u16, x: &Detach, out: &mut Vec<Violation>) {
        let Some(sid) = self.session_for(at, channel, "detach", out) else {
            return;
        };
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        let Some((lid, unclosed)) = s.on_detach(at, x, out) else {
            return;
        };
        if s.links.get(&lid).is_some_and(super::link::Link::gone) {
            if let Some(l) = s.links.remove(&lid) {
                self.names.remove(sid, lid, &l);
            }
        } else {
            self.reindex(sid, lid);
        }
        if let Some(u) = unclosed {
            // An answer, or a detach crossing the closing one: judged once `d` reattaches
            // (crossing, fine) or moves on without doing so.
            self.detach_unclosed(u, out);
        }
    }

    pub(crate) fn on_flow(
        &mut self,
        at: At,
        channel: u16,
        f: &Flow,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        flow_without_handle_check(at, f, out);
        if let Some(s) = self.routed(at, channel, "flow", out) {
            s.on_flow(at, f, ts, out);
        }
    }

    pub(crate) fn on_transfer(
        &mut self,
        at: At,
        channel: u16,
        t: &Transfer,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        let d = at.d;
        // The run of transfers on the link the peer's last transfer was on: its channel and
        // handle name the same session and link (mapped, so judged at once).
        if let Some(r) = self.route[d.index()]
            && (r.channel, r.handle) == (channel, t.handle)
            && let Some(s) = self.sessions.at_or_get_mut(Some(r.session_slot), r.sid)
        {
            s.transfer_on(at, channel, r.lid, r.link_slot, t, ts, out);
            return;
        }
        let Some(sid) = self.session_for(at, channel, "transfer", out) else {
            return;
        };
        // The rule: a session known, whose link the transfer's handle names (or that may
        // report it), judges it at once.
        if let Some(session_slot) = self.sessions.slot(&sid)
            && let Some(s) = self.sessions.at_mut(session_slot, sid)
            && (!at.sender_missed() || s.handles[d.index()].contains_key(&t.handle))
        {
            if let Some(lid) = s.on_transfer(at, channel, t, ts, out) {
                self.route[d.index()] = Some(Route {
                    channel,
                    handle: t.handle,
                    sid,
                    lid,
                    session_slot,
                    link_slot: s.links.slot(&lid),
                });
            }
            return;
        }
        let attached = self
            .sessions
            .get(&sid)
            .is_some_and(|s| s.handles[d.index()].contains_key(&t.handle));
        if !attached && at.sender_missed() {
            let lid = self.new_id();
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.learn_sender_link(d, sid, t.handle, lid);
            }
            self.reindex(sid, lid);
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.on_transfer(at, channel, t, ts, out);
        }
    }

    pub(crate) fn on_disposition(
        &mut self,
        at: At,
        channel: u16,
        x: &Disposition,
        out: &mut Vec<Violation>,
    ) {
        if let Some(s) = self.routed(at, channel, "disposition", out) {
            s.on_disposition(at, x, out);
        }
    }

    /// A completed message: routed to its session and link (never reported if they are not
    /// known: its transfers were). Only a message on an anonymous link is judged: none is
    /// looked up before an attach to the anonymous terminus was seen.
    #[inline]
    pub(crate) fn on_message(&mut self, at: At, m: &Message, out: &mut Vec<Violation>) {
        if self.anonymous_seen {
            self.anonymous_message(at, m, out);
        }
    }

    /// [`ConnectionTracker::on_message`] once an attach to the anonymous terminus was seen.
    #[inline(never)]
    fn anonymous_message(&mut self, at: At, m: &Message, out: &mut Vec<Violation>) {
        let Some(sid) = self.channels[at.d.index()].get(&m.channel) else {
            return;
        };
        if let Some(s) = self.sessions.get(sid) {
            s.on_message(at, m, out);
        }
    }
}
