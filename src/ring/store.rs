//! The ring's memory: the latest records (JSONL lines) of every connection in one queue under
//! one byte budget, and each connection's opening records pinned apart from it.
//!
//! The oldest record goes first when a new one would pass the budget, whatever its
//! connection. Opening records (protocol headers, SASL, open, begin, attach, channel.open,
//! consumer, qos and confirm set-up: see [`super::pins`]) are kept apart, at most
//! [`MAX_PINNED_PER_CONN`] per connection and a quarter of the budget for all, counted in the
//! same budget: past that quarter the oldest connection's pins go (its later records then read
//! as a connection whose start the dump does not hold). A connection's pins go once it has
//! closed and none of its records is left in the queue.
//!
//! [`Store::write_dump`] writes pins and queue merged in arrival order, and a `gap` record
//! wherever a direction's bytes were evicted between two records it keeps, so that reading the
//! dump back knows exactly what it misses.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use crate::event::{ConnId, Dir, Event, EventKind, Timestamp};
use crate::pipeline::Sink;

/// Pinned records per connection, at most (a client opening thousands of channels pins its
/// first ones; the rest are ordinary records).
pub const MAX_PINNED_PER_CONN: usize = 256;

/// What a record costs beyond its bytes (its entry and allocation), in the budget.
pub const RECORD_OVERHEAD: usize = 64;

/// The gap records' reason.
pub const EVICTED: &str = "evicted from the ring capture";

/// Where a record's bytes sit in its direction's stream: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Which stream.
    pub dir: Dir,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// One record: a JSONL line (or a few: a close ends with its coalesced violations).
#[derive(Debug)]
struct Record {
    seq: u64,
    conn: ConnId,
    ts: Timestamp,
    span: Option<Span>,
    line: Box<[u8]>,
}

impl Record {
    fn cost(&self) -> usize {
        self.line.len() + RECORD_OVERHEAD
    }
}

/// One connection's bookkeeping.
#[derive(Debug, Default)]
struct Conn {
    pins: Vec<Record>,
    /// Its records in the queue.
    queued: usize,
    closed: bool,
    /// Its pins were dropped for room: it pins nothing more.
    unpinned: bool,
}

/// The ring's records under one budget.
#[derive(Debug)]
pub struct Store {
    budget: usize,
    used: usize,
    pinned: usize,
    seq: u64,
    queue: VecDeque<Record>,
    conns: BTreeMap<ConnId, Conn>,
    /// Records never kept or evicted (for the dump's note).
    evicted: u64,
}

impl Store {
    /// An empty store holding at most `budget` bytes of records.
    pub fn new(budget: usize) -> Self {
        Store {
            budget,
            used: 0,
            pinned: 0,
            seq: 0,
            queue: VecDeque::new(),
            conns: BTreeMap::new(),
            evicted: 0,
        }
    }

    /// Bytes held (records and their overhead), at most the budget.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Records held, pinned and queued.
    pub fn records(&self) -> usize {
        self.queue.len() + self.conns.values().map(|c| c.pins.len()).sum::<usize>()
    }

    /// Keep `line`, the record of an event of `conn` at `ts` whose bytes are `span`; pinned
    /// when `pin` (and there is room for pins). `closes`: the connection's last record.
    pub fn push(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        span: Option<Span>,
        line: &[u8],
        pin: bool,
        closes: bool,
    ) {
        self.seq += 1;
        let rec = Record {
            seq: self.seq,
            conn,
            ts,
            span,
            line: line.into(),
        };
        let cost = rec.cost();
        let c = self.conns.entry(conn).or_default();
        c.closed |= closes;
        if cost > self.budget / 2 {
            self.evicted += 1; // larger than the ring could sensibly hold: left out
            self.forget_if_done(conn);
            return;
        }
        let c = self.conns.entry(conn).or_default();
        if pin && !c.unpinned && c.pins.len() < MAX_PINNED_PER_CONN {
            c.pins.push(rec);
            self.pinned += cost;
            self.used += cost;
            while self.pinned > self.budget / 4 {
                self.unpin_oldest();
            }
        } else {
            c.queued += 1;
            self.queue.push_back(rec);
            self.used += cost;
        }
        while self.used > self.budget && (!self.queue.is_empty() || self.pinned > 0) {
            self.evict_oldest();
        }
        self.forget_if_done(conn);
    }

    fn evict_oldest(&mut self) {
        let Some(rec) = self.queue.pop_front() else {
            // Only pins are left over the budget (cannot happen: pins hold at most a quarter).
            self.unpin_oldest();
            return;
        };
        self.used -= rec.cost();
        self.evicted += 1;
        if let Some(c) = self.conns.get_mut(&rec.conn) {
            c.queued -= 1;
        }
        self.forget_if_done(rec.conn);
    }

