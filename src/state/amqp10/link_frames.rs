//! The link's rules on the frames its session routes to it (AMQP 1.0 §2.6, §2.7.3, §2.7.4,
//! §2.6.7): recording each end's attach and detach, a drain the sender leaves unanswered, the
//! flow-control state a flow updates (delivery-count, the receiver's grant, available, drain),
//! and the anonymous terminus's `to` on completed messages. Transfers are in
//! `delivery_frames.rs`, the flow's consistency checks in `flow_checks.rs`.

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::DecodeError;
use crate::codec::amqp10::{Attach, Flow, Message, Role};

use super::crossing::UnclosedDetach;
use super::link::{AttachInfo, Link};
use super::serial::{Grant, after};
use super::{At, peer_name, rules};

impl Link {
    /// `d` attached the link with `a` (`info` its summary).
    pub(crate) fn attached(&mut self, d: Dir, a: &Attach, info: AttachInfo) {
        self.handle[d.index()] = Some(a.handle);
        self.detached[d.index()] = None;
        if a.role == Role::Sender && self.delivery_count.is_none() {
            self.delivery_count = info.initial_delivery_count;
        }
        // §2.6.7: "In the event that the receiver does not yet know the delivery-count
        // ... the sender MUST assume that the delivery-count_rcv is the first
        // delivery-count_snd sent from sender to receiver, i.e., the delivery-count_snd
        // specified in the flow state carried by the initial attach frame".
        if a.role == Role::Sender
            && std::mem::take(&mut self.credit_awaits_attach)
            && let (Some(base), Some(amount)) = (info.initial_delivery_count, self.rcv_link_credit)
        {
            self.credit.update(Grant { base, amount });
        }
        self.attach[d.index()] = Some(info);
    }

    /// A sender that leaves (`what`: detach, end, close) with a drain request unanswered.
    pub(crate) fn drain_check(
        &mut self,
        d: Dir,
        offset: u64,
        what: &str,
        out: &mut Vec<Violation>,
    ) {
        if self.sender != d || self.handle[d.index()].is_none() {
            return;
        }
        if let Some(at) = self.pending_drain.take() {
            out.push(rules::LINK_DRAIN_NOT_HONOURED.violation(
                d,
                offset,
                format!(
                    "link {:?}: the {} sent {what} without answering the drain request at offset {at} (link-credit still {})",
                    self.name,
                    peer_name(d),
                    self.link_credit().unwrap_or_default()
                ),
            ));
        }
    }

    /// `at.d` detached the link (`closed`); returns the detach when it answers (or crosses) the
    /// partner's closing detach without closing, for its verdict to wait (§2.6.6).
    pub(crate) fn on_detach(
        &mut self,
        at: At,
        closed: bool,
        out: &mut Vec<Violation>,
    ) -> Option<UnclosedDetach> {
        let d = at.d;
        self.drain_check(d, at.offset(), "detach", out);
        let unclosed = (self.detached[d.flip().index()] == Some(true) && !closed && self.known)
            .then(|| UnclosedDetach {
                session: self.session,
                name: self.name.clone(),
                sender: self.sender,
                by: d,
                offset: at.offset(),
            });
        self.handle[d.index()] = None;
        self.detached[d.index()] = Some(closed);
        unclosed
    }

    /// `at.d`'s flow naming this link: judged, then recorded (§2.6.7).
    pub(crate) fn on_flow(&mut self, at: At, f: &Flow, ts: Timestamp, out: &mut Vec<Violation>) {
        if self.flow_checks(at, f, out) {
            self.pending_drain = None;
        }
        if self.sender == at.d {
            self.sender_flow(at, f, out);
        } else {
            self.receiver_flow(at, f);
        }
        self.sample(ts);
    }

