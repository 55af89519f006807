//! The connection table of a packet capture: TCP segments in, [`SourceEvent`]s out.
//!
//! Finds the AMQP connections (protocol header on any port, or a configured port), orients
//! them (SYN sender is the client; without a SYN the well-known or configured port is the
//! server; else the side that sent `AMQP` first is the client), reassembles each direction,
//! resynchronises streams that start mid-connection or after lost bytes, and evicts connections
//! once closed. Memory is bounded per connection (reassembly and resync buffers) and by the
//! number of connections tracked.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use bytes::{Bytes, BytesMut};

use crate::hash::HashMap;

use super::link::TcpSegment;
use super::source::SourceEvent;
use super::tcp_reassembly::{Piece, Reassembler};
use crate::codec::resync::{DEFAULT_RUN, find_frame_run};
use crate::event::{Chunk, ConnId, Dir, Timestamp};

/// Ports that mark the server side when no SYN was captured.
pub const WELL_KNOWN_PORTS: [u16; 2] = [5672, 5671];

/// Bytes held per connection while deciding whether it is AMQP.
const MAX_UNDECIDED: usize = 64 * 1024;

/// Bytes held per direction while looking for a frame boundary before skipping some.
const MAX_RESYNC_BUFFER: usize = 1024 * 1024;

/// How a capture is read.
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// Ports whose streams are AMQP even without a protocol header in sight (mid-connection
    /// captures); the side using one is the server.
    pub ports: Vec<u16>,
    /// Out-of-order bytes buffered per direction before a hole is declared a gap.
    pub max_out_of_order: usize,
    /// Connections tracked at once; beyond it the least recently active are evicted.
    pub max_connections: usize,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            ports: WELL_KNOWN_PORTS.to_vec(),
            max_out_of_order: super::tcp_reassembly::DEFAULT_MAX_OUT_OF_ORDER,
            max_connections: 65_536,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Class {
    Undecided,
    Amqp(ConnId),
    Ignored,
}

/// Per-direction decoding sync.
#[derive(Debug)]
enum Sync {
    /// Not known yet (no byte seen).
    Start,
    /// Bytes pass straight through.
    Synced,
    /// Looking for a frame boundary; `gap_offset..` is missing or skipped so far.
    Searching {
        buf: BytesMut,
        /// Stream offset of `buf[0]`.
        buf_offset: u64,
        /// Where the unusable span started.
        gap_offset: u64,
        /// Bytes missing from the capture inside the span (not in `buf`, not skipped).
        lost: u64,
        /// Bytes skipped because no boundary was found in them.
        skipped: u64,
        why: &'static str,
    },
}

#[derive(Debug)]
struct Flow {
    /// `addrs[0] < addrs[1]`; index `i` is the direction sent by `addrs[i]`.
    addrs: [SocketAddr; 2],
    class: Class,
    /// Index of the client, once known.
    client: Option<usize>,
    syn_from: Option<usize>,
    reasm: [Reassembler; 2],
    sync: [Sync; 2],
    /// Before classification: pieces per sending index, in arrival order.
    undecided: Vec<(usize, Timestamp, Piece)>,
    undecided_bytes: usize,
    /// First bytes of each direction (up to 4), for the `AMQP` check.
    head: [Vec<u8>; 2],
    first_sender: Option<usize>,
    fin: [bool; 2],
    last_seen: u64,
}

/// A flow's two ends, the lower first.
///
/// Hashed as one packed write of addresses and ports with the per-process seeded hasher of
/// `crate::hash` (a capture cannot be crafted offline to make its flows collide), at a
/// fraction of the cost of hashing each address field by field, which the reader paid twice
/// per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlowKey(SocketAddr, SocketAddr);

impl Hash for FlowKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut buf = [0u8; 36];
        let mut n = 0;
        for a in [self.0, self.1] {
            match a.ip() {
                IpAddr::V4(ip) => {
                    buf[n..n + 4].copy_from_slice(&ip.octets());
                    n += 4;
                }
                IpAddr::V6(ip) => {
                    buf[n..n + 16].copy_from_slice(&ip.octets());
                    n += 16;
                }
            }
            buf[n..n + 2].copy_from_slice(&a.port().to_be_bytes());
            n += 2;
        }
        state.write(&buf[..n]);
    }
}

