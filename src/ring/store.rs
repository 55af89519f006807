//! The ring's memory: the latest records (JSONL lines) of every connection in one queue under
//! one byte budget, and each connection's opening records pinned apart from it.
//!
//! The budget is split once: five eighths for the queue's bytes (one [`Circular`] buffer), an
//! eighth for its records' bookkeeping, a quarter for the pins; what is resident stays within
//! it whatever the traffic. The oldest record goes first when a new one finds no room,
//! whatever its connection. Opening records (protocol headers, SASL, open, begin, attach,
//! channel.open, consumer, qos and confirm set-up: see [`super::pins`]) are kept apart, at
//! most [`MAX_PINNED_PER_CONN`] per connection: past their quarter the oldest connection's
//! pins go (its later records then read as a connection whose start the dump does not hold).
//! A connection's pins go once it has closed and none of its records is left in the queue.
//!
//! [`Store::write_dump`] writes pins and queue merged in arrival order, and a `gap` record
//! wherever a direction's bytes were evicted between two records it keeps, so that reading the
//! dump back knows exactly what it misses.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use crate::event::{ConnId, Dir, Event, EventKind, Timestamp};
use crate::pipeline::Sink;

use super::circular::{Circular, Slot};

/// Pinned records per connection, at most (a client opening thousands of channels pins its
/// first ones; the rest are ordinary records).
pub const MAX_PINNED_PER_CONN: usize = 256;

/// What a pinned record costs beyond its bytes (its entry and allocation), in the budget.
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

/// What a record is, besides its line.
#[derive(Clone, Copy, Debug)]
struct Meta {
    seq: u64,
    conn: ConnId,
    ts: Timestamp,
    span: Option<Span>,
}

/// A pinned record: its line in an allocation of its own.
#[derive(Debug)]
struct Pin {
    meta: Meta,
    line: Box<[u8]>,
}

impl Pin {
    fn cost(&self) -> usize {
        self.line.len() + RECORD_OVERHEAD
    }
}

/// One connection's bookkeeping.
#[derive(Debug, Default)]
struct Conn {
    pins: Vec<Pin>,
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
    pinned: usize,
    seq: u64,
    bytes: Circular,
    queue: VecDeque<(Meta, Slot)>,
    max_queued: usize,
    conns: BTreeMap<ConnId, Conn>,
}

