//! Loss in a packet capture: whatever segments a capture misses,
//! `check` reports no violation the whole capture lacks, and every frame it still decodes
//! keeps its own time.
//!
//! The captures are the shipped pcapng files (captures/) and generated conversations (AMQP 1.0
//! and 0-9-1, one frame per segment, written by the same packet synthesiser as the proxy's
//! pcapng), read back with random packets removed. A peer's acknowledgement of bytes the
//! capture never showed tells the reader that a hole is there before anything the peer sent
//! after reading those bytes is judged.

mod state_amqp091_conv;
mod state_amqp10_common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use amqpeek::capture::pcapng_write::Conversation;
use amqpeek::capture::{self, CaptureOptions, Format, pcap_read::PacketReader};
use amqpeek::codec::amqp10::encode_frame;
use amqpeek::driver::Router;
use amqpeek::event::{ConnId, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::InspectOptions;
use amqpeek::sinks::jsonl::{JsonOptions, JsonlSink};
use proptest::prelude::*;
use state_amqp10_common as a10;
use state_amqp091_conv::{K, ll, long, lstr, m, short, sstr};

/// One captured packet: its time and Ethernet frame.
#[derive(Clone, Debug)]
struct Pkt {
    ts: Timestamp,
    data: Vec<u8>,
}

/// The packets of a pcap or pcapng file (all Ethernet).
fn packets(file: &[u8], format: Format) -> Vec<Pkt> {
    let mut r = PacketReader::new(std::io::Cursor::new(file.to_vec()), format).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.linktype, 1, "Ethernet");
        out.push(Pkt {
            ts: p.ts,
            data: p.data.to_vec(),
        });
    }
    out
}

/// A classic pcap (little-endian, µs) of `pkts`.
fn pcap(pkts: &[&Pkt]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for p in pkts {
        for v in [
            (p.ts.0 / 1_000_000) as u32,
            (p.ts.0 % 1_000_000) as u32,
            p.data.len() as u32,
            p.data.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&p.data);
    }
    out
}

/// A violation's place: connection, direction, rule, stream offset.
type Place = (ConnId, usize, String, u64);

/// What `check` makes of a capture: its violations, and the time of each decoded frame by
/// (connection, direction, offset).
struct Verdict {
    violations: BTreeSet<Place>,
    frame_ts: BTreeMap<(ConnId, usize, u64), Timestamp>,
    events: Vec<Event>,
}

fn verdict(file: Vec<u8>) -> Verdict {
    let src = capture::from_reader(
        Box::new(std::io::Cursor::new(file)),
        CaptureOptions::default(),
    )
    .unwrap();
    let mut r = Router::new(InspectOptions::default());
    let mut events = Vec::new();
    for ev in src {
        r.feed(ev, &mut events);
    }
    r.finish(&mut events);
    let mut violations = BTreeSet::new();
    let mut frame_ts = BTreeMap::new();
    for e in &events {
        match &e.kind {
            EventKind::Violation(v) => {
                violations.insert((e.conn, v.dir.index(), v.rule.id.to_string(), v.offset));
            }
            EventKind::Frame(f) => {
                frame_ts.insert((e.conn, f.dir.index(), f.offset), e.ts);
            }
            _ => {}
        }
    }
    Verdict {
        violations,
        frame_ts,
        events,
    }
}

/// `whole` without the packets at `drop` (indices taken modulo the packets after the
/// three-way handshake).
fn without(whole: &[Pkt], drop: &[u16]) -> Vec<u8> {
    let n = whole.len().saturating_sub(3).max(1);
    let gone: BTreeSet<usize> = drop.iter().map(|d| 3 + *d as usize % n).collect();
    let kept: Vec<&Pkt> = whole
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(i))
        .map(|(_, p)| p)
        .collect();
    pcap(&kept)
}

