//! Protocol state tracking: per-connection trackers that watch both directions at once, the way
//! each peer is required to, and report every place where a peer breaks the spec.
//!
//! Sans-IO: trackers are fed decoded frames with their timestamps and return violations. No
//! tokio, no clock. A tracker that did not see the start of a connection (a capture that begins
//! mid-stream) starts in an "unknown" state and does not invent violations for what it missed.

pub mod amqp091;
pub mod amqp10;
pub mod context;
pub mod diagnose;
pub mod negotiation;
pub mod register;
pub mod rules;
pub mod seq_map;
pub mod snapshot;
pub(crate) mod visits;

pub use register::{Contexts, Tracked};
pub use rules::{Rule, catalog};
pub use snapshot::Snapshot;

use crate::base::{CloseReason, Dir, Failure, Timestamp, Violation};
use crate::codec::{DecodeError, ProtocolHeader};
use crate::protocol::{FrameEvent, SkimChannels};
use negotiation::{Fate, Negotiation};

/// The rules of one protocol for one connection.
pub trait ProtocolTracker: std::fmt::Debug + Send {
    /// A protocol header was seen in `dir`.
    fn header(
        &mut self,
        dir: Dir,
        offset: u64,
        header: ProtocolHeader,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        let _ = (dir, offset, header, ts, out);
    }
    /// Bytes of `dir` were missed: from here on, state in that direction is unknown and the
    /// tracker must not report what it cannot know.
    fn gap(&mut self, dir: Dir) {
        let _ = dir;
    }
    /// Frames of `dir` were passed over undecoded at `ts` (a skim), on `channels`; the framing
    /// stayed exact. Only what frames on those channels could change becomes unknown; a
    /// tracker that cannot tell treats it as a [`ProtocolTracker::gap`].
    fn skimmed(&mut self, dir: Dir, ts: Timestamp, channels: &SkimChannels) {
        let _ = ts;
        if !channels.is_empty() {
            self.gap(dir);
        }
    }
    /// A decoded frame was seen.
    fn frame(&mut self, frame: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>);
    /// The TCP connection ended (after the last frame), as `ending` says.
    fn close(&mut self, ts: Timestamp, ending: Ending, out: &mut Vec<Violation>) {
        let _ = (ts, ending, out);
    }
    /// A human-readable state name for the connection list (e.g. `OPENED`).
    fn state_name(&self) -> String;
    /// A typed copy of everything tracked (sessions, links, channels...), for display.
    fn snapshot(&self) -> snapshot::Detail;
}

/// Tracks one connection, whatever its protocol: judges the header negotiation, and picks the
/// protocol's tracker from the first protocol header (or from the first frame when the capture
/// started mid-stream), never from a server's header that refuses the client's.
#[derive(Debug, Default)]
pub struct ConnTracker {
    negotiation: Negotiation,
    inner: Option<Box<dyn ProtocolTracker>>,
    /// Directions with bytes missed before the tracker was chosen: it starts "unknown" in
    /// them (a lost first segment of the client must not leave the server's frames judged
    /// against a client that sent nothing).
    missed: [bool; 2],
}

impl ConnTracker {
    /// A tracker that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed a protocol header.
    pub fn header(
        &mut self,
        dir: Dir,
        offset: u64,
        header: ProtocolHeader,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        if self.negotiation.header(dir, offset, header, out) == Fate::Refused {
            return;
        }
        if self.inner.is_none() && !self.negotiation.refused() {
            self.inner = tracker_for_header(header);
            if let Some(t) = self.inner.as_mut() {
                for d in [Dir::C2S, Dir::S2C]
                    .into_iter()
                    .filter(|d| self.missed[d.index()])
                {
                    t.gap(d);
                }
            }
        }
        if let Some(t) = self.inner.as_mut() {
            t.header(dir, offset, header, ts, out);
        }
    }

    /// Decoding of `dir` stopped at `offset` with `error`: judged as the negotiation says (a
    /// protocol amqpeek does not decode is no violation).
    pub fn undecodable(
        &mut self,
        dir: Dir,
        offset: u64,
        error: &DecodeError,
        out: &mut Vec<Violation>,
    ) {
        self.negotiation.undecodable(dir, offset, error, out);
    }

    /// `dir`'s stream was seen up to `total` bytes (after its items were fed): bytes no header
    /// or frame accounts for are judged here.
    pub fn seen(&mut self, dir: Dir, total: u64, out: &mut Vec<Violation>) {
        self.negotiation.seen(dir, total, out);
    }

    /// The header negotiation so far.
    pub fn negotiation(&self) -> &Negotiation {
        &self.negotiation
    }

    /// Feed a decoded frame.
    pub fn frame(&mut self, frame: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>) {
        let name = || frame.frame.name();
        if self.negotiation.frame(frame.dir, frame.offset, name, out) == Fate::Refused {
            return;
        }
        if self.inner.is_none() {
            self.inner = tracker_mid_stream(frame);
            if let Some(t) = self.inner.as_mut() {
                t.gap(frame.dir);
                t.gap(frame.dir.flip());
            }
        }
        if let Some(t) = self.inner.as_mut() {
            t.frame(frame, ts, out);
        }
    }

    /// Bytes of `dir` were missed.
    pub fn gap(&mut self, dir: Dir) {
        self.negotiation.gap();
        if self.inner.is_none() {
            self.missed[dir.index()] = true;
        }
        if let Some(t) = self.inner.as_mut() {
            t.gap(dir);
        }
    }

