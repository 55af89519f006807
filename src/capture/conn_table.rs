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

mod search;
use search::{Attempt, Search, Sync};

use super::boundary::Boundary;
use super::link::TcpSegment;
use super::source::SourceEvent;
use super::tcp_reassembly::{Piece, Reassembler, share};
use crate::codec::ProtocolHeader;
use crate::event::{Chunk, CloseReason, ConnId, Dir, Timestamp};
use crate::protocol::resync::{DEFAULT_RUN, find_frame_run};

/// Ports that mark the server side when no SYN was captured.
pub const WELL_KNOWN_PORTS: [u16; 2] = [5672, 5671];

/// Bytes held per connection while deciding whether it is AMQP.
const MAX_UNDECIDED: usize = 64 * 1024;

/// Bytes held per direction while looking for a frame boundary before skipping some.
const MAX_RESYNC_BUFFER: usize = 1024 * 1024;

/// Boundary marks remembered per direction ahead of the bytes decoded (the oldest are
/// forgotten beyond: a search there falls back to looking for a run of frames).
const MAX_MARKS: usize = 256;

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

#[derive(Debug)]
struct Flow {
    /// `addrs[0] < addrs[1]`; index `i` is the direction sent by `addrs[i]`.
    addrs: [SocketAddr; 2],
    class: Class,
    /// Index of the client, once known.
    client: Option<usize>,
    syn_from: Option<usize>,
    /// When the first SYN was captured: the connection's start.
    syn_ts: Option<Timestamp>,
    reasm: [Reassembler; 2],
    sync: [Sync; 2],
    /// Before classification: pieces per sending index, in arrival order.
    undecided: Vec<(usize, Timestamp, Piece)>,
    undecided_bytes: usize,
    /// First bytes of each direction (up to 4), for the `AMQP` check.
    head: [Vec<u8>; 2],
    first_sender: Option<usize>,
    fin: [bool; 2],
    /// Sequence number of each direction's FIN, until it is told (see [`ConnTable::tell_fin`]).
    fin_at: [Option<u32>; 2],
    /// The index whose FIN was seen first.
    fin_first: usize,
    /// Per direction: the sequence number after its FIN (which an answer acknowledges), once
    /// seen.
    fin_end: [Option<u32>; 2],
    last_seen: u64,
    /// Per direction: events made but not passed on yet, each with its capture time and a
    /// sequence number. They go out merged in capture order, and only once the other
    /// direction holds nothing captured earlier (out of order behind a hole, or in a search
    /// for a frame boundary): a peer's frames are never judged before what its partner sent
    /// before them.
    pending: [VecDeque<(Timestamp, u64, SourceEvent)>; 2],
    /// Chunk bytes in `pending`.
    pending_bytes: usize,
    /// Per direction: its first bytes are missing from the capture.
    start_lost: [bool; 2],
    /// A segment of it was marked relayed by amqpeek: AMQP whatever its port or first bytes.
    relayed: bool,
    /// Per direction: stream offsets the capture marked as frame or header starts (see
    /// [`super::boundary`]), not yet passed, oldest first; at most [`MAX_MARKS`].
    marks: [VecDeque<(u64, Boundary)>; 2],
}

impl Flow {
    /// A flow between `key`'s ends, nothing known of it yet; each direction reassembled with
    /// at most `max_out_of_order` bytes held out of order.
    fn new(key: FlowKey, max_out_of_order: usize) -> Box<Flow> {
        Box::new(Flow {
            addrs: [key.0, key.1],
            class: Class::Undecided,
            client: None,
            syn_from: None,
            syn_ts: None,
            reasm: [
                Reassembler::new(max_out_of_order),
                Reassembler::new(max_out_of_order),
            ],
            sync: [Sync::Start, Sync::Start],
            undecided: Vec::new(),
            undecided_bytes: 0,
            head: [Vec::new(), Vec::new()],
            first_sender: None,
            fin: [false, false],
            fin_at: [None, None],
            fin_first: 0,
            fin_end: [None, None],
            last_seen: 0,
            pending: [VecDeque::new(), VecDeque::new()],
            pending_bytes: 0,
            start_lost: [false, false],
            relayed: false,
            marks: [VecDeque::new(), VecDeque::new()],
        })
    }
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
    /// Every flow's slot in `slots`, by its ends.
    index: HashMap<FlowKey, usize>,
    /// The flows, each worked on where it is: what works on it is the [`Emitter`], a separate
    /// field, so a flow borrowed from here and the emitter can both be borrowed mutably.
    /// (Boxed: a flow is large.) A slot of no flow is `None`, and listed in `free`.
    slots: Vec<Option<Box<Flow>>>,
    /// Slots to reuse for new flows.
    free: Vec<usize>,
    /// The flow of the latest segment (its ends and slot): the next segment usually belongs
    /// to it too, and is then found without hashing.
    last: Option<(FlowKey, usize)>,
    tick: u64,
    pieces: Vec<Piece>,
    emitter: Emitter,
    /// The usual segments go out at once ([`ConnTable::in_order`]); off, every segment takes
    /// the general path (tests compare the two).
    fast_path: bool,
}

/// What the table makes of its flows' bytes: connection numbers, and the source events,
/// numbered in the order they were made.
struct Emitter {
    opts: CaptureOptions,
    /// Numbers the events of every flow in the order they were made.
    made: u64,
    next_conn: ConnId,
    /// The next event to take, made when nothing else waited in `out` (an in-order chunk, the
    /// usual event): it goes before everything in `out`, without a trip through the queue.
    first: Option<SourceEvent>,
    out: VecDeque<SourceEvent>,
}

impl ConnTable {
    /// An empty table.
    pub fn new(opts: CaptureOptions) -> Self {
        ConnTable {
            index: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            last: None,
            tick: 0,
            pieces: Vec::new(),
            emitter: Emitter {
                opts,
                made: 0,
                next_conn: 1,
                first: None,
                out: VecDeque::new(),
            },
            fast_path: true,
        }
    }

