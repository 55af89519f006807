//! What a flow's fields must say about what its sender has seen (AMQP 1.0 §2.7.4, §2.5.6,
//! §2.6.7), judged at the flow, before the flow updates the tracked state:
//!
//! - next-incoming-id: set once the peer has received the partner's begin, not before; neither
//!   ahead of the transfers the partner has sent nor behind what the peer already said it had
//!   received.
//! - a receiver's delivery-count: not set before the sender's attach was seen, set after it,
//!   never ahead of the sender's own delivery-count, never behind the count its dispositions
//!   prove it received (`heard.rs`).
//! - a sender's answer to a drain: in drain mode with nothing available, it uses the credit up.
//!
//! "Seen" is judged from the proxy's view only where it is certain: a frame that had not passed
//! the proxy when the flow did cannot have been seen; a frame is known seen when the flow's
//! sender answered it (its begin carried remote-channel, its attach followed the partner's).
//! Nothing is judged on a session or link with missed bytes.

use crate::base::Violation;
use crate::codec::amqp10::Flow;
use crate::protocol::FrameEvent;

use super::link::Link;
use super::serial::after;
use super::session::Session;
use super::{At, peer_name, rules};

/// A flow without a handle sets none of the link fields (§2.7.4), whatever session it is on.
pub(crate) fn flow_without_handle_check(at: At, f: &Flow, out: &mut Vec<Violation>) {
    if f.handle.is_some() {
        return;
    }
    let set: Vec<&str> = [
        ("delivery-count", f.delivery_count.is_some()),
        ("link-credit", f.link_credit.is_some()),
        ("available", f.available.is_some()),
        ("drain", field_present(at.fe, "drain")),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(n, _)| *n)
    .collect();
    if !set.is_empty() {
        out.push(rules::FLOW_LINK_FIELDS_WITHOUT_HANDLE.violation(
            at.d,
            at.offset(),
            format!("flow without handle sets {}", set.join(", ")),
        ));
    }
}

/// The frame's performative has field `name` set (not null).
fn field_present(fe: &FrameEvent, name: &str) -> bool {
    match &fe.frame {
        crate::protocol::AnyFrame::Amqp10(f) => f.composite().is_some_and(|c| {
            c.def
                .field_index(name)
                .is_some_and(|i| c.fields(&f.raw).get(i).is_some_and(|v| !v.is_null()))
        }),
        _ => false,
    }
}

impl Session {
    /// The session fields of `at.d`'s flow on this session.
    pub(crate) fn flow_checks(&self, at: At, f: &Flow, out: &mut Vec<Violation>) {
        let (d, p) = (at.d, at.d.flip());
        let fe = at.fe;
        if !self.known || at.any_missed() {
            return;
        }
        let partner = &self.side[p.index()];
        let me = &self.side[d.index()];
        let ch = self.channel[d.index()].unwrap_or_default();
        match f.next_incoming_id {
            Some(n) if !partner.begun => out.push(rules::FLOW_NEXT_INCOMING_ID_BEFORE_BEGIN.violation(
                d,
                fe.offset,
                format!(
                    "flow on channel {ch} sets next-incoming-id {n}, but the {}'s begin has not been sent yet",
                    peer_name(p)
                ),
            )),
            // The flow's sender answered the partner's begin: it has received it.
            None if partner.begun && self.initiator == Some(p) => {
                out.push(rules::FLOW_NEXT_INCOMING_ID_MISSING.violation(
                    d,
                    fe.offset,
                    format!(
                        "flow on channel {ch} without next-incoming-id, after the {} answered the {}'s begin",
                        peer_name(d),
                        peer_name(p)
                    ),
                ))
            }
            Some(n) => {
                let sent = partner.next_outgoing_id;
                let said = me.next_incoming_id;
                let wrong = if let Some(next) = sent.filter(|&x| after(n, x)) {
                    Some(format!(
                        "next-incoming-id {n} is ahead of the {}'s transfers (its next transfer-id is {next})",
                        peer_name(p)
                    ))
                } else {
                    said.filter(|&m| after(m, n)).map(|m| {
                        format!("next-incoming-id {n} is behind the {m} this peer's earlier flow said it expected")
                    })
                };
                if let Some(why) = wrong {
                    out.push(rules::FLOW_NEXT_INCOMING_ID_INCONSISTENT.violation(
                        d,
                        fe.offset,
                        format!("flow on channel {ch}: {why}"),
                    ));
                }
            }
            None => {}
        }
    }
}

impl Link {
    /// The link fields of `at.d`'s flow on this link; true when it judged (and reported) the
    /// sender's answer to a drain, which is then no longer pending.
    pub(crate) fn flow_checks(&self, at: At, f: &Flow, out: &mut Vec<Violation>) -> bool {
        let (d, fe) = (at.d, at.fe);
        if !self.known || at.any_missed() {
            return false;
        }
        if self.sender == d {
            // §2.6.7 drain: "the sender will (after sending all available messages) advance
            // the delivery-count as much as possible, consuming all link-credit".
            let idle = f.available.is_none_or(|a| a == 0);
            if self.pending_drain.is_some()
                && f.drain
                && idle
                && let (Some(dc), Some(g)) = (f.delivery_count, self.credit.cur)
                && !g.exceeded_by(dc)
            {
                out.push(rules::LINK_DRAIN_NOT_HONOURED.violation(
                    d,
                    fe.offset,
                    format!(
                        "link {:?}: the sender answered a drain with delivery-count {dc} and nothing available, leaving link-credit {} unused",
                        self.name,
                        g.remaining(dc)
                    ),
                ));
                return true;
            }
            return false;
        }
        let sender_attached = self.sender_attach().is_some();
        match f.delivery_count {
            Some(dc) if !sender_attached => out.push(
                rules::FLOW_RECEIVER_DELIVERY_COUNT_BEFORE_ATTACH.violation(
                    d,
                    fe.offset,
                    format!(
                        "link {:?}: the receiver's flow sets delivery-count {dc} before the sender's attach was sent",
                        self.name
                    ),
                ),
            ),
            // The receiver answered the sender's attach: it has seen it.
            None if f.link_credit.is_some() && sender_attached && self.initiator == Some(self.sender) => {
                out.push(rules::FLOW_RECEIVER_DELIVERY_COUNT_MISSING.violation(
                    d,
                    fe.offset,
                    format!(
                        "link {:?}: the receiver's flow has no delivery-count, though it answered the sender's attach",
                        self.name
                    ),
                ))
            }
            Some(dc) => {
                if let Some(snd) = self.delivery_count.filter(|&snd| after(dc, snd)) {
                    out.push(rules::FLOW_RECEIVER_DELIVERY_COUNT_AHEAD.violation(
                        d,
                        fe.offset,
                        format!(
                            "link {:?}: the receiver's flow says delivery-count {dc}, ahead of the sender's {snd}",
                            self.name
                        ),
                    ));
                } else if let Some(floor) = self.rcv_floor.filter(|&fl| after(fl, dc)) {
                    out.push(rules::FLOW_RECEIVER_DELIVERY_COUNT_BEHIND.violation(
                        d,
                        fe.offset,
                        format!(
                            "link {:?}: the receiver's flow says delivery-count {dc}, but its dispositions show it received deliveries bringing the sender's count to {floor}: {} left out",
                            self.name,
                            floor.wrapping_sub(dc)
                        ),
                    ));
                }
            }
            None => {}
        }
        false
    }
}