    /// Frames of `dir` on `channels` were skimmed at `ts` (see [`ProtocolTracker::skimmed`]).
    pub fn skimmed(&mut self, dir: Dir, ts: Timestamp, channels: &SkimChannels) {
        // Skimming stops before any protocol header, but judge no refusal all the same.
        self.negotiation.gap();
        match self.inner.as_mut() {
            Some(t) => t.skimmed(dir, ts, channels),
            None => self.missed[dir.index()] = true,
        }
    }

    /// The connection ended.
    pub fn close(&mut self, ts: Timestamp, ending: Ending, out: &mut Vec<Violation>) {
        if let Some(t) = self.inner.as_mut() {
            t.close(ts, ending, out);
        }
    }

    /// State name for display (`-` before anything is known).
    pub fn state_name(&self) -> String {
        self.inner
            .as_ref()
            .map(|t| t.state_name())
            .unwrap_or_else(|| "-".into())
    }

    /// A typed copy of the state, for display: the state name and the protocol's detail.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            name: self.state_name(),
            detail: self
                .inner
                .as_ref()
                .map_or(snapshot::Detail::None, |t| t.snapshot()),
        }
    }
}

/// How a connection's TCP stream ended, as far as its source knows: which peers demonstrably
/// closed their side (a FIN, an end of stream or a reset seen from them), or nothing known (a
/// capture that merely ends, a proxy that stops, a connection evicted from the table). Rules
/// about how a peer left judge only what is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `by[dir]`: the peer sending in `dir` closed or reset its side.
    Closed {
        /// Per [`Dir::index`].
        by: [bool; 2],
        /// The peer that closed or reset first, when the source knows (the proxy does; a
        /// capture's `FIN both ways` does not say).
        first: Option<Dir>,
    },
    /// Not known how, or whether, the peers ended it.
    Unknown,
}

impl Ending {
    /// From a close event's reason: the proxy's clean closes (both peers ended their side,
    /// who first is known) and resets (with the clean close before one, when there was), a
    /// capture's FINs both ways (who first when the packets say) and resets (by a known peer,
    /// or after a FIN, whose sender left first). Anything
    /// else (errors, timeouts, the proxy stopping, a capture ending, unknown words) is
    /// [`Ending::Unknown`].
    pub fn of(reason: &CloseReason) -> Ending {
        let reset = |d: Dir| {
            let mut by = [false; 2];
            by[d.index()] = true;
            by
        };
        match reason {
            CloseReason::Closed { first } => Ending::Closed {
                by: [true, true],
                first: Some(*first),
            },
            CloseReason::FinBothWays { first } => Ending::Closed {
                by: [true, true],
                first: *first,
            },
            // A FIN before the reset: its sender left first, as after the proxy's clean close
            // before a reset.
            CloseReason::Reset {
                by,
                after_fin: Some(f),
            } => {
                let mut closed = reset(*f);
                if let Some(d) = by {
                    closed[d.index()] = true;
                }
                Ending::Closed {
                    by: closed,
                    first: Some(*f),
                }
            }
            CloseReason::Reset {
                by: Some(d),
                after_fin: None,
            } => Ending::Closed {
                by: reset(*d),
                first: Some(*d),
            },
            CloseReason::Failed {
                clean_first,
                by,
                how: Failure::Reset,
                ..
            } => Ending::Closed {
                // A clean close before the reset means both ends of stream were seen.
                by: if clean_first.is_some() {
                    [true, true]
                } else {
                    reset(*by)
                },
                first: Some(clean_first.unwrap_or(*by)),
            },
            _ => Ending::Unknown,
        }
    }

    /// Whether the peer sending in `d` demonstrably closed its side.
    pub fn by(self, d: Dir) -> bool {
        matches!(self, Ending::Closed { by, .. } if by[d.index()])
    }

    /// The peer that closed or reset first, when known.
    pub fn first(self) -> Option<Dir> {
        match self {
            Ending::Closed { first, .. } => first,
            Ending::Unknown => None,
        }
    }
}

/// The tracker for a connection that starts with `header`.
fn tracker_for_header(header: ProtocolHeader) -> Option<Box<dyn ProtocolTracker>> {
    crate::protocol::ProtocolId::framed_after(header).map(register::tracker)
}

/// The tracker for a connection first seen at `frame` (no header seen).
fn tracker_mid_stream(frame: &FrameEvent) -> Option<Box<dyn ProtocolTracker>> {
    Some(register::tracker(frame.frame.protocol()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ending_names_who_left_first_when_the_source_knows() {
        let of = |text: &str| Ending::of(&CloseReason::parse(text));
        assert_eq!(of("client closed").first(), Some(Dir::C2S));
        assert_eq!(of("upstream closed").first(), Some(Dir::S2C));
        let e = of("client closed, then upstream reset: Connection reset");
        assert_eq!(e.first(), Some(Dir::C2S));
        assert!(e.by(Dir::S2C));
        let e = of("upstream reset: Connection reset");
        assert_eq!(e.first(), Some(Dir::S2C));
        assert!(e.by(Dir::S2C) && !e.by(Dir::C2S));
        assert_eq!(of("reset by server").first(), Some(Dir::S2C));
        assert_eq!(of("FIN both ways").first(), None);
        assert_eq!(of("FIN both ways, client first").first(), Some(Dir::C2S));
        let e = of("FIN by client, then reset by server");
        assert_eq!(
            e.first(),
            Some(Dir::C2S),
            "as `client closed, then upstream reset`"
        );
        assert!(e.by(Dir::C2S) && e.by(Dir::S2C));
        assert!(of("FIN both ways").by(Dir::C2S));
        assert_eq!(of("proxy stopped"), Ending::Unknown);
        assert_eq!(of("reset"), Ending::Unknown);
        assert_eq!(of("client error: timed out"), Ending::Unknown);
        assert_eq!(of("client reset"), Ending::Unknown);
    }
}
