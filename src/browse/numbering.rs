//! The row numbers of the frame list, given to pipeline events the same way wherever they are
//! counted: by the TUI as the events arrive, and by the pager (`replay::pager`) as it re-runs the
//! pipeline over a capture file to bring back the rows around a frame no longer in memory.
//! Both count the same events in the same order, so a row keeps its number across re-runs.
//!
//! A header, frame, gap or close is a row; a violation belongs to the latest row of its
//! connection at its direction and offset among the last [`LOOKBACK`] rows, and a `codec.*`
//! violation that belongs to none is a row of its own (the malformed bytes). Memory: the last
//! [`LOOKBACK`] row keys of each open connection (and of the latest closed ones).

use std::collections::VecDeque;

use crate::event::{ConnId, Dir, Event, EventKind};
use crate::hash::HashMap;

/// How many of a connection's latest rows a violation may belong to.
pub const LOOKBACK: usize = 64;

/// Closed connections whose recent rows are kept (for the violations found at their end).
const KEEP_CLOSED: usize = 256;

/// Where an event goes in the frame list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// It is the row with this number.
    Row(u64),
    /// It belongs to the row with this number (a violation).
    Attach(u64),
    /// It is no row (connect, data, state, fin, a violation of no row).
    None,
}

/// What identifies a recent row for the violations that follow it.
#[derive(Clone, Copy, Debug)]
struct Key {
    seq: u64,
    dir: Option<Dir>,
    offset: u64,
    close: bool,
}

/// Numbers the rows of a stream of pipeline events.
#[derive(Debug, Default)]
pub struct Numbering {
    next: u64,
    recent: HashMap<ConnId, VecDeque<Key>>,
    closed: VecDeque<ConnId>,
}

impl Numbering {
    /// A numbering whose first row is `first`: a stream that starts after `first` rows of a
    /// session no longer held (the live view's spool ring, once it removed its oldest part).
    pub fn starting_at(first: u64) -> Numbering {
        Numbering {
            next: first,
            ..Numbering::default()
        }
    }

    /// The number the next row gets (= the rows numbered so far).
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Where `e` goes; counts it when it is a row.
    pub fn place(&mut self, e: &Event) -> Place {
        let (dir, offset, close) = match &e.kind {
            EventKind::Header { dir, offset, .. } | EventKind::Gap { dir, offset, .. } => {
                (Some(*dir), *offset, false)
            }
            EventKind::Frame(f) => (Some(f.dir), f.offset, false),
            EventKind::Close(_) => (None, 0, true),
            EventKind::Violation(v) => {
                let found = self.recent.get(&e.conn).and_then(|keys| {
                    keys.iter()
                        .rev()
                        .find(|k| k.dir == Some(v.dir) && k.offset == v.offset && !k.close)
                        .map(|k| k.seq)
                });
                match found {
                    Some(seq) => return Place::Attach(seq),
                    None if v.rule.id.starts_with("codec.") => (Some(v.dir), v.offset, false),
                    None => return Place::None,
                }
            }
            _ => return Place::None,
        };
        let seq = self.next;
        self.next += 1;
        let keys = self.recent.entry(e.conn).or_default();
        if keys.len() == LOOKBACK {
            keys.pop_front();
        }
        keys.push_back(Key {
            seq,
            dir,
            offset,
            close,
        });
        if close {
            // Little follows a close on its connection: the keys of the latest closed ones only.
            self.closed.push_back(e.conn);
            if self.closed.len() > KEEP_CLOSED
                && let Some(old) = self.closed.pop_front()
            {
                self.recent.remove(&old);
            }
        }
        Place::Row(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Severity, Timestamp, Violation};

    fn ev(conn: ConnId, kind: EventKind) -> Event {
        Event {
            conn,
            ts: Timestamp(0),
            kind,
        }
    }

    fn gap(offset: u64) -> EventKind {
        EventKind::Gap {
            dir: Dir::C2S,
            offset,
            len: 1,
            reason: "test".into(),
        }
    }

    fn violation(rule: &str, offset: u64) -> EventKind {
        EventKind::Violation(Violation {
            rule: crate::state::rules::by_id(rule).expect("a rule of the catalog"),
            severity: Severity::Error,
            spec: String::new(),
            message: String::new(),
            dir: Dir::C2S,
            offset,
            frame: None,
        })
    }

    #[test]
    fn rows_are_numbered_across_connections_and_violations_find_their_row() {
        let mut n = Numbering::default();
        assert_eq!(n.place(&ev(1, gap(0))), Place::Row(0));
        assert_eq!(n.place(&ev(2, gap(0))), Place::Row(1));
        assert_eq!(n.place(&ev(1, gap(5))), Place::Row(2));
        // The row of its connection at its offset, not the other connection's.
        assert_eq!(
            n.place(&ev(1, violation("amqp10.connection.frame-after-close", 0))),
            Place::Attach(0)
        );
        assert_eq!(
            n.place(&ev(2, violation("amqp10.connection.frame-after-close", 0))),
            Place::Attach(1)
        );
        // No row there: a codec violation is a row of its own, another is none.
        assert_eq!(
            n.place(&ev(1, violation("amqp10.connection.frame-after-close", 9))),
            Place::None
        );
        assert_eq!(
            n.place(&ev(1, violation("codec.malformed-frame", 9))),
            Place::Row(3)
        );
        assert_eq!(
            n.place(&ev(1, violation("amqp10.connection.frame-after-close", 9))),
            Place::Attach(3)
        );
        assert_eq!(n.next(), 4);
    }

    #[test]
    fn a_violation_belongs_to_one_of_the_latest_rows_only() {
        let mut n = Numbering::default();
        n.place(&ev(1, gap(0)));
        for i in 1..=LOOKBACK as u64 {
            n.place(&ev(1, gap(i)));
        }
        assert_eq!(
            n.place(&ev(1, violation("amqp10.connection.frame-after-close", 0))),
            Place::None
        );
        assert_eq!(
            n.place(&ev(1, violation("amqp10.connection.frame-after-close", 1))),
            Place::Attach(1)
        );
    }
}
