//! Routes source events to one [`Inspector`] per connection and collects the events they make:
//! the same for the proxy's workers, `replay` and `check`.

use crate::hash::HashSet;

use super::Stats;
use crate::base::id_map::IdMap;
use crate::capture::SourceEvent;
use crate::event::{CloseReason, ConnId, Dir, Event, EventKind, Timestamp};
use crate::pipeline::{InspectOptions, Inspector};

/// The inspectors of the connections one thread (the only one, or one worker) is given.
#[derive(Debug)]
pub struct Router {
    opts: InspectOptions,
    inspectors: ByConn<Inspector>,
    /// Connections that connected and have had no bytes yet: only their number is kept (an
    /// inspector is made at their first bytes, or to close them), so a capture of a million
    /// connects costs a set of numbers, not a million inspectors.
    idle: HashSet<ConnId>,
    /// Connections whose inspector panicked (live only): not inspected any more.
    poisoned: HashSet<ConnId>,
    /// Whether an inspector's panic is contained (live: one connection's decoder bug must not
    /// stop the inspection of the others) or goes on (offline: a bug to see, and to fuzz for).
    contain_panics: bool,
    /// Connections that got bytes since [`Router::flush_data`].
    touched: Vec<ConnId>,
    stats: Stats,
    last_ts: Timestamp,
}

impl Router {
    /// A router whose inspectors use `opts`.
    pub fn new(opts: InspectOptions) -> Self {
        Router {
            opts,
            inspectors: ByConn::default(),
            idle: HashSet::default(),
            poisoned: HashSet::default(),
            contain_panics: false,
            touched: Vec::new(),
            stats: Stats::default(),
            last_ts: Timestamp(0),
        }
    }

    /// The same, containing an inspector's panic to its connection: it gets a gap event saying
    /// it is not inspected any more, and the others go on (the proxy's choice).
    pub fn containing_panics(mut self) -> Self {
        self.contain_panics = true;
        self
    }

    /// What has been seen so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The time of the latest source event that had one.
    pub fn last_ts(&self) -> Timestamp {
        self.last_ts
    }

    #[inline]
    fn inspector(&mut self, conn: ConnId) -> &mut Inspector {
        let opts = &self.opts;
        // Connections wait there only until their first bytes: nearly always empty.
        if !self.idle.is_empty() {
            self.idle.remove(&conn);
        }
        self.inspectors
            .get_or_insert_with(conn, || new_inspector(conn, opts))
    }

    /// The inspector of `conn` to close it with, if it connected (one made now for a connection
    /// that had no bytes).
    fn take_inspector(&mut self, conn: ConnId) -> Option<Inspector> {
        match self.inspectors.remove(conn) {
            Some(insp) => Some(insp),
            None => self
                .idle
                .remove(&conn)
                .then(|| Inspector::new(conn, self.opts.clone())),
        }
    }

    /// Turn one source event into pipeline events appended to `out`.
    pub fn feed(&mut self, ev: SourceEvent, out: &mut Vec<Event>) {
        self.feed_skimming(ev, false, out);
    }

    /// As [`Router::feed`]; a chunk with `skim` set is passed over by frame sizes instead of
    /// decoded ([`Inspector::skim`]: a live view that fell behind).
    #[inline]
    pub fn feed_skimming(&mut self, ev: SourceEvent, skim: bool, out: &mut Vec<Event>) {
        match ev {
            // The usual event, while no connection is poisoned: what the general path does
            // with it, without its steps for the other events.
            SourceEvent::Chunk(c) if self.poisoned.is_empty() => {
                let start = out.len();
                self.last_ts = c.ts;
                self.chunk_event(c, skim, out);
                self.count(&out[start..]);
            }
            ev => self.feed_any(ev, skim, out),
        }
    }

