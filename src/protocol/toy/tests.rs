//! The toy through the real pipeline: crafted bytes decoded, tracked and judged as `check`
//! judges a capture, written by the JSONL sink, and narrowed by the filter.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::codec::{ToyFrame, encode_frame};
use crate::base::{Chunk, CloseReason, ConnId, Dir, Timestamp};
use crate::capture::SourceEvent;
use crate::driver::offline::{self, Pace};
use crate::event::{Event, EventKind};
use crate::filter::Filter;
use crate::pipeline::{InspectOptions, Sink};
use crate::protocol::AnyFrame;
use crate::sinks::FilteredSink;
use crate::sinks::jsonl::{JsonOptions, JsonlSink};

/// A toy connection: each side's header, the client's frames on channels 1 (5 bytes) and 2
/// (20 bytes: more than the rule allows), the server's on channel 1.
fn connection() -> Vec<SourceEvent> {
    connection_with(&[])
}

/// [`connection`], with the client's `extra` frames (channel, payload) after its two.
fn connection_with(extra: &[(u16, &[u8])]) -> Vec<SourceEvent> {
    let mut bytes = Vec::new();
    for (channel, payload) in extra {
        bytes.extend(encode_frame(*channel, payload));
    }
    connection_then(bytes)
}

/// [`connection`], with `extra` bytes from the client after its two frames.
fn connection_then(extra: Vec<u8>) -> Vec<SourceEvent> {
    let conn: ConnId = 1;
    let chunk = |dir, ts, bytes: Vec<u8>| {
        SourceEvent::Chunk(Chunk {
            conn,
            dir,
            ts: Timestamp(ts),
            bytes: Bytes::from(bytes),
        })
    };
    let mut c2s = b"AMQPTOY1".to_vec();
    c2s.extend(encode_frame(1, b"hello"));
    c2s.extend(encode_frame(2, &[b'x'; 20]));
    c2s.extend(extra);
    let mut s2c = b"AMQPTOY1".to_vec();
    s2c.extend(encode_frame(1, b"ok"));
    vec![
        SourceEvent::Connect {
            conn,
            ts: Timestamp(1_000_000),
            client: "127.0.0.1:40000".parse().unwrap(),
            server: "127.0.0.1:7777".parse().unwrap(),
        },
        chunk(Dir::C2S, 1_000_001, c2s),
        chunk(Dir::S2C, 1_000_002, s2c),
        SourceEvent::Close {
            conn,
            ts: Timestamp(1_000_003),
            reason: CloseReason::FinBothWays { first: None },
        },
    ]
}

/// Keeps every event it is given.
struct Keep(Arc<Mutex<Vec<Event>>>);

impl Sink for Keep {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.lock().unwrap().push(ev.clone());
        Ok(())
    }
}

/// Writes JSONL into a shared buffer.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSONL records the offline driver writes of the connection, through `filter` if any.
fn jsonl(filter: Option<&str>) -> Vec<serde_json::Value> {
    jsonl_of(connection(), filter)
}

/// The JSONL records the offline driver writes of `events`, through `filter` if any.
fn jsonl_of(events: Vec<SourceEvent>, filter: Option<&str>) -> Vec<serde_json::Value> {
    let out = Shared::default();
    let sink = JsonlSink::new(out.clone(), JsonOptions::default());
    let sink: Box<dyn Sink + Send> = match filter {
        Some(f) => Box::new(FilteredSink::new(sink, Filter::parse(f).unwrap())),
        None => Box::new(sink),
    };
    offline::run(
        events,
        InspectOptions::DEFAULT,
        vec![sink],
        NonZeroUsize::MIN,
        Pace::Batched,
    );
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn frames(records: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    records.iter().filter(|r| r["event"] == "frame").collect()
}

#[test]
fn the_pipeline_decodes_the_toy_frames() {
    let events = Arc::new(Mutex::new(Vec::new()));
    offline::run(
        connection(),
        InspectOptions::DEFAULT,
        vec![Box::new(Keep(events.clone()))],
        NonZeroUsize::MIN,
        Pace::Batched,
    );
    let events = events.lock().unwrap();
    let decoded: Vec<(Dir, u64, ToyFrame)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame(fe) => match &fe.frame {
                AnyFrame::Toy(f) => Some((fe.dir, fe.offset, f.clone())),
                other => panic!("not a toy frame: {other:?}"),
            },
            _ => None,
        })
        .collect();
    let want = |channel, payload: &[u8], offset| ToyFrame {
        channel,
        length: payload.len() as u32,
        payload: Bytes::copy_from_slice(payload),
        offset,
        streamed: 0,
    };
    assert_eq!(
        decoded,
        vec![
            (Dir::C2S, 8, want(1, b"hello", 8)),
            (Dir::C2S, 19, want(2, &[b'x'; 20], 19)),
            (Dir::S2C, 8, want(1, b"ok", 8)),
        ]
    );
    let violations: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Violation(v) => Some(v.rule.id),
            _ => None,
        })
        .collect();
    assert_eq!(violations, ["toy.frame-too-long"]);
    // The tracker's last state, as the TUI's state pane shows it.
    let state = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::State(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a state event");
    assert_eq!(state.name, "TOY 3");
    let items = crate::tui::views::state_items::state_items(&state);
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(texts, ["toy frames: 3"]);
}

#[test]
fn check_reports_the_toy_rule_once_on_the_channel_that_broke_it() {
    let run = crate::replay::parallel::check_with(
        connection(),
        NonZeroUsize::MIN,
        InspectOptions::DEFAULT,
    );
    let findings = run.report.findings();
    let got: Vec<(&str, Dir, Option<u16>, u64)> = findings
        .iter()
        .map(|f| (f.rule.as_str(), f.dir, f.scope.channel, f.count))
        .collect();
    assert_eq!(got, [("toy.frame-too-long", Dir::C2S, Some(2), 1)]);
    assert_eq!(findings[0].spec, "Toy §1");
    assert!(crate::state::rules::by_id("toy.frame-too-long").is_some());
}

