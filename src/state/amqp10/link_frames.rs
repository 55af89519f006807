//! Link frames (AMQP 1.0 §2.6, §2.7.3, §2.7.4, §2.7.7): attach pairing by name and direction,
//! handles, detach, and flow (session windows of §2.5.6 and link credit of §2.6.7).

use crate::codec::amqp10::{Attach, Detach, Flow, Role};
use crate::event::{Dir, FrameEvent, Timestamp, Violation};

use super::link::{AttachInfo, Link, role_name};
use super::serial::{Grant, after};
use super::{ConnectionTracker, peer_name, rules};

impl ConnectionTracker {
    /// The link `d` refers to by `handle` on session `sid`; `None` (reported unless `d` had a
    /// gap) when `d` has not attached it.
    pub(crate) fn link_for(
        &mut self,
        d: Dir,
        sid: u64,
        handle: u32,
        fe: &FrameEvent,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        let s = self.sessions.get(&sid)?;
        if let Some(id) = s.handles[d.index()].get(&handle) {
            return Some(*id);
        }
        if !self.peer(d).unknown {
            out.push(rules::LINK_UNATTACHED_HANDLE.violation(
                d,
                fe.offset,
                format!(
                    "{name} on handle {handle} (channel {}), which the {} has not attached",
                    s.channel[d.index()].map_or(-1, i32::from),
                    peer_name(d)
                ),
            ));
        }
        None
    }

    pub(crate) fn on_attach(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        channel: u16,
        a: &Attach,
        out: &mut Vec<Violation>,
    ) {
        let Some(sid) = self.session_for(d, channel, fe, "attach", out) else {
            return;
        };
        let p = d.flip();
        let name = a.name.as_str().to_owned();
        let sender = match a.role {
            Role::Sender => d,
            Role::Receiver => p,
        };
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        let session_known = s.known;
        if let Some(hm) = s.side[p.index()].handle_max
            && a.handle > hm
        {
            out.push(rules::SESSION_HANDLE_MAX_EXCEEDED.violation(
                d,
                fe.offset,
                format!(
                    "attach {name:?} on handle {}; the {}'s begin set handle-max {hm}",
                    a.handle,
                    peer_name(p)
                ),
            ));
        }
        if let Some(old) = s.handles[d.index()].get(&a.handle).copied() {
            // A link of which bytes were missed may have been detached unseen.
            if self.links.get(&old).is_some_and(|l| l.known) {
                out.push(rules::LINK_HANDLE_IN_USE.violation(
                    d,
                    fe.offset,
                    format!(
                        "attach {name:?} on handle {}, still used by link {:?}",
                        a.handle,
                        self.links.get(&old).map_or("?", |l| l.name.as_str())
                    ),
                ));
            }
            if let Some(l) = self.links.get_mut(&old) {
                l.handle[d.index()] = None;
            }
        }
        if let Some(dup) = self
            .links
            .values()
            .find(|l| l.name == name && l.sender == sender && l.handle[d.index()].is_some())
            && dup.known
        {
            out.push(rules::LINK_NAME_IN_USE.violation(
                d,
                fe.offset,
                format!(
                    "attach {name:?} ({} from the {}) while the {} still has that link attached on handle {}",
                    role_name(a.role),
                    peer_name(d),
                    peer_name(d),
                    dup.handle[d.index()].unwrap_or_default()
                ),
            ));
        }
        // Pair with the partner's attach of the same name and direction in this session.
        let paired = self
            .links
            .iter()
            .find(|(_, l)| {
                l.session == sid
                    && l.name == name
                    && l.sender == sender
                    && l.attach[d.index()].is_none()
                    && l.handle[p.index()].is_some()
            })
            .map(|(k, _)| *k);
        let lid = match paired {
            Some(k) => k,
            None => {
                let k = self.new_id();
                let mut l = Link::new(sid, name.clone(), sender, session_known);
                l.initiator = Some(d);
                self.links.insert(k, l);
                k
            }
        };
        self.reattached(d, sid, &name, sender);
        let info = AttachInfo::of(a);
        // The anonymous terminus (ANONYMOUS-RELAY): only an attach that creates a sending link
        // counts, not a sender's answer to a receiver's attach.
        if info.is_anonymous_sender() && paired.is_none() {
            if let Some(po) = &self.peer(p).open
                && !po.offered.iter().any(|c| c == "ANONYMOUS-RELAY")
            {
                out.push(rules::ANONYMOUS_RELAY_NOT_OFFERED.violation(
                        d,
                        fe.offset,
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
                        fe.offset,
                        format!(
                            "sending link {name:?} targets the anonymous terminus, but the {}'s open desired {:?}",
                            peer_name(d),
                            mo.desired
                        ),
                    ));
            }
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.handles[d.index()].insert(a.handle, lid);
            let r = usize::from(a.role == Role::Receiver);
            if let Some(x) = s.roles[d.index()].get_mut(r) {
                *x = true;
            }
        }
        if let Some(l) = self.links.get_mut(&lid) {
            l.handle[d.index()] = Some(a.handle);
            l.detached[d.index()] = None;
            if a.role == Role::Sender && l.delivery_count.is_none() {
                l.delivery_count = info.initial_delivery_count;
            }
            // §2.6.7: "In the event that the receiver does not yet know the delivery-count
            // ... the sender MUST assume that the delivery-count_rcv is the first
            // delivery-count_snd sent from sender to receiver, i.e., the delivery-count_snd
            // specified in the flow state carried by the initial attach frame".
            if a.role == Role::Sender
                && std::mem::take(&mut l.credit_awaits_attach)
                && let (Some(base), Some(amount)) = (info.initial_delivery_count, l.rcv_link_credit)
            {
                l.credit.update(Grant { base, amount });
            }
            l.attach[d.index()] = Some(info);
        }
    }

