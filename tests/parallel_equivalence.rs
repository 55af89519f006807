//! `check` and `replay` with several threads give exactly the single-threaded verdict, outputs
//! (JSONL, trace and pcapng, byte for byte: the ordered writer takes any sink) and statistics: on the shipped captures, and on a generated
//! capture of many interleaved connections (copies of the shipped conversations, some
//! corrupted, cut short, missing bytes or reset), as pcapng and as JSONL (with some
//! connections never closed and an unreadable line).

use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::event::{CloseInfo, ConnId, Dir, Event, EventKind, Severity, Timestamp};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::replay::ReplayStats;
use amqpeek::replay::parallel::{self, CheckRun};
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink, TraceSink};
use amqpeek::verdict::Format;
use bytes::Bytes;

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name)
}

fn run(path: &Path, jobs: usize) -> CheckRun {
    let source = capture::open(path, CaptureOptions::default()).expect("capture opens");
    parallel::check(source, NonZeroUsize::new(jobs).unwrap())
}

/// Every rendering at every threshold, the verdicts, the totals and the statistics agree.
fn assert_same(one: &CheckRun, many: &CheckRun, what: &str) {
    assert_eq!(many.stats, one.stats, "{what}: stats");
    assert_eq!(many.report.totals(), one.report.totals(), "{what}: totals");
    for fail_on in [Severity::Error, Severity::Warning, Severity::Info] {
        assert_eq!(
            many.report.fails(fail_on),
            one.report.fails(fail_on),
            "{what}: verdict at {fail_on:?}"
        );
        for format in [Format::Text, Format::Json, Format::Junit] {
            assert_eq!(
                many.report.render(format, "cap", fail_on),
                one.report.render(format, "cap", fail_on),
                "{what}: {format:?} at {fail_on:?}"
            );
        }
    }
}

/// A replay into JSONL, the trace and pcapng: (stats, JSONL, trace, pcapng).
fn replay(path: &Path, jobs: usize) -> (ReplayStats, Vec<u8>, Vec<u8>, Vec<u8>) {
    let source = capture::open(path, CaptureOptions::default()).expect("capture opens");
    let (mut jsonl, mut trace, mut pcapng) = (Vec::new(), Vec::new(), Vec::new());
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![
        Box::new(JsonlSink::new(&mut jsonl, JsonOptions { max_body: 64 })),
        Box::new(TraceSink::new(&mut trace)),
        Box::new(PcapngSink::new(&mut pcapng).unwrap()),
    ];
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: true,
        ..InspectOptions::DEFAULT
    };
    let done = offline::run(
        source,
        opts,
        sinks,
        NonZeroUsize::new(jobs).unwrap(),
        Pace::Batched,
    );
    assert!(done.sink_failures.is_empty(), "{:?}", done.sink_failures);
    (done.stats, jsonl, trace, pcapng)
}

/// Check and replay agree across 1, 2 and 4 jobs; returns the single-threaded check.
fn assert_jobs_agree(path: &Path) -> CheckRun {
    let one = run(path, 1);
    let replayed = replay(path, 1);
    assert_eq!(
        replayed.0,
        one.stats,
        "{}: replay and check",
        path.display()
    );
    assert!(!replayed.1.is_empty() && !replayed.2.is_empty() && !replayed.3.is_empty());
    for jobs in [2, 4] {
        let what = format!("{} with {jobs} jobs", path.display());
        let many = run(path, jobs);
        assert_eq!(many.jobs.get(), jobs);
        assert_same(&one, &many, &what);
        let (stats, jsonl, trace, pcapng) = replay(path, jobs);
        assert_eq!(stats, replayed.0, "{what}: replay stats");
        assert!(jsonl == replayed.1, "{what}: JSONL differs");
        assert!(trace == replayed.2, "{what}: trace differs");
        assert!(pcapng == replayed.3, "{what}: pcapng differs");
    }
    one
}