/// The events of a replay written as amqpeek JSONL.
fn jsonl(events: &[Event]) -> Vec<u8> {
    use amqpeek::pipeline::Sink;
    let mut sink = JsonlSink::new(Vec::new(), JsonOptions::default());
    for e in events {
        sink.event(e).unwrap();
    }
    sink.into_inner()
}

/// The property for one capture with `drop` removed; returns the frames still decoded.
fn assert_no_new_verdict(name: &str, whole: &[Pkt], full: &Verdict, drop: &[u16]) -> usize {
    let lossy = verdict(without(whole, drop));
    let again = verdict(jsonl(&lossy.events));
    assert_eq!(
        again.violations, lossy.violations,
        "{name}, packets {drop:?} dropped: check of the replay's JSONL differs from check of the pcap"
    );
    let new: Vec<&Place> = lossy.violations.difference(&full.violations).collect();
    assert!(
        new.is_empty(),
        "{name}, packets {drop:?} dropped: violations the whole capture lacks: {new:#?}\n{}",
        render(&lossy.events)
    );
    for (k, ts) in &lossy.frame_ts {
        if let Some(want) = full.frame_ts.get(k) {
            assert_eq!(
                ts, want,
                "{name}, packets {drop:?} dropped: frame {k:?} is not stamped with its own time"
            );
        }
    }
    lossy.frame_ts.len()
}

fn render(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::Data { .. }))
        .map(|e| match &e.kind {
            EventKind::Frame(f) => format!(
                "{} #{} {:?} @{} {}\n",
                e.ts.0,
                e.conn,
                f.dir,
                f.offset,
                f.frame.summary()
            ),
            k => format!("{} #{} {k:?}\n", e.ts.0, e.conn),
        })
        .collect()
}

fn shipped(file: &str) -> Vec<Pkt> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(file);
    packets(&std::fs::read(&path).unwrap(), Format::Pcapng)
}

/// A generated conversation: each frame in its own segment, 1 ms apart, in causal order,
/// handshake first and FIN at the end, as the proxy's pcapng writer synthesises them.
fn conversation(frames: &[(Dir, Vec<u8>)]) -> Vec<Pkt> {
    let mut conv = Conversation::new(
        "10.0.0.2:40000".parse().unwrap(),
        "10.0.0.1:5672".parse().unwrap(),
        7,
    );
    let mut out = Vec::new();
    let mut now = 1_700_000_000_000_000i64;
    let mut stamp = |synth: Vec<_>, out: &mut Vec<Pkt>| {
        for p in synth {
            let amqpeek::capture::pcapng_write::SynthPacket { frame, .. } = p;
            now += 1000;
            out.push(Pkt {
                ts: Timestamp(now),
                data: frame,
            });
        }
    };
    let mut synth = Vec::new();
    conv.handshake(&mut synth);
    stamp(std::mem::take(&mut synth), &mut out);
    for (dir, bytes) in frames {
        conv.data(*dir, conv.offset(*dir), bytes, &mut synth);
        stamp(std::mem::take(&mut synth), &mut out);
    }
    conv.fin(&mut synth);
    stamp(synth, &mut out);
    out
}

fn f10(channel: u16, body: &amqpeek::codec::amqp10::Value, payload: &[u8]) -> Vec<u8> {
    encode_frame(0, channel, Some(body), payload).unwrap()
}

