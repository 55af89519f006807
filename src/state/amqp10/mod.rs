//! AMQP 1.0 state tracking: [`ConnectionTracker`] follows one connection from both directions
//! at once, modelling the client endpoint and the server endpoint each with its own view (the
//! proxy sees what each sent and, a moment earlier than the peer, what each received), and
//! reports every place a peer breaks the spec ([`rules`]).
//!
//! - [`connection`]: header exchange and the spec's connection states, the open's limits.
//! - [`sasl`]: the SASL layer's order and outcome.
//! - [`session`], [`link`], [`delivery`]: one tracker per scope. The connection keeps only the
//!   connection's rules (`connection_frames.rs`) and routes each frame by channel to its
//!   session (`routing.rs`); the session judges the session's rules and routes by handle to its
//!   link, which judges the link's (`session_frames.rs`, `link_frames.rs`, `flow_checks.rs`,
//!   `delivery_frames.rs`).
//! - [`serial`]: RFC-1982 arithmetic and grants (windows, credit).
//!
//! Sans-IO, no clock (frame timestamps only), never panics on input, memory bounded by what was
//! seen. After a gap (missed bytes, mid-stream start) state the tracker did not see is unknown:
//! it learns channels and handles instead of reporting them, and does not judge windows, credit
//! or delivery sequencing of what existed across the gap.

pub mod connection;
mod connection_frames;
pub mod context;
pub mod crossing;
pub mod delivery;
mod delivery_frames;
mod flow_checks;
pub mod heard;
#[cfg(test)]
mod keyed_lookups;
pub mod link;
mod link_frames;
pub mod link_index;
mod routing;
pub mod rules;
pub mod sasl;
pub mod serial;
pub mod session;
mod session_frames;
mod skim;
pub mod snapshot;

use crate::hash::HashMap;

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::ProtocolHeader;
use crate::codec::amqp10::{Performative, TYPE_AMQP};
use crate::protocol::FrameEvent;
use crate::protocol::{AnyFrame, AnyMessage};
use crate::state::{Ending, ProtocolTracker};

use connection::{Peer, state_of};
use sasl::Sasl;
use session::Session;

/// One frame as the session and link trackers judge it: who sent it, the frame, and which
/// directions had bytes missed (what they sent may then be unknown).
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    /// The sending peer.
    pub(crate) d: Dir,
    /// The frame.
    pub(crate) fe: &'a FrameEvent,
    /// Bytes of each direction were missed ([`Dir::index`]).
    pub(crate) missed: [bool; 2],
}

impl At<'_> {
    /// The frame's offset.
    pub(crate) fn offset(&self) -> u64 {
        self.fe.offset
    }

    /// Bytes the sender sent were missed.
    pub(crate) fn sender_missed(&self) -> bool {
        self.missed[self.d.index()]
    }

    /// Bytes the sender's partner sent were missed.
    pub(crate) fn partner_missed(&self) -> bool {
        self.missed[self.d.flip().index()]
    }

    /// Bytes of either direction were missed.
    pub(crate) fn any_missed(&self) -> bool {
        self.missed[0] || self.missed[1]
    }
}

/// Tracks one AMQP 1.0 connection from both directions.
#[derive(Debug, Default)]
pub struct ConnectionTracker {
    /// What each peer sent, indexed by the direction it sends in ([`Dir::index`]).
    pub(crate) peers: [Peer; 2],
    /// The SASL layer.
    pub(crate) sasl: Sasl,
    /// The two protocol headers differ.
    pub(crate) header_mismatch: bool,
    /// Sessions by id (each owns its links).
    pub(crate) sessions: crate::base::id_map::IdMap<Session>,
    /// Channel -> session id, per sending peer.
    pub(crate) channels: [HashMap<u16, u64>; 2],
    /// Next session/link id.
    pub(crate) next_id: u64,
    /// Non-closing detaches that followed a closing one, until the peer reattaches or leaves.
    pub(crate) unclosed: crossing::Unclosed,
    /// The links by name, for the attach checks.
    pub(crate) names: link_index::LinkIndex,
    /// What skims passed over: channels judged as after a gap.
    pub(crate) blind: skim::Blind,
    /// An attach of a sender to the anonymous terminus was seen: only then can a message be on
    /// an anonymous link (its checks are skipped until one is).
    pub(crate) anonymous_seen: bool,
    /// The route of the last transfer each peer sent ([`Dir::index`]): a link's transfers
    /// come in runs. Only frames other than transfers and dispositions map or unmap channels
    /// and handles, and each of them (and a gap or skim) clears it.
    pub(crate) route: [Option<routing::Route>; 2],
}

impl ConnectionTracker {
    /// A tracker that has seen the connection from its start.
    pub fn new() -> Self {
        Self::default()
    }

