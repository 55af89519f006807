//! Repeated violations in the written outputs: the first [`RECORDED`] reports of one rule by one
//! peer on one connection and scope (channel, link: as `check` groups its findings) are written
//! one by one; the rest are counted, and written once, when the connection closes, as one
//! [`Repeated`] record with the count and the first and last of them. A flood of violating
//! frames then costs the trace, the JSONL and the pcapng a few records, not one per frame, and
//! the checks of those captures (which judge the bytes again) count every occurrence.
//!
//! Memory: per open connection, at most [`MAX_SCOPES`] counted scopes; beyond, a rule and
//! peer are counted over the whole connection.

use crate::base::{ConnId, Dir, Rule, Timestamp, Violation};
use crate::event::{Event, EventKind};
use crate::hash::HashMap;
use crate::verdict::finding::Scope;

/// Reports of one rule, peer and scope written one by one before they are counted.
pub const RECORDED: u64 = 5;

/// Scopes counted per connection; beyond, a rule and peer count over the whole connection.
pub const MAX_SCOPES: usize = 4096;

/// The reports of one rule by one peer on one scope that were counted, not written.
#[derive(Clone, Debug)]
pub struct Repeated {
    /// The rule.
    pub rule: &'static Rule,
    /// The peer at fault sent in this direction.
    pub dir: Dir,
    /// Where (empty: the whole connection).
    pub scope: Scope,
    /// Reports counted (beyond the [`RECORDED`] written).
    pub count: u64,
    /// The first counted: (offset, time).
    pub first: (u64, Timestamp),
    /// The last counted: (offset, time).
    pub last: (u64, Timestamp),
}

impl Repeated {
    /// The record as a violation of its rule, at its last offset, saying what it stands for.
    pub fn violation(&self) -> Violation {
        let (first, last) = (self.first, self.last);
        let mut v = self.rule.violation(
            self.dir,
            last.0,
            format!(
                "{} more time(s){}, at offsets {}..{} ({} .. {}): the first {RECORDED} are recorded one by one, the rest counted here",
                self.count,
                match self.scope.describe() {
                    s if s.is_empty() => String::new(),
                    s => format!(" on {s}"),
                },
                first.0,
                last.0,
                first.1.rfc3339(),
                last.1.rfc3339()
            ),
        );
        v.frame = None;
        v
    }
}

type Key = (&'static str, Dir, Scope);

/// What one connection's reports were.
#[derive(Debug, Default)]
struct Conn {
    /// The last frame: (direction, offset, scope); its violations follow it.
    last_frame: Option<(Dir, u64, Scope)>,
    /// Reports per rule, peer and scope, and what was counted of them.
    seen: HashMap<Key, (u64, Option<Repeated>)>,
}

/// Decides, event by event, which violations are written and which counted (see the module
/// documentation). Each output keeps its own.
#[derive(Debug, Default)]
pub struct Coalescer {
    conns: HashMap<ConnId, Conn>,
}

impl Coalescer {
    /// Take `ev` (every event, in order): true when it is to be written, false for a violation
    /// counted instead.
    pub fn keep(&mut self, ev: &Event) -> bool {
        match &ev.kind {
            EventKind::Frame(f) => {
                let c = self.conns.entry(ev.conn).or_default();
                c.last_frame = Some((f.dir, f.offset, Scope::of_frame(&f.frame)));
                true
            }
            EventKind::Violation(v) => self.violation(ev, v),
            EventKind::Close(_) => true,
            _ => {
                if let Some(c) = self.conns.get_mut(&ev.conn) {
                    c.last_frame = None;
                }
                true
            }
        }
    }

    fn violation(&mut self, ev: &Event, v: &Violation) -> bool {
        let c = self.conns.entry(ev.conn).or_default();
        // As `check` scopes a finding: the frame it follows, narrowed to the rule's scope.
        let scope = match c.last_frame {
            Some((d, o, s)) if v.frame.is_some() && d == v.dir && o == v.offset => s,
            _ => Scope::default(),
        }
        .for_rule(v.rule.id);
        let mut key = (v.rule.id, v.dir, scope);
        if !c.seen.contains_key(&key) && c.seen.len() >= MAX_SCOPES {
            key.2 = Scope::default();
        }
        let (n, counted) = c.seen.entry(key).or_insert((0, None));
        *n += 1;
        if *n <= RECORDED {
            return true;
        }
        let at = (v.offset, ev.ts);
        match counted {
            Some(r) => {
                r.count += 1;
                r.last = at;
            }
            None => {
                *counted = Some(Repeated {
                    rule: v.rule,
                    dir: v.dir,
                    scope: key.2,
                    count: 1,
                    first: at,
                    last: at,
                });
            }
        }
        false
    }

    /// `conn` closed: what was counted of it, in a stable order (rule, peer, scope).
    pub fn close(&mut self, conn: ConnId) -> Vec<Repeated> {
        let Some(c) = self.conns.remove(&conn) else {
            return Vec::new();
        };
        let mut out: Vec<Repeated> = c.seen.into_values().filter_map(|(_, r)| r).collect();
        out.sort_by_key(|r| (r.rule.id, r.dir, r.scope));
        out
    }
}
