//! A session as both endpoints see it (AMQP 1.0 §2.5): the channel each peer uses, what each
//! announced in begin/flow (next-outgoing-id, windows, handle-max), the grant the partner gave
//! for each peer's transfers (§2.5.6), its links by handle and the unsettled deliveries.
//!
//! The session owns its links and judges the session's rules on the frames the connection
//! routes to it by channel (`session_frames.rs`, `flow_checks.rs`, `delivery_frames.rs`); it
//! routes link frames by handle to the [`Link`] they name.
//!
//! Never panics on input; bounded by the frames seen.

use crate::hash::HashMap;

use crate::base::Dir;
use crate::codec::amqp10::Begin;

use super::delivery::Deliveries;
use super::link::Link;
use super::serial::Limit;
use crate::base::id_map::IdMap;

/// The session states of AMQP 1.0 §2.5.5, from the client's endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum SessionState {
    /// No begin sent or received (or both ends sent).
    UNMAPPED,
    /// Begin sent, none received.
    BEGIN_SENT,
    /// Begin received, none sent.
    BEGIN_RCVD,
    /// Begins exchanged.
    MAPPED,
    /// End sent, none received.
    END_SENT,
    /// End received, none sent.
    END_RCVD,
}

impl SessionState {
    /// The spec's name (`MAPPED` ...).
    pub fn name(self) -> &'static str {
        match self {
            SessionState::UNMAPPED => "UNMAPPED",
            SessionState::BEGIN_SENT => "BEGIN_SENT",
            SessionState::BEGIN_RCVD => "BEGIN_RCVD",
            SessionState::MAPPED => "MAPPED",
            SessionState::END_SENT => "END_SENT",
            SessionState::END_RCVD => "END_RCVD",
        }
    }
}

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
    /// Its links by id (attached, or detached by one end only).
    pub links: IdMap<Link>,
    /// Its unsettled deliveries.
    pub deliveries: Deliveries,
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
            links: IdMap::default(),
            deliveries: Deliveries::default(),
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

    /// `d` sent its begin for this session on `channel`.
    pub fn begun(&mut self, d: Dir, channel: u16, b: &Begin) {
        self.channel[d.index()] = Some(channel);
        let side = &mut self.side[d.index()];
        side.begun = true;
        side.initial_outgoing_id = Some(b.next_outgoing_id);
        side.next_outgoing_id = Some(b.next_outgoing_id);
        side.incoming_window = Some(b.incoming_window);
        side.outgoing_window = Some(b.outgoing_window);
        side.handle_max = Some(b.handle_max);
        self.begin_grants();
    }

    /// Its links in the order they were created, for violations in a stable order whatever
    /// the maps' seeds.
    pub fn links_in_order(&mut self) -> Vec<&mut Link> {
        let mut v: Vec<(&u64, &mut Link)> = self.links.iter_mut().collect();
        v.sort_unstable_by_key(|(id, _)| **id);
        v.into_iter().map(|(_, l)| l).collect()
    }

    /// Bytes were missed: the session's and its links' history is no longer known.
    pub fn forget(&mut self) {
        self.known = false;
        for l in self.links.values_mut() {
            l.forget();
        }
    }

    /// The session's state (§2.5.5), from the client's side.
    pub fn state(&self) -> SessionState {
        let (c, s) = (Dir::C2S.index(), Dir::S2C.index());
        let sent = self.channel[c].is_some() || self.side[c].begun;
        let rcvd = self.channel[s].is_some() || self.side[s].begun;
        match (sent, rcvd, self.ended[c], self.ended[s]) {
            (_, _, true, true) => SessionState::UNMAPPED,
            (_, _, true, false) => SessionState::END_SENT,
            (_, _, false, true) => SessionState::END_RCVD,
            (true, true, false, false) => SessionState::MAPPED,
            (true, false, false, false) => SessionState::BEGIN_SENT,
            (false, true, false, false) => SessionState::BEGIN_RCVD,
            (false, false, false, false) => SessionState::UNMAPPED,
        }
    }

    /// The session's state name for display.
    pub fn state_name(&self) -> &'static str {
        self.state().name()
    }
}
