//! The pipeline's vocabulary: what a source produces ([`Chunk`]) and what flows to the sinks
//! ([`Event`]).
//!
//! ```text
//! Source (proxy | pcap/pcapng | JSONL) -> Chunk -> decode -> track state -> Event -> sinks
//! ```
//!
//! Time is a value here ([`Timestamp`]), never read from a clock: sources stamp, everything
//! downstream only carries it.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::codec::{AnyFrame, AnyMessage, DecodeError, ProtocolHeader};

mod close;
mod context;
mod rule;
pub use close::{CloseReason, Failure, Timeout};
pub use context::{Awaits, Delivery, FlowKey, FrameContext, FrameRef, SettleKind, Settlement};
pub use rule::Rule;

/// Connection number, unique within one run or capture, starting at 1.
pub type ConnId = u64;

/// Microseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time (only sources call this).
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(d.as_micros() as i64)
    }

    /// RFC 3339 in UTC with microseconds, e.g. `2026-11-29T12:00:00.123456Z`.
    pub fn rfc3339(self) -> String {
        let nanos = (self.0 as i128) * 1000;
        match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
            Ok(t) => {
                let fmt = time::macros::format_description!(
                    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
                );
                t.format(&fmt).unwrap_or_else(|_| self.0.to_string())
            }
            Err(_) => self.0.to_string(),
        }
    }

    /// Parse the RFC 3339 form written by [`Timestamp::rfc3339`] (any offset accepted).
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        let t =
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
        Some(Timestamp((t.unix_timestamp_nanos() / 1000) as i64))
    }
}

/// Which way bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// Client to server (the peer that opened the TCP connection to the broker).
    #[serde(rename = "c2s")]
    C2S,
    /// Server to client.
    #[serde(rename = "s2c")]
    S2C,
}

impl Dir {
    /// `c2s` / `s2c`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2S => "c2s",
            Dir::S2C => "s2c",
        }
    }
    /// An arrow for traces: `->` client to server, `<-` server to client.
    pub fn arrow(self) -> &'static str {
        match self {
            Dir::C2S => "->",
            Dir::S2C => "<-",
        }
    }
    /// The other direction.
    pub fn flip(self) -> Dir {
        match self {
            Dir::C2S => Dir::S2C,
            Dir::S2C => Dir::C2S,
        }
    }
    /// 0 for c2s, 1 for s2c: an index into per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A run of bytes seen on one direction of one connection: what every source produces.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// The connection (its number, from 1, unique within the run or the capture).
    pub conn: ConnId,
    /// Which way (`C2S`: sent by the client; `S2C`: by the server).
    pub dir: Dir,
    /// When the bytes were observed.
    pub ts: Timestamp,
    /// The bytes, exactly as relayed.
    pub bytes: Bytes,
}

/// Severity of a violation: `error` for MUST / MUST NOT, `warning` for SHOULD / SHOULD NOT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a spec breach.
    Info,
    /// A SHOULD / SHOULD NOT was broken.
    Warning,
    /// A MUST / MUST NOT was broken, or the bytes are malformed.
    Error,
}

impl Severity {
    /// `info` / `warning` / `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A spec violation found by the codec or a state tracker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The rule of the catalog it breaks (serialized as its stable id, e.g.
    /// `amqp10.connection.frame-after-close`).
    pub rule: &'static Rule,
    /// Severity.
    pub severity: Severity,
    /// Spec section, e.g. `AMQP 1.0 §2.4.1`.
    pub spec: String,
    /// What happened, in one line.
    pub message: String,
    /// Direction of the offending frame.
    pub dir: Dir,
    /// Byte offset of the offending frame in that direction's stream.
    pub offset: u64,
    /// The offending frame's summary line, when the violation is about a decoded frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
}

/// Why a connection ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseInfo {
    /// Who closed or reset first and how; shown (and written to a JSONL) in plain words,
    /// e.g. `client closed`, `upstream refused: Connection refused`.
    pub reason: CloseReason,
    /// Bytes relayed client to server.
    pub bytes_c2s: u64,
    /// Bytes relayed server to client.
    pub bytes_s2c: u64,
}

/// A decoded frame with where it was found.
#[derive(Clone, Debug)]
pub struct FrameEvent {
    /// Which way (`C2S`: sent by the client; `S2C`: by the server).
    pub dir: Dir,
    /// Byte offset of the frame in that direction's stream.
    pub offset: u64,
    /// The frame's bytes, credentials masked (unless `--show-secrets`); `frame` is decoded
    /// from them, so its fields show the mask too.
    pub raw: Bytes,
    /// The decoded frame.
    pub frame: AnyFrame,
    /// The message this frame completes, if any.
    pub message: Option<Result<AnyMessage, DecodeError>>,
    /// What the state layer knows of the frame: its link or channel, its delivery, what it
    /// settles. Computed once, as the frame is tracked; every consumer reads it from here.
    pub context: FrameContext,
}

