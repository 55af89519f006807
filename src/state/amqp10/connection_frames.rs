//! The connection's own rules (AMQP 1.0 §2.4, §2.7.1, §2.7.9, §2.8.19): what may be sent at all
//! after mismatched headers or inside the SASL layer, what the sender's connection state allows
//! (§2.4.7), the limits the partner's open set (max-frame-size, channel-max), and open and close.

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::amqp10::{Close, Frame, FrameBody, Open, Performative};
use crate::protocol::FrameEvent;

use super::connection::{MIN_MAX_FRAME_SIZE, OpenInfo, SendCheck, may_send, state_of};
use super::{ConnectionTracker, peer_name, rules};

/// A peer that has sent (or may have sent) its open and not its close may send any frame but
/// an open, whatever its partner did: its state is OPEN_PIPE, OPEN_SENT, OPENED or CLOSE_RCVD
/// ([`may_send`] allows each).
#[inline]
pub(crate) fn sends_freely(me: &super::connection::Peer) -> bool {
    me.close.is_none() && me.open_sent()
}

impl ConnectionTracker {
    /// Connection-level checks of an AMQP (type 0) or empty frame; false when the frame must not
    /// be processed further.
    pub(crate) fn connection_checks(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        f: &Frame,
        out: &mut Vec<Violation>,
    ) -> bool {
        if !self.layer_checks(d, fe.offset, f, out) || !self.state_check(d, fe.offset, f, out) {
            return false;
        }
        self.limit_checks(d, fe, f, out);
        true
    }

    /// No AMQP frame after the protocol headers differed, nor before the AMQP header that
    /// follows a successful SASL exchange; false when the frame must not be processed further.
    fn layer_checks(&mut self, d: Dir, offset: u64, f: &Frame, out: &mut Vec<Violation>) -> bool {
        if self.header_mismatch {
            if !self.peers[d.index()].mismatch_reported {
                self.peers[d.index()].mismatch_reported = true;
                out.push(rules::CONNECTION_FRAME_AFTER_HEADER_MISMATCH.violation(
                    d,
                    offset,
                    format!(
                        "{} after the protocol headers differed (client {:?}, server {:?})",
                        f.name(),
                        self.peer(Dir::C2S).headers.last(),
                        self.peer(Dir::S2C).headers.last()
                    ),
                ));
            }
            return false;
        }
        let missed = self.peers.iter().any(|p| p.unknown);
        if self.sasl.used && !self.peer(d).amqp_header && !missed {
            out.push(rules::SASL_HEADER_BEFORE_SUCCESS.violation(
                d,
                offset,
                format!(
                    "{} frame inside the SASL layer (no AMQP protocol header sent after a successful sasl-outcome)",
                    f.name()
                ),
            ));
            return false;
        }
        true
    }

    /// What the sender's connection state allows it to send (§2.4.7); false when the frame must
    /// not be processed further. A peer that [`sends_freely`] needs no state to judge a frame
    /// other than an open.
    #[inline]
    fn state_check(&self, d: Dir, offset: u64, f: &Frame, out: &mut Vec<Violation>) -> bool {
        let me = self.peer(d);
        let is_open = matches!(f.performative(), Some(Performative::Open(_)));
        if !is_open && sends_freely(me) {
            return true;
        }
        self.state_check_slow(d, offset, f, is_open, out)
    }

    /// [`ConnectionTracker::state_check`] judged by the sender's state.
    fn state_check_slow(
        &self,
        d: Dir,
        offset: u64,
        f: &Frame,
        is_open: bool,
        out: &mut Vec<Violation>,
    ) -> bool {
        let me = self.peer(d);
        let state = state_of(me, self.peer(d.flip()));
        let check = if is_open && me.unknown && me.open.is_none() {
            SendCheck::Ok
        } else {
            may_send(state, is_open)
        };
        match check {
            SendCheck::Ok => true,
            SendCheck::NotOpenFirst => {
                out.push(rules::CONNECTION_FIRST_FRAME_NOT_OPEN.violation(
                    d,
                    offset,
                    format!(
                        "the {}'s first frame is {} (state {}), not open",
                        peer_name(d),
                        f.name(),
                        state.name()
                    ),
                ));
                true
            }
            SendCheck::AfterClose => {
                out.push(rules::CONNECTION_FRAME_AFTER_CLOSE.violation(
                    d,
                    offset,
                    format!(
                        "the {} sent {} on channel {} after its close (state {})",
                        peer_name(d),
                        f.name(),
                        f.channel,
                        state.name()
                    ),
                ));
                false
            }
            SendCheck::Illegal => {
                out.push(rules::CONNECTION_ILLEGAL_FRAME_FOR_STATE.violation(
                    d,
                    offset,
                    format!(
                        "the {} sent {} in state {}{}",
                        peer_name(d),
                        f.name(),
                        state.name(),
                        if is_open {
                            " (it already sent its open)"
                        } else {
                            ""
                        }
                    ),
                ));
                !is_open
            }
        }
    }

