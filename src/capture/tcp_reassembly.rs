//! TCP reassembly of one direction of one connection: segments in any order, retransmitted or
//! overlapping, in; the byte stream in order, with explicit gaps, out.
//!
//! First-seen bytes win where segments overlap. Out-of-order data is buffered up to a bound;
//! past it the hole before the buffered data is declared a gap and the stream moves on, so
//! memory stays bounded whatever the capture holds. Never panics on any sequence numbers.

use std::collections::BTreeMap;

use bytes::Bytes;

/// Default bound on buffered out-of-order bytes per direction.
pub const DEFAULT_MAX_OUT_OF_ORDER: usize = 1024 * 1024;

/// Segments further than this ahead of the expected sequence number are treated as noise.
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
fn share(window: Option<&Bytes>, part: &[u8]) -> Bytes {
    match window {
        Some(w) if part.is_empty() => w.slice(0..0),
        Some(w) => {
            let (start, end) = (w.as_ptr() as usize, w.as_ptr() as usize + w.len());
            let at = part.as_ptr() as usize;
            if at >= start && at + part.len() <= end {
                w.slice_ref(part)
            } else {
                Bytes::copy_from_slice(part)
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
    /// Out-of-order bytes keyed by stream offset; ranges never overlap and all start after
    /// `offset`.
    ooo: BTreeMap<u64, Bytes>,
    ooo_bytes: usize,
    max_ooo: usize,
    syn_seen: bool,
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
        }
    }

    /// True once this direction's SYN was seen (the stream starts at its beginning).
    pub fn syn_seen(&self) -> bool {
        self.syn_seen
    }

    /// Stream offset of the next byte expected.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes held out of order.
    pub fn buffered(&self) -> usize {
        self.ooo_bytes
    }

    /// A SYN with sequence number `seq`: the stream starts at `seq + 1`. Ignored once data has
    /// been seen.
    pub fn syn(&mut self, seq: u32) {
        if self.next_seq.is_none() {
            self.next_seq = Some(seq.wrapping_add(1));
            self.syn_seen = true;
        }
    }

    /// Take one segment's payload at sequence number `seq`; append what became contiguous
    /// (and any gap declared to bound memory) to `out`.
    pub fn segment(&mut self, seq: u32, payload: &[u8], out: &mut Vec<Piece>) {
        self.segment_in(seq, payload, None, out);
    }

    /// [`Reassembler::segment`] for a payload that lies in `window`: in-order bytes are then
    /// delivered as a part of `window` (no copy). Bytes held out of order are still copied, so
    /// a hole never keeps a whole window alive.
    pub fn segment_in(
        &mut self,
        seq: u32,
        payload: &[u8],
        window: Option<&Bytes>,
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
        if rel <= 0 {
            let skip = (-rel) as usize;
            let fresh = &payload[skip.min(payload.len())..];
            self.deliver(share(window, fresh), out);
            self.drain(out);
        } else {
            let start = self.offset + rel as u64;
            self.insert(start, payload);
            if self.ooo_bytes > self.max_ooo {
                self.skip_hole(out);
            }
        }
    }

    /// Deliver everything buffered, declaring the holes as gaps (at close or end of capture).
    pub fn flush(&mut self, out: &mut Vec<Piece>) {
        while !self.ooo.is_empty() {
            self.skip_hole(out);
        }
    }

    fn deliver(&mut self, bytes: Bytes, out: &mut Vec<Piece>) {
        if bytes.is_empty() {
            return;
        }
        let n = bytes.len();
        out.push(Piece::Data {
            offset: self.offset,
            bytes,
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
            let bytes = entry.remove();
            self.ooo_bytes -= bytes.len();
            let end = start + bytes.len() as u64;
            if end > self.offset {
                let skip = (self.offset - start) as usize;
                self.deliver(bytes.slice(skip..), out);
            }
        }
    }

    /// Declare the hole before the first buffered segment a gap and deliver from there.
    fn skip_hole(&mut self, out: &mut Vec<Piece>) {
        let Some((&start, _)) = self.ooo.first_key_value() else {
            return;
        };
        if start > self.offset {
            let len = start - self.offset;
            out.push(Piece::Gap {
                offset: self.offset,
                len,
            });
            self.advance(len);
        }
        self.drain(out);
    }

    /// Store `payload` at stream offset `start`, keeping only bytes not already held.
    fn insert(&mut self, start: u64, payload: &[u8]) {
        let end = start + payload.len() as u64;
        let mut cursor = start;
        // Existing ranges overlapping [start, end), in order, starting with one that may begin
        // before `start`.
        let first = self
            .ooo
            .range(..=start)
            .next_back()
            .map(|(k, v)| (*k, *k + v.len() as u64));
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        if let Some((_, e)) = first
            && e > cursor
        {
            cursor = e.min(end);
        }
        let existing: Vec<(u64, u64)> = self
            .ooo
            .range(cursor..end)
            .map(|(k, v)| (*k, *k + v.len() as u64))
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
            self.ooo.insert(s, Bytes::copy_from_slice(&payload[a..b]));
            self.ooo_bytes += b - a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(pieces: &[Piece]) -> (Vec<u8>, Vec<(u64, u64)>) {
        let mut data = Vec::new();
        let mut gaps = Vec::new();
        for p in pieces {
            match p {
                Piece::Data { offset, bytes } => {
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
        r.segment(base.wrapping_add(6), b"ghij", &mut out); // ahead
        r.segment(base.wrapping_add(8), b"XXkl", &mut out); // overlaps the held "ij"
        assert!(out.is_empty());
        r.segment(base, b"abc", &mut out);
        r.segment(base, b"abc", &mut out); // retransmission
        r.segment(base.wrapping_add(2), b"Ydef", &mut out); // overlaps delivered 'c'
        r.flush(&mut out);
        let (data, gaps) = collect(&out);
        assert_eq!(data, b"abcdefghijkl");
        assert!(gaps.is_empty());
    }

    #[test]
    fn bounded_buffer_declares_a_gap() {
        let mut r = Reassembler::new(10);
        let mut out = Vec::new();
        r.segment(100, b"ab", &mut out);
        r.segment(110, b"0123456789", &mut out);
        assert_eq!(out.len(), 1);
        r.segment(120, b"Z", &mut out); // exceeds the bound
        let (data, gaps) = collect(&out);
        assert_eq!(gaps, vec![(2, 8)]);
        assert_eq!(data, b"ab0123456789Z");
        assert_eq!(r.buffered(), 0);
    }
}