/// Tracks every TCP connection of a capture.
pub struct ConnTable {
    opts: CaptureOptions,
    /// Boxed: a flow moves out of the map and back for every segment (`piece` needs `&mut self`).
    flows: HashMap<FlowKey, Box<Flow>>,
    next_conn: ConnId,
    tick: u64,
    out: VecDeque<SourceEvent>,
    pieces: Vec<Piece>,
}

impl ConnTable {
    /// An empty table.
    pub fn new(opts: CaptureOptions) -> Self {
        ConnTable {
            opts,
            flows: HashMap::default(),
            next_conn: 1,
            tick: 0,
            out: VecDeque::new(),
            pieces: Vec::new(),
        }
    }

    /// Take the next event produced so far.
    pub fn pop(&mut self) -> Option<SourceEvent> {
        self.out.pop_front()
    }

    /// Connections currently tracked.
    pub fn tracked(&self) -> usize {
        self.flows.len()
    }

    /// Take one TCP segment.
    pub fn segment(&mut self, ts: Timestamp, seg: &TcpSegment<'_>) {
        self.tick += 1;
        let (key, idx) = if seg.src <= seg.dst {
            (FlowKey(seg.src, seg.dst), 0usize)
        } else {
            (FlowKey(seg.dst, seg.src), 1usize)
        };
        // A fresh SYN on a key whose connection already carried data: a new connection.
        if seg.syn && !seg.ack {
            let stale = self
                .flows
                .get(&key)
                .is_some_and(|f| f.reasm[0].offset() > 0 || f.reasm[1].offset() > 0);
            if stale && let Some(flow) = self.flows.remove(&key) {
                self.finish(
                    *flow,
                    ts,
                    "superseded by a new connection on the same ports",
                );
            }
        }
        // One lookup to take the flow out (or make it), one to put it back.
        let mut flow = match self.flows.remove(&key) {
            Some(flow) => flow,
            None => {
                if !seg.syn && seg.payload.is_empty() {
                    return; // a bare ACK / FIN / RST: the tail of a connection already gone
                }
                if self.flows.len() >= self.opts.max_connections {
                    self.evict(ts);
                }
                Box::new(Flow {
                    addrs: [key.0, key.1],
                    class: Class::Undecided,
                    client: None,
                    syn_from: None,
                    reasm: [
                        Reassembler::new(self.opts.max_out_of_order),
                        Reassembler::new(self.opts.max_out_of_order),
                    ],
                    sync: [Sync::Start, Sync::Start],
                    undecided: Vec::new(),
                    undecided_bytes: 0,
                    head: [Vec::new(), Vec::new()],
                    first_sender: None,
                    fin: [false, false],
                    last_seen: 0,
                })
            }
        };
        flow.last_seen = self.tick;
        if seg.syn {
            flow.reasm[idx].syn(seg.seq);
            if !seg.ack && flow.syn_from.is_none() {
                flow.syn_from = Some(idx);
            }
        }
        if !seg.payload.is_empty() && flow.class != Class::Ignored {
            let seq = if seg.syn {
                seg.seq.wrapping_add(1)
            } else {
                seg.seq
            };
            let mut pieces = std::mem::take(&mut self.pieces);
            pieces.clear();
            flow.reasm[idx].segment_in(seq, seg.payload, seg.window, &mut pieces);
            for p in pieces.drain(..) {
                self.piece(&mut flow, idx, ts, p);
            }
            self.pieces = pieces;
        }
        if seg.rst {
            let who = match flow.client {
                Some(c) if c == idx => "reset by client",
                Some(_) => "reset by server",
                None => "reset",
            };
            self.finish(*flow, ts, who);
            return;
        }
        if seg.fin {
            flow.fin[idx] = true;
            if flow.fin[0] && flow.fin[1] {
                self.finish(*flow, ts, "FIN both ways");
                return;
            }
        }
        // Ignored flows keep a small entry so later segments are dropped cheaply.
        self.flows.insert(key, flow);
    }

