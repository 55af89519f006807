//! However TCP cut the stream, the pipeline decodes the same: for every shipped capture and for
//! generated conversations (SASL header, SASL frames, the AMQP 1.0 header, frames; AMQP 0-9-1
//! with a credential and a violation), each direction re-cut at every size from 1 to 16 bytes
//! and at random points yields the same headers, frames, violations, gaps and close events
//! (with the same offsets and timestamps) and the same relayed bytes, masked the same way, as
//! the chunks the capture holds.
//!
//! The two directions keep the capture's causal order: a chunk of one direction is delivered
//! after every byte the other direction sent before it, so no peer answers what it has not
//! seen yet. Within that order every cut is allowed; the grid of a size is laid over each
//! direction's whole stream (the first piece of a chunk is anything from 1 byte to the size),
//! and a piece is stamped with the time of the chunk it belongs to.

mod state_amqp091_conv;
mod state_amqp10_common;

use std::path::Path;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::codec::amqp10::encode_frame;
use amqpeek::driver::Router;
use amqpeek::event::{Chunk, ConnId, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::InspectOptions;
use bytes::Bytes;
use state_amqp10_common as a10;
use state_amqp091_conv::{K, ll, long, lstr, m, short, sstr};

/// What the pipeline made of one feed: every event but `Data` (rendered, with its time), and
/// each direction's `Data` bytes concatenated.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<String>,
    data: Vec<((ConnId, Dir), Vec<u8>)>,
}

fn replay(events: &[SourceEvent]) -> Outcome {
    let mut r = Router::new(InspectOptions::default());
    let mut out = Vec::new();
    for ev in events {
        r.feed(ev.clone(), &mut out);
    }
    outcome(&out)
}

fn outcome(out: &[Event]) -> Outcome {
    let mut events = Vec::new();
    let mut data: Vec<((ConnId, Dir), Vec<u8>)> = Vec::new();
    for e in out {
        match &e.kind {
            EventKind::Data { dir, offset, bytes } => {
                let key = (e.conn, *dir);
                let i = match data.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        data.push((key, Vec::new()));
                        data.len() - 1
                    }
                };
                assert_eq!(*offset as usize, data[i].1.len(), "data is contiguous");
                data[i].1.extend_from_slice(bytes);
            }
            EventKind::Header { .. }
            | EventKind::Frame(_)
            | EventKind::Violation(_)
            | EventKind::Gap { .. }
            | EventKind::Close(_)
            | EventKind::Connect { .. } => {
                events.push(format!("{} #{} {:?}", e.ts.0, e.conn, e.kind));
            }
            // Anything else describes the pipeline's progress, not the stream.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
    data.sort_by_key(|(k, _)| (k.0, k.1.index()));
    Outcome { events, data }
}

/// `events` with every chunk cut where `cut(offset_in_its_direction, len)` says: the cut
/// points (relative to the chunk, strictly inside it) are returned in increasing order.
fn recut(
    events: &[SourceEvent],
    mut cut: impl FnMut(u64, usize) -> Vec<usize>,
) -> Vec<SourceEvent> {
    let mut offsets: Vec<((ConnId, Dir), u64)> = Vec::new();
    let mut out = Vec::new();
    for ev in events {
        match ev {
            SourceEvent::Chunk(c) => {
                let key = (c.conn, c.dir);
                let at = match offsets.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        offsets.push((key, 0));
                        offsets.len() - 1
                    }
                };
                let start = offsets[at].1;
                offsets[at].1 += c.bytes.len() as u64;
                let mut prev = 0;
                for p in cut(start, c.bytes.len()).into_iter().chain([c.bytes.len()]) {
                    assert!(p > prev || p == c.bytes.len(), "cuts increase");
                    if p > prev {
                        out.push(SourceEvent::Chunk(Chunk {
                            bytes: c.bytes.slice(prev..p),
                            ..c.clone()
                        }));
                    }
                    prev = p;
                }
            }
            SourceEvent::Gap { conn, dir, len, .. } => {
                let key = (*conn, *dir);
                if let Some(i) = offsets.iter().position(|(k, _)| *k == key) {
                    offsets[i].1 += len;
                }
                out.push(ev.clone());
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// Cut points of a chunk at `start` of `len` bytes on the grid of `size` laid over the stream.
fn grid(size: u64) -> impl FnMut(u64, usize) -> Vec<usize> {
    move |start, len| {
        let first = (size - start % size) % size;
        (first..len as u64)
            .step_by(size as usize)
            .filter(|&p| p > 0)
            .map(|p| p as usize)
            .collect()
    }
}

/// Random cut points (a fixed-seed xorshift, so a failure replays).
fn random(seed: u64) -> impl FnMut(u64, usize) -> Vec<usize> {
    let mut x = seed | 1;
    move |_, len| {
        let mut cuts = Vec::new();
        let mut at = 0usize;
        loop {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly short pieces, sometimes a long one.
            let step = if x.is_multiple_of(5) { x % 300 } else { x % 9 } as usize + 1;
            at += step;
            if at >= len {
                return cuts;
            }
            cuts.push(at);
        }
    }
}

/// Check the property for one conversation; returns the number of frames it holds.
fn assert_segmentation_proof(name: &str, events: &[SourceEvent]) -> usize {
    let want = replay(events);
    let frames = want.events.iter().filter(|e| e.contains(" Frame(")).count();
    for size in 1..=16u64 {
        let got = replay(&recut(events, grid(size)));
        assert_same(name, &format!("cut every {size} bytes"), &want, &got);
    }
    for seed in 1..=24u64 {
        let got = replay(&recut(
            events,
            random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        ));
        assert_same(name, &format!("random cuts, seed {seed}"), &want, &got);
    }
    frames
}

fn assert_same(name: &str, how: &str, want: &Outcome, got: &Outcome) {
    assert_eq!(want.data, got.data, "{name}, {how}: relayed bytes differ");
    for (i, (w, g)) in want.events.iter().zip(&got.events).enumerate() {
        assert_eq!(w, g, "{name}, {how}: event {i} differs");
    }
    assert_eq!(
        want.events.len(),
        got.events.len(),
        "{name}, {how}: event count"
    );
}

fn shipped(file: &str) -> Vec<SourceEvent> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(file);
    let events: Vec<SourceEvent> = capture::open(&path, CaptureOptions::default())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .collect();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, SourceEvent::Error { .. })),
        "{file} reads cleanly"
    );
    events
}