    /// A sender that leaves (`what`: detach, end, close) with a drain request unanswered.
    pub(crate) fn drain_check(
        &mut self,
        lid: u64,
        d: Dir,
        offset: u64,
        what: &str,
        out: &mut Vec<Violation>,
    ) {
        let Some(l) = self.links.get_mut(&lid) else {
            return;
        };
        if l.sender != d || l.handle[d.index()].is_none() {
            return;
        }
        if let Some(at) = l.pending_drain.take() {
            out.push(rules::LINK_DRAIN_NOT_HONOURED.violation(
                d,
                offset,
                format!(
                    "link {:?}: the {} sent {what} without answering the drain request at offset {at} (link-credit still {})",
                    l.name,
                    peer_name(d),
                    l.link_credit().unwrap_or_default()
                ),
            ));
        }
    }

    pub(crate) fn on_detach(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        channel: u16,
        x: &Detach,
        out: &mut Vec<Violation>,
    ) {
        let Some(sid) = self.session_for(d, channel, fe, "detach", out) else {
            return;
        };
        let Some(lid) = self.link_for(d, sid, x.handle, fe, "detach", out) else {
            return;
        };
        self.drain_check(lid, d, fe.offset, "detach", out);
        if let Some(l) = self.links.get(&lid)
            && l.detached[d.flip().index()] == Some(true)
            && !x.closed
            && l.known
        {
            // An answer, or a detach crossing the closing one: judged once `d` reattaches
            // (crossing, fine) or moves on without doing so.
            let u = super::crossing::UnclosedDetach {
                session: sid,
                name: l.name.clone(),
                sender: l.sender,
                by: d,
                offset: fe.offset,
            };
            self.detach_unclosed(u, out);
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.handles[d.index()].remove(&x.handle);
        }
        let gone = match self.links.get_mut(&lid) {
            Some(l) => {
                l.handle[d.index()] = None;
                l.detached[d.index()] = Some(x.closed);
                l.handle[0].is_none() && l.handle[1].is_none()
            }
            None => false,
        };
        if gone {
            self.links.remove(&lid);
        }
    }

