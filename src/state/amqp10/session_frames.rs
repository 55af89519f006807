//! The session's rules on the frames routed to it (AMQP 1.0 §2.5.6, §2.7.3, §2.7.4, §2.7.8):
//! handles within handle-max and not in use, the session windows a flow announces, its end;
//! and routing each link frame by handle to the [`Link`] it names (reported when `d` has not
//! attached that handle, unless `d` had a gap). Transfers and dispositions are in
//! `delivery_frames.rs`, the flow's consistency checks in `flow_checks.rs`.

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::amqp10::{Attach, Detach, Flow, Message, Role};

use super::crossing::UnclosedDetach;
use super::link::{AttachInfo, Link};
use super::serial::Grant;
use super::session::Session;
use super::{At, peer_name, rules};

impl Session {
    /// The link `at.d` refers to by `handle`; `None` (reported unless `d` had a gap) when `d`
    /// has not attached it.
    #[inline]
    pub(crate) fn link_for(
        &self,
        at: At,
        handle: u32,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        match self.handles[at.d.index()].get(&handle) {
            Some(id) => Some(*id),
            None => {
                self.unattached(at, handle, name, out);
                None
            }
        }
    }

    /// [`Session::link_for`] of a handle `at.d` has not attached: reported unless `d` had a
    /// gap.
    #[cold]
    #[inline(never)]
    fn unattached(&self, at: At, handle: u32, name: &str, out: &mut Vec<Violation>) {
        let d = at.d;
        if !at.sender_missed() {
            out.push(rules::LINK_UNATTACHED_HANDLE.violation(
                d,
                at.offset(),
                format!(
                    "{name} on handle {handle} (channel {}), which the {} has not attached",
                    self.channel[d.index()].map_or(-1, i32::from),
                    peer_name(d)
                ),
            ));
        }
    }

    /// The attach's handle: within the partner's handle-max, not in use by a link still known
    /// attached (a handle in use is freed from its old link).
    pub(crate) fn attach_checks(&mut self, at: At, a: &Attach, out: &mut Vec<Violation>) {
        let (d, p) = (at.d, at.d.flip());
        let name = a.name.as_str();
        if let Some(hm) = self.side[p.index()].handle_max
            && a.handle > hm
        {
            out.push(rules::SESSION_HANDLE_MAX_EXCEEDED.violation(
                d,
                at.offset(),
                format!(
                    "attach {name:?} on handle {}; the {}'s begin set handle-max {hm}",
                    a.handle,
                    peer_name(p)
                ),
            ));
        }
        let Some(old) = self.handles[d.index()].get(&a.handle).copied() else {
            return;
        };
        let Some(l) = self.links.get_mut(&old) else {
            return;
        };
        // A link of which bytes were missed may have been detached unseen.
        if l.known {
            out.push(rules::LINK_HANDLE_IN_USE.violation(
                d,
                at.offset(),
                format!(
                    "attach {name:?} on handle {}, still used by link {:?}",
                    a.handle, l.name
                ),
            ));
        }
        l.handle[d.index()] = None;
    }

    /// `d` attached link `lid` with `a`: its handle and role are recorded.
    pub(crate) fn attached(&mut self, d: Dir, a: &Attach, lid: u64, info: AttachInfo) {
        self.handles[d.index()].insert(a.handle, lid);
        let r = usize::from(a.role == Role::Receiver);
        if let Some(x) = self.roles[d.index()].get_mut(r) {
            *x = true;
        }
        let Some(l) = self.links.get_mut(&lid) else {
            return;
        };
        if a.role == Role::Sender {
            if l.attach[d.index()].is_some() {
                // Attached again: what the receiver makes of the new attach's count is not
                // proven; nothing is until the sender's next flow states it.
                l.heard = None;
                l.rcv_floor = None;
                l.unheard.clear();
            } else if l.known && self.known {
                l.heard = info.initial_delivery_count;
                if let Some(count) = l.heard {
                    l.unheard.stated(count);
                }
            }
        }
        l.attached(d, a, info);
    }

    /// A transfer on a handle never attached, after a gap: learn link `lid` (`d` sends on it,
    /// so `d` is its sender), state unknown.
    pub(crate) fn learn_sender_link(&mut self, d: Dir, sid: u64, handle: u32, lid: u64) {
        let mut l = Link::new(sid, format!("(handle {handle})"), d, false);
        l.handle[d.index()] = Some(handle);
        self.links.insert(lid, l);
        self.handles[d.index()].insert(handle, lid);
        self.roles[d.index()][0] = true;
        self.roles[d.flip().index()][1] = true;
    }

    /// `at.d`'s detach of the link it returns (which the connection forgets once neither end
    /// is attached), with a non-closing detach answering a closing one, whose verdict waits for
    /// what `d` does next.
    pub(crate) fn on_detach(
        &mut self,
        at: At,
        x: &Detach,
        out: &mut Vec<Violation>,
    ) -> Option<(u64, Option<UnclosedDetach>)> {
        let lid = self.link_for(at, x.handle, "detach", out)?;
        let l = self.links.get_mut(&lid)?;
        let unclosed = l.on_detach(at, x.closed, out);
        self.handles[at.d.index()].remove(&x.handle);
        Some((lid, unclosed))
    }

    /// `at.d` ended the session: its links leave with it (a drain unanswered is judged).
    /// True when both ends have ended it.
    pub(crate) fn on_end(&mut self, at: At, out: &mut Vec<Violation>) -> bool {
        let d = at.d;
        for l in self.links_in_order() {
            l.drain_check(d, at.offset(), "end", out);
            if l.handle[d.index()].take().is_some() {
                l.detached[d.index()] = Some(false);
            }
        }
        self.ended[d.index()] = true;
        self.handles[d.index()].clear();
        self.ended[0] && self.ended[1]
    }

    /// `at.d`'s flow: its session fields are judged and recorded (§2.5.6), then its link
    /// fields by the link it names.
    pub(crate) fn on_flow(&mut self, at: At, f: &Flow, ts: Timestamp, out: &mut Vec<Violation>) {
        let (d, p) = (at.d, at.d.flip());
        self.flow_checks(at, f, out);
        let base = f
            .next_incoming_id
            .or(self.side[p.index()].initial_outgoing_id);
        let me = &mut self.side[d.index()];
        me.next_incoming_id = f.next_incoming_id;
        me.incoming_window = Some(f.incoming_window);
        me.outgoing_window = Some(f.outgoing_window);
        me.next_outgoing_id = Some(f.next_outgoing_id);
        if let Some(base) = base {
            self.side[p.index()].limit.update(Grant {
                base,
                amount: f.incoming_window,
            });
        }
        let Some(h) = f.handle else {
            return;
        };
        let Some(lid) = self.link_for(at, h, "flow", out) else {
            return;
        };
        let Some(l) = self.links.get_mut(&lid) else {
            return;
        };
        l.on_flow(at, f, ts, out);
        // The sender states its count: a receiver that heard this flow knows it.
        if let (true, Some(dc)) = (l.sender == d && l.known && self.known, f.delivery_count) {
            l.heard = Some(dc);
            if let Some(p) = l.partial.as_mut() {
                p.uncounted = true;
            }
            l.unheard.stated(dc);
        }
    }

    /// A completed message: judged by the link it travelled on.
    pub(crate) fn on_message(&self, at: At, m: &Message, out: &mut Vec<Violation>) {
        if let Some(l) = self.handles[at.d.index()]
            .get(&m.handle)
            .and_then(|lid| self.links.get(lid))
        {
            l.message_check(at, m, out);
        }
    }
}