#[test]
fn shipped_captures_decode_the_same_however_cut() {
    for file in [
        "amqp10-fe2o3.pcapng",
        "amqp10-fe2o3.jsonl",
        "amqp091-lapin.pcapng",
        "amqp091-lapin.jsonl",
        "amqp091-bad-ack.pcapng",
        "amqp091-bad-ack.jsonl",
    ] {
        let frames = assert_segmentation_proof(file, &shipped(file));
        assert!(frames >= 20, "{file}: only {frames} frames decoded");
    }
}

/// A scripted connection: chunks in causal order, one millisecond apart.
struct Script {
    events: Vec<SourceEvent>,
    now: i64,
}

impl Script {
    fn new() -> Self {
        let addr = |p| std::net::SocketAddr::from(([127, 0, 0, 1], p));
        Script {
            events: vec![SourceEvent::Connect {
                conn: 1,
                ts: Timestamp(1_000_000),
                client: addr(40000),
                server: addr(5672),
            }],
            now: 1_000_000,
        }
    }
    fn send(&mut self, dir: Dir, bytes: Vec<u8>) -> &mut Self {
        self.now += 1000;
        self.events.push(SourceEvent::Chunk(Chunk {
            conn: 1,
            dir,
            ts: Timestamp(self.now),
            bytes: Bytes::from(bytes),
        }));
        self
    }
    fn close(mut self) -> Vec<SourceEvent> {
        self.events.push(SourceEvent::Close {
            conn: 1,
            ts: Timestamp(self.now + 1000),
            reason: "FIN both ways".into(),
        });
        self.events
    }
}

fn f10(
    frame_type: u8,
    channel: u16,
    body: &amqpeek::codec::amqp10::Value,
    payload: &[u8],
) -> Vec<u8> {
    encode_frame(frame_type, channel, Some(body), payload).unwrap()
}

/// AMQP 1.0 behind SASL PLAIN: each peer's 1.0 header right after the SASL exchange, alone or
/// with the next frame in its chunk; then a session, a sending link and a transfer beyond the
/// credit granted (a violation the property must keep).
fn amqp10_sasl_conversation(header_alone: bool) -> Vec<SourceEvent> {
    let mut s = Script::new();
    s.send(Dir::C2S, a10::SASL.to_vec());
    let mut srv = a10::SASL.to_vec();
    srv.extend(f10(
        1,
        0,
        &a10::sasl_mechanisms(&["PLAIN", "ANONYMOUS"]),
        &[],
    ));
    s.send(Dir::S2C, srv);
    s.send(Dir::C2S, f10(1, 0, &a10::sasl_init("PLAIN"), &[]));
    s.send(Dir::S2C, f10(1, 0, &a10::sasl_outcome(0), &[]));
    let open = f10(0, 0, &a10::open(&[]), &[]);
    let with_header = |frame: &[u8]| [a10::AMQP, frame].concat();
    if header_alone {
        s.send(Dir::C2S, a10::AMQP.to_vec());
        s.send(Dir::C2S, open.clone());
        s.send(Dir::S2C, a10::AMQP.to_vec());
        s.send(Dir::S2C, open);
    } else {
        s.send(Dir::C2S, with_header(&open));
        s.send(Dir::S2C, with_header(&open));
    }
    s.send(Dir::C2S, f10(0, 0, &a10::begin(None, 0, 1000, 1000), &[]));
    s.send(
        Dir::S2C,
        f10(0, 0, &a10::begin(Some(0), 0, 1000, 1000), &[]),
    );
    s.send(Dir::C2S, f10(0, 0, &a10::attach_sender("L", 0, &[]), &[]));
    s.send(Dir::S2C, f10(0, 0, &a10::attach_receiver("L", 0, &[]), &[]));
    s.send(
        Dir::S2C,
        f10(0, 0, &a10::link_flow(0, Some(0), Some(1), false), &[]),
    );
    let mut two = Vec::new();
    for id in 0..2 {
        let t = a10::transfer(0, Some(id), Some(&[id as u8]), Some(false), false, &[]);
        two.extend(f10(0, 0, &t, &a10::message(Some("/q"))));
    }
    s.send(Dir::C2S, two);
    s.send(Dir::C2S, f10(0, 0, &a10::close(), &[]));
    s.send(Dir::S2C, f10(0, 0, &a10::close(), &[]));
    s.close()
}

