//! The JSONL reader's memory is bounded by what it is told, not by what the file holds: a
//! line over the limit is refused without being held, and a capture of many connections that
//! never send a byte costs a number each, not an inspector each.
//!
//! Memory is read from `/proc/self/status` (`VmRSS`), as the README's memory benchmarks do.

use std::io::Write;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::event::Event;
use amqpeek::pipeline::{InspectOptions, Sink};

/// This process's resident set, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

fn connect(conn: u64) -> String {
    format!(
        "{{\"client\":\"127.0.0.1:{}\",\"conn\":{conn},\"event\":\"connect\",\"ts\":\"2026-11-29T13:30:20.600303Z\",\"upstream\":\"127.0.0.1:5672\",\"v\":1}}\n",
        1024 + conn % 60_000
    )
}

fn close(conn: u64) -> String {
    format!(
        "{{\"bytes_c2s\":0,\"bytes_s2c\":0,\"conn\":{conn},\"event\":\"close\",\"reason\":\"client closed\",\"ts\":\"2026-11-29T13:30:21.600303Z\",\"v\":1}}\n"
    )
}

#[test]
fn a_line_over_the_limit_is_refused_without_being_held_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(connect(1).as_bytes()).unwrap();
    // A line 1 MiB over the limit, written in pieces (the test holds none of it either).
    let limit = amqpeek::capture::jsonl_read::MAX_LINE;
    f.write_all(b"{\"event\":\"frame\",\"raw\":\"").unwrap();
    let piece = vec![b'A'; 1 << 20];
    for _ in 0..(limit >> 20) + 1 {
        f.write_all(&piece).unwrap();
    }
    f.write_all(b"\"}\n").unwrap();
    f.write_all(close(1).as_bytes()).unwrap();
    drop(f);

    let before = rss();
    let mut source = capture::open(&path, CaptureOptions::default()).unwrap();
    let mut refused = None;
    let mut closed = false;
    let mut after_refusal = 0;
    for ev in source.by_ref() {
        match ev {
            SourceEvent::Error { message, .. } if message.contains("longer than") => {
                // Measured while the reader is alive and has just passed the line.
                after_refusal = rss();
                refused = Some(message);
            }
            SourceEvent::Close { .. } => closed = true,
            _ => {}
        }
    }
    let message = refused.expect("the long line is reported");
    assert!(closed, "the line after it is still read");
    let grew = after_refusal.saturating_sub(before);
    assert!(
        grew < (limit / 4) as u64,
        "{message}: the reader grew by {grew} bytes passing a line of over {limit} bytes"
    );
}

/// A sink that keeps nothing.
struct Discard;

impl Sink for Discard {
    fn event(&mut self, _: &Event) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn connections_that_never_send_a_byte_stay_in_bounded_memory() {
    const CONNS: u64 = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("connects.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for conn in 1..=CONNS {
        f.write_all(connect(conn).as_bytes()).unwrap();
    }
    // They all close at the end, so every one is open at once before.
    for conn in 1..=CONNS {
        f.write_all(close(conn).as_bytes()).unwrap();
    }
    drop(f);

    let before = rss();
    let source = capture::open(&path, CaptureOptions::default()).unwrap();
    let mut sink = Discard;
    let stats = amqpeek::replay::run(source, InspectOptions::default(), &mut [&mut sink]).unwrap();
    let grew = rss().saturating_sub(before);
    assert_eq!(stats.connections, CONNS);
    // An inspector each (about 1.1 KB) would be over 200 MB; a number each is a few MB.
    assert!(
        grew < 64 << 20,
        "{CONNS} idle connections grew the process by {} MiB",
        grew >> 20
    );
}

fn header(conn: u64) -> String {
    format!(
        "{{\"conn\":{conn},\"dir\":\"c2s\",\"event\":\"header\",\"offset\":0,\"proto\":\"amqp-0-9-1\",\"raw\":\"QU1RUAAACQE=\",\"ts\":\"2026-11-29T13:30:20.700000Z\",\"v\":1}}\n"
    )
}

#[test]
fn connections_opened_and_never_closed_are_held_up_to_the_bound_and_the_rest_closed_as_evicted() {
    const CONNS: u64 = 5_000;
    const BOUND: usize = 1_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for conn in 1..=CONNS {
        f.write_all(connect(conn).as_bytes()).unwrap();
        f.write_all(header(conn).as_bytes()).unwrap();
    }
    drop(f);

    let opts = CaptureOptions {
        max_connections: BOUND,
        ..CaptureOptions::default()
    };
    let mut open = std::collections::HashSet::new();
    let (mut most_open, mut evicted) = (0, Vec::new());
    for ev in capture::open(&path, opts).unwrap() {
        match ev {
            SourceEvent::Connect { conn, .. } => {
                open.insert(conn);
                most_open = most_open.max(open.len());
            }
            SourceEvent::Close { conn, reason, .. } => {
                assert!(
                    open.remove(&conn),
                    "conn {conn} closed once, after its connect"
                );
                if reason == amqpeek::event::CloseReason::Evicted {
                    evicted.push(conn);
                }
            }
            _ => {}
        }
    }
    assert!(
        most_open <= BOUND,
        "{most_open} connections held open at once"
    );
    assert!(
        evicted.len() as u64 >= CONNS - BOUND as u64,
        "{} of {CONNS} connections closed as evicted",
        evicted.len()
    );
    assert!(evicted.is_sorted(), "the least recently active first");
    // What was not evicted closes when the capture ends (by the driver), never twice.
    assert!(open.len() <= BOUND);
}

#[test]
fn an_eviction_is_said_in_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for conn in 1..=3 {
        f.write_all(connect(conn).as_bytes()).unwrap();
        f.write_all(header(conn).as_bytes()).unwrap();
    }
    drop(f);
    let opts = CaptureOptions {
        max_connections: 2,
        ..CaptureOptions::default()
    };
    let source = capture::open(&path, opts).unwrap();
    let mut trace = amqpeek::sinks::trace::TraceSink::new(Vec::new());
    amqpeek::replay::run(source, InspectOptions::default(), &mut [&mut trace]).unwrap();
    let text = String::from_utf8(trace.into_inner()).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("#1 close: evicted: too many connections tracked at once")),
        "{text}"
    );
}