    /// The sender's flow: its delivery-count (required, never behind what it sent), the grant
    /// it acts on, whether it answered a drain, `available`.
    fn sender_flow(&mut self, at: At, f: &Flow, out: &mut Vec<Violation>) {
        let d = at.d;
        match f.delivery_count {
            None => out.push(rules::FLOW_SENDER_DELIVERY_COUNT_MISSING.violation(
                d,
                at.offset(),
                format!(
                    "link {:?}: the sender's flow has no delivery-count",
                    self.name
                ),
            )),
            Some(dc) => {
                let behind = self
                    .delivery_count
                    .filter(|&cur| self.known && after(cur, dc));
                if let Some(cur) = behind {
                    out.push(rules::FLOW_SENDER_DELIVERY_COUNT_BEHIND.violation(
                        d,
                        at.offset(),
                        format!(
                            "link {:?}: the sender's flow says delivery-count {dc}, but it has sent {} more deliveries since (its delivery-count is {cur})",
                            self.name,
                            cur.wrapping_sub(dc)
                        ),
                    ));
                }
                // A count behind the sender's own deliveries is its error, reported above: the
                // count its transfers imply stays, so a receiver that counted them is not
                // blamed for it (answering a violation is not a violation).
                if behind.is_none() {
                    self.delivery_count = Some(dc);
                }
                // §2.7.4: the sender's link-credit is "the last known value seen from the
                // receiver": its flow shows which grant it acts on.
                if let Some(lc) = f.link_credit {
                    self.credit.seen_end(dc.wrapping_add(lc));
                }
                if self.pending_drain.is_some()
                    && self.credit.cur.is_some_and(|g| g.exceeded_by(dc))
                {
                    self.pending_drain = None;
                }
            }
        }
        self.available = f.available;
    }

    /// The receiver's flow: its grant (counted from the sender's initial delivery-count when it
    /// gives none) and drain request.
    fn receiver_flow(&mut self, at: At, f: &Flow) {
        self.drain = f.drain;
        let Some(credit) = f.link_credit else {
            if !f.drain {
                self.pending_drain = None;
            }
            return;
        };
        self.rcv_link_credit = Some(credit);
        // §2.6.7: without delivery-count, the receiver means the sender's initial one.
        let base = f
            .delivery_count
            .or_else(|| self.sender_attach().and_then(|a| a.initial_delivery_count));
        self.credit_awaits_attach = base.is_none();
        if let Some(base) = base {
            self.credit.update(Grant {
                base,
                amount: credit,
            });
        }
        self.pending_drain = (f.drain && credit > 0).then_some(at.offset());
        if let (Some(_), Some(dc)) = (self.pending_drain, self.delivery_count)
            && self.credit.cur.is_some_and(|g| g.exceeded_by(dc))
        {
            self.pending_drain = None;
        }
    }

    /// The delivery `delivery_id` the sender completed on the link, in `format`, whose bare
    /// message does not decode (`e`). Judged only in the AMQP message format (0: other formats
    /// encode their payload as they define) and when none of the sender's bytes were missed (a
    /// delivery begun before them would be decoded from its middle); bytes the message's size
    /// or the configured body limit left out are never decoded, so never judged.
    pub(crate) fn message_decode_check(
        &self,
        at: At,
        delivery_id: Option<u32>,
        format: Option<u32>,
        e: &DecodeError,
        out: &mut Vec<Violation>,
    ) {
        if format != Some(0) || at.sender_missed() || self.sender != at.d {
            return;
        }
        out.push(rules::MESSAGE_MALFORMED.violation(
            at.d,
            at.offset(),
            format!(
                "message (delivery-id {}) on link {:?} does not decode: {} in {} (stream offset {})",
                delivery_id.map_or("?".into(), |i| i.to_string()),
                self.name,
                e.kind,
                e.path_string(),
                e.offset
            ),
        ));
    }

    /// A completed message the sender sent on the link: to the anonymous terminus, it must
    /// carry `to`.
    pub(crate) fn message_check(&self, at: At, m: &Message, out: &mut Vec<Violation>) {
        if !self.is_anonymous() || self.sender != at.d {
            return;
        }
        let to = m.properties().and_then(|p| p.to).filter(|v| !v.is_null());
        if to.is_none() {
            out.push(rules::ANONYMOUS_MESSAGE_WITHOUT_TO.violation(
                at.d,
                at.offset(),
                format!(
                    "message (delivery-id {}) on anonymous link {:?} has no properties.to: the routing node cannot route it",
                    m.delivery_id.map_or("?".into(), |i| i.to_string()),
                    self.name
                ),
            ));
        }
    }
}