    /// Drop the pins of the oldest connection that has some.
    fn unpin_oldest(&mut self) {
        let Some((_, c)) = self.conns.iter_mut().find(|(_, c)| !c.pins.is_empty()) else {
            self.pinned = 0;
            return;
        };
        let freed: usize = c.pins.iter().map(Record::cost).sum();
        self.evicted += c.pins.len() as u64;
        c.pins = Vec::new();
        c.unpinned = true;
        self.pinned -= freed;
        self.used -= freed;
    }

    /// A closed connection with nothing queued is forgotten, its pins with it.
    fn forget_if_done(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get(&conn)
            && c.closed
            && c.queued == 0
        {
            let freed: usize = c.pins.iter().map(Record::cost).sum();
            self.pinned -= freed;
            self.used -= freed;
            self.conns.remove(&conn);
        }
    }

    /// Write every record held, pins and queue merged in arrival order, into `out` (a JSONL
    /// sink: records go as rendered bytes), with a `gap` event before each record whose
    /// direction's bytes do not follow on from the last record kept of it.
    pub fn write_dump<S: Sink + ?Sized>(&self, out: &mut S) -> io::Result<()> {
        let mut pins: Vec<&Record> = self.conns.values().flat_map(|c| c.pins.iter()).collect();
        pins.sort_unstable_by_key(|r| r.seq);
        let mut next: BTreeMap<(ConnId, Dir), u64> = BTreeMap::new();
        let (mut p, mut q) = (pins.into_iter().peekable(), self.queue.iter().peekable());
        loop {
            let rec = match (p.peek(), q.peek()) {
                (Some(a), Some(b)) if a.seq < b.seq => p.next(),
                (Some(_), None) => p.next(),
                (_, Some(_)) => q.next(),
                (None, None) => break,
            };
            let Some(rec) = rec else { break };
            if let Some(span) = rec.span {
                let at = next.entry((rec.conn, span.dir)).or_insert(0);
                if span.start > *at {
                    out.event(&Event {
                        conn: rec.conn,
                        ts: rec.ts,
                        kind: EventKind::Gap {
                            dir: span.dir,
                            offset: *at,
                            len: span.start - *at,
                            reason: EVICTED.to_string(),
                        },
                    })?;
                }
                *at = (*at).max(span.end);
            }
            out.write_rendered(&rec.line)?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(dir: Dir, start: u64, end: u64) -> Option<Span> {
        Some(Span { dir, start, end })
    }

    #[test]
    fn the_budget_holds_whatever_the_number_of_connections() {
        let mut s = Store::new(64 * 1024);
        let line = vec![b'x'; 200];
        for conn in 1..=2000u64 {
            s.push(conn, Timestamp(0), span(Dir::C2S, 0, 8), &line, true, false);
            for i in 0..10 {
                let at = 8 + i * 100;
                s.push(conn, Timestamp(0), span(Dir::C2S, at, at + 100), &line, false, false);
            }
            assert!(s.used() <= 64 * 1024, "{}", s.used());
            assert!(s.pinned <= 16 * 1024);
        }
    }

    #[test]
    fn a_dump_marks_each_evicted_run_of_bytes_with_a_gap() {
        let mut s = Store::new(8 * (100 + RECORD_OVERHEAD));
        let line = |n: u8| {
            let mut l = vec![n; 99];
            l.push(b'\n');
            l
        };
        s.push(1, Timestamp(0), span(Dir::C2S, 0, 8), &line(b'h'), true, false);
        for i in 0..20u64 {
            s.push(1, Timestamp(0), span(Dir::C2S, 8 + i * 10, 18 + i * 10), &line(b'f'), false, false);
        }
        let mut out = crate::sinks::JsonlSink::new(Vec::new(), Default::default());
        s.write_dump(&mut out).unwrap();
        let text = String::from_utf8(out.into_inner()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with('h'), "{text}");
        assert!(lines[1].contains("\"event\":\"gap\""), "{}", lines[1]);
        // Eight records fit: the pin and the last seven frames (the 13 before went).
        assert!(lines[1].contains("\"len\":130") && lines[1].contains("\"offset\":8,"), "{}", lines[1]);
        assert_eq!(lines.len(), 9, "{text}");
    }

    #[test]
    fn a_closed_connection_is_forgotten_with_its_pins_once_its_records_are_gone() {
        let mut s = Store::new(4 * (10 + RECORD_OVERHEAD));
        s.push(1, Timestamp(0), None, b"connect\n\n", true, false);
        s.push(1, Timestamp(0), None, b"close\n\n\n\n", false, true);
        for i in 0..10 {
            s.push(2, Timestamp(0), span(Dir::C2S, i * 5, i * 5 + 5), b"0123456789", false, false);
        }
        assert!(!s.conns.contains_key(&1));
        assert_eq!(s.pinned, 0);
    }
}
