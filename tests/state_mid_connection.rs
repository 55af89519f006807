//! A capture that starts mid-connection: state tracking starts unknown and must not invent
//! violations for what it did not see. Checked on the shipped real captures (fe2o3-amqp and
//! lapin against RabbitMQ), cut at every chunk: everything before the cut is missing, each
//! direction resumes at its first frame boundary after it (as the capture reader's
//! resynchronisation delivers it), and whatever is reported must also be reported for the
//! whole capture.

mod common;
mod support;

use std::collections::{BTreeMap, HashMap};

use amqpeek::capture::{CaptureOptions, SourceEvent};
use amqpeek::codec::ProtocolHeader;
use amqpeek::event::{CloseReason, ConnId, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use bytes::Bytes;
use common::violation_lines;

/// What a capture holds, in order.
enum Ev {
    Chunk(ConnId, Dir, Timestamp, Bytes),
    Close(ConnId, Timestamp, CloseReason),
}

fn load(path: &str) -> Vec<Ev> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    amqpeek::capture::open(&path, CaptureOptions::default())
        .unwrap()
        .filter_map(|e| match e {
            SourceEvent::Chunk(c) => Some(Ev::Chunk(c.conn, c.dir, c.ts, c.bytes)),
            SourceEvent::Close { conn, ts, reason } => Some(Ev::Close(conn, ts, reason)),
            _ => None,
        })
        .collect()
}

/// Run `evs` through inspectors; chunks before index `cut` are missing.
fn run(evs: &[Ev], cut: usize, resync: ProtocolHeader, starts: &FrameStarts) -> Vec<Event> {
    let mut inspectors: BTreeMap<ConnId, Inspector> = BTreeMap::new();
    let mut pos: HashMap<(ConnId, Dir), u64> = HashMap::new();
    let mut resumed: HashMap<(ConnId, Dir), u64> = HashMap::new();
    let mut out = Vec::new();
    for (i, ev) in evs.iter().enumerate() {
        match ev {
            Ev::Chunk(conn, dir, ts, bytes) => {
                let at = pos.entry((*conn, *dir)).or_insert(0);
                let start = *at;
                *at += bytes.len() as u64;
                if i < cut {
                    continue;
                }
                let insp = inspectors
                    .entry(*conn)
                    .or_insert_with(|| Inspector::new(*conn, InspectOptions::default()));
                // A connection the capture sees from its start is read from its start.
                let cut_short = evs[..cut]
                    .iter()
                    .any(|e| matches!(e, Ev::Chunk(c, ..) if c == conn));
                if !cut_short {
                    insp.chunk(*dir, *ts, bytes.clone(), &mut out);
                    continue;
                }
                let resume = *resumed.entry((*conn, *dir)).or_insert_with(|| {
                    // The first frame boundary at or after this chunk's start.
                    let resume = starts
                        .get(&(*conn, *dir))
                        .and_then(|s| s.iter().copied().find(|&o| o >= start))
                        .unwrap_or(u64::MAX);
                    {
                        let len = resume.min(start + bytes.len() as u64);
                        insp.gap(
                            *dir,
                            *ts,
                            0,
                            len,
                            "capture starts mid-connection".into(),
                            Some(resync),
                            &mut out,
                        );
                    }
                    resume
                });
                let end = start + bytes.len() as u64;
                if end <= resume {
                    continue;
                }
                let from = resume.saturating_sub(start) as usize;
                insp.chunk(*dir, *ts, bytes.slice(from..), &mut out);
            }
            Ev::Close(conn, ts, reason) => {
                if let Some(mut insp) = inspectors.remove(conn) {
                    insp.close(*ts, reason.clone(), &mut out);
                }
            }
        }
    }
    out
}

/// Where each frame starts, per connection and direction.
type FrameStarts = HashMap<(ConnId, Dir), Vec<u64>>;

fn frame_starts(events: &[Event]) -> FrameStarts {
    let mut starts: FrameStarts = HashMap::new();
    for e in events {
        if let EventKind::Frame(f) = &e.kind {
            starts.entry((e.conn, f.dir)).or_default().push(f.offset);
        }
    }
    starts
}

#[test]
fn real_captures_cut_anywhere_report_nothing_the_whole_capture_does_not() {
    for (capture, proto) in [
        ("captures/amqp091-lapin.pcapng", ProtocolHeader::Amqp091),
        ("captures/amqp091-bad-ack.pcapng", ProtocolHeader::Amqp091),
        ("captures/amqp10-fe2o3.pcapng", ProtocolHeader::Amqp10),
    ] {
        let evs = load(capture);
        let whole = run(&evs, 0, proto, &HashMap::new());
        let all = violation_lines(&whole);
        let starts = frame_starts(&whole);
        let frames: usize = starts.values().map(Vec::len).sum();
        assert!(frames > 20, "{capture}: {frames} frames");
        let chunks = evs.iter().filter(|e| matches!(e, Ev::Chunk(..))).count();
        let mut partial = 0;
        for cut in 1..chunks {
            let events = run(&evs, cut, proto, &starts);
            for v in violation_lines(&events) {
                assert!(all.contains(&v), "{capture} cut at chunk {cut}: {v}");
            }
            let decoded = events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Frame(_)))
                .count();
            assert!(
                decoded <= frames,
                "{capture} cut at chunk {cut}: more frames than whole"
            );
            if decoded > 0 && decoded < frames {
                partial += 1;
            }
        }
        assert!(
            partial > chunks / 2,
            "{capture}: {partial} of {chunks} cuts decoded a part"
        );
    }
}