    pub(crate) fn on_flow(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        channel: u16,
        f: &Flow,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        if f.handle.is_none() {
            let set: Vec<&str> = [
                ("delivery-count", f.delivery_count.is_some()),
                ("link-credit", f.link_credit.is_some()),
                ("available", f.available.is_some()),
                ("drain", field_present(fe, "drain")),
            ]
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
            if !set.is_empty() {
                out.push(rules::FLOW_LINK_FIELDS_WITHOUT_HANDLE.violation(
                    d,
                    fe.offset,
                    format!("flow without handle sets {}", set.join(", ")),
                ));
            }
        }
        let Some(sid) = self.session_for(d, channel, fe, "flow", out) else {
            return;
        };
        self.session_flow_checks(d, fe, sid, f, out);
        let p = d.flip();
        if let Some(s) = self.sessions.get_mut(&sid) {
            let base = f.next_incoming_id.or(s.side[p.index()].initial_outgoing_id);
            let me = &mut s.side[d.index()];
            me.next_incoming_id = f.next_incoming_id;
            me.incoming_window = Some(f.incoming_window);
            me.outgoing_window = Some(f.outgoing_window);
            me.next_outgoing_id = Some(f.next_outgoing_id);
            if let Some(base) = base {
                s.side[p.index()].limit.update(Grant {
                    base,
                    amount: f.incoming_window,
                });
            }
        }
        let Some(h) = f.handle else {
            return;
        };
        let Some(lid) = self.link_for(d, sid, h, fe, "flow", out) else {
            return;
        };
        let drain_judged = self.link_flow_checks(d, fe, lid, f, out);
        let Some(l) = self.links.get_mut(&lid) else {
            return;
        };
        if drain_judged {
            l.pending_drain = None;
        }
        if l.sender == d {
            match f.delivery_count {
                None => out.push(rules::FLOW_SENDER_DELIVERY_COUNT_MISSING.violation(
                    d,
                    fe.offset,
                    format!("link {:?}: the sender's flow has no delivery-count", l.name),
                )),
                Some(dc) => {
                    if let Some(cur) = l.delivery_count.filter(|&cur| l.known && after(cur, dc)) {
                        out.push(rules::FLOW_SENDER_DELIVERY_COUNT_BEHIND.violation(
                            d,
                            fe.offset,
                            format!(
                                "link {:?}: the sender's flow says delivery-count {dc}, but it has sent {} more deliveries since (its delivery-count is {cur})",
                                l.name,
                                cur.wrapping_sub(dc)
                            ),
                        ));
                    }
                    l.delivery_count = Some(dc);
                    // §2.7.4: the sender's link-credit is "the last known value seen from the
                    // receiver": its flow shows which grant it acts on.
                    if let Some(lc) = f.link_credit {
                        l.credit.seen_end(dc.wrapping_add(lc));
                    }
                    if l.pending_drain.is_some() && l.credit.cur.is_some_and(|g| g.exceeded_by(dc))
                    {
                        l.pending_drain = None;
                    }
                }
            }
            l.available = f.available;
        } else {
            l.drain = f.drain;
            if let Some(credit) = f.link_credit {
                l.rcv_link_credit = Some(credit);
                // §2.6.7: without delivery-count, the receiver means the sender's initial one.
                let base = f
                    .delivery_count
                    .or_else(|| l.sender_attach().and_then(|a| a.initial_delivery_count));
                l.credit_awaits_attach = base.is_none();
                if let Some(base) = base {
                    l.credit.update(Grant {
                        base,
                        amount: credit,
                    });
                }
                l.pending_drain = (f.drain && credit > 0).then_some(fe.offset);
                if let (Some(_), Some(dc)) = (l.pending_drain, l.delivery_count)
                    && l.credit.cur.is_some_and(|g| g.exceeded_by(dc))
                {
                    l.pending_drain = None;
                }
            } else if !f.drain {
                l.pending_drain = None;
            }
        }
        l.sample(ts);
    }
}

/// The frame's performative has field `name` set (not null).
fn field_present(fe: &FrameEvent, name: &str) -> bool {
    match &fe.frame {
        crate::codec::AnyFrame::Amqp10(f) => f.composite().is_some_and(|c| {
            c.def
                .field_index(name)
                .and_then(|i| c.fields.get(i))
                .is_some_and(|v| !v.is_null())
        }),
        _ => false,
    }
}