impl Store {
    /// An empty store holding at most `budget` bytes of records and their bookkeeping.
    pub fn new(budget: usize) -> Self {
        let max_queued = (budget / 8 / std::mem::size_of::<(Meta, Slot)>()).max(1);
        Store {
            budget,
            pinned: 0,
            seq: 0,
            bytes: Circular::new(budget / 8 * 5),
            // Reserved once (untouched pages cost nothing until used): it never grows.
            queue: VecDeque::with_capacity(max_queued),
            max_queued,
            conns: BTreeMap::new(),
        }
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
        let meta = Meta {
            seq: self.seq,
            conn,
            ts,
            span,
        };
        let c = self.conns.entry(conn).or_default();
        c.closed |= closes;
        if pin && !c.unpinned && c.pins.len() < MAX_PINNED_PER_CONN {
            let rec = Pin {
                meta,
                line: line.into(),
            };
            if rec.cost() <= self.budget / 4 {
                self.pinned += rec.cost();
                c.pins.push(rec);
                while self.pinned > self.budget / 4 {
                    self.unpin_oldest();
                }
                return;
            }
        }
        // A record larger than the queue could hold is left out (a gap in the dump).
        if line.len() <= self.bytes.cap() {
            while self.bytes.free() < line.len() || self.queue.len() >= self.max_queued {
                self.evict_oldest();
            }
            if let Some(slot) = self.bytes.push(line) {
                self.queue.push_back((meta, slot));
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.queued += 1;
                }
            }
        }
        self.forget_if_done(conn);
    }

    fn evict_oldest(&mut self) {
        let Some((meta, slot)) = self.queue.pop_front() else {
            return;
        };
        self.bytes.pop(slot);
        if let Some(c) = self.conns.get_mut(&meta.conn) {
            c.queued -= 1;
        }
        self.forget_if_done(meta.conn);
    }

    /// Drop the pins of the oldest connection that has some.
    fn unpin_oldest(&mut self) {
        let Some((_, c)) = self.conns.iter_mut().find(|(_, c)| !c.pins.is_empty()) else {
            self.pinned = 0;
            return;
        };
        let freed: usize = c.pins.iter().map(Pin::cost).sum();
        c.pins = Vec::new();
        c.unpinned = true;
        self.pinned -= freed;
    }

    /// A closed connection with nothing queued is forgotten, its pins with it.
    fn forget_if_done(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get(&conn)
            && c.closed
            && c.queued == 0
        {
            let freed: usize = c.pins.iter().map(Pin::cost).sum();
            self.pinned -= freed;
            self.conns.remove(&conn);
        }
    }

    /// Write every record held, pins and queue merged in arrival order, into `out` (a JSONL
    /// sink: records go as rendered bytes), with a `gap` event before each record whose
    /// direction's bytes do not follow on from the last record kept of it.
    pub fn write_dump<S: Sink + ?Sized>(&self, out: &mut S) -> io::Result<()> {
        let mut pins: Vec<&Pin> = self.conns.values().flat_map(|c| c.pins.iter()).collect();
        pins.sort_unstable_by_key(|r| r.meta.seq);
        let mut next: BTreeMap<(ConnId, Dir), u64> = BTreeMap::new();
        let (mut p, mut q) = (pins.into_iter().peekable(), self.queue.iter().peekable());
        loop {
            let take_pin = match (p.peek(), q.peek()) {
                (Some(a), Some((b, _))) => a.meta.seq < b.seq,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (meta, parts) = if take_pin {
                let Some(pin) = p.next() else { break };
                (pin.meta, (&pin.line[..], &[][..]))
            } else {
                let Some((meta, slot)) = q.next() else { break };
                (*meta, self.bytes.get(*slot))
            };
            if let Some(span) = meta.span {
                let at = next.entry((meta.conn, span.dir)).or_insert(0);
                if span.start > *at {
                    out.event(&Event {
                        conn: meta.conn,
                        ts: meta.ts,
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
            out.write_rendered(parts.0)?;
            if !parts.1.is_empty() {
                out.write_rendered(parts.1)?;
            }
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
        let reserved = s.queue.capacity();
        let line = vec![b'x'; 200];
        for conn in 1..=2000u64 {
            s.push(conn, Timestamp(0), span(Dir::C2S, 0, 8), &line, true, false);
            for i in 0..10 {
                let at = 8 + i * 100;
                s.push(
                    conn,
                    Timestamp(0),
                    span(Dir::C2S, at, at + 100),
                    &line,
                    false,
                    false,
                );
            }
            assert!(s.pinned <= 16 * 1024, "{}", s.pinned);
            assert_eq!(s.queue.capacity(), reserved, "the queue grew");
        }
        // The pins of the latest connections, the rest forgotten.
        assert!(s.conns.values().filter(|c| !c.pins.is_empty()).count() < 100);
    }

    #[test]
    fn a_dump_marks_each_evicted_run_of_bytes_with_a_gap() {
        let mut s = Store::new(16_000);
        let line = |n: u8| {
            let mut l = vec![n; 99];
            l.push(b'\n');
            l
        };
        s.push(
            1,
            Timestamp(0),
            span(Dir::C2S, 0, 8),
            &line(b'h'),
            true,
            false,
        );
        for i in 0..200u64 {
            s.push(
                1,
                Timestamp(0),
                span(Dir::C2S, 8 + i * 10, 18 + i * 10),
                &line(b'f'),
                false,
                false,
            );
        }
        let mut out = crate::sinks::JsonlSink::new(Vec::new(), Default::default());
        s.write_dump(&mut out).unwrap();
        let text = String::from_utf8(out.into_inner()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with('h'), "{text}");
        assert!(lines[1].contains("\"event\":\"gap\""), "{}", lines[1]);
        // The pin, a gap for the frames that went, the last ones that fit.
        let kept = (s.bytes.cap() / 100).min(s.max_queued) as u64;
        assert!(kept > 0 && kept < 200);
        let gap = format!("\"len\":{},", (200 - kept) * 10);
        assert!(
            lines[1].contains(&gap) && lines[1].contains("\"offset\":8,"),
            "{}",
            lines[1]
        );
        assert_eq!(lines.len() as u64, 2 + kept, "{text}");
        assert!(lines[2..].iter().all(|l| l.starts_with('f')));
    }

    #[test]
    fn a_closed_connection_is_forgotten_with_its_pins_once_its_records_are_gone() {
        let mut s = Store::new(4 * (10 + RECORD_OVERHEAD));
        s.push(1, Timestamp(0), None, b"connect\n\n", true, false);
        s.push(1, Timestamp(0), None, b"close\n\n\n\n", false, true);
        for i in 0..10 {
            s.push(
                2,
                Timestamp(0),
                span(Dir::C2S, i * 5, i * 5 + 5),
                b"0123456789",
                false,
                false,
            );
        }
        assert!(!s.conns.contains_key(&1));
        assert_eq!(s.pinned, 0);
    }
}