    /// Take the next event produced so far.
    #[inline]
    pub fn pop(&mut self) -> Option<SourceEvent> {
        if self.emitter.first.is_some() {
            return self.emitter.first.take();
        }
        self.emitter.out.pop_front()
    }

    /// Connections currently tracked.
    pub fn tracked(&self) -> usize {
        self.index.len()
    }

    /// The slot of the flow between `key`'s ends, if one is tracked.
    #[inline]
    fn find(&mut self, key: FlowKey) -> Option<usize> {
        if let Some((k, slot)) = self.last
            && k == key
        {
            return Some(slot);
        }
        let slot = *self.index.get(&key)?;
        self.last = Some((key, slot));
        Some(slot)
    }

    /// Track `flow`, between `key`'s ends (none tracked yet); returns its slot.
    fn insert(&mut self, key: FlowKey, flow: Box<Flow>) -> usize {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some(flow);
        }
        self.index.insert(key, slot);
        self.last = Some((key, slot));
        slot
    }

    /// Stop tracking the flow between `key`'s ends; returns it.
    fn remove(&mut self, key: FlowKey) -> Option<Box<Flow>> {
        let slot = self.index.remove(&key)?;
        if self.last.is_some_and(|(_, s)| s == slot) {
            self.last = None;
        }
        self.free.push(slot);
        self.slots.get_mut(slot)?.take()
    }

    /// Take `seg` when it is the usual segment: data and an acknowledgement, no other flag,
    /// in order on the latest flow (an AMQP one), acknowledging no byte the capture missed,
    /// with nothing waiting or held and no FIN seen that way. Its payload is then the chunk
    /// returned ([`Emitter::next_chunk`]), to go out at once, as the general path would send
    /// it. `None`, and nothing done, for any other segment.
    #[inline(always)]
    fn in_order(&mut self, ts: Timestamp, seg: &TcpSegment<'_>) -> Option<Chunk> {
        if seg.syn || seg.fin || seg.rst || seg.payload.is_empty() {
            return None;
        }
        let (k, slot) = self.last.as_ref()?;
        let idx = if seg.src == k.0 && seg.dst == k.1 {
            0
        } else if seg.src == k.1 && seg.dst == k.0 {
            1
        } else {
            return None;
        };
        let flow = self.slots.get_mut(*slot)?.as_mut()?;
        let quiet = flow.fin_at[idx].is_none()
            && (!seg.ack || flow.reasm[1 - idx].acked_declares_nothing(seg.ack_no));
        if !quiet {
            return None;
        }
        let chunk = self.emitter.next_chunk(flow, idx, ts, seg)?;
        self.tick += 1;
        flow.last_seen = self.tick;
        flow.relayed |= seg.relayed;
        Some(chunk)
    }

    /// `seg`'s flow key (its ends, the lower first) and the index of its sender in it.
    fn key_of(seg: &TcpSegment<'_>) -> (FlowKey, usize) {
        if seg.src <= seg.dst {
            (FlowKey(seg.src, seg.dst), 0)
        } else {
            (FlowKey(seg.dst, seg.src), 1)
        }
    }

    /// The index of `seg`'s sender in its flow key, and the slot of its flow if one is
    /// tracked. A segment of the latest flow (the usual case) is told by comparing its ends with
    /// that flow's, either way round, without ordering them or hashing.
    #[inline]
    fn locate(&mut self, seg: &TcpSegment<'_>) -> (usize, Option<usize>) {
        if let Some((k, slot)) = &self.last {
            if seg.src == k.0 && seg.dst == k.1 {
                return (0, Some(*slot));
            }
            if seg.src == k.1 && seg.dst == k.0 {
                return (1, Some(*slot));
            }
        }
        let (key, idx) = Self::key_of(seg);
        (idx, self.find(key))
    }

    /// Take one TCP segment.
    pub fn segment(&mut self, ts: Timestamp, seg: &TcpSegment<'_>) {
        if self.fast_path
            && let Some(chunk) = self.in_order(ts, seg)
        {
            self.emitter.push(SourceEvent::Chunk(chunk));
            return;
        }
        self.general(ts, seg);
    }

    /// Take one TCP segment, then the next event made so far: [`ConnTable::segment`] then
    /// [`ConnTable::pop`]. The usual segment's chunk, when no event waits, is handed straight
    /// out.
    #[inline]
    pub fn segment_then_pop(&mut self, ts: Timestamp, seg: &TcpSegment<'_>) -> Option<SourceEvent> {
        if self.emitter.first.is_some() || !self.emitter.out.is_empty() {
            self.segment(ts, seg);
            return self.pop();
        }
        if self.fast_path
            && let Some(chunk) = self.in_order(ts, seg)
        {
            return Some(SourceEvent::Chunk(chunk));
        }
        self.general(ts, seg);
        self.pop()
    }

    /// Take one TCP segment, by the general path: any segment, in any state.
    fn general(&mut self, ts: Timestamp, seg: &TcpSegment<'_>) {
        self.tick += 1;
        let (idx, mut found) = self.locate(seg);
        let key = || Self::key_of(seg).0;
        // A fresh SYN on a key whose connection already carried data: a new connection.
        if seg.syn && !seg.ack {
            let stale = found
                .and_then(|slot| self.slots.get(slot)?.as_ref())
                .is_some_and(|f| f.reasm[0].offset() > 0 || f.reasm[1].offset() > 0);
            if stale && let Some(flow) = self.remove(key()) {
                self.emitter.finish(*flow, ts, CloseReason::Superseded);
                found = None;
            }
        }
        // A bare ACK / FIN / RST of no flow is the tail of a connection already gone: no flow
        // is made for it.
        let opens = seg.syn || !seg.payload.is_empty();
        if opens && found.is_none() && self.index.len() >= self.emitter.opts.max_connections {
            self.evict(ts);
        }
        let slot = match found {
            Some(slot) => slot,
            None if !opens => return,
            None => self.insert(key(), Flow::new(key(), self.emitter.opts.max_out_of_order)),
        };
        // The flow is worked on in its slot.
        let Some(flow) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        flow.last_seen = self.tick;
        flow.relayed |= seg.relayed;
        if seg.syn {
            flow.reasm[idx].syn(seg.seq);
            if !seg.ack && flow.syn_from.is_none() {
                flow.syn_from = Some(idx);
            }
            flow.syn_ts.get_or_insert(ts);
        }
        if flow.class != Class::Ignored {
            let seq = if seg.syn {
                seg.seq.wrapping_add(1)
            } else {
                seg.seq
            };
            let pieces = &mut self.pieces;
            pieces.clear();
            // First what the acknowledgement says of the other direction: anything this
            // segment carries was sent after its sender had read those bytes, so a hole among
            // them must be known before it is judged.
            if seg.ack {
                flow.reasm[1 - idx].acked(seg.ack_no, pieces);
                if !pieces.is_empty() {
                    self.emitter.pieces_in(flow, 1 - idx, ts, pieces);
                }
            }
            if !seg.payload.is_empty() {
                if let Some(b) = seg.boundary {
                    Emitter::mark(flow, idx, seq, b);
                }
                flow.reasm[idx].segment_in(seq, seg.payload, seg.window, ts, pieces);
                self.emitter.pieces_in(flow, idx, ts, pieces);
            }
            let end = seq.wrapping_add(seg.payload.len() as u32);
            if seg.fin {
                flow.reasm[idx].fin(end);
            } else if seg.rst {
                flow.reasm[idx].rst(end);
            }
            if let Class::Amqp(conn) = flow.class {
                self.emitter.release(flow, conn, false);
            }
        }
        if seg.rst {
            let reason = Self::reset_reason(flow, idx, seg);
            self.close(key(), ts, reason);
            return;
        }
        if seg.fin && !flow.fin[idx] {
            if !flow.fin[1 - idx] {
                flow.fin_first = idx;
            }
            let at = seg.seq.wrapping_add(seg.payload.len() as u32);
            let at = at.wrapping_add(u32::from(seg.syn));
            flow.fin_at[idx] = Some(at);
            flow.fin_end[idx] = Some(at.wrapping_add(1));
        }
        self.emitter.tell_fin(flow, idx, ts, false);
        if seg.fin {
            flow.fin[idx] = true;
            if flow.fin[0] && flow.fin[1] {
                // The FIN the second one acknowledges came first; crossed FINs say nothing;
                // without an acknowledgement, the capture's order.
                let first = Self::answered_fin(flow, idx, seg)
                    .unwrap_or(Some(flow.fin_first))
                    .and_then(|i| Self::side(flow, i));
                self.close(key(), ts, CloseReason::FinBothWays { first });
            }
        }
        // Ignored flows keep their small entry so later segments are dropped cheaply.
    }

    /// The flow of `key` ended (`reason`): out of the table, flushed and closed.
    fn close(&mut self, key: FlowKey, ts: Timestamp, reason: CloseReason) {
        if let Some(flow) = self.remove(key) {
            self.emitter.finish(*flow, ts, reason);
        }
    }

    /// Whether `seg`, from index `idx`, answers the partner's FIN: `Some(Some(partner))` when
    /// it acknowledges it (its sender had read it), `Some(None)` when it acknowledges less
    /// (it was sent before the FIN arrived: the two crossed), `None` when the packets do not
    /// say (no FIN from the partner, or no acknowledgement in `seg`).
    fn answered_fin(flow: &Flow, idx: usize, seg: &TcpSegment<'_>) -> Option<Option<usize>> {
        let end = flow.fin_end[1 - idx]?;
        if !seg.ack {
            return None;
        }
        let covers = seg.ack_no.wrapping_sub(end) as i32 >= 0;
        Some(covers.then_some(1 - idx))
    }

    /// Why a connection that `seg` (from index `idx`, with RST) resets ended: by its sender,
    /// after the FIN that came before it when one did (the partner's, which the RST answers or
    /// carries no acknowledgement for, else its sender's own), as the relay tells a reset after
    /// a clean close.
    fn reset_reason(flow: &Flow, idx: usize, seg: &TcpSegment<'_>) -> CloseReason {
        let partner_fin = match Self::answered_fin(flow, idx, seg) {
            Some(answered) => answered,
            None => flow.fin[1 - idx].then_some(1 - idx),
        };
        let before = partner_fin.or(flow.fin[idx].then_some(idx));
        CloseReason::Reset {
            by: Self::side(flow, idx),
            after_fin: before.and_then(|i| Self::side(flow, i)),
        }
    }

    /// The direction index `idx` sends in, once the client is known.
    fn side(flow: &Flow, idx: usize) -> Option<Dir> {
        flow.client
            .map(|c| if c == idx { Dir::C2S } else { Dir::S2C })
    }

    /// The capture ended: flush and close every open AMQP connection, in connection order.
    pub fn finish_all(&mut self, ts: Timestamp) {
        let slots = &mut self.slots;
        let mut flows: Vec<Flow> = self
            .index
            .drain()
            .filter_map(|(_, slot)| slots.get_mut(slot)?.take())
            .map(|f| *f)
            .collect();
        self.slots.clear();
        self.free.clear();
        self.last = None;
        flows.sort_by_key(|f| match f.class {
            Class::Amqp(c) => c,
            _ => ConnId::MAX,
        });
        for f in flows {
            self.emitter.finish(f, ts, CloseReason::CaptureEnded);
        }
    }

    /// Evict the least recently active eighth of the table.
    fn evict(&mut self, ts: Timestamp) {
        let slots = &self.slots;
        let flow_of = |slot: &usize| slots.get(*slot).and_then(Option::as_deref);
        let mut ages: Vec<u64> = self
            .index
            .values()
            .filter_map(flow_of)
            .map(|f| f.last_seen)
            .collect();
        ages.sort_unstable();
        let cut = ages.get(ages.len() / 8).copied().unwrap_or(u64::MAX);
        // Closed oldest first, then in connection order: never in the map's (random) order,
        // so the events, and `check`'s output, are the same on every run.
        let mut old: Vec<_> = self
            .index
            .iter()
            .filter_map(|(k, slot)| Some((k, flow_of(slot)?)))
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
            if let Some(f) = self.remove(k) {
                self.emitter.finish(*f, ts, CloseReason::Evicted);
            }
        }
    }
}

