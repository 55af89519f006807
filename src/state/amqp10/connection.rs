//! The connection endpoint as the spec models it (AMQP 1.0 §2.4.6): what one peer has sent
//! (header, open, close) and received, the spec's connection states, and the limits each open
//! announces (max-frame-size, channel-max, idle-time-out, capabilities).
//!
//! Pure state: no I/O, no clock (timestamps come with the frames). Never panics on input.

use crate::base::Timestamp;
use crate::codec::ProtocolHeader;
use crate::codec::amqp10::Open;

/// MIN-MAX-FRAME-SIZE (§2.8.19): the frame size both peers accept before negotiation.
pub const MIN_MAX_FRAME_SIZE: u32 = 512;

/// Protocol headers kept per peer: a legitimate one sends at most three (TLS, SASL, AMQP).
pub const MAX_HEADERS: usize = 8;

/// The connection states of AMQP 1.0 §2.4.6, as seen by one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum ConnState {
    /// Nothing sent or received.
    START,
    /// Header received, not sent.
    HDR_RCVD,
    /// Header sent, not received.
    HDR_SENT,
    /// Headers exchanged.
    HDR_EXCH,
    /// Header and open sent, nothing received.
    OPEN_PIPE,
    /// Header, open and close sent, nothing received.
    OC_PIPE,
    /// Headers exchanged, open received, open not sent.
    OPEN_RCVD,
    /// Headers exchanged, open sent, open not received.
    OPEN_SENT,
    /// Headers exchanged, open and close sent, no open received.
    CLOSE_PIPE,
    /// Opens exchanged.
    OPENED,
    /// Close received, not sent.
    CLOSE_RCVD,
    /// Close sent, not received.
    CLOSE_SENT,
    /// Close sent with an error, not received: incoming frames are discarded.
    DISCARDING,
    /// Closes exchanged.
    END,
}

impl ConnState {
    /// The spec's name (`OPENED` ...).
    pub fn name(self) -> &'static str {
        match self {
            ConnState::START => "START",
            ConnState::HDR_RCVD => "HDR_RCVD",
            ConnState::HDR_SENT => "HDR_SENT",
            ConnState::HDR_EXCH => "HDR_EXCH",
            ConnState::OPEN_PIPE => "OPEN_PIPE",
            ConnState::OC_PIPE => "OC_PIPE",
            ConnState::OPEN_RCVD => "OPEN_RCVD",
            ConnState::OPEN_SENT => "OPEN_SENT",
            ConnState::CLOSE_PIPE => "CLOSE_PIPE",
            ConnState::OPENED => "OPENED",
            ConnState::CLOSE_RCVD => "CLOSE_RCVD",
            ConnState::CLOSE_SENT => "CLOSE_SENT",
            ConnState::DISCARDING => "DISCARDING",
            ConnState::END => "END",
        }
    }
}

/// What one peer's open announced.
#[derive(Clone, Debug)]
pub struct OpenInfo {
    /// container-id.
    pub container_id: String,
    /// hostname.
    pub hostname: Option<String>,
    /// max-frame-size (default 4294967295).
    pub max_frame_size: u32,
    /// channel-max (default 65535).
    pub channel_max: u16,
    /// idle-time-out in ms (absent: none).
    pub idle_time_out: Option<u32>,
    /// offered-capabilities.
    pub offered: Vec<String>,
    /// desired-capabilities.
    pub desired: Vec<String>,
}

impl OpenInfo {
    /// From the typed open.
    pub fn of(o: &Open) -> Self {
        let syms =
            |v: &[crate::codec::amqp10::Symbol]| v.iter().map(|s| s.as_str().to_owned()).collect();
        OpenInfo {
            container_id: o.container_id.as_str().to_owned(),
            hostname: o.hostname.as_ref().map(|h| h.as_str().to_owned()),
            max_frame_size: o.max_frame_size,
            channel_max: o.channel_max,
            idle_time_out: o.idle_time_out,
            offered: syms(&o.offered_capabilities),
            desired: syms(&o.desired_capabilities),
        }
    }
}

/// What one peer has sent on the connection (its outgoing direction), and when.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// Protocol headers sent, in order (the first [`MAX_HEADERS`]).
    pub headers: Vec<ProtocolHeader>,
    /// The AMQP (not SASL) header was sent.
    pub amqp_header: bool,
    /// Its open, once sent.
    pub open: Option<OpenInfo>,
    /// When its open was seen.
    pub open_ts: Option<Timestamp>,
    /// Its close was sent (and whether it carried an error).
    pub close: Option<bool>,
    /// Timestamp and offset of its last frame.
    pub last_frame: Option<(Timestamp, u64)>,
    /// Bytes of this direction were missed: state it sent may be unknown.
    pub unknown: bool,
    /// A header-mismatch violation was already reported for this peer.
    pub mismatch_reported: bool,
}

impl Peer {
    /// Whether the peer has sent a header (for the AMQP layer, or any when `unknown`).
    pub fn header_sent(&self) -> bool {
        self.amqp_header || self.unknown
    }
    /// Whether the peer has sent an open (or may have, when unknown).
    pub fn open_sent(&self) -> bool {
        self.open.is_some() || self.unknown
    }
}

