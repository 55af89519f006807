//! Skimming: when the inspection falls behind and only a live view is watching, chunks are
//! passed over by frame sizes instead of decoded. Decoding must resume exactly at a frame
//! boundary, the state tracker must invent nothing for what it did not see, the gap must be
//! reported, and the relay must stay byte-exact.

mod common;
mod support;

#[path = "../benches/support/mixes.rs"]
mod mixes;

use std::time::Duration;

use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use bytes::Bytes;
use common::violation_lines;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Frames as (direction, offset, name).
fn frames(events: &[Event]) -> Vec<(Dir, u64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame(f) => Some((f.dir, f.offset, f.frame.name().to_string())),
            _ => None,
        })
        .collect()
}

/// No violation at all in `events`.
fn assert_clean(events: &[Event], ctx: &str) {
    let found = violation_lines(events);
    assert!(
        found.is_empty(),
        "{ctx}: {} violations, first: {:?}",
        found.len(),
        found.first()
    );
}

/// Bytes of the client's `Data` events.
fn c2s_data_bytes(events: &[Event]) -> u64 {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Data {
                dir: Dir::C2S,
                bytes,
                ..
            } => Some(bytes.len() as u64),
            _ => None,
        })
        .sum()
}

/// Run a flood through an inspector, client chunks in `skim` skimmed, the rest decoded.
fn inspect_flood(flood: &mixes::Flood, size: usize, skim: std::ops::Range<usize>) -> Vec<Event> {
    inspect_flood_every(flood, size, skim, 1_000)
}

/// [`inspect_flood`] with chunks `step_us` apart.
fn inspect_flood_every(
    flood: &mixes::Flood,
    size: usize,
    skim: std::ops::Range<usize>,
    step_us: i64,
) -> Vec<Event> {
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = Vec::new();
    let mut t = 1_000_000i64;
    let mut ts = || {
        t += step_us;
        Timestamp(t)
    };
    let client = Bytes::from(flood.client.clone());
    let open = mixes::amqp10_client_open().len();
    insp.chunk(Dir::C2S, ts(), client.slice(..open), &mut out);
    insp.chunk(
        Dir::S2C,
        ts(),
        Bytes::from(flood.server_open.clone()),
        &mut out,
    );
    let rest = client.slice(open..);
    for (i, at) in (0..rest.len()).step_by(size).enumerate() {
        let c = rest.slice(at..(at + size).min(rest.len()));
        if skim.contains(&i) {
            insp.skim(Dir::C2S, ts(), c, &mut out);
        } else {
            insp.chunk(Dir::C2S, ts(), c, &mut out);
        }
    }
    insp.chunk(
        Dir::S2C,
        ts(),
        Bytes::from(flood.server_close.clone()),
        &mut out,
    );
    insp.close(ts(), "done".into(), &mut out);
    out
}

/// Like `mixes::amqp10_flood`, but every message is one data section split over three
/// transfers (`more`), so skimming cuts deliveries in the middle.
fn multi_frame_flood(messages: u32) -> mixes::Flood {
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
    let mut flood = mixes::amqp10_flood(0, 0);
    let closing = mixes::amqp10_closing();
    flood.client.truncate(flood.client.len() - closing.len());
    let mut section = vec![0x00, 0x53, 0x75, 0xa0, 90];
    section.extend_from_slice(&[0x5a; 90]);
    for id in 0..messages {
        for (part, bytes) in section.chunks(32).enumerate() {
            let more = part < 2;
            let fields = if part == 0 {
                vec![
                    Value::Uint(0),
                    Value::Uint(id),
                    Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes())),
                    Value::Uint(0),
                    Value::Bool(true),
                    Value::Bool(more),
                ]
            } else {
                let null = Value::Null;
                vec![
                    Value::Uint(0),
                    null.clone(),
                    null.clone(),
                    null.clone(),
                    null,
                    Value::Bool(more),
                ]
            };
            let t = described_list(0x14, fields);
            flood
                .client
                .extend(encode_frame(0, 0, Some(&t), bytes).unwrap());
        }
    }
    flood.client.extend(closing);
    flood
}

#[test]
fn skimming_keeps_framing_exact_reports_the_gap_and_invents_no_violation() {
    for flood in [mixes::amqp10_flood(3_000, 40), multi_frame_flood(1_000)] {
        skim_flood(&flood);
    }
}

