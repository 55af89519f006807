//! The bytes a filtered pcapng keeps: `Data` events cut down to the frames the filter passed
//! (and the protocol headers and undecoded bytes, which always pass), one direction of one
//! connection at a time.
//!
//! `Data` may come before the frame it holds is decided (an incomplete frame's bytes reach the
//! captures at each flush) or after (the usual case: a chunk's frames, then its bytes): bytes
//! past the last decided frame are held until the frame is. What is held is at most the
//! incomplete frame the inspector holds too; the kept ranges are those decided since the last
//! `Data`, merged when adjacent.

use std::collections::VecDeque;
use std::ops::Range;

use bytes::Bytes;

use crate::event::Timestamp;

/// Kept ranges tracked without any `Data` seen before the connection is taken to have none
/// (a JSONL or trace output, or a replay without `Data` events): tracking then stops.
const MAX_RANGES_WITHOUT_DATA: usize = 65_536;

/// One direction of one connection.
#[derive(Debug, Default)]
pub(super) struct DirBytes {
    /// Stream ranges to keep, in order, not yet passed by `Data`.
    kept: VecDeque<Range<u64>>,
    /// Everything before this offset is decided (kept or dropped).
    decided: u64,
    /// `Data` not yet decided: (offset, bytes, time).
    held: VecDeque<(u64, Bytes, Timestamp)>,
    /// A `Data` event has been seen on this direction.
    data_seen: bool,
    /// No `Data` comes: nothing is tracked.
    untracked: bool,
}

impl DirBytes {
    /// The bytes `range` are decided: kept or not.
    pub(super) fn decide(&mut self, range: Range<u64>, keep: bool) {
        self.decided = self.decided.max(range.end);
        if !keep || self.untracked || range.is_empty() {
            return;
        }
        match self.kept.back_mut() {
            Some(last) if last.end >= range.start => last.end = last.end.max(range.end),
            _ => self.kept.push_back(range),
        }
        if !self.data_seen && self.kept.len() > MAX_RANGES_WITHOUT_DATA {
            self.untracked = true;
            self.kept.clear();
        }
    }

    /// Whether bytes kept before stream offset `at` still wait for their `Data`.
    pub(super) fn owes_before(&self, at: u64) -> bool {
        self.kept.front().is_some_and(|k| k.start < at)
    }

    /// `Data` of this direction arrived.
    pub(super) fn data(&mut self, offset: u64, bytes: Bytes, ts: Timestamp) {
        self.data_seen = true;
        self.untracked = false;
        if !bytes.is_empty() {
            self.held.push_back((offset, bytes, ts));
        }
    }

    /// The parts of held `Data` that are decided and kept, as (offset, bytes, time), in order;
    /// what is decided is no longer held.
    pub(super) fn release(&mut self, out: &mut Vec<(u64, Bytes, Timestamp)>) {
        while let Some((off, bytes, ts)) = self.held.pop_front() {
            let end = off + bytes.len() as u64;
            let upto = end.min(self.decided);
            if upto <= off {
                self.held.push_front((off, bytes, ts));
                return;
            }
            for r in &self.kept {
                if r.start >= upto {
                    break;
                }
                let (s, e) = (r.start.max(off), r.end.min(upto));
                if s < e {
                    out.push((s, bytes.slice((s - off) as usize..(e - off) as usize), ts));
                }
            }
            while self.kept.front().is_some_and(|r| r.end <= upto) {
                self.kept.pop_front();
            }
            if upto < end {
                self.held
                    .push_front((upto, bytes.slice((upto - off) as usize..), ts));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn released(d: &mut DirBytes) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        d.release(&mut out);
        out.into_iter().map(|(o, b, _)| (o, b.to_vec())).collect()
    }

    #[test]
    fn data_is_cut_to_the_kept_frames_and_held_until_decided() {
        let mut d = DirBytes::default();
        d.decide(0..2, true);
        d.decide(2..4, false);
        d.decide(4..6, true);
        // Bytes 0..8: 6..8 belong to a frame not decided yet.
        d.data(0, Bytes::from_static(b"aabbccdd"), Timestamp(1));
        assert_eq!(
            released(&mut d),
            vec![(0, b"aa".to_vec()), (4, b"cc".to_vec())]
        );
        d.decide(6..8, true);
        assert_eq!(released(&mut d), vec![(6, b"dd".to_vec())]);
        assert!(d.held.is_empty() && d.kept.is_empty());
    }

    #[test]
    fn without_data_tracking_stops_instead_of_growing() {
        let mut d = DirBytes::default();
        for i in 0..(MAX_RANGES_WITHOUT_DATA as u64 + 10) {
            d.decide(i * 2..i * 2 + 1, true);
        }
        assert!(d.kept.len() <= MAX_RANGES_WITHOUT_DATA);
    }
}
