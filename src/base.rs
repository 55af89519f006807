//! The base vocabulary every layer shares, importing nothing else of the crate: directions,
//! connection numbers and timestamps, a source's [`Chunk`] of bytes, rules, violations and
//! their severities, why a connection closed, what the state layer publishes of a frame
//! ([`FrameContext`]), and the one escaping rule of every text output ([`escape`]).
//!
//! Time is a value here ([`Timestamp`]), never read from a clock: sources stamp, everything
//! downstream only carries it.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub mod allocator;
mod close;
mod context;
mod diagnosis;
pub mod escape;
pub mod id_map;
mod rule;
#[cfg(test)]
pub(crate) mod test_rng;
pub use close::{CloseReason, Failure, Timeout};
pub use context::{Awaits, Delivery, FlowKey, FrameContext, FrameRef, SettleKind, Settlement};
pub use diagnosis::{Check, Diagnosis, EndWhy, Ended, Limit, MAX_EVIDENCE, ScopeKind};
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