    /// The capture ended: flush and close every open AMQP connection, in connection order.
    pub fn finish_all(&mut self, ts: Timestamp) {
        let mut flows: Vec<Flow> = self.flows.drain().map(|(_, f)| *f).collect();
        flows.sort_by_key(|f| match f.class {
            Class::Amqp(c) => c,
            _ => ConnId::MAX,
        });
        for f in flows {
            self.finish(f, ts, "capture ended with the connection open");
        }
    }

    /// Evict the least recently active eighth of the table.
    fn evict(&mut self, ts: Timestamp) {
        let mut ages: Vec<u64> = self.flows.values().map(|f| f.last_seen).collect();
        ages.sort_unstable();
        let cut = ages.get(ages.len() / 8).copied().unwrap_or(u64::MAX);
        // Closed oldest first, then in connection order: never in the map's (random) order,
        // so the events, and `check`'s output, are the same on every run.
        let mut old: Vec<_> = self
            .flows
            .iter()
            .filter(|(_, f)| f.last_seen <= cut)
            .map(|(k, f)| {
                let conn = match f.class {
                    Class::Amqp(c) => c,
                    _ => ConnId::MAX,
                };
                (f.last_seen, conn, k.0, k.1)
            })
            .collect();
        old.sort_unstable();
        for (_, _, a, b) in old {
            let k = FlowKey(a, b);
            if let Some(f) = self.flows.remove(&k) {
                self.finish(*f, ts, "evicted: too many connections tracked at once");
            }
        }
    }

    /// Flush a flow's buffers and emit its close (AMQP flows only).
    fn finish(&mut self, mut flow: Flow, ts: Timestamp, reason: &str) {
        for idx in 0..2 {
            let mut pieces = Vec::new();
            flow.reasm[idx].flush(&mut pieces);
            for p in pieces {
                self.piece(&mut flow, idx, ts, p);
            }
        }
        if flow.class == Class::Undecided {
            self.decide(&mut flow, ts, true);
        }
        if let Class::Amqp(conn) = flow.class {
            for idx in 0..2 {
                self.flush_search(&mut flow, conn, idx, ts);
            }
            self.out.push_back(SourceEvent::Close {
                conn,
                ts,
                reason: reason.to_string(),
            });
        }
    }

    fn piece(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, p: Piece) {
        match flow.class {
            Class::Ignored => {}
            Class::Amqp(conn) => self.emit(flow, conn, idx, ts, p),
            Class::Undecided => {
                if let Piece::Data { bytes, .. } = &p {
                    flow.first_sender.get_or_insert(idx);
                    let h = &mut flow.head[idx];
                    let want = 4usize.saturating_sub(h.len()).min(bytes.len());
                    h.extend_from_slice(&bytes[..want]);
                    flow.undecided_bytes += bytes.len();
                }
                // Held until the flow is classified: an owned copy, so that it does not keep
                // the reader's whole window alive meanwhile.
                let p = match p {
                    Piece::Data { offset, bytes } => Piece::Data {
                        offset,
                        bytes: Bytes::copy_from_slice(&bytes),
                    },
                    gap => gap,
                };
                flow.undecided.push((idx, ts, p));
                self.decide(flow, ts, false);
            }
        }
    }