    /// The spec state of the client's endpoint (the one the connection list shows).
    pub fn client_state(&self) -> connection::ConnState {
        state_of(&self.peers[0], &self.peers[1])
    }

    /// The spec state of the server's endpoint.
    pub fn server_state(&self) -> connection::ConnState {
        state_of(&self.peers[1], &self.peers[0])
    }

    pub(crate) fn new_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    pub(crate) fn peer(&self, d: Dir) -> &Peer {
        &self.peers[d.index()]
    }

    /// A frame from `d` went unanswered for longer than the partner's idle-time-out?
    #[inline]
    fn idle_check(&self, d: Dir, now: Timestamp, offset: u64, out: &mut Vec<Violation>) {
        let me = self.peer(d);
        let partner = self.peer(d.flip());
        let Some(t) = partner
            .open
            .as_ref()
            .and_then(|o| o.idle_time_out)
            .filter(|t| *t > 0)
        else {
            return;
        };
        let Some(opened) = partner.open_ts else {
            return;
        };
        // After a gap in its bytes the peer's last frame is not known: its silence is measured
        // from the next frame seen, never from the open.
        if me.last_frame.is_none() && me.unknown {
            return;
        }
        let since = me.last_frame.map_or(opened, |(ts, _)| ts.max(opened));
        let silent_us = now.0.saturating_sub(since.0);
        if silent_us > i64::from(t).saturating_mul(1000) {
            idle_exceeded(d, offset, silent_us, t, out);
        }
    }
}

/// The violation of `d`'s silence of `silent_us` against the partner's idle-time-out `t` (ms).
#[cold]
#[inline(never)]
fn idle_exceeded(d: Dir, offset: u64, silent_us: i64, t: u32, out: &mut Vec<Violation>) {
    out.push(rules::CONNECTION_IDLE_TIMEOUT_EXCEEDED.violation(
        d,
        offset,
        format!(
            "the {} sent no frame for {:.3} s; the {}'s open asked for an idle-time-out of {} ms",
            peer_name(d),
            silent_us as f64 / 1e6,
            peer_name(d.flip()),
            t
        ),
    ));
}

/// `client` / `server`.
pub(crate) fn peer_name(d: Dir) -> &'static str {
    match d {
        Dir::C2S => "client",
        Dir::S2C => "server",
    }
}

impl ProtocolTracker for ConnectionTracker {
    fn header(
        &mut self,
        dir: Dir,
        offset: u64,
        header: ProtocolHeader,
        _ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        let d = dir.index();
        // Only a peer that entered the SASL layer itself is inside it: a server that answers
        // the client's SASL header with the plain one refuses SASL (§2.2), it does not skip it.
        let in_sasl = self.peers[d].headers.contains(&ProtocolHeader::Amqp10Sasl);
        // A legitimate peer sends at most three (TLS, SASL, AMQP): beyond a few, a hostile
        // stream of headers is not kept.
        let kept = self.peers[d].headers.len() < connection::MAX_HEADERS;
        if kept {
            self.peers[d].headers.push(header);
        }
        match header {
            ProtocolHeader::Amqp10Sasl => self.sasl.used = true,
            ProtocolHeader::Amqp10 => {
                // The server's sasl-outcome may be among bytes missed in either direction.
                if in_sasl
                    && self.sasl.used
                    && !self.sasl.succeeded()
                    && !self.peers.iter().any(|p| p.unknown)
                {
                    out.push(rules::SASL_HEADER_BEFORE_SUCCESS.violation(
                        dir,
                        offset,
                        format!(
                            "AMQP protocol header from the {} with the SASL layer {}",
                            peer_name(dir),
                            match self.sasl.outcome_name {
                                Some(n) => format!("ended with outcome {n}"),
                                None => "not finished (no sasl-outcome)".into(),
                            }
                        ),
                    ));
                }
                self.peers[d].amqp_header = true;
            }
            _ => {}
        }
        let k = self.peers[d].headers.len() - 1;
        // After a gap the headers' positions say nothing: the missed bytes may hold a header.
        let comparable = self.peers.iter().all(|p| !p.unknown);
        if kept
            && let Some(other) = self.peers[dir.flip().index()].headers.get(k)
            && *other != header
            && comparable
        {
            self.header_mismatch = true;
        }
    }

    fn gap(&mut self, dir: Dir) {
        self.route = [None; 2];
        self.unclosed_forget(dir);
        let p = &mut self.peers[dir.index()];
        p.unknown = true;
        p.last_frame = None;
        for s in self.sessions.values_mut() {
            s.forget();
        }
        self.names.forget();
    }

