//! Diagnoses: why a flow is stuck or about to fail, as the frames (and their absence) show it.
//! A diagnosis is not a violation: no peer broke a MUST; a link, channel, consumer or
//! connection stands still or is about to be cut, and the frames say why.
//!
//! Each kind of diagnosis is a [`Check`] of the catalog (`state::diagnose::catalog`), held by
//! reference as a violation holds its rule. A [`Diagnosis`] is published twice on the
//! connection's events: when it starts (`ended` is `None`) and when it ends.
//!
//! Its times are the frames' times, never a clock's: it starts at [`Diagnosis::at`] (the moment
//! its condition had lasted its threshold), whenever the pipeline's clock tick noticed it; so
//! the same frames give the same diagnoses live, replayed, and from any capture format.

use super::{ConnId, FrameRef, Timestamp};

/// What a diagnosis is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeKind {
    /// The connection.
    Connection,
    /// An AMQP 1.0 session.
    Session,
    /// An AMQP 1.0 link.
    Link,
    /// An AMQP 0-9-1 channel.
    Channel,
    /// An AMQP 0-9-1 consumer.
    Consumer,
}

impl ScopeKind {
    /// `connection`, `session`, `link`, `channel`, `consumer`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Connection => "connection",
            ScopeKind::Session => "session",
            ScopeKind::Link => "link",
            ScopeKind::Channel => "channel",
            ScopeKind::Consumer => "consumer",
        }
    }
}

/// How long (or how many times) a condition must last before it is a diagnosis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// This long, in µs.
    After(i64),
    /// The interval the peers negotiated (a heartbeat, an idle time-out), unless the threshold
    /// is set.
    Negotiated,
    /// This many times (redeliveries of one message).
    Count(u32),
    /// This long (µs) before a deadline a frame announced (a token's expiry).
    Before(i64),
}

impl Limit {
    /// In words: `30 s`, `negotiated`, `5 times`, `60 s before`.
    pub fn label(self) -> String {
        let secs = |us: i64| {
            let s = us as f64 / 1e6;
            if s.fract() == 0.0 {
                format!("{s:.0} s")
            } else {
                format!("{s} s")
            }
        };
        match self {
            Limit::After(us) => secs(us),
            Limit::Negotiated => "negotiated".into(),
            Limit::Count(n) => format!("{n} times"),
            Limit::Before(us) => format!("{} before", secs(us)),
        }
    }
}

/// One kind of diagnosis in the catalog.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Check {
    /// Stable id, e.g. `amqp10.link.no-credit` (a public interface: never renamed).
    pub id: &'static str,
    /// What it is about.
    pub scope: ScopeKind,
    /// One line: what the frames show.
    pub summary: &'static str,
    /// The spec section or broker document it rests on.
    pub basis: &'static str,
    /// The likely cause.
    pub cause: &'static str,
    /// What to do.
    pub todo: &'static str,
    /// The default threshold.
    pub default: Limit,
}

/// Why a diagnosis ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndWhy {
    /// The condition cleared (a frame resolved it).
    Cleared,
    /// Its link, channel, session or connection closed.
    ScopeClosed,
    /// The capture (or the proxy) ended while it still held.
    CaptureEnded,
    /// Bytes were missed: what would tell whether it still holds is unknown.
    Unknown,
}

impl EndWhy {
    /// `cleared`, `scope closed`, `capture ended`, `unknown after a gap`.
    pub fn as_str(self) -> &'static str {
        match self {
            EndWhy::Cleared => "cleared",
            EndWhy::ScopeClosed => "scope closed",
            EndWhy::CaptureEnded => "capture ended",
            EndWhy::Unknown => "unknown after a gap",
        }
    }

    /// The inverse of [`EndWhy::as_str`].
    pub fn parse(s: &str) -> Option<EndWhy> {
        [
            EndWhy::Cleared,
            EndWhy::ScopeClosed,
            EndWhy::CaptureEnded,
            EndWhy::Unknown,
        ]
        .into_iter()
        .find(|w| w.as_str() == s)
    }
}

/// When and why a diagnosis ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// When.
    pub ts: Timestamp,
    /// The frame that ended it, if a frame did.
    pub frame: Option<FrameRef>,
    /// Why.
    pub why: EndWhy,
}

/// One diagnosis of one connection (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// Its kind, from the catalog.
    pub check: &'static Check,
    /// The connection.
    pub conn: ConnId,
    /// What it is about (usually the check's scope).
    pub scope: ScopeKind,
    /// Which one, in words: `link "orders" s2c`, `channel 1`, `consumer "ctag" on channel 1`,
    /// `server`. Holds wire strings: escape it before text output.
    pub name: String,
    /// Since when the condition holds.
    pub since: Timestamp,
    /// When it became a diagnosis (the condition had lasted its threshold).
    pub at: Timestamp,
    /// The frames that show it, the one it holds since first.
    pub evidence: Vec<FrameRef>,
    /// What the frames show, in one line (wire strings in it are escaped at output too).
    pub detail: String,
    /// When it ended; `None` while it holds (the start event).
    pub ended: Option<Ended>,
}

/// Frames of evidence a diagnosis keeps, at most.
pub const MAX_EVIDENCE: usize = 4;

impl Diagnosis {
    /// The identity of a diagnosis, the same in its start and end events and across sources:
    /// check id, connection, scope name, since.
    pub fn key(&self) -> (&'static str, ConnId, &str, Timestamp) {
        (self.check.id, self.conn, &self.name, self.since)
    }

    /// How long it held (to its end, or to `now` while it holds), in µs.
    pub fn held_us(&self, now: Timestamp) -> i64 {
        let end = self.ended.as_ref().map_or(now, |e| e.ts);
        end.0.saturating_sub(self.since.0).max(0)
    }
}