    /// Classify an undecided flow when enough is known (or `last_chance` at its end).
    fn decide(&mut self, flow: &mut Flow, ts: Timestamp, last_chance: bool) {
        let starts_amqp = |h: &[u8]| h.len() >= 4 && h.starts_with(b"AMQP");
        let port_hit = |i: usize| self.opts.ports.contains(&flow.addrs[i].port());
        let header_from = (0..2).find(|&i| starts_amqp(&flow.head[i]));
        let on_port = port_hit(0) || port_hit(1);
        // The client speaks first in AMQP: a first sender whose bytes cannot begin `AMQP`
        // settles it.
        let first_not_amqp = flow
            .first_sender
            .is_some_and(|i| !b"AMQP".starts_with(flow.head[i].as_slice()));
        let amqp = header_from.is_some() || on_port;
        if !amqp {
            if first_not_amqp || flow.undecided_bytes > MAX_UNDECIDED || last_chance {
                flow.class = Class::Ignored;
                flow.undecided.clear();
            }
            return;
        }
        if flow.first_sender.is_none() {
            // Wait for data before announcing the connection; at its end, a connection that
            // never carried a byte is announced only if its handshake was seen.
            if last_chance && flow.syn_from.is_none() {
                flow.class = Class::Ignored;
            }
            if !last_chance || flow.syn_from.is_none() {
                return;
            }
        }
        // Orientation.
        let well_known = |i: usize| WELL_KNOWN_PORTS.contains(&flow.addrs[i].port()) || port_hit(i);
        let client = if let Some(s) = flow.syn_from {
            s
        } else if well_known(0) != well_known(1) {
            if well_known(0) { 1 } else { 0 }
        } else if let Some(h) = header_from.filter(|_| flow.first_sender == header_from) {
            h
        } else {
            flow.first_sender.unwrap_or(0)
        };
        let conn = self.next_conn;
        self.next_conn += 1;
        flow.class = Class::Amqp(conn);
        flow.client = Some(client);
        self.out.push_back(SourceEvent::Connect {
            conn,
            ts: flow.undecided.first().map(|u| u.1).unwrap_or(ts),
            client: flow.addrs[client],
            server: flow.addrs[1 - client],
        });
        for (idx, ts, p) in std::mem::take(&mut flow.undecided) {
            self.emit(flow, conn, idx, ts, p);
        }
        flow.undecided_bytes = 0;
    }

    fn dir(flow: &Flow, idx: usize) -> Dir {
        if flow.client == Some(idx) {
            Dir::C2S
        } else {
            Dir::S2C
        }
    }

    /// Pass one piece of a classified AMQP flow on, resynchronising where needed.
    fn emit(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp, p: Piece) {
        let dir = Self::dir(flow, idx);
        match p {
            Piece::Gap { offset, len } => match &mut flow.sync[idx] {
                Sync::Searching {
                    lost, buf, skipped, ..
                } => {
                    // Bytes buffered so far precede the hole: they cannot start a run that
                    // continues past it, so count them as skipped.
                    *skipped += buf.len() as u64;
                    buf.clear();
                    *lost += len;
                }
                s => {
                    *s = Sync::Searching {
                        buf: BytesMut::new(),
                        buf_offset: offset + len,
                        gap_offset: offset,
                        lost: len,
                        skipped: 0,
                        why: "bytes missing from the capture",
                    };
                }
            },
            Piece::Data { offset, bytes } => {
                if let Sync::Start = flow.sync[idx] {
                    let mid_stream = !flow.reasm[idx].syn_seen() && offset == 0;
                    let at_header = b"AMQP".starts_with(&bytes[..bytes.len().min(4)]);
                    flow.sync[idx] = if mid_stream && !at_header {
                        Sync::Searching {
                            buf: BytesMut::new(),
                            buf_offset: offset,
                            gap_offset: offset,
                            lost: 0,
                            skipped: 0,
                            why: "capture starts mid-connection",
                        }
                    } else {
                        Sync::Synced
                    };
                }
                match &mut flow.sync[idx] {
                    Sync::Searching { buf, .. } => {
                        if buf.is_empty()
                            && let Sync::Searching { buf_offset, .. } = &mut flow.sync[idx]
                        {
                            *buf_offset = offset;
                        }
                        if let Sync::Searching { buf, .. } = &mut flow.sync[idx] {
                            buf.extend_from_slice(&bytes);
                        }
                        self.try_resync(flow, conn, idx, ts, false);
                    }
                    _ => self.out.push_back(SourceEvent::Chunk(Chunk {
                        conn,
                        dir,
                        ts,
                        bytes,
                    })),
                }
            }
        }
    }