fn f091(channel: u16, kind: amqpeek::codec::amqp091::FrameKind) -> Vec<u8> {
    let mut out = Vec::new();
    amqpeek::codec::amqp091::encode_frame(channel, &kind, &mut out);
    out
}

fn method(channel: u16, kind: K, args: &[(&str, state_amqp091_conv::Value)]) -> Vec<u8> {
    f091(
        channel,
        amqpeek::codec::amqp091::FrameKind::Method(m(kind, args).into()),
    )
}

/// AMQP 0-9-1: the handshake with a PLAIN start-ok (masked), a publish with its content in
/// several body frames, and an ack of a delivery tag never delivered (a violation).
fn amqp091_conversation() -> Vec<SourceEvent> {
    use amqpeek::codec::amqp091::{ContentHeader, FrameKind};
    let mut s = Script::new();
    s.send(Dir::C2S, b"AMQP\x00\x00\x09\x01".to_vec());
    s.send(Dir::S2C, method(0, K::ConnectionStart, &[]));
    s.send(
        Dir::C2S,
        method(
            0,
            K::ConnectionStartOk,
            &[
                ("mechanism", sstr("PLAIN")),
                ("response", lstr("\0guest\0sekrit-pass")),
            ],
        ),
    );
    s.send(
        Dir::S2C,
        method(
            0,
            K::ConnectionTune,
            &[("frame-max", long(4096)), ("heartbeat", short(0))],
        ),
    );
    let mut c = method(0, K::ConnectionTuneOk, &[("frame-max", long(4096))]);
    c.extend(method(0, K::ConnectionOpen, &[]));
    s.send(Dir::C2S, c);
    s.send(Dir::S2C, method(0, K::ConnectionOpenOk, &[]));
    s.send(Dir::C2S, method(1, K::ChannelOpen, &[]));
    s.send(Dir::S2C, method(1, K::ChannelOpenOk, &[]));
    let mut publish = method(1, K::BasicPublish, &[("routing-key", sstr("q"))]);
    publish.extend(f091(1, FrameKind::Header(ContentHeader::basic(30).into())));
    for part in [10usize, 20] {
        publish.extend(f091(1, FrameKind::Body(Bytes::from(vec![b'x'; part]))));
    }
    publish.extend(method(1, K::BasicAck, &[("delivery-tag", ll(7))]));
    s.send(Dir::C2S, publish);
    s.send(Dir::S2C, f091(0, FrameKind::Heartbeat));
    s.close()
}

#[test]
fn generated_conversations_decode_the_same_however_cut() {
    for (name, events, min_frames) in [
        (
            "1.0 + SASL, headers alone",
            amqp10_sasl_conversation(true),
            14,
        ),
        (
            "1.0 + SASL, headers with a frame",
            amqp10_sasl_conversation(false),
            14,
        ),
        ("0-9-1", amqp091_conversation(), 14),
    ] {
        let want = replay(&events);
        assert!(
            want.events.iter().any(|e| e.contains("Violation(")),
            "{name}: the conversation holds a violation: {:#?}",
            want.events
        );
        let frames = assert_segmentation_proof(name, &events);
        assert_eq!(frames, min_frames, "{name}: frames decoded");
    }
}

/// The case that stalled decoding: each peer's 1.0 header after SASL arriving in two pieces,
/// the first of 1 to 7 bytes. Every frame after it must still be decoded.
#[test]
fn a_header_after_sasl_in_pieces_leaves_every_frame_decoded() {
    let events = amqp10_sasl_conversation(true);
    let want = replay(&events);
    for first in 1..8usize {
        let cut = recut(
            &events,
            |_, len| {
                if len == 8 { vec![first] } else { Vec::new() }
            },
        );
        let got = replay(&cut);
        assert_same(
            "header in pieces",
            &format!("first piece {first}"),
            &want,
            &got,
        );
    }
}
