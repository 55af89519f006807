//! Finding frame boundaries in the middle of a stream: where, in bytes taken from somewhere
//! inside an AMQP connection (a capture that started late, bytes after a capture gap), a run of
//! consecutive plausible frames begins, and of which registered protocol.
//!
//! Sans-IO and allocation free: it asks each protocol's plausibility check
//! ([`crate::codec::resync`]) about the bytes it is given, so it never panics on any input.

use super::ProtocolId;
use crate::codec::ProtocolHeader;
use crate::codec::resync::Plausible;

/// Frames the caller usually wants in a row before believing a boundary.
pub const DEFAULT_RUN: usize = 3;

/// Where a run of plausible frames starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resync {
    /// Offset (within the searched buffer) of the first frame of the run.
    pub offset: usize,
    /// The protocol whose frames were found (`Amqp10` also covers SASL frames, `Amqp091`).
    pub protocol: ProtocolHeader,
    /// How many complete frames the run holds.
    pub frames: usize,
}

/// Count the run of consecutive plausible frames of one protocol starting at `buf[0]`.
/// Returns `(frames, reaches_end)`: `reaches_end` is true when the run ends exactly at the end of
/// the buffer or in a frame that is still incomplete there.
fn run_length(buf: &[u8], check: ProtocolId, want: usize) -> (usize, bool) {
    let mut at = 0usize;
    let mut frames = 0usize;
    while frames < want {
        let Some(rest) = buf.get(at..) else {
            return (frames, false);
        };
        if rest.is_empty() {
            return (frames, true);
        }
        match check.plausible(rest) {
            Plausible::Frame(n) => {
                at = at.saturating_add(n);
                frames += 1;
            }
            Plausible::NeedMore => return (frames, true),
            Plausible::No => return (frames, false),
        }
    }
    (frames, false)
}

/// Find the first offset in `buf` where `min_frames` consecutive plausible frames of either
/// registered protocol begin (the earliest offset wins; at a tie the protocol registered first,
/// AMQP 1.0, is preferred).
///
/// When `at_end` is true the buffer holds the last bytes of the stream, so a shorter run (at
/// least one frame) that reaches exactly the end of the buffer is accepted too. Returns `None`
/// when no boundary is found (yet): the caller keeps the bytes and tries again with more.
pub fn find_frame_run(buf: &[u8], min_frames: usize, at_end: bool) -> Option<Resync> {
    let min_frames = min_frames.max(1);
    for offset in 0..buf.len() {
        let rest = &buf[offset..];
        for &id in ProtocolId::ALL {
            let (protocol, check) = (id.header(), id);
            let (frames, reaches_end) = run_length(rest, check, min_frames);
            let complete_at_end = at_end
                && reaches_end
                && frames >= 1
                && matches!(run_end(rest, check), Some(e) if e == rest.len());
            if frames >= min_frames || complete_at_end {
                return Some(Resync {
                    offset,
                    protocol,
                    frames,
                });
            }
        }
    }
    None
}

/// The offset just past the last complete plausible frame of a run starting at `buf[0]`.
fn run_end(buf: &[u8], check: ProtocolId) -> Option<usize> {
    let mut at = 0usize;
    loop {
        let rest = buf.get(at..)?;
        if rest.is_empty() {
            return Some(at);
        }
        match check.plausible(rest) {
            Plausible::Frame(n) => at = at.saturating_add(n),
            _ => return Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::resync::plausible_amqp10;

    fn f091(ftype: u8, channel: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![ftype];
        v.extend_from_slice(&channel.to_be_bytes());
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v.push(0xCE);
        v
    }

    fn f10(ftype: u8, channel: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ((8 + body.len()) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(&[2, ftype]);
        v.extend_from_slice(&channel.to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn finds_091_run_after_garbage_and_a_partial_frame() {
        let mut s = b"garbage tail of a body\x00\xCE".to_vec();
        let skip = s.len();
        s.extend(f091(1, 1, &[0, 60, 0, 40, 1, 2, 3]));
        s.extend(f091(2, 1, &[0; 14]));
        s.extend(f091(3, 1, b"hello"));
        s.extend(f091(8, 0, b""));
        let r = find_frame_run(&s, 3, false).unwrap();
        assert_eq!(r.offset, skip);
        assert_eq!(r.protocol, ProtocolHeader::Amqp091);
        assert_eq!(r.frames, 3);
    }

    #[test]
    fn finds_10_run_and_rejects_bad_shapes() {
        let mut s = vec![0x77, 0x00, 0x53];
        s.extend(f10(0, 0, &[0x00, 0x53, 0x14, 0x45]));
        s.extend(f10(0, 0, &[]));
        s.extend(f10(0, 3, &[0x00, 0x53, 0x15, 0x45]));
        let r = find_frame_run(&s, 3, false).unwrap();
        assert_eq!((r.offset, r.protocol), (3, ProtocolHeader::Amqp10));
        // A frame whose body is not a performative is not a boundary.
        assert_eq!(
            plausible_amqp10(&f10(0, 0, &[0xA1, 0x01, 0x41])),
            Plausible::No
        );
        // Only two frames: not enough unless the stream ends there.
        let two = [f091(8, 0, b""), f091(8, 0, b"")].concat();
        assert_eq!(find_frame_run(&two, 3, false), None);
        assert_eq!(find_frame_run(&two, 3, true).unwrap().frames, 2);
    }

    #[test]
    fn never_panics_on_noise() {
        let mut x: u32 = 12345;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        for n in 1..4 {
            let _ = find_frame_run(&noise, n, true);
            let _ = find_frame_run(&noise[..n], n, false);
        }
    }
}