    /// [`Router::feed_skimming`] of any event.
    fn feed_any(&mut self, ev: SourceEvent, skim: bool, out: &mut Vec<Event>) {
        let start = out.len();
        if let Some(ts) = ev.ts() {
            self.last_ts = ts;
        }
        if !self.poisoned.is_empty()
            && let Some(conn) = ev.conn()
            && self.poisoned.contains(&conn)
            && !matches!(ev, SourceEvent::Connect { .. })
        {
            if let SourceEvent::Close { ts, reason, .. } = ev {
                // Its close is still told, by an inspector that saw nothing of it.
                self.poisoned.remove(&conn);
                Inspector::new(conn, self.opts.clone()).close(ts, reason, out);
            }
            return;
        }
        match ev {
            SourceEvent::Connect {
                conn,
                ts,
                client,
                server,
            } => {
                self.stats.connections += 1;
                self.poisoned.remove(&conn);
                if !self.inspectors.contains(conn) {
                    self.idle.insert(conn);
                }
                out.push(Event {
                    conn,
                    ts,
                    kind: EventKind::Connect {
                        client,
                        upstream: server,
                    },
                });
            }
            SourceEvent::Chunk(c) => self.chunk_event(c, skim, out),
            SourceEvent::Gap {
                conn,
                ts,
                dir,
                offset,
                len,
                reason,
                resync,
            } => {
                self.inspector(conn)
                    .gap(dir, ts, offset, len, reason, resync, out);
            }
            SourceEvent::TlsHeader {
                conn,
                dir,
                ts,
                bytes,
            } => self.inspector(conn).tls_header(dir, ts, bytes, out),
            SourceEvent::Notice {
                conn,
                ts,
                violation,
            } => out.push(Event {
                conn,
                ts,
                kind: EventKind::Violation(violation),
            }),
            SourceEvent::Fin { conn, dir, ts } => {
                if let Some(insp) = self.inspectors.get_mut(conn) {
                    insp.fin(dir, ts, out);
                }
            }
            SourceEvent::Close { conn, ts, reason } => {
                if let Some(mut insp) = self.take_inspector(conn) {
                    insp.close(ts, reason, out);
                }
            }
            SourceEvent::Error {
                file_offset,
                message,
            } => {
                self.stats.read_errors.push((file_offset, message));
            }
        }
        self.count(&out[start..]);
    }

    /// A chunk: counted, and through its inspector.
    #[inline]
    fn chunk_event(&mut self, c: crate::event::Chunk, skim: bool, out: &mut Vec<Event>) {
        self.stats.bytes += c.bytes.len() as u64;
        if self.opts.emit_data {
            self.touched.push(c.conn);
        }
        self.chunk(c, skim, out);
    }

    fn count(&mut self, events: &[Event]) {
        let (mut frames, mut violations) = (0, 0);
        for e in events {
            match e.kind {
                EventKind::Frame(_) => frames += 1,
                EventKind::Violation(_) => violations += 1,
                _ => {}
            }
        }
        self.stats.frames += frames;
        self.stats.violations += violations;
    }

