//! A session as both endpoints see it (AMQP 1.0 §2.5): the channel each peer uses, what each
//! announced in begin/flow (next-outgoing-id, windows, handle-max), the grant the partner gave
//! for each peer's transfers (§2.5.6), the link handles and the unsettled deliveries.
//!
//! Pure state; never panics on input; bounded by the frames seen.

use crate::hash::HashMap;

use bytes::Bytes;

use crate::event::Dir;

use super::delivery::Delivery;
use super::serial::Limit;

/// What one endpoint of a session announced and has done.
#[derive(Clone, Debug, Default)]
pub struct SessionSide {
    /// Its begin was seen.
    pub begun: bool,
    /// next-outgoing-id from its begin.
    pub initial_outgoing_id: Option<u32>,
    /// The transfer-id its next transfer gets (begin/flow, plus one per transfer).
    pub next_outgoing_id: Option<u32>,
    /// Its incoming-window (begin/flow).
    pub incoming_window: Option<u32>,
    /// Its outgoing-window (begin/flow).
    pub outgoing_window: Option<u32>,
    /// Its next-incoming-id (flow).
    pub next_incoming_id: Option<u32>,
    /// Its handle-max (begin).
    pub handle_max: Option<u32>,
    /// How far its transfers may go: the partner's next-incoming-id + incoming-window.
    pub limit: Limit,
}

/// One session, both endpoints.
#[derive(Clone, Debug)]
pub struct Session {
    /// Channel each peer sends this session's frames on (index: [`Dir::index`]).
    pub channel: [Option<u16>; 2],
    /// Each peer has sent its end.
    pub ended: [bool; 2],
    /// The peer whose begin came first (without remote-channel).
    pub initiator: Option<Dir>,
    /// False when part of its history was missed (created or continued across a gap).
    pub known: bool,
    /// Each endpoint's announced state.
    pub side: [SessionSide; 2],
    /// Handle -> link id, per sending peer.
    pub handles: [HashMap<u32, u64>; 2],
    /// Unsettled deliveries by delivery-id, per sending peer.
    pub deliveries: [HashMap<u32, Delivery>; 2],
    /// (link id, tag) -> delivery-id of unsettled deliveries, per sending peer.
    pub tags: [HashMap<(u64, Bytes), u32>; 2],
    /// The last new delivery-id, per sending peer.
    pub last_delivery_id: [Option<u32>; 2],
    /// Roles each peer has attached links with: `[dir][0 sender, 1 receiver]`.
    pub roles: [[bool; 2]; 2],
}

/// Most unsettled deliveries tracked per session and direction; beyond, new ones are not
/// tracked (memory stays bounded whatever the peer does).
pub const MAX_TRACKED_DELIVERIES: usize = 65_536;

impl Session {
    /// A session first seen on `channel` from `dir`.
    pub fn new(dir: Dir, channel: u16, known: bool) -> Self {
        let mut s = Session {
            channel: [None; 2],
            ended: [false; 2],
            initiator: None,
            known,
            side: Default::default(),
            handles: Default::default(),
            deliveries: Default::default(),
            tags: Default::default(),
            last_delivery_id: [None; 2],
            roles: [[false; 2]; 2],
        };
        s.channel[dir.index()] = Some(channel);
        s
    }

    /// Set the begin-derived grants (§2.5.6: without next-incoming-id, the remote
    /// incoming-window counts from the sender's initial-outgoing-id) once both begins are known.
    pub fn begin_grants(&mut self) {
        for d in [Dir::C2S, Dir::S2C] {
            let (me, other) = (d.index(), d.flip().index());
            if self.side[me].limit.cur.is_none()
                && let (Some(base), Some(amount), true) = (
                    self.side[me].initial_outgoing_id,
                    self.side[other].incoming_window,
                    self.side[other].begun,
                )
            {
                self.side[me]
                    .limit
                    .update(super::serial::Grant { base, amount });
            }
        }
    }

    /// The session's state for display (§2.5.5), from the client's side.
    pub fn state_name(&self) -> &'static str {
        let (c, s) = (Dir::C2S.index(), Dir::S2C.index());
        let sent = self.channel[c].is_some() || self.side[c].begun;
        let rcvd = self.channel[s].is_some() || self.side[s].begun;
        match (sent, rcvd, self.ended[c], self.ended[s]) {
            (_, _, true, true) => "UNMAPPED",
            (_, _, true, false) => "END_SENT",
            (_, _, false, true) => "END_RCVD",
            (true, true, false, false) => "MAPPED",
            (true, false, false, false) => "BEGIN_SENT",
            (false, true, false, false) => "BEGIN_RCVD",
            (false, false, false, false) => "UNMAPPED",
        }
    }
}