fn skim_flood(flood: &mixes::Flood) {
    let open = mixes::amqp10_client_open().len() as u64;
    let full = inspect_flood(flood, 4096, 0..0);
    assert_eq!(
        violation_lines(&full),
        Vec::<String>::new(),
        "the flood is clean"
    );
    let full_frames = frames(&full);

    for (size, skim) in [
        (4096, 2..20),
        (1000, 0..1),
        (777, 5..200),
        (4096, 0..10_000),
    ] {
        let ctx = format!("chunks of {size}, skimming {skim:?}");
        let events = inspect_flood(flood, size, skim.clone());
        assert_clean(&events, &ctx);
        let got = frames(&events);
        for f in &got {
            assert!(
                full_frames.contains(f),
                "{ctx}: {f:?} is not in the full decode"
            );
        }
        let gaps: Vec<(Dir, u64, u64, String)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Gap {
                    dir,
                    offset,
                    len,
                    reason,
                } => Some((*dir, *offset, *len, reason.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(gaps.len(), 1, "{ctx}: one gap for one run: {gaps:?}");
        let (dir, offset, len, reason) = &gaps[0];
        assert_eq!(*dir, Dir::C2S);
        // The run starts with the chunk where skimming began, or with the frame that chunk
        // completes (an incomplete frame is passed over with it).
        let first = open + (skim.start * size) as u64;
        assert!(
            *offset <= first,
            "{ctx}: gap at {offset}, skimming began at {first}"
        );
        assert!(
            full_frames
                .iter()
                .any(|f| f.0 == Dir::C2S && f.1 == *offset && f.1 + 200 > first),
            "{ctx}: the gap starts at the frame around {first}, not at {offset}"
        );
        assert!(reason.contains("fell behind"), "{reason}");
        // Decoding resumes at the first frame boundary after the gap, and nothing in between
        // was decoded.
        let end = offset + len;
        match full_frames.iter().find(|f| f.0 == Dir::C2S && f.1 >= end) {
            Some(next) => {
                assert_eq!(next.1, end, "{ctx}: the gap ends at a frame boundary");
                assert!(got.contains(next), "{ctx}: decoding resumed at {end}");
            }
            None => assert_eq!(end, flood.client.len() as u64, "{ctx}: skimmed to the end"),
        }
        assert!(
            !got.iter()
                .any(|f| f.0 == Dir::C2S && f.1 >= *offset && f.1 < end),
            "{ctx}: no frame decoded inside the gap"
        );
        let skimmed = full_frames.len() - got.len();
        assert!(
            reason.contains(&format!("({skimmed} frame(s)")),
            "{ctx}: {reason} (expected {skimmed} frames)"
        );
        // The byte counts at close still cover everything.
        let close = events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Close(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(close.bytes_c2s, flood.client.len() as u64, "{ctx}");
        // Data events leave out the skimmed bytes and nothing else.
        let data = c2s_data_bytes(&events);
        assert_eq!(data + len, flood.client.len() as u64, "{ctx}");
    }
}

#[test]
fn a_long_skim_is_reported_every_second_and_the_gaps_tile_the_skimmed_bytes() {
    let flood = mixes::amqp10_flood(3_000, 40);
    // Chunks 0.4 s apart: a run is reported every third chunk, often while the frame at the
    // chunk's end is still being passed over; one of these ends skimming just after a report.
    for end in 150..153 {
        gaps_tile(&flood, inspect_flood_every(&flood, 1000, 3..end, 400_000));
    }
}

fn gaps_tile(flood: &mixes::Flood, events: Vec<Event>) {
    assert_clean(&events, "tiling");
    let mut gaps: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Gap { offset, len, .. } => Some((*offset, *len)),
            _ => None,
        })
        .collect();
    assert!(gaps.len() > 10, "{} gaps", gaps.len());
    gaps.sort();
    for w in gaps.windows(2) {
        assert_eq!(w[0].0 + w[0].1, w[1].0, "the gaps tile: {w:?}");
    }
    let data = c2s_data_bytes(&events);
    let skimmed: u64 = gaps.iter().map(|g| g.1).sum();
    assert_eq!(data + skimmed, flood.client.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_live_view_makes_the_proxy_skim_not_wait_and_the_relay_stays_exact() {
    // An upstream that plays the server side of the flood and records what it got.
    let flood = mixes::amqp10_flood(20_000, 40);
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    let (server_open, server_close) = (flood.server_open.clone(), flood.server_close.clone());
    let upstream = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut got = vec![0u8; mixes::amqp10_client_open().len()];
        s.read_exact(&mut got).await.unwrap();
        s.write_all(&server_open).await.unwrap();
        s.read_to_end(&mut got).await.unwrap();
        s.write_all(&server_close).await.unwrap();
        got
    });
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), up);
    config.queue_chunks = 4;
    config.read_buffer = 4096;
    // 200 µs per decoded frame: a lossless inspection of 20,000 frames would hold the relay
    // for 4 s; skimming lets it through.
    let proxy = common::start_live_proxy(config, Duration::from_micros(200)).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    let mut head = vec![0u8; flood.server_open.len()];
    // As a client does: open, wait for the server's open and credit, then send.
    let open = mixes::amqp10_client_open().len();
    c.write_all(&flood.client[..open]).await.unwrap();
    c.read_exact(&mut head).await.unwrap();
    let closing = flood.client.len() - mixes::amqp10_closing().len();
    c.write_all(&flood.client[open..closing]).await.unwrap();
    // Once the inspection has caught up, it decodes again: the client sends empty frames
    // (legal at any time, §2.3.1) until one of them is decoded, then its closing frames,
    // which must be decoded too.
    let heartbeats = resume_decoding(&mut c, &proxy.events).await;
    c.write_all(&flood.client[closing..]).await.unwrap();
    c.shutdown().await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(60), upstream)
        .await
        .unwrap()
        .unwrap();
    let mut sent = flood.client[..closing].to_vec();
    sent.extend(std::iter::repeat_n(EMPTY_FRAME, heartbeats).flatten());
    sent.extend_from_slice(&flood.client[closing..]);
    assert!(got == sent, "relayed unchanged");
    assert_eq!(head, flood.server_open);
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, flood.server_close);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    assert_clean(&events, "through the proxy");
    // Every client frame was either decoded or counted in a gap's reason.
    let skimmed: u64 = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Gap {
                dir: Dir::C2S,
                reason,
                ..
            } => {
                let n = reason.split("relay (").nth(1)?.split(' ').next()?;
                Some(n.parse::<u64>().unwrap())
            }
            _ => None,
        })
        .sum();
    // Empty frames included: those sent while the inspection was still behind were skimmed.
    let decoded = frames(&events).iter().filter(|f| f.0 == Dir::C2S).count() as u64;
    assert!(skimmed > 0, "the slow view made the inspection skim");
    let names: Vec<String> = frames(&events)
        .into_iter()
        .filter(|f| f.0 == Dir::C2S && f.2 != "empty")
        .map(|f| f.2)
        .collect();
    assert_eq!(
        names[names.len().saturating_sub(3)..],
        ["detach", "end", "close"],
        "decoding resumed after the flood"
    );
    assert_eq!(
        decoded + skimmed,
        20_000 + 6 + heartbeats as u64,
        "decoded {decoded}, skimmed {skimmed}, empty frames sent {heartbeats}"
    );
}

