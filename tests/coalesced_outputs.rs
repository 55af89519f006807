//! What amqpeek writes stays within a small factor of what it relays: a flood of 8-byte
//! violating frames (AMQP 1.0 empty frames after the client's close, crafted: no real peer
//! sends it) replayed with `--jsonl`, `--pcap` and the text trace writes the first few
//! violations one by one and the rest as one counted record (the trace leaves out the frames
//! that carried only counted ones), and `check` of the input, of the JSONL and of the pcapng
//! still count every occurrence.

use std::path::Path;
use std::process::Command;

use amqpeek::codec::amqp10::{Str, Value, described_list, encode_frame};
use amqpeek::event::{CloseInfo, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::Sink;
use amqpeek::sinks::pcapng::PcapngSink;
use bytes::Bytes;

/// Empty frames flooded after the client's close.
const FLOOD: usize = 131_072;

/// Writes the flood as a pcapng; returns the payload bytes it holds.
fn write_flood(path: &Path) -> u64 {
    let mut sink = PcapngSink::create(path).unwrap();
    let mut t = 1_764_417_600_000_000i64;
    let mut off = [0u64; 2];
    let mut ev = |sink: &mut PcapngSink<_>, kind| {
        t += 10;
        sink.event(&Event {
            conn: 1,
            ts: Timestamp(t),
            kind,
        })
        .unwrap();
    };
    let connect = EventKind::Connect {
        client: "10.0.0.2:40000".parse().unwrap(),
        upstream: "10.0.0.1:5672".parse().unwrap(),
    };
    ev(&mut sink, connect);
    let mut data = |sink: &mut PcapngSink<_>, dir: Dir, b: Vec<u8>| {
        let offset = off[dir.index()];
        off[dir.index()] += b.len() as u64;
        let bytes = Bytes::from(b);
        ev(sink, EventKind::Data { dir, offset, bytes });
    };
    let frame = |p: Value| encode_frame(0, 0, Some(&p), &[]).unwrap();
    let open = |id: &str| frame(described_list(0x10, vec![Value::String(Str::from(id))]));
    for d in [Dir::C2S, Dir::S2C] {
        data(&mut sink, d, b"AMQP\x00\x01\x00\x00".to_vec());
    }
    data(&mut sink, Dir::C2S, open("client"));
    data(&mut sink, Dir::S2C, open("broker"));
    data(&mut sink, Dir::C2S, frame(described_list(0x18, vec![])));
    // The flood, in relay-sized chunks of 8-byte empty frames.
    let empty = [0, 0, 0, 8, 2, 0, 0, 0];
    for _ in 0..FLOOD / 2048 {
        data(&mut sink, Dir::C2S, empty.repeat(2048));
    }
    let close = EventKind::Close(CloseInfo {
        reason: "client closed".into(),
        bytes_c2s: off[0],
        bytes_s2c: off[1],
    });
    ev(&mut sink, close);
    sink.flush().unwrap();
    off[0] + off[1]
}

fn amqpeek(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .output()
        .unwrap()
}

/// `check --format json` of `capture`: (rule, count) of each finding.
fn findings(capture: &Path) -> Vec<(String, u64)> {
    let out = amqpeek(&["check", "--format", "json", capture.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut f: Vec<(String, u64)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let rule = f["rule"].as_str().unwrap().to_string();
            (rule, f["count"].as_u64().unwrap())
        })
        .collect();
    f.sort();
    f
}

#[test]
fn a_flood_of_violating_frames_is_recorded_once_with_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("flood.pcapng");
    let relayed = write_flood(&input);
    let (jsonl, pcap) = (dir.path().join("out.jsonl"), dir.path().join("out.pcapng"));
    let out = amqpeek(&[
        "replay",
        input.to_str().unwrap(),
        "--no-tui",
        "--jsonl",
        jsonl.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    let trace = out.stdout.len() as u64;
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let ratio = |n: u64| n as f64 / relayed as f64;
    assert!(
        ratio(size(&pcap)) <= 3.0,
        "pcapng {} bytes for {relayed} relayed",
        size(&pcap)
    );
    assert!(
        ratio(trace) <= 3.0,
        "trace {trace} bytes for {relayed} relayed"
    );
    // The JSONL keeps a record per frame (its bytes replay): about 200 bytes for an 8-byte
    // frame. What coalescing bounds is the rest: the violations' records.
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let violations: usize = text
        .lines()
        .filter(|l| l.contains("\"event\":\"violation\""))
        .map(|l| l.len() + 1)
        .sum();
    assert!(
        violations < 16 * 1024,
        "{violations} bytes of violation records in the JSONL"
    );
    assert!(
        ratio(size(&jsonl)) <= 26.0,
        "JSONL {} bytes for {relayed} relayed",
        size(&jsonl)
    );

    // The counted record holds the rest: the JSONL's violations add up to every occurrence.
    let occurrences: u64 = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "violation")
        .map(|v| v["count"].as_u64().unwrap_or(1))
        .sum();
    let expected = findings(&input);
    let total: u64 = expected.iter().map(|(_, n)| n).sum();
    assert!(total >= FLOOD as u64, "the flood is judged: {expected:?}");
    assert_eq!(
        occurrences, total,
        "the JSONL's records count every occurrence"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("more time(s)"),
        "the trace says what it counted"
    );
    // The checks of what was written agree with the check of what was relayed.
    assert_eq!(findings(&jsonl), expected, "check of the JSONL");
    assert_eq!(findings(&pcap), expected, "check of the pcapng");
}