impl FrameEvent {
    /// The frame's full size: `raw` holds all of it, or (a frame larger than the inspection
    /// budget) its head, the rest having been streamed to the sinks as `Undecoded` bytes.
    pub fn size(&self) -> u64 {
        self.raw.len() as u64 + self.frame.streamed()
    }

    /// The frame's line as every text output shows it and the filter's free text searches
    /// it: its summary (its name when it has none), then, when it completes a message whose
    /// body the summary does not show (AMQP 1.0), the body in a few words.
    pub fn line(&self) -> String {
        let mut text = self.frame.summary();
        if text.is_empty() {
            text.push_str(self.frame.name());
        }
        self.message_summary_into(&mut text);
        text
    }

    /// The summary, then what the message it completes adds (see [`FrameEvent::line`]).
    pub fn summary_with_message(&self) -> String {
        let mut text = self.frame.summary();
        self.message_summary_into(&mut text);
        text
    }

    fn message_summary_into(&self, text: &mut String) {
        if let Some(Ok(m)) = &self.message
            && let Some(s) = m.line_summary()
        {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&s);
        }
    }
}

/// What happened.
#[derive(Clone, Debug)]
pub enum EventKind {
    /// A client connected and (for the proxy) an upstream connection was attempted.
    Connect {
        /// The client's address.
        client: SocketAddr,
        /// The upstream (broker) address.
        upstream: SocketAddr,
    },
    /// A protocol header.
    Header {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset.
        offset: u64,
        /// Which header.
        header: ProtocolHeader,
        /// Its bytes.
        raw: Bytes,
    },
    /// A frame, decoded once and shared by every sink.
    Frame(Arc<FrameEvent>),
    /// Bytes as relayed (credentials masked unless `--show-secrets`), in stream order, cut at
    /// frame boundaries: every relayed byte appears in exactly one `Data` event. Used by the
    /// pcap sink; other sinks ignore it.
    Data {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
    },
    /// Relayed bytes that are neither a protocol header nor a decoded frame: a malformed frame,
    /// the stream after decoding stopped, an incomplete frame cut by a gap or by the close.
    /// Masked like frames, and wholly (past the frame header) where they may hold a credential.
    /// With the `Header` and `Frame` events, every relayed byte is in exactly one such event,
    /// in stream order (the JSONL's `bytes` records).
    Undecoded {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
    },
    /// A spec violation (including malformed bytes, with their offset).
    Violation(Violation),
    /// Bytes that were relayed but not seen by the inspector (capture loss, mid-stream start),
    /// or skimmed (passed over undecoded while the inspection of a live view fell behind).
    Gap {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset where the gap starts.
        offset: u64,
        /// How many bytes are missing (0 when unknown).
        len: u64,
        /// Why the bytes are missing, in plain words.
        reason: String,
    },
    /// The sender of `dir` closed its side (TCP FIN, or TLS close_notify on a TLS leg): no
    /// byte follows in `dir`, while the other direction may go on (a half-close). Comes after
    /// every `Data` of `dir`; a connection that ends by reset, or whose capture stops, has no
    /// `Fin` for the directions still open.
    Fin {
        /// Direction that ended.
        dir: Dir,
        /// Its stream's length: the offset the FIN stands at.
        offset: u64,
    },
    /// The connection closed.
    Close(CloseInfo),
    /// The connection's tracked state, published by the pipeline after frames changed it (at
    /// most every [`STATE_INTERVAL_US`](crate::pipeline::STATE_INTERVAL_US) of event time
    /// unless its state name changes, and always before the close event). For live views;
    /// captures and checks ignore it.
    State(Arc<crate::state::Snapshot>),
}

/// One thing that happened on one connection at one time.
#[derive(Clone, Debug)]
pub struct Event {
    /// The connection (its number, from 1, unique within the run or the capture).
    pub conn: ConnId,
    /// When it happened (the relay\'s read time, or the capture time).
    pub ts: Timestamp,
    /// What happened.
    pub kind: EventKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_has_microseconds_and_round_trips() {
        let ts = Timestamp(1_764_417_600_123_456);
        let s = ts.rfc3339();
        assert_eq!(s, "2025-11-29T12:00:00.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&s), Some(ts));
    }

    #[test]
    fn dir_serialises_as_spec_short_names() {
        assert_eq!(serde_json::to_string(&Dir::C2S).unwrap(), "\"c2s\"");
        assert_eq!(Dir::S2C.flip(), Dir::C2S);
    }
}