impl Emitter {
    /// Flush a flow's buffers and emit its close (AMQP flows only).
    fn finish(&mut self, mut flow: Flow, ts: Timestamp, reason: CloseReason) {
        for idx in 0..2 {
            let mut pieces = Vec::new();
            flow.reasm[idx].flush(&mut pieces);
            self.pieces_in(&mut flow, idx, ts, &mut pieces);
        }
        if flow.class == Class::Undecided {
            self.decide(&mut flow, ts, true);
        }
        if let Class::Amqp(conn) = flow.class {
            for idx in 0..2 {
                self.flush_search(&mut flow, conn, idx, ts);
            }
            // FINs never reached (bytes before them missing) end their directions here, in
            // the order they were seen.
            for idx in [flow.fin_first, 1 - flow.fin_first] {
                self.tell_fin(&mut flow, idx, ts, true);
            }
            self.release(&mut flow, conn, true);
            self.out.push_back(SourceEvent::Close { conn, ts, reason });
        }
    }

    /// The payload of `seg` (no SYN; from `idx`, captured at `ts`) as the chunk to go out
    /// next, when it is the next bytes expected of a synchronised direction of an AMQP flow
    /// and nothing waits or is held (no event pending, no bytes out of order, no search): what
    /// reassembly, [`Emitter::pend`] and [`Emitter::release`] would make of it, without them.
    /// `None`, and nothing done, for any other payload.
    #[inline(always)]
    fn next_chunk(
        &mut self,
        flow: &mut Flow,
        idx: usize,
        ts: Timestamp,
        seg: &TcpSegment<'_>,
    ) -> Option<Chunk> {
        let Class::Amqp(conn) = flow.class else {
            return None;
        };
        let quiet = seg.boundary.is_none()
            && matches!(flow.sync[idx], Sync::Synced)
            && flow.pending[0].is_empty()
            && flow.pending[1].is_empty()
            && !Self::holds(flow, 1 - idx);
        if !quiet || !flow.reasm[idx].take_next(seg.seq, seg.payload.len()) {
            return None;
        }
        self.made += 1;
        Some(Chunk {
            conn,
            dir: Self::dir(flow, idx),
            ts,
            bytes: share(seg.window, seg.payload),
        })
    }