#[test]
fn the_jsonl_sink_writes_the_toy_frames_and_the_violation() {
    let records = jsonl(None);
    let frames = frames(&records);
    let got: Vec<(&str, &str, u64, &serde_json::Value)> = frames
        .iter()
        .map(|r| {
            (
                r["proto"].as_str().unwrap(),
                r["name"].as_str().unwrap(),
                r["channel"].as_u64().unwrap(),
                &r["fields"],
            )
        })
        .collect();
    let fields = |ch: u64, len: u64, p: &str| serde_json::json!({"channel": ch, "length": len, "payload": p});
    assert_eq!(
        got,
        [
            ("toy", "toy-frame", 1, &fields(1, 5, "hello")),
            ("toy", "toy-frame", 2, &fields(2, 20, &"x".repeat(20))),
            ("toy", "toy-frame", 1, &fields(1, 2, "ok")),
        ]
    );
    // Each side's header is recorded under the toy's own name.
    let headers: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["event"] == "header")
        .map(|r| (r["dir"].as_str().unwrap(), r["proto"].as_str().unwrap()))
        .collect();
    assert_eq!(headers, [("c2s", "toy"), ("s2c", "toy")], "{records:?}");
    let violations: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["event"] == "violation")
        .collect();
    assert_eq!(violations.len(), 1, "{records:?}");
    assert_eq!(violations[0]["rule"], "toy.frame-too-long");
    assert_eq!(violations[0]["offset"], 19);
}

#[test]
fn the_filter_takes_the_toy_proto_and_its_fields() {
    let lengths = |f: &str| -> Vec<u64> {
        frames(&jsonl(Some(f)))
            .iter()
            .map(|r| r["fields"]["length"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(lengths("proto:toy"), [5, 20, 2]);
    assert_eq!(lengths("proto:toy length:17..100"), [20]);
    assert_eq!(lengths("payload:hell"), [5]);
    assert_eq!(lengths("proto:toy !length:5"), [20, 2]);
    assert_eq!(lengths("proto:amqp-1.0"), Vec::<u64>::new());
    assert!(Filter::parse("proto:toy-x").is_err());
    // A number no toy length can be is refused, as for any protocol's field.
    assert!(Filter::parse("length:-1").is_err());
    assert!(Filter::parse("length:4294967296").is_err());
    assert!(Filter::parse("length:4294967295").is_ok());
}

#[test]
fn the_toy_masking_hook_masks_its_secret() {
    let records = jsonl_of(
        connection_with(&[(4, b"secret:pw"), (5, b"public:pw")]),
        None,
    );
    let payloads: Vec<&str> = frames(&records)
        .iter()
        .filter(|r| r["channel"].as_u64().unwrap() >= 4)
        .map(|r| r["fields"]["payload"].as_str().unwrap())
        .collect();
    assert_eq!(payloads, ["secret:**", "public:pw"]);
    // Nothing of the secret is left anywhere in the records.
    let text = serde_json::to_string(&records).unwrap();
    assert!(!text.contains("secret:pw"), "{text}");
}

#[test]
fn the_toy_masks_the_secret_of_a_frame_cut_short_by_the_close() {
    // A frame announcing 12 payload bytes, of which the close leaves 9.
    let mut cut = encode_frame(4, b"secret:pwxyz");
    cut.truncate(cut.len() - 3);
    let records = jsonl_of(connection_then(cut), None);
    use base64::Engine;
    let undecoded: Vec<Vec<u8>> = records
        .iter()
        .filter(|r| r["event"] == "bytes" && r["dir"] == "c2s")
        .map(|r| {
            let raw = r["raw"].as_str().unwrap();
            base64::engine::general_purpose::STANDARD
                .decode(raw)
                .unwrap()
        })
        .collect();
    let mut want = encode_frame(4, b"secret:**");
    want[..4].copy_from_slice(&12u32.to_be_bytes());
    assert_eq!(undecoded, [want], "{records:?}");
}

#[test]
fn a_server_answering_the_toy_header_with_no_header_breaks_the_decoded_protocol() {
    // The toy's header is one amqpeek decodes: what the server answers is judged, not passed
    // over as the answer to a protocol it cannot follow.
    let mut events = connection();
    let SourceEvent::Chunk(s2c) = &mut events[2] else {
        panic!("the server's chunk");
    };
    s2c.bytes = Bytes::from_static(b"HTTP/1.1 400 Bad Request\r\n\r\n");
    let run =
        crate::replay::parallel::check_with(events, NonZeroUsize::MIN, InspectOptions::DEFAULT);
    let findings = run.report.findings();
    let got: Vec<(&str, Dir)> = findings.iter().map(|f| (f.rule.as_str(), f.dir)).collect();
    assert!(
        got.contains(&("codec.undecodable-stream", Dir::S2C)),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|(r, _)| *r == "codec.not-decoded"),
        "{got:?}"
    );
}

#[test]
fn decode_tree_shows_the_toy_fields_with_their_ranges() {
    let raw = encode_frame(3, b"hi");
    let frame = crate::protocol::ProtocolId::Toy
        .decode_frame(Bytes::from(raw.clone()), 0)
        .unwrap();
    let mut out = String::new();
    let at = |r: std::ops::Range<usize>| format!("[{}..{})", 100 + r.start, 100 + r.end);
    frame.tree_into(&raw, &at, &mut out);
    assert_eq!(
        out,
        "  channel = 3 [104..106)\n  length = 2 [100..104)\n  payload = \"hi\" [106..108)\n"
    );
}