    fn try_resync(
        &mut self,
        flow: &mut Flow,
        conn: ConnId,
        idx: usize,
        ts: Timestamp,
        at_end: bool,
    ) {
        let dir = Self::dir(flow, idx);
        let Sync::Searching {
            buf,
            buf_offset,
            gap_offset,
            lost,
            skipped,
            why,
        } = &mut flow.sync[idx]
        else {
            return;
        };
        match find_frame_run(buf, DEFAULT_RUN, at_end) {
            Some(r) => {
                let skip = r.offset as u64;
                let total_skipped = *skipped + skip;
                let resume = *buf_offset + skip;
                let reason = format!(
                    "{why}: resynchronised at offset {resume} after skipping {total_skipped} bytes{}",
                    if *lost > 0 {
                        format!(" ({lost} bytes missing from the capture)")
                    } else {
                        String::new()
                    }
                );
                self.out.push_back(SourceEvent::Gap {
                    conn,
                    ts,
                    dir,
                    offset: *gap_offset,
                    len: resume - *gap_offset,
                    reason,
                    resync: Some(r.protocol),
                });
                let rest = buf.split_off(r.offset).freeze();
                flow.sync[idx] = Sync::Synced;
                if !rest.is_empty() {
                    self.out.push_back(SourceEvent::Chunk(Chunk {
                        conn,
                        dir,
                        ts,
                        bytes: rest,
                    }));
                }
            }
            None if at_end => {
                let end = *buf_offset + buf.len() as u64;
                if end > *gap_offset {
                    self.out.push_back(SourceEvent::Gap {
                        conn,
                        ts,
                        dir,
                        offset: *gap_offset,
                        len: end - *gap_offset,
                        reason: format!(
                            "{why}: no frame boundary found in the {} bytes that follow",
                            buf.len()
                        ),
                        resync: None,
                    });
                }
                buf.clear();
            }
            None => {
                if buf.len() > MAX_RESYNC_BUFFER {
                    // Keep the tail, which may hold the start of a run.
                    let keep = 64 * 1024;
                    let drop = buf.len() - keep;
                    let _ = buf.split_to(drop);
                    *buf_offset += drop as u64;
                    *skipped += drop as u64;
                }
            }
        }
    }

    fn flush_search(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp) {
        if matches!(flow.sync[idx], Sync::Searching { .. }) {
            self.try_resync(flow, conn, idx, ts, true);
        }
    }
}

/// Convenience for tests and callers that hold a whole segment list.
pub fn chunk_bytes(events: &[SourceEvent], conn: ConnId, dir: Dir) -> Bytes {
    let mut out = BytesMut::new();
    for e in events {
        if let SourceEvent::Chunk(c) = e
            && c.conn == conn
            && c.dir == dir
        {
            out.extend_from_slice(&c.bytes);
        }
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Close events (connection, reason) of `flows` AMQP connections opened one after another
    /// through a table that holds `max` at once, all idle since.
    fn closes(flows: u16, max: usize) -> Vec<(ConnId, String)> {
        let mut t = ConnTable::new(CaptureOptions {
            max_connections: max,
            ..CaptureOptions::default()
        });
        let server: SocketAddr = "10.0.0.1:5672".parse().unwrap();
        for i in 0..flows {
            let client = SocketAddr::from(([10, 0, 1, (i % 200) as u8], 40_000 + i));
            t.segment(
                Timestamp(i64::from(i)),
                &TcpSegment {
                    src: client,
                    dst: server,
                    seq: 1,
                    syn: false,
                    ack: true,
                    fin: false,
                    rst: false,
                    payload: b"AMQP\x00\x00\x09\x01",
                    window: None,
                },
            );
        }
        t.finish_all(Timestamp(1_000_000));
        std::iter::from_fn(|| t.pop())
            .filter_map(|e| match e {
                SourceEvent::Close { conn, reason, .. } => Some((conn, reason)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn eviction_closes_the_least_recent_in_connection_order_every_time() {
        let first = closes(200, 16);
        assert_eq!(first.len(), 200, "every connection closes once");
        let evicted: Vec<ConnId> = first
            .iter()
            .filter(|(_, r)| r.starts_with("evicted"))
            .map(|(c, _)| *c)
            .collect();
        assert!(!evicted.is_empty());
        assert!(evicted.is_sorted(), "oldest first: {evicted:?}");
        for _ in 0..5 {
            assert_eq!(closes(200, 16), first, "the same events on every run");
        }
    }
}