    /// A chunk through its inspector (decoded, or skimmed); a panic there is contained to the
    /// connection when the router contains panics.
    #[inline(always)]
    fn chunk(&mut self, c: crate::event::Chunk, skim: bool, out: &mut Vec<Event>) {
        let contain = self.contain_panics;
        let insp = self.inspector(c.conn);
        let (conn, dir, ts, len) = (c.conn, c.dir, c.ts, c.bytes.len() as u64);
        let feed = |insp: &mut Inspector, out: &mut Vec<Event>| {
            if skim {
                insp.skim(c.dir, c.ts, c.bytes, out)
            } else {
                insp.chunk(c.dir, c.ts, c.bytes, out)
            }
        };
        if !contain {
            feed(insp, out);
            let held_back = insp.take_frames_held_back();
            self.stats.frames += held_back;
            return;
        }
        let at = insp.bytes_seen(dir);
        let start = out.len();
        let fed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| feed(&mut *insp, &mut *out)));
        match fed {
            Ok(()) => {
                // Frames decoded and sent as no event (`InspectOptions::emit_frames`) count
                // as those sent do.
                let held_back = insp.take_frames_held_back();
                self.stats.frames += held_back;
            }
            Err(_) => {
                out.truncate(start);
                self.poison(conn, ts, (dir, at, len), out);
            }
        }
    }

    /// `conn`'s inspector panicked (at `dir`'s offset `at`, in `len` bytes): a decoder bug
    /// must not take the other connections' inspection down with it. It is not inspected any
    /// more, and a gap event says so.
    fn poison(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        (dir, at, len): (Dir, u64, u64),
        out: &mut Vec<Event>,
    ) {
        tracing::error!("#{conn}: the inspector panicked; not inspecting this connection any more");
        self.inspectors.remove(conn);
        self.poisoned.insert(conn);
        out.push(Event {
            conn,
            ts,
            kind: EventKind::Gap {
                dir,
                offset: at,
                len,
                reason: "inspector failed; the rest of this connection is not inspected".into(),
            },
        });
    }

    /// Whether a connection with bytes is open (something a clock tick may concern).
    pub fn has_open(&self) -> bool {
        !self.inspectors.is_empty()
    }

    /// The clock reads `now`: each open connection's diagnoses whose condition held its
    /// threshold by then start ([`Inspector::tick`]; at once when none is due), in connection
    /// order. Live, the driver ticks while connections are silent, so a stall shows while it
    /// lasts; offline, the chunks' times and the capture's end are the clock. Either way a
    /// diagnosis starts at the time its condition held its threshold, whichever tick noticed
    /// it.
    pub fn tick(&mut self, now: Timestamp, out: &mut Vec<Event>) {
        let mut conns: Vec<ConnId> = self.inspectors.conns();
        conns.sort_unstable();
        for conn in conns {
            let Some(insp) = self.inspectors.get_mut(conn) else {
                continue;
            };
            if !self.contain_panics {
                insp.tick(now, out);
                continue;
            }
            let at = insp.bytes_seen(Dir::C2S);
            let start = out.len();
            let ticked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                insp.tick(now, &mut *out)
            }));
            if ticked.is_err() {
                out.truncate(start);
                self.poison(conn, now, (Dir::C2S, at, 0), out);
            }
        }
    }

    /// A `State` event for each connection whose state changed since its last one (see
    /// [`Inspector::publish_state`]), as of its latest bytes, in connection order.
    pub fn publish_states(&mut self, out: &mut Vec<Event>) {
        let mut conns: Vec<ConnId> = self.inspectors.conns();
        conns.sort_unstable();
        for conn in conns {
            if let Some(insp) = self.inspectors.get_mut(conn) {
                insp.publish_state(insp.latest_ts(), out);
            }
        }
    }

    /// The bytes of incomplete frames of every connection that got bytes since the last call,
    /// as `Data` events (as of `now`): the captures hold every relayed byte however the proxy
    /// ends (kill -9 included).
    pub fn flush_data(&mut self, now: Timestamp, out: &mut Vec<Event>) {
        self.touched.sort_unstable();
        self.touched.dedup();
        for conn in self.touched.drain(..) {
            if let Some(insp) = self.inspectors.get_mut(conn) {
                insp.flush_data(now, out);
            }
        }
    }

    /// Close every connection still open (the capture ended), as of the last source event.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_at(self.last_ts, CAPTURE_ENDED, out);
    }

    /// Close every connection still open as of `ts`, for `reason`, in connection order (`ts`:
    /// the capture's last time, for a router fed only some of its connections; or now).
    pub fn finish_at(&mut self, ts: Timestamp, reason: CloseReason, out: &mut Vec<Event>) {
        let mut conns: Vec<ConnId> = self.inspectors.conns();
        conns.extend(self.idle.iter().copied());
        conns.sort_unstable();
        for conn in conns {
            if let Some(mut insp) = self.take_inspector(conn) {
                let start = out.len();
                insp.close(ts, reason.clone(), out);
                self.count_violations(&out[start..]);
            }
        }
    }

    fn count_violations(&mut self, events: &[Event]) {
        self.stats.violations += events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Violation(_)))
            .count() as u64;
    }
}

