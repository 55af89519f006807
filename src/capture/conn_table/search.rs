//! The search for a frame boundary in the bytes of one direction that follow a hole (or a
//! mid-connection start): the bytes held while searching, and the capture time of each part.

use bytes::BytesMut;

use crate::event::{Chunk, ConnId, Dir, Timestamp};

/// Per-direction decoding sync.
#[derive(Debug)]
pub(super) enum Sync {
    /// Not known yet (no byte seen).
    Start,
    /// Bytes pass straight through.
    Synced,
    /// Looking for a frame boundary (boxed: most directions never search).
    Searching(Box<Search>),
}

/// Most distinct capture times remembered for the bytes held while searching; later bytes
/// take the last one remembered (memory stays bounded whatever the segment sizes).
const MAX_STAMPS: usize = 4096;

/// How hard a search for a frame boundary tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Attempt {
    /// A run of [`DEFAULT_RUN`](crate::protocol::resync::DEFAULT_RUN) frames.
    Strict,
    /// That, or a shorter run that ends exactly where the bytes held do (the peer may be
    /// waiting for an answer); nothing is given up when none is found.
    Lenient,
    /// The stream ended: as `Lenient`, and what holds no boundary is a gap.
    Final,
    /// The bytes held are a gap (too much of the other direction waits behind them).
    GiveUp,
}

/// The search for a frame boundary in bytes that follow a hole (or a mid-connection start).
#[derive(Debug)]
pub(super) struct Search {
    pub(super) buf: BytesMut,
    /// Stream offset of `buf[0]`.
    pub(super) buf_offset: u64,
    /// Where the span not yet announced as a gap starts.
    pub(super) gap_offset: u64,
    /// Bytes dropped from the span because no boundary was found in them.
    pub(super) skipped: u64,
    pub(super) why: &'static str,
    /// Stream offset and capture time of each part of `buf` (so the frames found keep the
    /// time their bytes were captured at, not the time the boundary was found).
    pub(super) stamps: Vec<(u64, Timestamp)>,
}

impl Search {
    pub(super) fn new(at: u64, why: &'static str) -> Box<Self> {
        Box::new(Search {
            buf: BytesMut::new(),
            buf_offset: at,
            gap_offset: at,
            skipped: 0,
            why,
            stamps: Vec::new(),
        })
    }

    /// Take `bytes` at stream offset `offset`, captured at `ts`.
    pub(super) fn push(&mut self, offset: u64, bytes: &[u8], ts: Timestamp) {
        if self.buf.is_empty() {
            self.buf_offset = offset;
        }
        if self.stamps.last().is_none_or(|l| l.1 != ts) && self.stamps.len() < MAX_STAMPS {
            self.stamps.push((offset, ts));
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Capture time of the byte at stream offset `at` (`or` when nothing is held).
    pub(super) fn stamp_at(&self, at: u64, or: Timestamp) -> Timestamp {
        let i = self.stamps.partition_point(|s| s.0 <= at);
        self.stamps
            .get(i.wrapping_sub(1))
            .map_or(self.stamps.first().map_or(or, |s| s.1), |s| s.1)
    }

    /// Drop the first `n` buffered bytes (and the times of those parts).
    pub(super) fn drop_front(&mut self, n: usize) {
        let _ = self.buf.split_to(n);
        self.buf_offset += n as u64;
        let keep_from = self.stamps.partition_point(|s| s.0 <= self.buf_offset);
        if keep_from > 1 {
            self.stamps.drain(..keep_from - 1);
        }
    }

    /// The buffered bytes from `from` on as chunks, one per capture time.
    pub(super) fn chunks(
        &mut self,
        conn: ConnId,
        dir: Dir,
        from: usize,
        or: Timestamp,
    ) -> Vec<Chunk> {
        let rest = self.buf.split_off(from).freeze();
        let start = self.buf_offset + from as u64;
        let mut out: Vec<Chunk> = Vec::new();
        let mut at = 0usize;
        while at < rest.len() {
            let here = start + at as u64;
            let next = self
                .stamps
                .iter()
                .map(|s| s.0)
                .find(|&o| o > here)
                .map_or(rest.len(), |o| ((o - start) as usize).min(rest.len()));
            out.push(Chunk {
                conn,
                dir,
                ts: self.stamp_at(here, or),
                bytes: rest.slice(at..next),
            });
            at = next;
        }
        self.buf.clear();
        self.stamps.clear();
        out
    }
}