/// AMQP 1.0: open (the server's frames may be large, the client's open allows it), a session,
/// a receiving link with transfers larger than the 512-byte default, a sending link with
/// credit, dispositions, detach, end, close.
fn amqp10_frames() -> Vec<(Dir, Vec<u8>)> {
    use Dir::{C2S, S2C};
    // A message of 2000 bytes: one data section of 1992.
    let big = [
        &[0x00, 0x53, 0x75, 0xb0, 0, 0, 0x07, 0xc8][..],
        &[b'x'; 1992],
    ]
    .concat();
    let mut v = vec![
        (C2S, a10::AMQP.to_vec()),
        (C2S, f10(0, &a10::open(&[]), &[])),
        (S2C, a10::AMQP.to_vec()),
        (S2C, f10(0, &a10::open(&[]), &[])),
        (C2S, f10(0, &a10::begin(None, 0, 1000, 1000), &[])),
        (S2C, f10(0, &a10::begin(Some(0), 0, 1000, 1000), &[])),
        (C2S, f10(0, &a10::attach_receiver("R", 0, &[]), &[])),
        (S2C, f10(0, &a10::attach_sender("R", 0, &[]), &[])),
        (
            C2S,
            f10(0, &a10::link_flow(0, Some(0), Some(10), false), &[]),
        ),
    ];
    for id in 0..3u32 {
        let t = a10::transfer(0, Some(id), Some(&[id as u8]), Some(false), false, &[]);
        v.push((S2C, f10(0, &t, &big)));
    }
    v.push((C2S, f10(0, &a10::disposition(true, 0, Some(2), true), &[])));
    v.push((C2S, f10(0, &a10::attach_sender("S", 1, &[]), &[])));
    v.push((S2C, f10(0, &a10::attach_receiver("S", 1, &[]), &[])));
    v.push((
        S2C,
        f10(0, &a10::link_flow(1, Some(0), Some(5), false), &[]),
    ));
    for id in 3..6u32 {
        let t = a10::transfer(1, Some(id), Some(&[id as u8]), Some(false), false, &[]);
        v.push((C2S, f10(0, &t, &a10::message(Some("/q")))));
    }
    v.push((S2C, f10(0, &a10::disposition(true, 3, Some(5), true), &[])));
    for h in [0, 1] {
        v.push((C2S, f10(0, &a10::detach(h, true), &[])));
        v.push((S2C, f10(0, &a10::detach(h, true), &[])));
    }
    v.push((C2S, f10(0, &a10::end(), &[])));
    v.push((S2C, f10(0, &a10::end(), &[])));
    v.push((C2S, f10(0, &a10::close(), &[])));
    v.push((S2C, f10(0, &a10::close(), &[])));
    v
}

fn f091(channel: u16, kind: amqpeek::codec::amqp091::FrameKind) -> Vec<u8> {
    let mut out = Vec::new();
    amqpeek::codec::amqp091::encode_frame(channel, &kind, &mut out);
    out
}

fn meth(channel: u16, kind: K, args: &[(&str, state_amqp091_conv::Value)]) -> Vec<u8> {
    f091(
        channel,
        amqpeek::codec::amqp091::FrameKind::Method(m(kind, args).into()),
    )
}