/// A new inspector of `conn` (out of line: once a connection, not on every chunk's path).
#[cold]
#[inline(never)]
fn new_inspector(conn: ConnId, opts: &InspectOptions) -> Inspector {
    Inspector::new(conn, opts.clone())
}

/// A value per connection (a router's inspectors), each at a slot of its own
/// ([`IdMap`]), and the connection looked up last with its slot: the next chunk usually
/// belongs to the same connection, and then finds its value without hashing.
#[derive(Debug)]
struct ByConn<T> {
    /// The values, by connection.
    map: IdMap<T>,
    /// The connection looked up last, and its slot (which holds its value).
    last: Option<(ConnId, usize)>,
}

impl<T> Default for ByConn<T> {
    fn default() -> Self {
        ByConn {
            map: IdMap::default(),
            last: None,
        }
    }
}

impl<T> ByConn<T> {
    /// Whether no connection has a value.
    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether `conn` has a value.
    fn contains(&self, conn: ConnId) -> bool {
        self.map.contains_key(&conn)
    }

    /// The connections that have a value, in no particular order.
    fn conns(&self) -> Vec<ConnId> {
        self.map.iter().map(|(conn, _)| *conn).collect()
    }

    /// The slot `conn` was last found at, if it was the connection looked up last.
    #[inline]
    fn last_slot(&self, conn: ConnId) -> Option<usize> {
        self.last.filter(|(c, _)| *c == conn).map(|(_, slot)| slot)
    }

    /// `conn`'s value, if it has one.
    fn get_mut(&mut self, conn: ConnId) -> Option<&mut T> {
        let slot = match self.last_slot(conn) {
            Some(slot) => slot,
            None => self.map.slot(&conn)?,
        };
        self.last = Some((conn, slot));
        self.map.at_mut(slot, conn)
    }

    /// `conn`'s value, made by `make` if it has none.
    #[inline]
    fn get_or_insert_with(&mut self, conn: ConnId, make: impl FnOnce() -> T) -> &mut T {
        let (slot, value) = self
            .map
            .get_or_insert_with(self.last_slot(conn), conn, make);
        self.last = Some((conn, slot));
        value
    }

    /// Take `conn`'s value out, if it has one.
    fn remove(&mut self, conn: ConnId) -> Option<T> {
        if self.last_slot(conn).is_some() {
            self.last = None;
        }
        self.map.remove(&conn)
    }
}