/// The state of the endpoint `me`, given what `partner` sent (the proxy sees both).
pub fn state_of(me: &Peer, partner: &Peer) -> ConnState {
    let hs = me.header_sent();
    let hr = partner.header_sent();
    let os = me.open_sent();
    let or = partner.open_sent();
    let cs = me.close;
    let cr = partner.close.is_some();
    match (cs, cr) {
        (Some(_), true) => ConnState::END,
        (Some(err), false) => {
            if !hr {
                ConnState::OC_PIPE
            } else if !or {
                ConnState::CLOSE_PIPE
            } else if err {
                ConnState::DISCARDING
            } else {
                ConnState::CLOSE_SENT
            }
        }
        (None, true) => ConnState::CLOSE_RCVD,
        (None, false) => match (hs, hr, os, or) {
            (_, _, true, true) => ConnState::OPENED,
            (_, false, true, false) => ConnState::OPEN_PIPE,
            (_, true, true, false) => ConnState::OPEN_SENT,
            (true, _, false, true) => ConnState::OPEN_RCVD,
            (false, _, false, true) => ConnState::HDR_RCVD,
            (true, true, false, false) => ConnState::HDR_EXCH,
            (true, false, false, false) => ConnState::HDR_SENT,
            (false, true, false, false) => ConnState::HDR_RCVD,
            (false, false, false, false) => ConnState::START,
        },
    }
}

/// What sending a frame of this kind in `state` means, per the state diagram (§2.4.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendCheck {
    /// Allowed.
    Ok,
    /// The sender has not sent its open yet and this is not one.
    NotOpenFirst,
    /// The sender already closed.
    AfterClose,
    /// Some other transition the diagram does not have (e.g. a second open).
    Illegal,
}

/// May an endpoint in `state` send a frame (`is_open`: the frame is an open)?
/// Every state is matched; the fallback arm is the violation.
pub fn may_send(state: ConnState, is_open: bool) -> SendCheck {
    use ConnState::*;
    match (state, is_open) {
        // Before its own header a peer sends nothing (only reachable on odd input).
        (START | HDR_RCVD, _) => SendCheck::Illegal,
        // The open is the first frame.
        (HDR_SENT | HDR_EXCH | OPEN_RCVD, true) => SendCheck::Ok,
        (HDR_SENT | HDR_EXCH | OPEN_RCVD, false) => SendCheck::NotOpenFirst,
        // After the open, anything but another open (pipelined frames included).
        (OPEN_PIPE | OPEN_SENT | OPENED | CLOSE_RCVD, false) => SendCheck::Ok,
        (OC_PIPE | CLOSE_PIPE | CLOSE_SENT | DISCARDING | END, _) => SendCheck::AfterClose,
        (OPEN_PIPE | OPEN_SENT | OPENED | CLOSE_RCVD, true) => SendCheck::Illegal,
    }
}

#[cfg(test)]
impl OpenInfo {
    /// An open that limits nothing (no frame size, channel or idle limit), for tests of what
    /// follows an open.
    pub(super) fn unlimited() -> OpenInfo {
        OpenInfo {
            container_id: "x".into(),
            hostname: None,
            max_frame_size: u32::MAX,
            channel_max: u16::MAX,
            idle_time_out: None,
            offered: vec![],
            desired: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(hdr: bool, open: bool, close: Option<bool>) -> Peer {
        Peer {
            amqp_header: hdr,
            open: open.then(OpenInfo::unlimited),
            close,
            ..Peer::default()
        }
    }

    #[test]
    fn states_follow_the_spec_table() {
        let n = peer(false, false, None);
        assert_eq!(state_of(&n, &n), ConnState::START);
        assert_eq!(state_of(&peer(true, false, None), &n), ConnState::HDR_SENT);
        assert_eq!(state_of(&n, &peer(true, false, None)), ConnState::HDR_RCVD);
        assert_eq!(state_of(&peer(true, true, None), &n), ConnState::OPEN_PIPE);
        assert_eq!(
            state_of(&peer(true, true, Some(false)), &n),
            ConnState::OC_PIPE
        );
        let h = peer(true, false, None);
        assert_eq!(state_of(&h, &h), ConnState::HDR_EXCH);
        assert_eq!(state_of(&peer(true, true, None), &h), ConnState::OPEN_SENT);
        assert_eq!(state_of(&h, &peer(true, true, None)), ConnState::OPEN_RCVD);
        assert_eq!(
            state_of(&peer(true, true, Some(false)), &h),
            ConnState::CLOSE_PIPE
        );
        let o = peer(true, true, None);
        assert_eq!(state_of(&o, &o), ConnState::OPENED);
        assert_eq!(
            state_of(&o, &peer(true, true, Some(false))),
            ConnState::CLOSE_RCVD
        );
        assert_eq!(
            state_of(&peer(true, true, Some(false)), &o),
            ConnState::CLOSE_SENT
        );
        assert_eq!(
            state_of(&peer(true, true, Some(true)), &o),
            ConnState::DISCARDING
        );
        let c = peer(true, true, Some(false));
        assert_eq!(state_of(&c, &c), ConnState::END);
    }

    #[test]
    fn the_diagram_allows_one_open_first() {
        assert_eq!(may_send(ConnState::HDR_EXCH, true), SendCheck::Ok);
        assert_eq!(
            may_send(ConnState::HDR_EXCH, false),
            SendCheck::NotOpenFirst
        );
        assert_eq!(may_send(ConnState::OPENED, true), SendCheck::Illegal);
        assert_eq!(
            may_send(ConnState::CLOSE_SENT, false),
            SendCheck::AfterClose
        );
        assert_eq!(may_send(ConnState::CLOSE_RCVD, false), SendCheck::Ok);
    }
}