#[test]
fn shipped_captures_check_and_replay_the_same_with_1_2_and_4_jobs() {
    for name in [
        "amqp091-bad-ack.jsonl",
        "amqp091-bad-ack.pcapng",
        "amqp091-lapin.jsonl",
        "amqp091-lapin.pcapng",
        "amqp10-fe2o3.jsonl",
        "amqp10-fe2o3.pcapng",
    ] {
        let one = assert_jobs_agree(&shipped(name));
        assert_eq!(one.stats.connections, 1, "{name}");
        assert!(one.stats.frames > 40, "{name}");
    }
}

/// One direction's bytes as the shipped capture holds them, in order.
type Conversation = Vec<(Dir, Bytes)>;

/// The conversation of each shipped pcapng (each holds one connection).
fn conversations() -> Vec<Conversation> {
    ["amqp091-bad-ack", "amqp091-lapin", "amqp10-fe2o3"]
        .iter()
        .map(|name| {
            let path = shipped(&format!("{name}.pcapng"));
            capture::open(&path, CaptureOptions::default())
                .unwrap()
                .filter_map(|ev| match ev {
                    SourceEvent::Chunk(c) => Some((c.dir, c.bytes)),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// How a generated connection departs from its conversation.
#[derive(Clone, Copy, Debug)]
enum Damage {
    None,
    /// A byte of a frame header overwritten (the frame becomes malformed).
    Corrupt,
    /// A chunk missing (a gap; decoding resynchronises).
    Hole,
    /// Cut off in the middle of a chunk, never closed.
    CutShort,
    /// Ends with a reset instead of a close.
    Reset,
}

/// A generated connection being written.
struct Generated {
    conn: ConnId,
    chunks: Conversation,
    next: usize,
    offsets: [u64; 2],
    damage: Damage,
}

/// Writes `conns` connections, copies of the shipped conversations, with up to 7 of them in
/// progress at once, their chunks interleaved; returns the path.
fn generate(dir: &Path, conns: u64) -> PathBuf {
    let path = dir.join("many.pcapng");
    let mut sink = PcapngSink::create(&path).unwrap();
    let convs = conversations();
    let mut ts = 1_764_417_600_000_000i64;
    let mut live: Vec<Generated> = Vec::new();
    let mut started = 0;
    let upstream: SocketAddr = "10.1.0.1:5672".parse().unwrap();
    let mut step = 0u64;
    while started < conns || !live.is_empty() {
        step += 1;
        // A second per chunk: connections left open are silent for minutes at the end of the
        // capture, past their heartbeat, which the close at the end reports (with its time).
        ts += 1_000_000;
        if started < conns && (live.len() < 7 && step.is_multiple_of(3) || live.is_empty()) {
            started += 1;
            let conn = started;
            let client = format!("10.0.0.{}:{}", conn % 250 + 1, 40000 + conn)
                .parse()
                .unwrap();
            sink.event(&Event {
                conn,
                ts: Timestamp(ts),
                kind: EventKind::Connect { client, upstream },
            })
            .unwrap();
            let damage = match conn % 5 {
                0 => Damage::None,
                1 => Damage::Corrupt,
                2 => Damage::Hole,
                3 => Damage::CutShort,
                _ => Damage::Reset,
            };
            live.push(Generated {
                conn,
                chunks: convs[(conn % convs.len() as u64) as usize].clone(),
                next: 0,
                offsets: [0; 2],
                damage,
            });
            continue;
        }
        // The next chunk of one of the connections in progress.
        let i = (step as usize * 7) % live.len();
        let g = &mut live[i];
        let n = g.chunks.len();
        let (dir, mut bytes) = g.chunks[g.next].clone();
        let k = g.next;
        g.next += 1;
        let mut finished = g.next == n;
        match g.damage {
            Damage::Corrupt if k == n / 2 && bytes.len() > 6 => {
                let mut b = bytes.to_vec();
                // The frame type of 0-9-1 / the doff of 1.0 when the chunk starts a frame.
                b[4] = 0x55;
                b[5] = 0x55;
                bytes = Bytes::from(b);
            }
            Damage::Hole if k == n / 2 => {
                g.offsets[dir.index()] += bytes.len() as u64;
                continue;
            }
            Damage::CutShort if k == n * 2 / 3 => {
                bytes = bytes.slice(..bytes.len().div_ceil(2));
                finished = true;
            }
            _ => {}
        }
        let offset = g.offsets[dir.index()];
        g.offsets[dir.index()] += bytes.len() as u64;
        sink.event(&Event {
            conn: g.conn,
            ts: Timestamp(ts),
            kind: EventKind::Data { dir, offset, bytes },
        })
        .unwrap();
        if finished {
            let g = live.swap_remove(i);
            let reason = match g.damage {
                // Never closed: the capture ends with it open.
                Damage::CutShort => None,
                Damage::Reset => Some("reset by server"),
                _ => Some("client closed"),
            };
            if let Some(reason) = reason {
                sink.event(&Event {
                    conn: g.conn,
                    ts: Timestamp(ts),
                    kind: EventKind::Close(CloseInfo {
                        reason: reason.into(),
                        bytes_c2s: g.offsets[0],
                        bytes_s2c: g.offsets[1],
                    }),
                })
                .unwrap();
            }
        }
    }
    sink.flush().unwrap();
    drop(sink);
    path
}

/// The generated capture as amqpeek JSONL, minus the close lines of every fourth connection
/// (so the end of the capture closes them) and with an unreadable line in the middle.
fn to_jsonl(pcapng: &Path, dir: &Path) -> PathBuf {
    let full = dir.join("full.jsonl");
    {
        let mut sink = JsonlSink::new(
            BufWriter::new(std::fs::File::create(&full).unwrap()),
            JsonOptions::default(),
        );
        let source = capture::open(pcapng, CaptureOptions::default()).unwrap();
        let opts = InspectOptions {
            show_secrets: false,
            emit_data: false,
            ..InspectOptions::DEFAULT
        };
        amqpeek::replay::run(source, opts, &mut [&mut sink]).unwrap();
        sink.flush().unwrap();
    }
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let path = dir.join("many.jsonl");
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut dropped = 0;
    for (i, line) in lines.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event"] == "close" && v["conn"].as_u64().unwrap().is_multiple_of(4) {
            dropped += 1;
            continue;
        }
        if i == lines.len() / 2 {
            writeln!(out, "{{\"event\": \"frame\", truncated").unwrap();
        }
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
    assert!(dropped > 3, "close lines dropped: {dropped}");
    path
}

#[test]
fn generated_interleaved_broken_connections_check_and_replay_the_same_with_1_2_and_4_jobs() {
    let dir = tempfile::tempdir().unwrap();
    // About 5,000 source events: several rounds of dealing.
    let pcapng = generate(dir.path(), 100);
    let one = assert_jobs_agree(&pcapng);
    assert_eq!(one.stats.connections, 100);
    // The capture exercises the merge: several rules, each hit on many connections.
    let findings = one.report.findings();
    let rules: std::collections::BTreeSet<_> = findings.iter().map(|f| &f.rule).collect();
    assert!(rules.len() >= 3, "{} rules", rules.len());
    let conns_hit: std::collections::BTreeSet<_> = findings.iter().map(|f| f.conn).collect();
    assert!(conns_hit.len() >= 20, "{} connections hit", conns_hit.len());
    // One rule's findings come from connections dealt to different threads.
    assert!(
        rules
            .iter()
            .any(|r| findings.iter().filter(|f| &f.rule == *r).count() >= 10),
        "no rule was hit on many connections"
    );

    let jsonl = to_jsonl(&pcapng, dir.path());
    let one = assert_jobs_agree(&jsonl);
    assert_eq!(one.stats.connections, 100);
    assert_eq!(one.stats.read_errors.len(), 1);
}