    /// The limits the partner announced (or the pre-negotiation ones): max-frame-size, and
    /// channel-max (an empty frame before the partner's open only on channel 0).
    fn limit_checks(&self, d: Dir, fe: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        let p = d.flip();
        let offset = fe.offset;
        let partner = self.peer(p);
        let (max_frame, channel_max) = match (&partner.open, partner.unknown) {
            (Some(o), _) => (Some(o.max_frame_size), Some(o.channel_max)),
            (None, true) => (None, None),
            (None, false) => (Some(MIN_MAX_FRAME_SIZE), Some(0)),
        };
        let before_open = if partner.open.is_none() {
            " (no open received yet)"
        } else {
            ""
        };
        if let Some(max) = max_frame
            && fe.size() > u64::from(max)
        {
            out.push(rules::CONNECTION_FRAME_TOO_LARGE.violation(
                d,
                offset,
                format!(
                    "{} frame of {} bytes; the {}'s max-frame-size is {}{}",
                    f.name(),
                    fe.size(),
                    peer_name(p),
                    max,
                    before_open
                ),
            ));
        }
        let empty = matches!(f.body, FrameBody::Empty);
        if empty && f.channel != 0 && partner.open.is_none() && !partner.unknown {
            out.push(rules::CONNECTION_EMPTY_FRAME_CHANNEL.violation(
                d,
                offset,
                format!(
                    "empty frame on channel {} before the {}'s open was received",
                    f.channel,
                    peer_name(p)
                ),
            ));
        } else if let Some(cmax) = channel_max
            && f.channel > cmax
        {
            out.push(rules::CONNECTION_CHANNEL_MAX_EXCEEDED.violation(
                d,
                offset,
                format!(
                    "{} on channel {}; the {}'s channel-max is {}{}",
                    f.name(),
                    f.channel,
                    peer_name(p),
                    cmax,
                    before_open
                ),
            ));
        }
    }

    /// `d`'s open: its max-frame-size must be at least MIN-MAX-FRAME-SIZE; its limits are kept.
    pub(crate) fn on_open(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        o: &Open,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        if o.max_frame_size < MIN_MAX_FRAME_SIZE {
            out.push(rules::CONNECTION_MAX_FRAME_SIZE_TOO_SMALL.violation(
                d,
                fe.offset,
                format!(
                    "open announces max-frame-size {} (minimum 512)",
                    o.max_frame_size
                ),
            ));
        }
        let me = &mut self.peers[d.index()];
        me.open = Some(OpenInfo::of(o));
        me.open_ts = Some(ts);
    }

    /// `d`'s close: every link it sends on leaves (a drain unanswered is judged), and what it
    /// left unclosed is reported.
    pub(crate) fn on_close(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        c: &Close,
        out: &mut Vec<Violation>,
    ) {
        self.peers[d.index()].close = Some(c.error.is_some());
        let mut sessions: Vec<_> = self.sessions.iter_mut().collect();
        sessions.sort_unstable_by_key(|(id, _)| **id);
        for (_, s) in sessions {
            for l in s.links_in_order() {
                l.drain_check(d, fe.offset, "close", out);
            }
        }
        self.unclosed_judged(Some(d), None, "closed the connection", out);
    }
}

#[cfg(test)]
mod tests {
    use super::sends_freely;
    use crate::state::amqp10::connection::{OpenInfo, Peer, SendCheck, may_send, state_of};

    /// Every peer that has or has not sent its header, open and close (with or without an
    /// error), its bytes missed or not.
    fn peers() -> Vec<Peer> {
        let mut all = Vec::new();
        for bits in 0..32u8 {
            let close = match bits >> 3 {
                0 => None,
                1 => Some(false),
                _ => Some(true),
            };
            all.push(Peer {
                amqp_header: bits & 1 != 0,
                open: (bits & 2 != 0).then(OpenInfo::unlimited),
                unknown: bits & 4 != 0,
                close,
                ..Peer::default()
            });
        }
        all
    }

    #[test]
    fn a_peer_that_sends_freely_may_send_any_frame_but_an_open_whatever_its_partner_did() {
        let mut freely = 0;
        for me in &peers() {
            for partner in &peers() {
                if sends_freely(me) {
                    freely += 1;
                    let state = state_of(me, partner);
                    assert_eq!(may_send(state, false), SendCheck::Ok, "{me:?} {partner:?}");
                }
            }
        }
        assert!(freely > 100, "{freely}");
    }
}
