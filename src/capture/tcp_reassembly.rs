//! TCP reassembly of one direction of one connection: segments in any order, retransmitted or
//! overlapping, in; the byte stream in order, with explicit gaps, out.
//!
//! First-seen bytes win where segments overlap, whether the bytes seen first were delivered
//! already or are held out of order: a retransmission never replaces them, as Wireshark never
//! dissects a retransmission's bytes a second time. (Which copy a receiver keeps when a
//! retransmission carries different bytes depends on its TCP stack; honest peers never send
//! one, and a capture cannot tell, so one rule is kept throughout.)
//!
//! Out-of-order data is held, each segment with its own capture time, until the hole before it
//! is filled or known to be lost: the partner acknowledged bytes the capture never showed
//! ([`Reassembler::acked`], Wireshark's "ACKed segment that wasn't captured"), the buffer
//! bound was reached, or the stream ended. The hole is then declared a gap and the stream moves
//! on, so memory stays bounded whatever the capture holds. Never panics on any sequence
//! numbers.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::event::Timestamp;

/// Default bound on buffered out-of-order bytes per direction.
pub const DEFAULT_MAX_OUT_OF_ORDER: usize = 1024 * 1024;

/// Segments (and acknowledgements) further than this ahead of the expected sequence number are
/// treated as noise.
const MAX_AHEAD: i64 = 1 << 30;

/// A piece of the reassembled stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Bytes at stream offset `offset`, contiguous with what came before.
    Data {
        /// Stream offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
        /// Capture time of the segment that carried them (not the time they became
        /// contiguous).
        ts: Timestamp,
    },
    /// Bytes missing from the capture.
    Gap {
        /// Stream offset where the hole starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
}

/// `part` as `Bytes`: shared out of `window` when it lies there, else copied.
#[inline]
pub(crate) fn share(window: Option<&Bytes>, part: &[u8]) -> Bytes {
    match window {
        Some(w) if part.is_empty() => w.slice(0..0),
        Some(w) => {
            let at = (part.as_ptr() as usize).wrapping_sub(w.as_ptr() as usize);
            match at.checked_add(part.len()) {
                Some(end) if at <= w.len() && end <= w.len() => w.slice(at..end),
                _ => Bytes::copy_from_slice(part),
            }
        }
        None => Bytes::copy_from_slice(part),
    }
}

/// Reassembly state of one direction.
#[derive(Debug)]
pub struct Reassembler {
    /// Sequence number of the next expected byte, once known.
    next_seq: Option<u32>,
    /// Stream offset of the next expected byte.
    offset: u64,
    /// Out-of-order bytes keyed by stream offset, with their capture time; ranges never
    /// overlap and all start after `offset`.
    ooo: BTreeMap<u64, (Bytes, Timestamp)>,
    ooo_bytes: usize,
    max_ooo: usize,
    syn_seen: bool,
    /// Stream offset of the FIN (the end of the stream), once seen.
    fin_at: Option<u64>,
    /// Capture time of the first segment held since the buffer was last empty.
    held_since: Timestamp,
}

impl Default for Reassembler {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_OUT_OF_ORDER)
    }
}

impl Reassembler {
    /// A reassembler buffering at most `max_out_of_order` bytes ahead of a hole.
    pub fn new(max_out_of_order: usize) -> Self {
        Reassembler {
            next_seq: None,
            offset: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            max_ooo: max_out_of_order,
            syn_seen: false,
            fin_at: None,
            held_since: Timestamp(0),
        }
    }

    /// True once this direction's SYN was seen (the stream starts at its beginning).
    pub fn syn_seen(&self) -> bool {
        self.syn_seen
    }

    /// Sequence number of the next byte expected, once known (a FIN there follows every byte
    /// before it).
    pub fn next_seq(&self) -> Option<u32> {
        self.next_seq
    }

    /// Stream offset of the next byte expected.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes held out of order.
    pub fn buffered(&self) -> usize {
        self.ooo_bytes
    }