/// Why the connections still open when a capture ends are closed.
pub const CAPTURE_ENDED: CloseReason = CloseReason::CaptureEnded;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chunk, Dir};
    use crate::hash::HashMap;
    use bytes::Bytes;

    #[test]
    fn values_by_connection_are_those_of_a_map_whatever_the_order_of_operations() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut by_conn: ByConn<u64> = ByConn::default();
        let mut model: HashMap<ConnId, u64> = HashMap::default();
        for step in 0..20_000u64 {
            // Few connections, so that the one looked up last is often asked again.
            let conn = next(6);
            match next(5) {
                0 | 1 => {
                    let v = by_conn.get_or_insert_with(conn, || step);
                    assert_eq!(*v, *model.entry(conn).or_insert(step), "step {step}");
                    *v += 1;
                    *model.get_mut(&conn).unwrap() += 1;
                }
                2 => assert_eq!(
                    by_conn.get_mut(conn).copied(),
                    model.get(&conn).copied(),
                    "step {step}"
                ),
                3 => assert_eq!(by_conn.remove(conn), model.remove(&conn), "step {step}"),
                _ => assert_eq!(by_conn.contains(conn), model.contains_key(&conn)),
            }
            assert_eq!(by_conn.is_empty(), model.is_empty());
            let mut conns = by_conn.conns();
            conns.sort_unstable();
            let mut expected: Vec<ConnId> = model.keys().copied().collect();
            expected.sort_unstable();
            assert_eq!(conns, expected, "step {step}");
        }
        assert!(by_conn.map.slot_count() <= 6, "slots are reused");
    }

    #[test]
    fn chunks_routed_the_usual_way_give_what_the_general_way_gives() {
        let client = "127.0.0.1:40000".parse().unwrap();
        let server = "127.0.0.1:5672".parse().unwrap();
        // Two connections, their bytes cut anywhere and interleaved, one closed midway.
        let stream = |conn: u64| {
            let mut b = b"AMQP\x00\x00\x09\x01".to_vec();
            for i in 0..40u8 {
                b.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0xce]);
                if i == 30 + conn as u8 {
                    b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 1, 0xff]); // malformed
                }
            }
            b
        };
        let mut evs = Vec::new();
        for conn in [1, 2] {
            evs.push(SourceEvent::Connect {
                conn,
                ts: Timestamp(conn as i64),
                client,
                server,
            });
        }
        let streams = [stream(1), stream(2)];
        let mut at = [0, 0];
        let mut i = 0;
        while at[0] < streams[0].len() || at[1] < streams[1].len() {
            let d = i % 2;
            let n = (3 + i * 5 % 11).min(streams[d].len() - at[d]);
            if n > 0 {
                evs.push(SourceEvent::Chunk(Chunk {
                    conn: d as u64 + 1,
                    dir: Dir::C2S,
                    ts: Timestamp(10 + i as i64),
                    bytes: Bytes::copy_from_slice(&streams[d][at[d]..at[d] + n]),
                }));
                at[d] += n;
            }
            if i == 30 {
                evs.push(SourceEvent::Close {
                    conn: 2,
                    ts: Timestamp(40),
                    reason: CloseReason::FinBothWays { first: None },
                });
            }
            i += 1;
        }
        let run = |general: bool| {
            let mut r = Router::new(InspectOptions::default());
            if general {
                // A poisoned connection of no event: every event goes the general way.
                r.poisoned.insert(99);
            }
            let mut out = Vec::new();
            for ev in evs.clone() {
                r.feed(ev, &mut out);
            }
            r.finish(&mut out);
            let stats = r.stats().clone();
            (format!("{out:?}"), stats, r.last_ts())
        };
        let usual = run(false);
        assert!(
            usual.1.frames > 40 && usual.1.violations > 0,
            "{:?}",
            usual.1
        );
        assert_eq!(usual, run(true));
    }

    #[test]
    fn a_connection_is_inspected_from_its_connect_to_its_close() {
        let client = "127.0.0.1:40000".parse().unwrap();
        let server = "127.0.0.1:5672".parse().unwrap();
        let mut r = Router::new(InspectOptions::default());
        let mut out = Vec::new();
        r.feed(
            SourceEvent::Connect {
                conn: 1,
                ts: Timestamp(1),
                client,
                server,
            },
            &mut out,
        );
        r.feed(
            SourceEvent::Chunk(Chunk {
                conn: 1,
                dir: Dir::C2S,
                ts: Timestamp(2),
                bytes: Bytes::from_static(b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03"),
            }),
            &mut out,
        );
        r.feed(
            SourceEvent::Close {
                conn: 1,
                ts: Timestamp(3),
                reason: CloseReason::FinBothWays { first: None },
            },
            &mut out,
        );
        let before = out.len();
        r.finish_at(Timestamp(4), CAPTURE_ENDED, &mut out);
        assert_eq!(out.len(), before, "closed already: nothing left to finish");
        assert!(matches!(out.last().unwrap().kind, EventKind::Close(_)));
        assert_eq!(r.stats().connections, 1);
        assert_eq!(r.stats().bytes, 12);
        assert!(r.stats().violations >= 1, "a frame size below 8");
    }
}