/// AMQP 0-9-1: handshake (frame-max 4096), a channel, a publish in two body frames, a
/// consumer with deliveries larger than 512 bytes and their acks, and both closes.
fn amqp091_frames() -> Vec<(Dir, Vec<u8>)> {
    use Dir::{C2S, S2C};
    use amqpeek::codec::amqp091::{ContentHeader, FrameKind};
    let body = |n: usize| f091(1, FrameKind::Body(bytes::Bytes::from(vec![b'x'; n])));
    let header = |n: u64| f091(1, FrameKind::Header(ContentHeader::basic(n).into()));
    let mut v = vec![
        (C2S, b"AMQP\x00\x00\x09\x01".to_vec()),
        (
            S2C,
            meth(0, K::ConnectionStart, &[("mechanisms", lstr("PLAIN"))]),
        ),
        (
            C2S,
            meth(
                0,
                K::ConnectionStartOk,
                &[
                    ("mechanism", sstr("PLAIN")),
                    ("response", lstr("\0guest\0guest")),
                ],
            ),
        ),
        (
            S2C,
            meth(
                0,
                K::ConnectionTune,
                &[("frame-max", long(4096)), ("heartbeat", short(0))],
            ),
        ),
        (
            C2S,
            meth(0, K::ConnectionTuneOk, &[("frame-max", long(4096))]),
        ),
        (C2S, meth(0, K::ConnectionOpen, &[])),
        (S2C, meth(0, K::ConnectionOpenOk, &[])),
        (C2S, meth(1, K::ChannelOpen, &[])),
        (S2C, meth(1, K::ChannelOpenOk, &[])),
        (C2S, meth(1, K::BasicPublish, &[("routing-key", sstr("q"))])),
        (C2S, header(3000)),
        (C2S, body(1500)),
        (C2S, body(1500)),
        (
            C2S,
            meth(
                1,
                K::BasicConsume,
                &[("queue", sstr("q")), ("consumer-tag", sstr("c"))],
            ),
        ),
        (
            S2C,
            meth(1, K::BasicConsumeOk, &[("consumer-tag", sstr("c"))]),
        ),
    ];
    for tag in 1..=3u64 {
        v.push((
            S2C,
            meth(
                1,
                K::BasicDeliver,
                &[("consumer-tag", sstr("c")), ("delivery-tag", ll(tag))],
            ),
        ));
        v.push((S2C, header(2000)));
        v.push((S2C, body(2000)));
        v.push((C2S, meth(1, K::BasicAck, &[("delivery-tag", ll(tag))])));
    }
    v.push((C2S, meth(1, K::ChannelClose, &[])));
    v.push((S2C, meth(1, K::ChannelCloseOk, &[])));
    v.push((C2S, meth(0, K::ConnectionClose, &[])));
    v.push((S2C, meth(0, K::ConnectionCloseOk, &[])));
    v
}

/// The captures the property runs on, each with its whole verdict.
fn corpus() -> Vec<(String, Vec<Pkt>, Verdict)> {
    let mut out = Vec::new();
    for file in [
        "amqp10-fe2o3.pcapng",
        "amqp091-lapin.pcapng",
        "amqp091-bad-ack.pcapng",
    ] {
        out.push((file.to_string(), shipped(file)));
    }
    out.push(("generated 1.0".into(), conversation(&amqp10_frames())));
    out.push(("generated 0-9-1".into(), conversation(&amqp091_frames())));
    out.into_iter()
        .map(|(name, pkts)| {
            let whole = verdict(pcap(&pkts.iter().collect::<Vec<_>>()));
            assert!(
                whole.frame_ts.len() >= 20,
                "{name}: {} frames",
                whole.frame_ts.len()
            );
            (name, pkts, whole)
        })
        .collect()
}

#[test]
fn generated_conversations_are_clean_whole() {
    for (name, pkts, whole) in corpus().into_iter().skip(3) {
        assert!(
            whole.violations.is_empty(),
            "{name}: {:#?}\n{}",
            whole.violations,
            render(&whole.events)
        );
        assert!(pkts.len() > 30, "{name}: {} packets", pkts.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn a_capture_missing_segments_reports_nothing_the_whole_capture_lacks(
        drop in proptest::collection::vec(any::<u16>(), 1..24),
    ) {
        thread_local!(static CORPUS: Vec<(String, Vec<Pkt>, Verdict)> = corpus());
        CORPUS.with(|c| {
            for (name, pkts, whole) in c {
                assert_no_new_verdict(name, pkts, whole, &drop);
            }
        });
    }
}

/// Every single packet dropped in turn, on every capture: nothing new is reported, and
/// decoding goes on after the hole (most frames are still decoded).
#[test]
fn each_single_lost_packet_reports_nothing_new() {
    for (name, pkts, whole) in corpus() {
        for i in 0..pkts.len().saturating_sub(3) {
            let frames = assert_no_new_verdict(&name, &pkts, &whole, &[i as u16]);
            assert!(
                frames * 3 >= whole.frame_ts.len() * 2,
                "{name}, packet {i} dropped: only {frames} of {} frames decoded",
                whole.frame_ts.len()
            );
        }
    }
}