    /// Whether bytes are held out of order ([`Reassembler::held_since`] is `Some`).
    #[inline]
    pub fn holds(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// While bytes are held out of order: the capture time of the earliest segment among
    /// them (of the first held since the buffer was last empty).
    pub fn held_since(&self) -> Option<Timestamp> {
        (!self.ooo.is_empty()).then_some(self.held_since)
    }

    /// A SYN with sequence number `seq`: the stream starts at `seq + 1`. Ignored once data has
    /// been seen.
    pub fn syn(&mut self, seq: u32) {
        if self.next_seq.is_none() {
            self.next_seq = Some(seq.wrapping_add(1));
            self.syn_seen = true;
        }
    }

    /// Stream offset of sequence number `seq`, when it is at or plausibly ahead of the next
    /// expected byte (`None` before the first sequence number is known).
    pub fn offset_of(&self, seq: u32) -> Option<u64> {
        self.ahead(seq)
    }

    /// Stream offset of sequence number `seq`, when it is plausibly ahead of (or at) the next
    /// expected byte.
    fn ahead(&self, seq: u32) -> Option<u64> {
        let rel = (seq.wrapping_sub(self.next_seq?) as i32) as i64;
        (0..=MAX_AHEAD)
            .contains(&rel)
            .then(|| self.offset + rel as u64)
    }

    /// A FIN at sequence number `seq` (the sequence number after the segment's payload;
    /// an RST is [`Reassembler::rst`]): the stream ends there, and [`Reassembler::flush`] declares any bytes before it
    /// that were never captured a gap. A FIN takes one sequence number, which
    /// [`Reassembler::acked`] must not take for a lost byte.
    pub fn fin(&mut self, seq: u32) {
        if let Some(at) = self.ahead(seq) {
            self.fin_at = Some(at);
        }
    }

    /// An RST at sequence number `seq` (the sequence number after the segment's payload). An
    /// RST takes no sequence number of its own, but follows the FIN's when one was sent: after
    /// a FIN the stream ended there already (`[F.] seq 2397` then `[R.] seq 2398` is no lost
    /// byte), and without one, an RST exactly one past every byte seen may follow a FIN the
    /// capture missed, which is no lost byte either (as in [`Reassembler::acked`]).
    pub fn rst(&mut self, seq: u32) {
        if self.fin_at.is_some() {
            return;
        }
        let Some(mut at) = self.ahead(seq) else {
            return;
        };
        let seen_end = self
            .ooo
            .last_key_value()
            .map_or(self.offset, |(k, (b, _))| k + b.len() as u64);
        if at == seen_end + 1 {
            at = seen_end;
        }
        self.fin_at = Some(at);
    }

    /// The partner acknowledged every byte before sequence number `ack`: bytes before it that
    /// the capture has not shown (the receiver has them, so they will not be sent again) are
    /// lost from the capture. Declare those holes as gaps now, and deliver what they held up,
    /// so that nothing the partner sent after reading the missing bytes is judged before the
    /// hole is known.
    ///
    /// The sequence number after the last byte seen may be the FIN's: while no FIN was seen, an
    /// acknowledgement of exactly one byte more than the capture showed declares nothing for
    /// that last byte (a lost FIN is not a lost byte; a lost byte shows later, when the
    /// partner acknowledges what follows it).
    #[inline]
    pub fn acked(&mut self, ack: u32, out: &mut Vec<Piece>) {
        if let Some(target) = self.acked_to(ack) {
            self.skip_to(target, out);
        }
    }

    /// Whether [`Reassembler::acked`] with `ack` would do nothing at all: nothing is held, and
    /// no byte it acknowledges is missing.
    #[inline(always)]
    pub fn acked_declares_nothing(&self, ack: u32) -> bool {
        if !self.ooo.is_empty() {
            return false;
        }
        // `acked_to` with nothing held (every byte seen ends at `offset`).
        match (self.ahead(ack), self.fin_at) {
            (None, _) => true,
            (Some(target), Some(end)) => target.min(end) <= self.offset,
            (Some(target), None) => target <= self.offset + 1,
        }
    }

    /// The stream offset up to which an acknowledgement of `ack` shows bytes lost (see
    /// [`Reassembler::acked`]); `None` when it is not plausibly ahead.
    #[inline]
    fn acked_to(&self, ack: u32) -> Option<u64> {
        let target = self.ahead(ack)?;
        let seen_end = self
            .ooo
            .last_key_value()
            .map_or(self.offset, |(k, (b, _))| k + b.len() as u64);
        Some(match self.fin_at {
            Some(end) => target.min(end),
            None if target == seen_end + 1 => seen_end,
            None => target,
        })
    }

    /// Take one segment's payload at sequence number `seq`, captured at `ts`; append what
    /// became contiguous (and any gap declared to bound memory) to `out`.
    pub fn segment(&mut self, seq: u32, payload: &[u8], ts: Timestamp, out: &mut Vec<Piece>) {
        self.segment_in(seq, payload, None, ts, out);
    }

    /// [`Reassembler::segment`] for a payload that lies in `window`: in-order bytes are then
    /// delivered as a part of `window` (no copy). Bytes held out of order are still copied, so
    /// a hole never keeps a whole window alive.
    pub fn segment_in(
        &mut self,
        seq: u32,
        payload: &[u8],
        window: Option<&Bytes>,
        ts: Timestamp,
        out: &mut Vec<Piece>,
    ) {
        if payload.is_empty() {
            return;
        }
        let next = *self.next_seq.get_or_insert(seq);
        let rel = (seq.wrapping_sub(next) as i32) as i64;
        if rel > MAX_AHEAD {
            return;
        }
        let len = payload.len() as i64;
        if rel + len <= 0 {
            return; // a retransmission of bytes already delivered
        }
        if rel == 0 && self.ooo.is_empty() {
            // The next bytes expected, with nothing held: all of them go out at once.
            self.deliver(share(window, payload), ts, out);
            return;
        }
        if rel <= 0 {
            let skip = (-rel) as usize;
            self.deliver_fresh(&payload[skip.min(payload.len())..], window, ts, out);
        } else {
            let start = self.offset + rel as u64;
            self.insert(start, payload, ts);
            if self.ooo_bytes > self.max_ooo {
                self.skip_hole(out);
            }
        }
    }

    /// Take `len` bytes at sequence number `seq` as delivered when they are exactly the next
    /// bytes expected and nothing is held out of order (the common in-order segment): the
    /// stream moves past them, as [`Reassembler::segment_in`] would deliver them in one piece,
    /// and the caller passes them on itself. False, and nothing changed, for any other segment
    /// (empty, ahead, behind, the first one seen, or with bytes held).
    #[inline]
    pub fn take_next(&mut self, seq: u32, len: usize) -> bool {
        if len == 0 || self.next_seq != Some(seq) || !self.ooo.is_empty() {
            return false;
        }
        self.advance(len as u64);
        true
    }

    /// Deliver everything buffered, declaring the holes as gaps (at close or end of capture),
    /// up to the FIN or RST when one was seen.
    pub fn flush(&mut self, out: &mut Vec<Piece>) {
        while !self.ooo.is_empty() {
            self.skip_hole(out);
        }
        if let Some(end) = self.fin_at {
            self.skip_to(end, out);
        }
    }

    /// Deliver `fresh`, which starts at the next expected byte, where nothing is held: bytes
    /// already held out of order there were seen first and are delivered instead.
    fn deliver_fresh(
        &mut self,
        fresh: &[u8],
        window: Option<&Bytes>,
        ts: Timestamp,
        out: &mut Vec<Piece>,
    ) {
        let start = self.offset;
        let end = start + fresh.len() as u64;
        while self.offset < end {
            let upto = self
                .ooo
                .first_key_value()
                .map_or(end, |(k, _)| (*k).min(end));
            let (a, b) = ((self.offset - start) as usize, (upto - start) as usize);
            self.deliver(share(window, &fresh[a..b]), ts, out);
            self.drain(out);
        }
        self.drain(out);
    }

    fn deliver(&mut self, bytes: Bytes, ts: Timestamp, out: &mut Vec<Piece>) {
        if bytes.is_empty() {
            return;
        }
        let n = bytes.len();
        out.push(Piece::Data {
            offset: self.offset,
            bytes,
            ts,
        });
        self.advance(n as u64);
    }

    fn advance(&mut self, n: u64) {
        self.offset += n;
        if let Some(s) = self.next_seq.as_mut() {
            *s = s.wrapping_add(n as u32);
        }
    }

    /// Deliver buffered segments that are now contiguous.
    fn drain(&mut self, out: &mut Vec<Piece>) {
        while let Some(entry) = self.ooo.first_entry() {
            let start = *entry.key();
            if start > self.offset {
                break;
            }
            let (bytes, ts) = entry.remove();
            self.ooo_bytes -= bytes.len();
            let end = start + bytes.len() as u64;
            if end > self.offset {
                let skip = (self.offset - start) as usize;
                self.deliver(bytes.slice(skip..), ts, out);
            }
        }
    }

    /// Declare the hole before the first buffered segment a gap and deliver from there.
    fn skip_hole(&mut self, out: &mut Vec<Piece>) {
        if let Some((&start, _)) = self.ooo.first_key_value() {
            self.skip_to(start, out);
        }
    }

    /// Declare every hole before stream offset `target` a gap, delivering the held bytes
    /// between them and those contiguous after.
    #[inline]
    fn skip_to(&mut self, target: u64, out: &mut Vec<Piece>) {
        if target > self.offset || !self.ooo.is_empty() {
            self.skip_holes_to(target, out);
        }
    }

    /// [`Reassembler::skip_to`] when there is a hole before `target` or bytes held.
    fn skip_holes_to(&mut self, target: u64, out: &mut Vec<Piece>) {
        self.drain(out);
        while self.offset < target {
            let upto = self
                .ooo
                .first_key_value()
                .map_or(target, |(k, _)| (*k).min(target));
            let len = upto - self.offset;
            out.push(Piece::Gap {
                offset: self.offset,
                len,
            });
            self.advance(len);
            self.drain(out);
        }
    }

    /// Store `payload`, captured at `ts`, at stream offset `start`, keeping only bytes not
    /// already held.
    fn insert(&mut self, start: u64, payload: &[u8], ts: Timestamp) {
        if self.ooo.is_empty() {
            self.held_since = ts;
        }
        let end = start + payload.len() as u64;
        let mut cursor = start;
        // Existing ranges overlapping [start, end), in order, starting with one that may begin
        // before `start`.
        let first = self
            .ooo
            .range(..=start)
            .next_back()
            .map(|(k, (v, _))| (*k, *k + v.len() as u64));
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        if let Some((_, e)) = first
            && e > cursor
        {
            cursor = e.min(end);
        }
        let existing: Vec<(u64, u64)> = self
            .ooo
            .range(cursor..end)
            .map(|(k, (v, _))| (*k, *k + v.len() as u64))
            .collect();
        for (s, e) in existing {
            if s > cursor {
                pieces.push((cursor, s));
            }
            cursor = cursor.max(e);
        }
        if cursor < end {
            pieces.push((cursor, end));
        }
        for (s, e) in pieces {
            let a = (s - start) as usize;
            let b = (e - start) as usize;
            self.ooo
                .insert(s, (Bytes::copy_from_slice(&payload[a..b]), ts));
            self.ooo_bytes += b - a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timestamp = Timestamp(0);

    fn collect(pieces: &[Piece]) -> (Vec<u8>, Vec<(u64, u64)>) {
        let mut data = Vec::new();
        let mut gaps = Vec::new();
        for p in pieces {
            match p {
                Piece::Data { offset, bytes, .. } => {
                    assert_eq!(
                        *offset as usize,
                        data.len()
                            + gaps
                                .iter()
                                .map(|g: &(u64, u64)| g.1 as usize)
                                .sum::<usize>()
                    );
                    data.extend_from_slice(bytes);
                }
                Piece::Gap { offset, len } => gaps.push((*offset, *len)),
            }
        }
        (data, gaps)
    }

    #[test]
    fn out_of_order_retransmitted_and_overlapping_first_seen_wins() {
        let mut r = Reassembler::default();
        let mut out = Vec::new();
        let isn = u32::MAX - 3; // wraps inside the stream
        r.syn(isn);
        let base = isn.wrapping_add(1);
        r.segment(base.wrapping_add(6), b"ghij", T, &mut out); // ahead
        r.segment(base.wrapping_add(8), b"XXkl", T, &mut out); // overlaps the held "ij"
        assert!(out.is_empty());
        r.segment(base, b"abc", T, &mut out);
        r.segment(base, b"abc", T, &mut out); // retransmission
        r.segment(base.wrapping_add(2), b"Ydef", T, &mut out); // overlaps delivered 'c'
        r.flush(&mut out);
        let (data, gaps) = collect(&out);
        assert_eq!(data, b"abcdefghijkl");
        assert!(gaps.is_empty());
    }

    #[test]
    fn bounded_buffer_declares_a_gap() {
        let mut r = Reassembler::new(10);
        let mut out = Vec::new();
        r.segment(100, b"ab", T, &mut out);
        r.segment(110, b"0123456789", T, &mut out);
        assert_eq!(out.len(), 1);
        r.segment(120, b"Z", T, &mut out); // exceeds the bound
        let (data, gaps) = collect(&out);
        assert_eq!(gaps, vec![(2, 8)]);
        assert_eq!(data, b"ab0123456789Z");
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn an_in_order_segment_never_replaces_bytes_held_out_of_order() {
        let mut r = Reassembler::default();
        let mut out = Vec::new();
        r.syn(99);
        r.segment(104, b"EFG", Timestamp(1), &mut out); // held, beyond a hole at 100..104
        r.segment(100, b"abcdefgh", Timestamp(2), &mut out); // fills the hole, conflicts
        let (data, gaps) = collect(&out);
        assert_eq!(data, b"abcdEFGh", "the bytes seen first stay");
        assert!(gaps.is_empty());
        let stamps: Vec<_> = out
            .iter()
            .map(|p| match p {
                Piece::Data { offset, ts, .. } => (*offset, ts.0),
                Piece::Gap { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(
            stamps,
            vec![(0, 2), (4, 1), (7, 2)],
            "each part keeps its time"
        );
    }

    #[test]
    fn an_acknowledgement_of_uncaptured_bytes_declares_the_hole_at_once() {
        let mut r = Reassembler::default();
        let mut out = Vec::new();
        r.syn(99);
        r.segment(100, b"ab", Timestamp(1), &mut out);
        r.segment(110, b"held", Timestamp(3), &mut out); // 102..110 never captured
        r.acked(102, &mut out); // nothing missing yet
        assert_eq!(out.len(), 1);
        r.acked(112, &mut out);
        assert_eq!(
            out[1..],
            [
                Piece::Gap { offset: 2, len: 8 },
                Piece::Data {
                    offset: 10,
                    bytes: Bytes::from_static(b"held"),
                    ts: Timestamp(3)
                },
            ]
        );
        // Acknowledged bytes past everything seen are missing too.
        r.acked(120, &mut out);
        assert_eq!(out[3..], [Piece::Gap { offset: 14, len: 6 }]);
        // Their retransmission (never sent in reality) is not delivered twice.
        r.segment(114, b"late", Timestamp(4), &mut out);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn the_fins_sequence_number_is_not_a_lost_byte() {
        let mut out = Vec::new();
        // FIN seen: its acknowledgement declares nothing.
        let mut r = Reassembler::default();
        r.syn(99);
        r.segment(100, b"abc", T, &mut out);
        r.fin(103);
        r.acked(104, &mut out);
        assert_eq!(r.offset(), 3);
        // FIN lost from the capture: one more than seen is not declared either.
        let mut r = Reassembler::default();
        r.syn(99);
        r.segment(100, b"abc", T, &mut out);
        r.acked(104, &mut out);
        assert_eq!(r.offset(), 3);
        // Two more are: at least one byte is missing.
        r.acked(105, &mut out);
        assert_eq!(r.offset(), 5);
    }

    #[test]
    fn a_reset_after_the_fin_is_not_a_lost_byte() {
        let gaps_after = |fin: Option<u32>, rst: u32| {
            let mut out = Vec::new();
            let mut r = Reassembler::default();
            r.syn(99);
            r.segment(100, b"abc", T, &mut out);
            if let Some(f) = fin {
                r.fin(f);
            }
            r.rst(rst);
            r.flush(&mut out);
            collect(&out).1
        };
        // `[F.] seq 103` then `[R.] seq 104`: the FIN took one sequence number.
        assert_eq!(gaps_after(Some(103), 104), []);
        // The FIN not captured: one past the bytes seen is its sequence number.
        assert_eq!(gaps_after(None, 104), []);
        // An RST at the next byte, or beyond a lost byte and a FIN.
        assert_eq!(gaps_after(None, 103), []);
        assert_eq!(gaps_after(None, 106), [(3, 3)]);
    }

    #[test]
    fn an_acknowledgement_said_to_declare_nothing_changes_nothing() {
        // Streams of "abc" from sequence number 100, with a FIN or held bytes, or not started.
        let state = |k: usize| {
            let mut r = Reassembler::default();
            let mut out = Vec::new();
            if k > 0 {
                r.syn(99);
                r.segment(100, b"abc", T, &mut out);
            }
            match k {
                2 => r.fin(103),
                3 => r.segment(106, b"held", T, &mut out),
                4 => r.rst(105),
                _ => {}
            }
            r
        };
        let mut said = 0;
        for k in 0..5 {
            for ack in (90..112).chain([u32::MAX, 1 << 31]) {
                let mut r = state(k);
                let nothing = r.acked_declares_nothing(ack);
                let before = format!("{r:?}");
                let mut out = Vec::new();
                r.acked(ack, &mut out);
                let changed = !out.is_empty() || format!("{r:?}") != before;
                if nothing {
                    said += 1;
                    assert!(!changed, "state {k}, ack {ack}");
                } else if k != 3 {
                    // With nothing held, it is exact.
                    assert!(changed, "state {k}, ack {ack}");
                }
            }
        }
        assert!(said > 20);
    }

    #[test]
    fn acknowledgements_far_ahead_or_behind_are_noise() {
        let mut r = Reassembler::default();
        let mut out = Vec::new();
        r.acked(5, &mut out); // nothing known of this direction yet
        r.syn(u32::MAX - 1);
        r.segment(u32::MAX, b"ab", T, &mut out);
        r.acked(u32::MAX - 100, &mut out);
        r.acked((u32::MAX).wrapping_add(1 << 31), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(r.offset(), 2);
    }
}