    /// Queue `ev`: next to go out when nothing waits, else after what waits.
    fn push(&mut self, ev: SourceEvent) {
        if self.first.is_none() && self.out.is_empty() {
            self.first = Some(ev);
        } else {
            self.out.push_back(ev);
        }
    }

    /// One piece of direction `idx`: data at its own capture time, a gap at `ts` (when it
    /// became known).
    fn piece(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, p: Piece) {
        let ts = match &p {
            Piece::Data { ts, .. } => *ts,
            Piece::Gap { .. } => ts,
        };
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
                    Piece::Data { offset, bytes, ts } => Piece::Data {
                        offset,
                        bytes: Bytes::copy_from_slice(&bytes),
                        ts,
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
        // On an AMQP port, or relayed by amqpeek, a stream is a connection whatever its first
        // bytes (a TLS ClientHello, garbage): the server's answer to them is judged.
        let amqp = header_from.is_some() || on_port || flow.relayed;
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
            ts: flow
                .syn_ts
                .or(flow.undecided.first().map(|u| u.1))
                .unwrap_or(ts),
            client: flow.addrs[client],
            server: flow.addrs[1 - client],
        });
        for (idx, ts, p) in std::mem::take(&mut flow.undecided) {
            self.emit(flow, conn, idx, ts, p);
        }
        flow.undecided_bytes = 0;
        for idx in 0..2 {
            self.tell_fin(flow, idx, ts, false);
        }
    }

    /// Emit the `Fin` of direction `idx` of an AMQP flow once every byte before it has been
    /// passed on (the reassembly reached its sequence number), or `at_end` when the flow is
    /// finished: a FIN that is never reached (bytes before it missing) ends its direction at
    /// the close. Bytes still held while looking for a frame boundary go out before it.
    #[inline]
    fn tell_fin(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, at_end: bool) {
        if flow.fin_at[idx].is_some() {
            self.tell_seen_fin(flow, idx, ts, at_end);
        }
    }

    /// [`Emitter::tell_fin`] once direction `idx`'s FIN was seen.
    fn tell_seen_fin(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, at_end: bool) {
        let (Some(at), Class::Amqp(conn)) = (flow.fin_at[idx], &flow.class) else {
            return;
        };
        let conn = *conn;
        let reached = flow.reasm[idx]
            .next_seq()
            .is_some_and(|next| next.wrapping_sub(at) as i32 >= 0);
        if !(reached || at_end) {
            return;
        }
        flow.fin_at[idx] = None;
        self.flush_search(flow, conn, idx, ts);
        // In capture order with the rest of the flow's events (a hole found at the FIN goes
        // out before it).
        let fin = SourceEvent::Fin {
            conn,
            dir: Self::dir(flow, idx),
            ts,
        };
        self.pend(flow, idx, ts, fin);
        if !at_end {
            self.release(flow, conn, false);
        }
    }

    fn dir(flow: &Flow, idx: usize) -> Dir {
        if flow.client == Some(idx) {
            Dir::C2S
        } else {
            Dir::S2C
        }
    }

    /// Whether direction `idx` holds bytes (out of order behind a hole, or in a search for a
    /// frame boundary): [`Emitter::held_since`] is `Some`.
    #[inline]
    fn holds(flow: &Flow, idx: usize) -> bool {
        matches!(&flow.sync[idx], Sync::Searching(s) if !s.buf.is_empty())
            || flow.reasm[idx].holds()
    }

    /// Capture time of the earliest bytes direction `idx` holds (out of order behind a hole,
    /// or in a search for a frame boundary).
    fn held_since(flow: &Flow, idx: usize) -> Option<Timestamp> {
        let search = match &flow.sync[idx] {
            Sync::Searching(s) if !s.buf.is_empty() => Some(s.stamp_at(s.buf_offset, Timestamp(0))),
            _ => None,
        };
        match (search, flow.reasm[idx].held_since()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// An event of direction `idx`, captured at `ts`, waiting to go out in capture order.
    fn pend(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, ev: SourceEvent) {
        if let SourceEvent::Chunk(c) = &ev {
            flow.pending_bytes += c.bytes.len();
        }
        self.made += 1;
        flow.pending[idx].push_back((ts, self.made, ev));
    }

    /// Pass on the pending events of both directions, merged in capture order, as far as
    /// nothing held in the other direction was captured before them (everything at the end).
    ///
    /// A direction that holds bytes in a search is first asked whether the frames it holds end
    /// exactly where its bytes do (as they do when that peer stopped to wait for an answer).
    /// When too much waits, the holes and searches holding it up are given up as gaps.
    #[inline]
    fn release(&mut self, flow: &mut Flow, conn: ConnId, all: bool) {
        if !flow.pending[0].is_empty() || !flow.pending[1].is_empty() {
            self.release_pending(flow, conn, all);
        }
    }

    /// [`Emitter::release`] when some event is pending.
    fn release_pending(&mut self, flow: &mut Flow, conn: ConnId, all: bool) {
        loop {
            let next = (0..2)
                .filter_map(|i| flow.pending[i].front().map(|f| ((f.0, f.1), i)))
                .min();
            let Some(((ts, _), i)) = next else {
                return;
            };
            let j = 1 - i;
            if !all && Self::held_since(flow, j).is_some_and(|h| h <= ts) {
                if matches!(flow.sync[j], Sync::Searching(_)) {
                    self.try_resync(flow, conn, j, ts, Attempt::Lenient);
                }
                if Self::held_since(flow, j).is_some_and(|h| h <= ts) {
                    if flow.pending_bytes <= MAX_RESYNC_BUFFER {
                        return;
                    }
                    self.give_up(flow, conn, j, ts);
                }
                continue;
            }
            if let Some((_, _, ev)) = flow.pending[i].pop_front() {
                if let SourceEvent::Chunk(c) = &ev {
                    flow.pending_bytes -= c.bytes.len();
                }
                self.out.push_back(ev);
            }
        }
    }

    /// Too much of the other direction waits behind what `idx` holds: declare its holes gaps
    /// and its search's bytes skipped.
    fn give_up(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp) {
        let mut pieces = Vec::new();
        flow.reasm[idx].flush(&mut pieces);
        self.pieces_in(flow, idx, ts, &mut pieces);
        self.try_resync(flow, conn, idx, ts, Attempt::GiveUp);
    }

    /// Pass a batch of reassembled pieces of direction `idx` on (draining `pieces`); a gap
    /// takes the capture time of the bytes right after it when the batch holds them, else `ts`
    /// (when it became known).
    fn pieces_in(&mut self, flow: &mut Flow, idx: usize, ts: Timestamp, pieces: &mut Vec<Piece>) {
        for i in 0..pieces.len() {
            let t = match &pieces[i] {
                Piece::Data { ts, .. } => *ts,
                Piece::Gap { .. } => pieces[i..]
                    .iter()
                    .find_map(|p| match p {
                        Piece::Data { ts, .. } => Some(*ts),
                        Piece::Gap { .. } => None,
                    })
                    .map_or(ts, |d| d.min(ts)),
            };
            let p = std::mem::replace(&mut pieces[i], Piece::Gap { offset: 0, len: 0 });
            self.piece(flow, idx, t, p);
        }
        pieces.clear();
    }

    /// Pass one piece of a classified AMQP flow on, resynchronising where needed.
    ///
    /// A hole is announced as a gap at once (the trackers then stop judging what it could
    /// explain); the search for the next frame boundary after it announces the bytes it had
    /// to skip as a second gap, which tells the decoder the protocol to resume with.
    fn emit(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp, p: Piece) {
        let dir = Self::dir(flow, idx);
        match p {
            Piece::Gap { offset, len } => {
                // Bytes buffered in a search before the hole cannot start a run that continues
                // past it: they go into the gap too.
                let from = match &flow.sync[idx] {
                    Sync::Searching(s) => s.gap_offset.min(offset),
                    _ => offset,
                };
                let end = offset + len;
                let before = offset - from;
                flow.start_lost[idx] |= from == 0;
                let gap = SourceEvent::Gap {
                    conn,
                    ts,
                    dir,
                    offset: from,
                    len: end - from,
                    reason: if before > 0 {
                        format!(
                            "{len} bytes missing from the capture, after {before} bytes with no frame boundary found"
                        )
                    } else {
                        format!("{len} bytes missing from the capture")
                    },
                    resync: None,
                };
                self.pend(flow, idx, ts, gap);
                flow.sync[idx] =
                    Sync::Searching(Search::new(end, "after bytes missing from the capture"));
            }
            Piece::Data { offset, bytes, .. } => {
                if let Sync::Start = flow.sync[idx] {
                    let mid_stream = !flow.reasm[idx].syn_seen() && offset == 0;
                    let at_header = b"AMQP".starts_with(&bytes[..bytes.len().min(4)]);
                    // A stream that starts with frames where the partner's header was lost (a
                    // 0-9-1 server answers with frames): which protocol is for the search to
                    // find.
                    let partner_lost = offset == 0 && flow.start_lost[1 - idx];
                    if mid_stream && (dir == Dir::S2C || !at_header) {
                        self.partner_start_lost(flow, conn, idx, ts);
                    }
                    flow.sync[idx] = if mid_stream && !at_header {
                        Sync::Searching(Search::new(offset, "capture starts mid-connection"))
                    } else if partner_lost && !at_header {
                        Sync::Searching(Search::new(
                            offset,
                            "the partner's first bytes are missing from the capture",
                        ))
                    } else {
                        Sync::Synced
                    };
                }
                match &mut flow.sync[idx] {
                    Sync::Searching(s) => {
                        s.push(offset, &bytes, ts);
                        self.try_resync(flow, conn, idx, ts, Attempt::Strict);
                    }
                    _ => {
                        let chunk = SourceEvent::Chunk(Chunk {
                            conn,
                            dir,
                            ts,
                            bytes,
                        });
                        self.pend(flow, idx, ts, chunk);
                    }
                }
            }
        }
    }

    /// Direction `idx`, whose handshake was not captured, shows its first bytes before its
    /// partner showed any, and they say the partner spoke before: `idx` is the server (AMQP's
    /// client speaks first), or its first bytes are mid-stream. Unless the partner's SYN was
    /// captured, what the partner sent before its first captured byte is then not in the
    /// capture: an empty gap at its offset 0 says so at once, so that nothing `idx` sends is
    /// judged against a partner that seemingly sent nothing (its frames are then searched for
    /// a boundary as a capture starting mid-connection is).
    fn partner_start_lost(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp) {
        let j = 1 - idx;
        let untouched = matches!(flow.sync[j], Sync::Start) && flow.reasm[j].offset() == 0;
        if flow.reasm[j].syn_seen() || flow.start_lost[j] || !untouched {
            return;
        }
        flow.start_lost[j] = true;
        let (who, other) = match Self::dir(flow, j) {
            Dir::C2S => ("client", "server"),
            Dir::S2C => ("server", "client"),
        };
        let gap = SourceEvent::Gap {
            conn,
            ts,
            dir: Self::dir(flow, j),
            offset: 0,
            len: 0,
            reason: format!(
                "the capture starts after the {who}'s first bytes (the {other}'s were captured first): what the {who} sent before is unknown"
            ),
            resync: None,
        };
        self.pend(flow, j, ts, gap);
    }

    /// The capture marked the payload at sequence number `seq` of direction `idx` as starting
    /// at boundary `b`: remember its stream offset for a search (a mark behind the bytes
    /// delivered already, or too far ahead, is of no use).
    fn mark(flow: &mut Flow, idx: usize, seq: u32, b: Boundary) {
        let Some(at) = flow.reasm[idx].offset_of(seq) else {
            return;
        };
        let marks = &mut flow.marks[idx];
        if marks.back().is_some_and(|m| m.0 >= at) {
            return; // a retransmission, or out of order: kept in order, never twice
        }
        if marks.len() >= MAX_MARKS {
            marks.pop_front();
        }
        marks.push_back((at, b));
    }

    /// The first boundary mark of direction `idx` within the bytes a search holds: (its index in
    /// the buffer, the protocol to resume with); marks before the buffer are forgotten.
    fn marked_boundary(flow: &mut Flow, idx: usize) -> Option<(usize, Option<ProtocolHeader>)> {
        let Sync::Searching(s) = &flow.sync[idx] else {
            return None;
        };
        let (from, end) = (
            s.buf_offset.max(s.gap_offset),
            s.buf_offset + s.buf.len() as u64,
        );
        let marks = &mut flow.marks[idx];
        while marks.front().is_some_and(|m| m.0 < from) {
            marks.pop_front();
        }
        let &(at, b) = marks.front().filter(|m| m.0 < end)?;
        Some(((at - s.buf_offset) as usize, b.resync()))
    }

    /// Look for a frame boundary in what direction `idx` holds; `at` says how hard.
    fn try_resync(
        &mut self,
        flow: &mut Flow,
        conn: ConnId,
        idx: usize,
        ts: Timestamp,
        at: Attempt,
    ) {
        let dir = Self::dir(flow, idx);
        let marked = Self::marked_boundary(flow, idx);
        let Sync::Searching(s) = &mut flow.sync[idx] else {
            return;
        };
        let at_end = at != Attempt::Strict;
        // A boundary the capture marks is taken as it is; else a protocol header right after
        // the hole is a boundary of its own (the decoder then expects a header, as at a
        // stream's start).
        let found = if marked.is_some() {
            marked
        } else if at == Attempt::GiveUp {
            None
        } else if s.buf.len() >= 8 && s.buf.starts_with(b"AMQP") {
            Some((0, None))
        } else {
            find_frame_run(&s.buf, DEFAULT_RUN, at_end).map(|r| (r.offset, Some(r.protocol)))
        };
        let mut made: Vec<(Timestamp, SourceEvent)> = Vec::new();
        match found {
            Some((run_at, protocol)) => {
                let resume = s.buf_offset + run_at as u64;
                let skipped = s.skipped + run_at as u64;
                let at = s.stamp_at(s.buf_offset, ts);
                made.push((
                    at,
                    SourceEvent::Gap {
                        conn,
                        ts: at,
                        dir,
                        offset: s.gap_offset,
                        len: resume - s.gap_offset,
                        reason: format!(
                            "{}: resynchronised at offset {resume} after skipping {skipped} bytes",
                            s.why
                        ),
                        resync: protocol,
                    },
                ));
                let chunks = s.chunks(conn, dir, run_at, ts);
                flow.sync[idx] = Sync::Synced;
                made.extend(chunks.into_iter().map(|c| (c.ts, SourceEvent::Chunk(c))));
            }
            None if matches!(at, Attempt::Final | Attempt::GiveUp) => {
                let end = s.buf_offset + s.buf.len() as u64;
                if end > s.gap_offset {
                    let at = s.stamp_at(s.buf_offset, ts);
                    made.push((
                        at,
                        SourceEvent::Gap {
                            conn,
                            ts: at,
                            dir,
                            offset: s.gap_offset,
                            len: end - s.gap_offset,
                            reason: format!(
                                "{}: no frame boundary found in the {} bytes that follow",
                                s.why,
                                s.buf.len()
                            ),
                            resync: None,
                        },
                    ));
                }
                s.buf.clear();
                s.stamps.clear();
                s.gap_offset = end;
                s.buf_offset = end;
            }
            None => {
                if at == Attempt::Strict && s.buf.len() > MAX_RESYNC_BUFFER {
                    // Keep the tail, which may hold the start of a run.
                    let drop = s.buf.len() - 64 * 1024;
                    s.drop_front(drop);
                    s.skipped += drop as u64;
                }
            }
        }
        for (at, ev) in made {
            self.pend(flow, idx, at, ev);
        }
    }

    fn flush_search(&mut self, flow: &mut Flow, conn: ConnId, idx: usize, ts: Timestamp) {
        if matches!(flow.sync[idx], Sync::Searching { .. }) {
            self.try_resync(flow, conn, idx, ts, Attempt::Final);
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
    fn closes(flows: u16, max: usize) -> Vec<(ConnId, CloseReason)> {
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
                    ack_no: 0,
                    fin: false,
                    rst: false,
                    payload: b"AMQP\x00\x00\x09\x01",
                    window: None,
                    relayed: false,
                    boundary: None,
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
            .filter(|(_, r)| *r == CloseReason::Evicted)
            .map(|(c, _)| *c)
            .collect();
        assert!(!evicted.is_empty());
        assert!(evicted.is_sorted(), "oldest first: {evicted:?}");
        for _ in 0..5 {
            assert_eq!(closes(200, 16), first, "the same events on every run");
        }
    }

    /// A segment's source and destination: the client 10.0.0.2:40000 and the server
    /// 10.0.0.1:5672, in the order `from_client` says.
    fn ends(from_client: bool) -> (SocketAddr, SocketAddr) {
        let client: SocketAddr = "10.0.0.2:40000".parse().unwrap();
        let server: SocketAddr = "10.0.0.1:5672".parse().unwrap();
        if from_client {
            (client, server)
        } else {
            (server, client)
        }
    }

    /// What a table makes of a handshake then `segs` (client 10.0.0.2:40000, server
    /// 10.0.0.1:5672, both sides' data from sequence number 1; `true` for the client's), as
    /// (event kind, direction, bytes) per event.
    fn kinds(segs: &[(bool, u32, bool, &'static [u8])]) -> Vec<(&'static str, Option<Dir>, usize)> {
        let mut t = ConnTable::new(CaptureOptions::default());
        let handshake: [(bool, u32, bool, &[u8]); 2] =
            [(true, 0, false, b""), (false, 0, false, b"")];
        for (i, &(from_client, seq, fin, payload)) in handshake.iter().chain(segs).enumerate() {
            let (src, dst) = ends(from_client);
            let seg = TcpSegment {
                src,
                dst,
                seq,
                ack_no: 0,
                relayed: false,
                boundary: None,
                syn: i < 2,
                ack: i > 0,
                fin,
                rst: false,
                payload,
                window: None,
            };
            t.segment(Timestamp(i as i64), &seg);
        }
        t.finish_all(Timestamp(1_000));
        std::iter::from_fn(|| t.pop())
            .map(|e| match e {
                SourceEvent::Connect { .. } => ("connect", None, 0),
                SourceEvent::Chunk(c) => ("chunk", Some(c.dir), c.bytes.len()),
                SourceEvent::Fin { dir, .. } => ("fin", Some(dir), 0),
                SourceEvent::Close { .. } => ("close", None, 0),
                SourceEvent::Gap { dir, .. } => ("gap", Some(dir), 0),
                SourceEvent::Error { .. } => ("error", None, 0),
                SourceEvent::TlsHeader { .. } | SourceEvent::Notice { .. } => ("other", None, 0),
            })
            .collect()
    }

    /// How a table is fed in [`events_of`].
    #[derive(Clone, Copy, PartialEq)]
    enum Feed {
        /// Every segment by the general path ([`ConnTable::segment`], no fast path).
        General,
        /// [`ConnTable::segment`] then [`ConnTable::pop`] until nothing is left.
        Segment,
        /// [`ConnTable::segment_then_pop`] then [`ConnTable::pop`] until nothing is left, as
        /// the packet source does.
        ThenPop,
        /// [`ConnTable::segment_then_pop`], the rest taken only after every third segment
        /// (so that events often wait when a segment comes).
        ThenPopSome,
    }

    /// Events, as text, of a table fed `segs` as `feed` says: (from the client, sequence
    /// number, acknowledgement number, flags as `S`, `F`, `R`, payload).
    fn events_of(segs: &[(bool, u32, u32, &str, Vec<u8>)], feed: Feed) -> Vec<String> {
        let mut t = ConnTable::new(CaptureOptions {
            max_out_of_order: 64,
            ..CaptureOptions::default()
        });
        t.fast_path = feed != Feed::General;
        let window = Bytes::from(segs.iter().flat_map(|s| s.4.clone()).collect::<Vec<u8>>());
        let mut at = 0;
        let mut out = Vec::new();
        for (i, (from_client, seq, ack_no, flags, payload)) in segs.iter().enumerate() {
            let (src, dst) = ends(*from_client);
            let seg = TcpSegment {
                src,
                dst,
                seq: *seq,
                syn: flags.contains('S'),
                ack: !flags.contains('S') || !*from_client,
                ack_no: *ack_no,
                fin: flags.contains('F'),
                rst: flags.contains('R'),
                payload: &window[at..at + payload.len()],
                window: Some(&window),
                relayed: false,
                boundary: None,
            };
            at += payload.len();
            let ts = Timestamp(i as i64 / 3);
            if matches!(feed, Feed::ThenPop | Feed::ThenPopSome) {
                out.extend(t.segment_then_pop(ts, &seg).map(|e| format!("{e:?}")));
            } else {
                t.segment(ts, &seg);
            }
            if feed != Feed::ThenPopSome || i % 3 == 2 {
                out.extend(std::iter::from_fn(|| t.pop()).map(|e| format!("{e:?}")));
            }
        }
        t.finish_all(Timestamp(1 << 40));
        out.extend(std::iter::from_fn(|| t.pop()).map(|e| format!("{e:?}")));
        out
    }

    #[test]
    fn in_order_segments_skipping_reassembly_give_what_reassembly_gives() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        // A 0-9-1 client header, then heartbeat frames, so that searches after holes resume.
        let heartbeat = [8u8, 0, 0, 0, 0, 0, 0, 0xce];
        let mut fast_chunks = 0;
        for case in 0..400 {
            let handshake = case % 4 != 0;
            let streams: [Vec<u8>; 2] = [0, 1].map(|d| {
                let mut b = if d == 0 {
                    b"AMQP\x00\x00\x09\x01".to_vec()
                } else {
                    Vec::new()
                };
                for _ in 0..next(12) {
                    b.extend_from_slice(&heartbeat);
                }
                b
            });
            let isn = [next(1 << 32) as u32, next(1 << 32) as u32];
            let mut segs = Vec::new();
            if handshake {
                segs.push((true, isn[0], 0, "S", Vec::new()));
                segs.push((false, isn[1], isn[0].wrapping_add(1), "S", Vec::new()));
            }
            // Each direction cut anywhere; some pieces lost, repeated or late.
            let mut order = Vec::new();
            for (d, stream) in streams.iter().enumerate() {
                let mut at = 0;
                while at < stream.len() {
                    let n = (1 + next(12) as usize).min(stream.len() - at);
                    order.push((d, at, n));
                    at += n;
                }
            }
            order.sort_by_key(|&(d, at, _)| at * 2 + d);
            for i in 1..order.len() {
                if next(8) == 0 {
                    order.swap(i - 1, i);
                }
            }
            let mut sent = [0u32; 2];
            for &(d, at, n) in &order {
                let copies = [0, 1, 1, 1, 1, 1, 1, 2][next(8) as usize];
                for _ in 0..copies {
                    let base = isn[d].wrapping_add(1);
                    sent[d] = sent[d].max((at + n) as u32);
                    let peer = isn[1 - d]
                        .wrapping_add(1)
                        .wrapping_add(sent[1 - d] + next(3) as u32);
                    let payload = streams[d][at..at + n].to_vec();
                    // The last bytes of a direction sometimes carry its FIN.
                    let last = at + n == streams[d].len() && next(3) == 0;
                    let flags = if last { "F" } else { "" };
                    segs.push((d == 0, base.wrapping_add(at as u32), peer, flags, payload));
                }
            }
            for d in 0..2 {
                if next(3) > 0 {
                    let end = isn[d].wrapping_add(1 + streams[d].len() as u32);
                    let flags = if next(4) == 0 { "R" } else { "F" };
                    segs.push((d == 0, end, isn[1 - d].wrapping_add(1), flags, Vec::new()));
                }
            }
            let fast = events_of(&segs, Feed::Segment);
            for feed in [Feed::General, Feed::ThenPop, Feed::ThenPopSome] {
                assert_eq!(fast, events_of(&segs, feed), "case {case}: {segs:?}");
            }
            fast_chunks += fast.iter().filter(|e| e.starts_with("Chunk")).count();
        }
        assert!(fast_chunks > 1000, "{fast_chunks} chunks");
    }

    #[test]
    fn a_fin_is_told_once_every_byte_before_it_was_passed_on() {
        let c2s = Some(Dir::C2S);
        // In order: the client's FIN right after its header, before the server's bytes.
        let in_order = kinds(&[
            (true, 1, false, b"AMQP\x00\x00\x09\x01"),
            (true, 9, true, b""),
            (true, 9, true, b""), // retransmitted: told once
            (false, 1, false, &[8, 0, 0, 0, 0, 0, 0, 0xce]),
        ]);
        assert_eq!(
            in_order,
            [
                ("connect", None, 0),
                ("chunk", c2s, 8),
                ("fin", c2s, 0),
                ("chunk", Some(Dir::S2C), 8),
                ("close", None, 0),
            ]
        );
        // The FIN (with the last bytes) arrives before a segment it follows: told after it.
        let reordered = kinds(&[
            (true, 1, false, b"AMQP"),
            (true, 9, true, b"\x08\x00\x00\x00\x00\x00\x00\xce"),
            (true, 5, false, b"\x00\x00\x09\x01"),
        ]);
        assert_eq!(
            reordered,
            [
                ("connect", None, 0),
                ("chunk", c2s, 4),
                ("chunk", c2s, 4),
                ("chunk", c2s, 8),
                ("fin", c2s, 0),
                ("close", None, 0),
            ]
        );
        // Bytes before the FIN never captured: it ends its direction at the close.
        let lost = kinds(&[
            (true, 1, false, b"AMQP\x00\x00\x09\x01"),
            (true, 100, true, b""),
        ]);
        assert_eq!(
            lost[lost.len() - 2..],
            [("fin", c2s, 0), ("close", None, 0)],
            "{lost:?}"
        );
    }
}