/// An AMQP 1.0 empty frame (size 8, doff 2, type 0, channel 0).
const EMPTY_FRAME: [u8; 8] = [0, 0, 0, 8, 2, 0, 0, 0];

/// Send empty frames on `c` until the live sink has been handed one of them decoded (the
/// inspection decodes again, no longer skims); returns how many were sent. Each is sent only
/// after the last had time to be inspected, so the wait ends as soon as the inspection has
/// caught up, not after a fixed delay.
async fn resume_decoding(
    c: &mut TcpStream,
    events: &std::sync::Arc<std::sync::Mutex<Vec<Event>>>,
) -> usize {
    let resumed = || {
        frames(&events.lock().unwrap())
            .iter()
            .any(|f| f.0 == Dir::C2S && f.2 == "empty")
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut sent = 0;
    while !resumed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "decoding never resumed after the flood"
        );
        c.write_all(&EMPTY_FRAME).await.unwrap();
        sent += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sent
}

/// A decoded frame: connection, direction, offset, name.
type FrameAt = (u64, Dir, u64, String);

/// Replay a shipped capture (real clients against RabbitMQ) through inspectors, skimming the
/// chunks `skim` picks (by their index within their connection and direction); returns the
/// violations and the frames decoded.
fn replay_skimming(path: &str, skim: impl Fn(usize) -> bool) -> (Vec<String>, Vec<FrameAt>) {
    use amqpeek::capture::{CaptureOptions, SourceEvent};
    let mut inspectors = std::collections::BTreeMap::new();
    let mut seen = std::collections::HashMap::new();
    let mut out = Vec::new();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    for ev in amqpeek::capture::open(&path, CaptureOptions::default()).unwrap() {
        match ev {
            SourceEvent::Chunk(c) => {
                let insp = inspectors
                    .entry(c.conn)
                    .or_insert_with(|| Inspector::new(c.conn, InspectOptions::default()));
                let n = seen.entry((c.conn, c.dir)).or_insert(0usize);
                if skim(*n) {
                    insp.skim(c.dir, c.ts, c.bytes, &mut out);
                } else {
                    insp.chunk(c.dir, c.ts, c.bytes, &mut out);
                }
                *n += 1;
            }
            SourceEvent::Close { conn, ts, reason } => {
                if let Some(mut insp) = inspectors.remove(&conn) {
                    insp.close(ts, reason, &mut out);
                }
            }
            _ => {}
        }
    }
    let frames = out
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame(f) => Some((e.conn, f.dir, f.offset, f.frame.name().to_string())),
            _ => None,
        })
        .collect();
    (violation_lines(&out), frames)
}

#[test]
fn skimming_real_conversations_finds_nothing_the_full_decode_does_not() {
    for capture in [
        "captures/amqp091-lapin.pcapng",
        "captures/amqp091-bad-ack.pcapng",
        "captures/amqp10-fe2o3.pcapng",
    ] {
        let (all_violations, all_frames) = replay_skimming(capture, |_| false);
        for (from, every) in (1..7).flat_map(|from| (1..6).map(move |every| (from, every))) {
            let (got, frames) = replay_skimming(capture, |i| i >= from && (i - from) % every == 0);
            for v in &got {
                assert!(
                    all_violations.contains(v),
                    "{capture}, skimming from chunk {from} every {every}: {v}"
                );
            }
            assert!(
                frames.len() < all_frames.len(),
                "{capture}: something was skimmed"
            );
            for f in &frames {
                assert!(
                    all_frames.contains(f),
                    "{capture}: {f:?} is not a frame of it"
                );
            }
        }
    }
}