    fn skimmed(&mut self, dir: Dir, ts: Timestamp, channels: &crate::protocol::SkimChannels) {
        self.route = [None; 2];
        self.skim(dir, ts, channels);
    }

    fn frame(&mut self, fe: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>) {
        let AnyFrame::Amqp10(f) = &fe.frame else {
            return;
        };
        let d = fe.dir;
        self.idle_check(d, ts, fe.offset, out);
        self.peers[d.index()].last_frame = Some((ts, fe.offset));
        if let Some(s) = f.sasl() {
            let unknown = self.peer(d).unknown;
            if self.peer(d).amqp_header && !unknown {
                out.push(rules::SASL_UNEXPECTED_FRAME.violation(
                    d,
                    fe.offset,
                    format!(
                        "{} after the {}'s AMQP protocol header",
                        s.name(),
                        peer_name(d)
                    ),
                ));
                return;
            }
            // The exchange is one conversation: a step missed either way leaves it unknown.
            let either = self.peers.iter().any(|p| p.unknown);
            self.sasl.frame(d, fe.offset, s, either, out);
            return;
        }
        if f.frame_type != TYPE_AMQP {
            return;
        }
        if !self.connection_checks(d, fe, f, out) {
            return;
        }
        let Some(perf) = f.performative() else {
            return; // an empty frame
        };
        let ch = f.channel;
        let blind = self.blind.frame(d, ch, perf);
        let at = At {
            d,
            fe,
            missed: [
                self.peers[0].unknown || blind,
                self.peers[1].unknown || blind,
            ],
        };
        if !matches!(
            perf,
            Performative::Transfer(_) | Performative::Disposition(_)
        ) {
            self.route = [None; 2];
        }
        match perf {
            Performative::Open(o) => self.on_open(d, fe, o, ts, out),
            Performative::Close(c) => self.on_close(d, fe, c, out),
            Performative::Begin(b) => self.on_begin(at, ch, b, out),
            Performative::End(_) => self.on_end(at, ch, out),
            Performative::Attach(a) => self.on_attach(at, ch, a, out),
            Performative::Detach(x) => self.on_detach(at, ch, x, out),
            Performative::Flow(x) => self.on_flow(at, ch, x, ts, out),
            Performative::Transfer(t) => self.on_transfer(at, ch, t, ts, out),
            Performative::Disposition(x) => self.on_disposition(at, ch, x, out),
        }
        if let Some(Ok(AnyMessage::Amqp10(m))) = &fe.message {
            self.on_message(at, m, out);
        }
    }

    fn close(&mut self, ts: Timestamp, ending: Ending, out: &mut Vec<Violation>) {
        self.unclosed_judged(None, None, "the connection ended", out);
        if ending == Ending::Unknown {
            return; // a capture that merely ends says nothing about how the peers left
        }
        for d in [Dir::C2S, Dir::S2C] {
            if self.peer(d).close.is_some()
                || self.peer(d.flip()).close.is_some()
                || self.blind.skimmed[d.index()]
            {
                continue;
            }
            // Silence that ended in a FIN or RST, not only a late frame.
            let offset = self.peer(d).last_frame.map_or(0, |(_, o)| o);
            self.idle_check(d, ts, offset, out);
        }
        // A close may have been among frames skimmed on any channel.
        let missed = self.peers.iter().any(|p| p.unknown)
            || self.header_mismatch
            || self.blind.skimmed.iter().any(|s| *s);
        let neither_closed = self.peers.iter().all(|p| p.close.is_none());
        for d in [Dir::C2S, Dir::S2C] {
            let me = self.peer(d);
            if missed || !ending.by(d) || me.open.is_none() || me.close.is_some() {
                continue;
            }
            // Closing the socket after the partner left without a close frame is the right
            // answer to its violation, not another one; and when neither sent close and the
            // source cannot say who left first, the fault is not known.
            if neither_closed && ending.first() != Some(d) {
                continue;
            }
            let offset = me.last_frame.map_or(0, |(_, o)| o);
            out.push(rules::CONNECTION_CLOSED_WITHOUT_CLOSE.violation(
                d,
                offset,
                format!(
                    "the {} closed the TCP connection without sending a close frame{}",
                    peer_name(d),
                    if self.peer(d.flip()).close.is_some() {
                        format!(" (the {} had sent its close)", peer_name(d.flip()))
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }

    fn state_name(&self) -> String {
        if self.sasl.used && !self.peers[0].amqp_header && !self.peers[1].amqp_header {
            return "SASL".into();
        }
        self.client_state().name().into()
    }

    fn snapshot(&self) -> crate::state::snapshot::Detail {
        crate::state::snapshot::Detail::Amqp10(Box::new(snapshot::snapshot(self)))
    }
}
