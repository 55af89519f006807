//! Findings: the repeated reports of one rule by one peer, on one connection and one channel or
//! link, coalesced into one entry with a count, the first and last occurrence and a bounded
//! sample of the first few. A capture with a million violating frames gives a handful of
//! findings, so `check`'s memory does not grow with the number of violations.

use serde::Serialize;

use crate::event::{ConnId, Dir, Severity, Violation};
use crate::protocol::AnyFrame;

/// Occurrences kept per finding besides the last one: the first `SAMPLES`.
pub const SAMPLES: usize = 5;

/// Where inside a connection a finding is: the channel (AMQP 1.0: the session) and, for AMQP
/// 1.0 link frames, the link handle. Empty for connection-level rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Scope {
    /// Channel of the offending frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<u16>,
    /// AMQP 1.0 link handle of the offending frame (attach, flow with a handle, transfer,
    /// detach).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<u32>,
}

impl Scope {
    /// The channel and handle of `frame`.
    pub fn of_frame(frame: &AnyFrame) -> Scope {
        let (channel, handle) = frame.finding_scope();
        Scope { channel, handle }
    }

    /// The part of `self` that matters for `rule`: nothing for rules about the connection as a
    /// whole (`codec.*`, `*.connection.*`, SASL, heartbeats, frame sizes), so that "the server
    /// sent 270 frames after its close" is one finding whatever channels those frames were on;
    /// the channel alone for session and 0-9-1 channel rules; channel and handle otherwise.
    pub fn for_rule(self, rule: &str) -> Scope {
        let mut parts = rule.split('.');
        let (proto, area) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        match (proto, area) {
            (_, "connection" | "sasl" | "heartbeat" | "frame" | "tls") => Scope::default(),
            _ if is_protocol_rule(rule) => match area {
                "session" | "disposition" => Scope {
                    handle: None,
                    ..self
                },
                _ => self,
            },
            _ => Scope::default(),
        }
    }

    /// `ch1 link 0`, `ch1`, or empty.
    pub fn describe(&self) -> String {
        match (self.channel, self.handle) {
            (Some(c), Some(h)) => format!("ch{c} link {h}"),
            (Some(c), None) => format!("ch{c}"),
            (None, Some(h)) => format!("link {h}"),
            (None, None) => String::new(),
        }
    }
}

/// Whether `rule` is one of a registered protocol's (not the codec's, the negotiation's or
/// the proxy's).
fn is_protocol_rule(rule: &str) -> bool {
    static IDS: std::sync::OnceLock<crate::hash::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        crate::state::register::protocol_rules()
            .map(|r| r.id)
            .collect()
    })
    .contains(rule)
}

/// Which peer a finding is about: the sender of the offending bytes.
pub fn side(dir: Dir) -> &'static str {
    match dir {
        Dir::C2S => "client",
        Dir::S2C => "server",
    }
}

/// What identifies a finding: rule, connection, the peer at fault and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FindingKey {
    /// Rule id.
    pub rule: String,
    /// The connection it was found on.
    pub conn: ConnId,
    /// Direction of the offending bytes (the peer at fault sent them).
    pub dir: Dir,
    /// Channel / link.
    pub scope: Scope,
}

/// One reported violation of a finding.
#[derive(Clone, Debug, Serialize)]
pub struct Occurrence {
    /// When (RFC 3339).
    pub ts: String,
    /// Byte offset of the offending frame in its direction's stream.
    pub offset: u64,
    /// What happened.
    pub message: String,
    /// The offending frame's summary line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
}

/// Every report of one rule by one peer on one connection and channel or link.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Rule id.
    pub rule: String,
    /// The connection it was found on.
    pub conn: ConnId,
    /// Direction of the offending bytes.
    pub dir: Dir,
    /// Channel / link.
    pub scope: Scope,
    /// The rule's severity as reported (a policy may change it).
    pub severity: Severity,
    /// Spec section.
    pub spec: String,
    /// The rule's one-line explanation (from the catalog when known).
    pub text: String,
    /// Occurrences in all.
    pub count: u64,
    /// The first [`SAMPLES`] occurrences, in order.
    pub first: Vec<Occurrence>,
    /// The last occurrence (when there were more than [`SAMPLES`]).
    pub last: Option<Occurrence>,
}

impl Finding {
    /// A finding of one occurrence.
    pub fn new(key: FindingKey, v: &Violation, occ: Occurrence) -> Finding {
        Finding {
            text: v.rule.text.to_string(),
            rule: key.rule,
            conn: key.conn,
            dir: key.dir,
            scope: key.scope,
            severity: v.severity,
            spec: v.spec.clone(),
            count: 1,
            first: vec![occ],
            last: None,
        }
    }

    /// One more occurrence: kept if among the first [`SAMPLES`], else as the last one.
    pub fn add(&mut self, occ: Occurrence) {
        self.count += 1;
        if self.first.len() < SAMPLES {
            self.first.push(occ);
        } else {
            self.last = Some(occ);
        }
    }

    /// The first occurrence.
    pub fn first(&self) -> &Occurrence {
        &self.first[0]
    }

    /// The last occurrence (the first one when there was only one).
    pub fn last(&self) -> &Occurrence {
        self.last
            .as_ref()
            .or(self.first.last())
            .unwrap_or(&self.first[0])
    }

    /// `client` or `server`: the peer at fault.
    pub fn side(&self) -> &'static str {
        side(self.dir)
    }

    /// Order of findings in every report: rule, then connection, peer and place.
    pub fn sort_key(&self) -> (&str, ConnId, usize, Scope) {
        (&self.rule, self.conn, self.dir.index(), self.scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::rules;

    #[test]
    fn connection_rules_have_no_scope_and_session_rules_no_handle() {
        let s = Scope {
            channel: Some(1),
            handle: Some(4),
        };
        assert_eq!(
            s.for_rule("amqp10.connection.frame-after-close"),
            Scope::default()
        );
        assert_eq!(s.for_rule("codec.malformed-frame"), Scope::default());
        assert_eq!(
            s.for_rule("amqp10.session.incoming-window-exceeded").handle,
            None
        );
        assert_eq!(
            s.for_rule("amqp10.session.incoming-window-exceeded")
                .channel,
            Some(1)
        );
        assert_eq!(s.for_rule("amqp10.link.transfer-without-credit"), s);
        assert_eq!(s.describe(), "ch1 link 4");
    }

    #[test]
    fn keeps_the_first_few_and_the_last_occurrence() {
        let v = rules::CODEC_MALFORMED_FRAME.violation(Dir::S2C, 0, "x");
        let occ = |offset| Occurrence {
            ts: String::new(),
            offset,
            message: String::new(),
            frame: None,
        };
        let key = FindingKey {
            rule: v.rule.id.to_string(),
            conn: 1,
            dir: Dir::S2C,
            scope: Scope::default(),
        };
        let mut f = Finding::new(key, &v, occ(0));
        assert_eq!(f.last().offset, 0);
        for i in 1..1000 {
            f.add(occ(i));
        }
        assert_eq!(f.count, 1000);
        assert_eq!(f.first.len(), SAMPLES);
        assert_eq!(f.first().offset, 0);
        assert_eq!(f.last().offset, 999);
    }
}
