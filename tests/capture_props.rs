//! Properties: reassembly gives back the stream whatever the segmentation, order and
//! duplication, with sequence numbers wrapping past `u32::MAX`; with segments dropped and
//! overlapping re-sends carrying different bytes it gives what a simple model says (first-seen
//! bytes win, every hole is a gap); the readers never panic on corrupted or truncated files
//! and always end.

use amqpeek::capture::tcp_reassembly::{Piece, Reassembler};
use amqpeek::capture::{self, CaptureOptions};
use amqpeek::event::{CloseInfo, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::Sink;
use amqpeek::sinks::pcapng::PcapngSink;
use bytes::Bytes;
use proptest::prelude::*;

/// An initial sequence number, half the time within 4000 of `u32::MAX` so that the stream's
/// sequence numbers wrap.
fn isn() -> impl Strategy<Value = u32> {
    prop_oneof![any::<u32>(), (u32::MAX - 4000)..=u32::MAX]
}

/// One segment sent: its stream range, and whether it carries the stream's bytes or
/// conflicting ones (each byte inverted).
#[derive(Clone, Debug)]
struct Sent {
    start: usize,
    end: usize,
    conflicting: bool,
}

/// The model of reassembly: per stream offset, the first byte any segment carried there, or
/// `None` for a hole; up to the end of the furthest segment.
fn model(data: &[u8], arrivals: &[Sent]) -> Vec<Option<u8>> {
    let end = arrivals.iter().map(|s| s.end).max().unwrap_or(0);
    let mut stream = vec![None; end];
    for s in arrivals {
        for (i, slot) in stream.iter_mut().enumerate().take(s.end).skip(s.start) {
            slot.get_or_insert(if s.conflicting { !data[i] } else { data[i] });
        }
    }
    stream
}

/// The reassembler's output as the model's shape; panics if pieces are not contiguous.
fn reassembled(isn: u32, data: &[u8], arrivals: &[Sent]) -> Vec<Option<u8>> {
    let mut r = Reassembler::default();
    r.syn(isn);
    let mut out = Vec::new();
    for s in arrivals {
        let bytes: Vec<u8> = data[s.start..s.end]
            .iter()
            .map(|&b| if s.conflicting { !b } else { b })
            .collect();
        r.segment(
            isn.wrapping_add(1).wrapping_add(s.start as u32),
            &bytes,
            Timestamp(0),
            &mut out,
        );
    }
    r.flush(&mut out);
    let mut got = Vec::new();
    for p in out {
        match p {
            Piece::Data { offset, bytes, .. } => {
                assert_eq!(offset as usize, got.len(), "data is contiguous");
                got.extend(bytes.iter().map(|&b| Some(b)));
            }
            Piece::Gap { offset, len } => {
                assert_eq!(offset as usize, got.len(), "a gap is contiguous");
                assert!(len > 0, "a gap is not empty");
                got.extend(std::iter::repeat_n(None, len as usize));
            }
        }
    }
    got
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn dropped_segments_and_conflicting_overlaps_reassemble_as_the_model_says(
        data in proptest::collection::vec(any::<u8>(), 1..3000),
        cuts in proptest::collection::vec(any::<u16>(), 0..30),
        drops in proptest::collection::vec(any::<bool>(), 30),
        resends in proptest::collection::vec((any::<u16>(), any::<u16>(), any::<bool>()), 0..20),
        order in proptest::collection::vec(any::<u32>(), 0..60),
        isn in isn(),
    ) {
        let mut bounds: Vec<usize> = cuts.iter().map(|c| *c as usize % data.len()).collect();
        bounds.extend([0, data.len()]);
        bounds.sort_unstable();
        bounds.dedup();
        // The first segment always arrives (the stream starts at the SYN); others may be lost.
        let mut arrivals: Vec<Sent> = bounds
            .windows(2)
            .enumerate()
            .filter(|(i, _)| *i == 0 || !drops[i % drops.len()])
            .map(|(_, w)| Sent { start: w[0], end: w[1], conflicting: false })
            .collect();
        // Identical re-sends of any range, overlapping anything, in any order.
        let mut conflicting = Vec::new();
        for (a, len, differs) in resends {
            let start = a as usize % data.len();
            let end = (start + 1 + len as usize % 300).min(data.len());
            if differs {
                conflicting.push(Sent { start, end, conflicting: true });
            } else {
                arrivals.push(Sent { start, end, conflicting: false });
            }
        }
        for (i, o) in order.iter().enumerate() {
            let n = arrivals.len();
            if n > 2 {
                arrivals.swap(1 + i % (n - 1), 1 + *o as usize % (n - 1));
            }
        }
        // Then re-sends with different bytes, anywhere: of bytes already delivered, of bytes
        // held out of order, and ones that fill a hole while overlapping bytes held beyond
        // it. The bytes seen first stay in every case.
        arrivals.extend(conflicting);
        prop_assert_eq!(reassembled(isn, &data, &arrivals), model(&data, &arrivals));
    }
}

proptest! {
    #[test]
    fn any_segmentation_order_and_duplication_reassembles_the_stream(
        data in proptest::collection::vec(any::<u8>(), 1..4000),
        cuts in proptest::collection::vec(any::<u16>(), 0..40),
        order in proptest::collection::vec(any::<u32>(), 0..80),
        isn in isn(),
    ) {
        let mut bounds: Vec<usize> = cuts.iter().map(|c| *c as usize % data.len()).collect();
        bounds.push(0);
        bounds.push(data.len());
        bounds.sort_unstable();
        bounds.dedup();
        let mut segs: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        // Duplicates and overlapping re-sends of the same bytes.
        for (i, o) in order.iter().enumerate() {
            let (a, b) = segs[*o as usize % segs.len()];
            if i % 3 == 0 {
                segs.push((a, b));
            } else if i % 3 == 1 && b - a > 2 {
                segs.push((a + 1, b));
            }
        }
        // Shuffle deterministically from `order`, but keep the first segment first (the stream
        // starts at the SYN, which is seen).
        for (i, o) in order.iter().enumerate() {
            let n = segs.len();
            if n > 2 {
                let x = 1 + i % (n - 1);
                let y = 1 + *o as usize % (n - 1);
                segs.swap(x, y);
            }
        }
        let mut r = Reassembler::default();
        r.syn(isn);
        let mut out = Vec::new();
        for (a, b) in segs {
            r.segment(isn.wrapping_add(1).wrapping_add(a as u32), &data[a..b], Timestamp(0), &mut out);
        }
        r.flush(&mut out);
        let mut got = Vec::new();
        for p in out {
            match p {
                Piece::Data { offset, bytes, .. } => {
                    prop_assert_eq!(offset as usize, got.len());
                    got.extend_from_slice(&bytes);
                }
                Piece::Gap { .. } => prop_assert!(false, "no gap expected"),
            }
        }
        prop_assert_eq!(got, data);
    }

    #[test]
    fn corrupted_or_truncated_captures_never_panic(
        flips in proptest::collection::vec((any::<u32>(), any::<u8>()), 0..20),
        cut in any::<u32>(),
        pcapng in any::<bool>(),
    ) {
        let mut file = sample(pcapng);
        for (at, x) in flips {
            let i = at as usize % file.len();
            file[i] ^= x;
        }
        file.truncate(cut as usize % (file.len() + 1));
        if let Ok(src) = capture::from_reader(Box::new(std::io::Cursor::new(file)), CaptureOptions::default()) {
            let n = src.take(100_000).count();
            prop_assert!(n < 100_000);
        }
    }
}

/// A small capture with two connections, as pcapng (our sink) or classic pcap.
fn sample(pcapng: bool) -> Vec<u8> {
    let mut sink = PcapngSink::new(Vec::new()).unwrap();
    for conn in 1..=2u64 {
        let ev = |t: i64, kind| Event {
            conn,
            ts: Timestamp(1_700_000_000_000_000 + t),
            kind,
        };
        sink.event(&ev(
            0,
            EventKind::Connect {
                client: format!("10.0.0.{conn}:4000{conn}").parse().unwrap(),
                upstream: "10.0.0.9:5672".parse().unwrap(),
            },
        ))
        .unwrap();
        let mut s = b"AMQP\x00\x00\x09\x01".to_vec();
        for _ in 0..5 {
            s.extend_from_slice(&[1, 0, 1, 0, 0, 0, 4, 0, 20, 0, 10, 0xCE]);
        }
        sink.event(&ev(
            1,
            EventKind::Data {
                dir: Dir::C2S,
                offset: 0,
                bytes: Bytes::from(s.clone()),
            },
        ))
        .unwrap();
        sink.event(&ev(
            2,
            EventKind::Data {
                dir: Dir::S2C,
                offset: 0,
                bytes: Bytes::from(s[8..].to_vec()),
            },
        ))
        .unwrap();
        sink.event(&ev(
            3,
            EventKind::Close(CloseInfo {
                reason: "x".into(),
                bytes_c2s: 0,
                bytes_s2c: 0,
            }),
        ))
        .unwrap();
    }
    let ng = sink.into_inner().unwrap();
    if pcapng {
        return ng;
    }
    // Convert to classic pcap (little-endian, µs) by reading our own packets back.
    let mut out = Vec::new();
    for v in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut r =
        capture::pcap_read::PacketReader::new(std::io::Cursor::new(ng), capture::Format::Pcapng)
            .unwrap();
    while let Some(Ok(p)) = r.next_packet() {
        for v in [
            (p.ts.0 / 1_000_000) as u32,
            (p.ts.0 % 1_000_000) as u32,
            p.data.len() as u32,
            p.data.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(p.data);
    }
    out
}

#[test]
fn sample_captures_are_readable_before_corruption() {
    for ng in [true, false] {
        let evs: Vec<_> = capture::from_reader(
            Box::new(std::io::Cursor::new(sample(ng))),
            CaptureOptions::default(),
        )
        .unwrap()
        .collect();
        let chunks = evs
            .iter()
            .filter(|e| matches!(e, capture::SourceEvent::Chunk(_)))
            .count();
        assert_eq!(chunks, 4, "pcapng={ng}");
    }
}
