//! Captures are lossless: every relayed byte is in the JSONL exactly once (headers, frames and
//! `bytes` records), so the JSONL's `raw`s in offset order are each direction's stream, and
//! `check` of the JSONL and `check` of the pcapng judge exactly as the live inspection did —
//! over the shipped captures, crafted violations (bad frame-ends, bad sizes, a stream that is
//! not AMQP) and the shipped conversations cut at every point.

use std::collections::BTreeMap;
use std::path::Path;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::event::{Chunk, Dir, Timestamp};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use amqpeek::verdict::CheckReport;
use base64::Engine;
use bytes::Bytes;

/// One finding as the verdict sees it: connection, peer, rule, where, how many times, and the
/// offsets of the occurrences it keeps (the first few and the last).
type Finding = (u64, &'static str, String, String, u64, Vec<u64>);

/// The verdict's findings, sorted.
fn findings(report: &CheckReport) -> Vec<Finding> {
    let mut out: Vec<Finding> = report
        .findings()
        .iter()
        .map(|f| {
            let mut offsets: Vec<u64> = f.first.iter().map(|o| o.offset).collect();
            offsets.push(f.last().offset);
            (
                f.conn,
                f.dir.as_str(),
                f.rule.clone(),
                f.scope.describe(),
                f.count,
                offsets,
            )
        })
        .collect();
    out.sort();
    out
}

/// What one run of a conversation produced.
struct Run {
    live: Vec<Finding>,
    jsonl: Vec<u8>,
    pcapng: Vec<u8>,
}

/// The conversation through the inspection (as the proxy runs it), into a JSONL and a pcapng
/// capture and a verdict.
fn live(events: Vec<SourceEvent>) -> Run {
    let mut report = CheckReport::new();
    let mut jsonl = JsonlSink::new(Vec::new(), JsonOptions::default());
    let mut pcap = PcapngSink::new(Vec::new()).unwrap();
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: true,
        ..InspectOptions::DEFAULT
    };
    amqpeek::replay::run(events, opts, &mut [&mut report, &mut jsonl, &mut pcap]).unwrap();
    jsonl.flush().unwrap();
    Run {
        live: findings(&report),
        jsonl: jsonl.into_inner(),
        pcapng: pcap.into_inner().unwrap(),
    }
}

/// `check` of a capture held in memory.
fn check(bytes: &[u8]) -> Vec<Finding> {
    let source = capture::from_reader(
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        Default::default(),
    )
    .unwrap();
    let mut report = CheckReport::new();
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: false,
        ..InspectOptions::DEFAULT
    };
    let stats = amqpeek::replay::run(source, opts, &mut [&mut report]).unwrap();
    assert!(stats.read_errors.is_empty(), "{:?}", stats.read_errors);
    findings(&report)
}

/// Each connection's and direction's bytes, rebuilt from the JSONL's `raw`s in offset order;
/// panics when a byte is missing or written twice.
fn jsonl_streams(jsonl: &[u8]) -> BTreeMap<(u64, String), Vec<u8>> {
    let mut records: Vec<(u64, String, u64, Vec<u8>)> = Vec::new();
    for line in jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if let Some(raw) = v["raw"].as_str() {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(raw)
                .unwrap();
            let dir = v["dir"].as_str().unwrap().to_string();
            records.push((
                v["conn"].as_u64().unwrap(),
                dir,
                v["offset"].as_u64().unwrap(),
                raw,
            ));
        }
    }
    records.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
    let mut out: BTreeMap<(u64, String), Vec<u8>> = BTreeMap::new();
    for (conn, dir, offset, raw) in records {
        let s = out.entry((conn, dir.clone())).or_default();
        assert_eq!(
            offset,
            s.len() as u64,
            "conn {conn} {dir}: a hole or an overlap at {offset}"
        );
        s.extend_from_slice(&raw);
    }
    out
}

/// `written` is `sent`, but for bytes masked with `*` (an incomplete or malformed frame that
/// may hold a credential).
fn assert_same_but_masked(written: &[u8], sent: &[u8], what: &str) {
    assert_eq!(written.len(), sent.len(), "{what}: every byte once");
    let differ = written
        .iter()
        .zip(sent)
        .position(|(w, s)| w != s && *w != b'*');
    assert_eq!(differ, None, "{what}: a byte changed");
}

/// The bytes each connection sent each way in `events`.
fn sent(events: &[SourceEvent]) -> BTreeMap<(u64, String), Vec<u8>> {
    let mut out: BTreeMap<(u64, String), Vec<u8>> = BTreeMap::new();
    for e in events {
        if let SourceEvent::Chunk(c) = e {
            out.entry((c.conn, c.dir.as_str().to_string()))
                .or_default()
                .extend_from_slice(&c.bytes);
        }
    }
    out
}

/// The three verdicts agree, and the JSONL holds every byte exactly once. Returns the verdict.
fn assert_lossless(what: &str, events: Vec<SourceEvent>) -> Vec<Finding> {
    let bytes = sent(&events);
    let run = live(events);
    let written = jsonl_streams(&run.jsonl);
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        bytes.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (key, sent) in &bytes {
        assert_same_but_masked(
            &written[key],
            sent,
            &format!("{what}: {key:?} in the JSONL"),
        );
    }
    assert_eq!(check(&run.jsonl), run.live, "{what}: check of the JSONL");
    assert_eq!(check(&run.pcapng), run.live, "{what}: check of the pcapng");
    run.live
}

/// A shipped capture's events (JSONL: one chunk per header or frame).
fn shipped(name: &str) -> Vec<SourceEvent> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    capture::open(&path, CaptureOptions::default())
        .unwrap()
        .filter(|e| !matches!(e, SourceEvent::Error { .. }))
        .collect()
}

const SHIPPED: [&str; 3] = [
    "amqp10-fe2o3.jsonl",
    "amqp091-lapin.jsonl",
    "amqp091-bad-ack.jsonl",
];

fn rules(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.2.as_str()).collect()
}

#[test]
fn the_shipped_captures_judge_the_same_from_both_captures() {
    for name in SHIPPED {
        assert_lossless(name, shipped(name));
    }
}

/// The lapin conversation with its `basic.publish` frame's frame-end broken.
fn publish_with_a_bad_frame_end() -> Vec<SourceEvent> {
    let mut events = shipped("amqp091-lapin.jsonl");
    let publish = events
        .iter_mut()
        .find_map(|e| match e {
            SourceEvent::Chunk(c)
                if c.bytes.len() > 11 && c.bytes[0] == 1 && c.bytes[7..11] == [0, 60, 0, 40] =>
            {
                Some(c)
            }
            _ => None,
        })
        .expect("a basic.publish");
    let mut b = publish.bytes.to_vec();
    *b.last_mut().unwrap() = 0;
    publish.bytes = Bytes::from(b);
    events
}

#[test]
fn a_publish_with_a_bad_frame_end_is_judged_the_same_from_the_jsonl() {
    let found = assert_lossless("bad frame-end", publish_with_a_bad_frame_end());
    let r = rules(&found);
    assert!(r.contains(&"codec.malformed-frame"), "{found:?}");
    assert!(
        r.contains(&"amqp091.content.unexpected-header"),
        "{found:?}"
    );
}

fn conversation(chunks: &[(Dir, &[u8])]) -> Vec<SourceEvent> {
    conversation_on(5672, chunks)
}

/// A conversation with a server on `port`, ended by FIN both ways.
fn conversation_on(port: u16, chunks: &[(Dir, &[u8])]) -> Vec<SourceEvent> {
    let mut events = vec![SourceEvent::Connect {
        conn: 1,
        ts: Timestamp(1),
        client: "127.0.0.1:40000".parse().unwrap(),
        server: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    }];
    for (i, (dir, bytes)) in chunks.iter().enumerate() {
        events.push(SourceEvent::Chunk(Chunk {
            conn: 1,
            dir: *dir,
            ts: Timestamp(2 + i as i64),
            bytes: Bytes::copy_from_slice(bytes),
        }));
    }
    events.push(SourceEvent::Close {
        conn: 1,
        ts: Timestamp(100),
        reason: "FIN both ways".into(),
    });
    events
}

#[test]
fn a_stream_that_is_not_amqp_is_in_the_jsonl_whole() {
    let found = assert_lossless(
        "http",
        conversation(&[
            (Dir::C2S, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            (Dir::S2C, b"HTTP/1.1 400 Bad Request\r\n\r\n"),
            (Dir::C2S, b"more"),
        ]),
    );
    assert!(
        rules(&found).contains(&"codec.undecodable-stream"),
        "{found:?}"
    );
}

/// One direction's bytes after the other.
type Chunks = Vec<(Dir, Vec<u8>)>;

#[test]
fn bad_sizes_and_broken_frames_are_judged_the_same() {
    let h10 = b"AMQP\x00\x01\x00\x00";
    let empty = [0u8, 0, 0, 8, 2, 0, 0, 0];
    let cases: Vec<(&str, Chunks)> = vec![
        (
            "1.0 size below 8",
            vec![(
                Dir::C2S,
                [&h10[..], &[0, 0, 0, 3, 2, 0, 0, 0, 9, 9]].concat(),
            )],
        ),
        (
            "1.0 bad doff",
            vec![(
                Dir::C2S,
                [&h10[..], &[0, 0, 0, 8, 1, 0, 0, 0], &empty].concat(),
            )],
        ),
        (
            "1.0 garbage performative, then frames",
            vec![
                (
                    Dir::C2S,
                    [&h10[..], &[0, 0, 0, 10, 2, 0, 0, 0, 0x2a, 0x2a], &empty].concat(),
                ),
                (Dir::S2C, h10.to_vec()),
            ],
        ),
        (
            "0-9-1 bad frame type",
            vec![(
                Dir::C2S,
                [&b"AMQP\x00\x00\x09\x01"[..], &[7, 0, 0, 0, 0, 0, 0, 0xce]].concat(),
            )],
        ),
    ];
    for (what, chunks) in cases {
        let chunks: Vec<(Dir, &[u8])> = chunks.iter().map(|(d, b)| (*d, &b[..])).collect();
        let found = assert_lossless(what, conversation(&chunks));
        assert!(!found.is_empty(), "{what}: a violation is expected");
    }
}

/// `events` up to the `cut`-th byte of its chunks (in order), then the close.
fn cut_at(events: &[SourceEvent], cut: usize) -> Vec<SourceEvent> {
    let mut out = Vec::new();
    let mut left = cut;
    let mut last = Timestamp(0);
    for e in events {
        match e {
            SourceEvent::Chunk(c) => {
                if left == 0 {
                    continue;
                }
                last = c.ts;
                let n = left.min(c.bytes.len());
                left -= n;
                let mut c = c.clone();
                c.bytes = c.bytes.slice(..n);
                out.push(SourceEvent::Chunk(c));
            }
            SourceEvent::Close { .. } => {}
            other => out.push(other.clone()),
        }
    }
    if let Some(SourceEvent::Connect { conn, .. }) = out.first() {
        let conn = *conn;
        out.push(SourceEvent::Close {
            conn,
            ts: Timestamp(last.0 + 1),
            reason: "client reset: Connection reset by peer (os error 104)".into(),
        });
    }
    out
}

#[test]
fn a_conversation_cut_at_every_point_is_judged_the_same() {
    for name in ["amqp091-lapin.jsonl", "amqp10-fe2o3.jsonl"] {
        let events = shipped(name);
        let total: usize = sent(&events).values().map(Vec::len).sum();
        let mut truncated = 0;
        // Every point of the opening (headers, SASL, open, begin, attach, declare), then
        // every eleventh.
        for cut in (0..=total).filter(|&c| c < 800 || c % 11 == 0 || c == total) {
            let found = assert_lossless(&format!("{name} cut at {cut}"), cut_at(&events, cut));
            truncated += usize::from(rules(&found).contains(&"codec.truncated-frame"));
        }
        assert!(
            truncated > 400,
            "{name}: most cuts are inside a frame ({truncated})"
        );
    }
}

#[test]
fn a_malformed_credential_frame_is_masked_and_still_judged_the_same() {
    // 0-9-1 start-ok whose response is followed by a wrong frame-end.
    let mut start_ok = vec![1u8, 0, 0];
    let payload: Vec<u8> = [
        &[0u8, 10, 0, 11][..],
        &[0, 0, 0, 0], // client-properties: empty table
        &[5, b'P', b'L', b'A', b'I', b'N'],
        &[0, 0, 0, 14],
        b"\0guest\0s3cr3t!",
        &[5, b'e', b'n', b'_', b'U', b'S'],
    ]
    .concat();
    start_ok.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    start_ok.extend_from_slice(&payload);
    start_ok.push(0x00); // not 0xCE
    let events = conversation(&[(Dir::C2S, b"AMQP\x00\x00\x09\x01"), (Dir::C2S, &start_ok)]);
    let run = live(events.clone());
    for (what, bytes) in [("jsonl", &run.jsonl), ("pcapng", &run.pcapng)] {
        assert!(
            !bytes.windows(6).any(|w| w == b"s3cr3t"),
            "{what} holds the secret"
        );
    }
    assert!(
        !String::from_utf8_lossy(&run.jsonl)
            .contains(&base64::engine::general_purpose::STANDARD.encode(b"s3cr3t!"))
    );
    assert!(
        rules(&run.live).contains(&"codec.malformed-frame"),
        "{:?}",
        run.live
    );
    assert_eq!(check(&run.jsonl), run.live);
    assert_eq!(check(&run.pcapng), run.live);
}

/// `bytes` cut into `n`-byte chunks, all in direction `dir`.
fn chunked(dir: Dir, bytes: &[u8], n: usize) -> Vec<(Dir, &[u8])> {
    bytes.chunks(n).map(|c| (dir, c)).collect()
}

#[test]
fn a_frame_larger_than_the_budget_is_decoded_from_its_head_and_captured_whole() {
    use amqpeek::codec::amqp10;
    // 5 MB frames, over the default budget's 1 MiB a frame: an AMQP 1.0 transfer, a 0-9-1
    // body frame, and a SASL frame whose streamed bytes must be masked as they pass.
    let transfer =
        amqp10::described_list(0x14, vec![amqp10::Value::Uint(0), amqp10::Value::Uint(0)]);
    let mut payload = vec![0x00, 0x53, 0x75, 0xb0];
    payload.extend_from_slice(&(5_000_000u32 - 8).to_be_bytes());
    payload.resize(5_000_000, b'm');
    let mut c10 = b"AMQP\x00\x01\x00\x00".to_vec();
    c10.extend(amqp10::encode_frame(0, 0, Some(&transfer), &payload).unwrap());
    let mut sasl = b"AMQP\x03\x01\x00\x00".to_vec();
    let init = amqp10::described_list(
        0x41,
        vec![
            amqp10::Value::Symbol("PLAIN".into()),
            amqp10::Value::Binary(Bytes::from(vec![b'S'; 5_000_000])),
        ],
    );
    sasl.extend(amqp10::encode_frame(1, 0, Some(&init), &[]).unwrap());
    let mut c091 = b"AMQP\x00\x00\x09\x01".to_vec();
    let body = amqpeek::codec::amqp091::FrameKind::Body(Bytes::from(vec![b'b'; 5_000_000]));
    amqpeek::codec::amqp091::encode_frame(1, &body, &mut c091);
    for (what, stream) in [("1.0", &c10), ("sasl", &sasl), ("0-9-1", &c091)] {
        let events = conversation(&chunked(Dir::C2S, stream, 65_536));
        assert_lossless(what, events.clone());
        let run = live(events);
        let frame = run
            .jsonl
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
            .find(|v| v["event"] == "frame");
        let written = &jsonl_streams(&run.jsonl)[&(1, "c2s".to_string())];
        if what == "sasl" {
            // Its fields do not fit in the head: not inspected, not a frame; the secret's
            // bytes are masked all the way.
            assert!(frame.is_none(), "{frame:?}");
            assert!(!written.contains(&b'S'), "{what}: the SASL response leaked");
            continue;
        }
        let frame = frame.unwrap_or_else(|| panic!("{what}: no frame record"));
        let raw = base64::engine::general_purpose::STANDARD
            .decode(frame["raw"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            raw.len(),
            1 << 20,
            "{what}: the head is held, not the frame"
        );
        assert_eq!(
            frame["size"],
            stream.len() as u64 - 8,
            "{what}: {}",
            frame["summary"]
        );
        assert_eq!(written, stream, "{what}");
        if what == "1.0" {
            let data = &frame["message"]["data"][0];
            assert_eq!(data["len"], 5_000_000 - 8, "{frame}");
            assert_eq!(data["text"].as_str().map(str::len), Some(4096), "{frame}");
            assert_eq!(frame["message"]["truncated"]["size"], 5_000_000, "{frame}");
        }
    }
}

/// An AMQP 1.0 frame (type 0, channel 0) holding the performative `code` with `fields`.
fn perf10(code: u64, fields: Vec<amqpeek::codec::amqp10::Value>) -> Vec<u8> {
    use amqpeek::codec::amqp10;
    amqp10::encode_frame(0, 0, Some(&amqp10::described_list(code, fields)), &[]).unwrap()
}

/// A 0-9-1 `connection.start` (version 0-9, no server properties, PLAIN, en_US).
fn connection_start() -> Vec<u8> {
    let payload: Vec<u8> = [
        &[0u8, 10, 0, 10, 0, 9][..],
        &[0, 0, 0, 0],
        &[0, 0, 0, 5],
        b"PLAIN",
        &[0, 0, 0, 5],
        b"en_US",
    ]
    .concat();
    let mut f = vec![1u8, 0, 0];
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(&payload);
    f.push(0xce);
    f
}

const H10: &[u8] = b"AMQP\x00\x01\x00\x00";
const HSASL: &[u8] = b"AMQP\x03\x01\x00\x00";
const HTLS: &[u8] = b"AMQP\x02\x01\x00\x00";
const H091: &[u8] = b"AMQP\x00\x00\x09\x01";

/// (what, the conversation, the rules reported: (side, rule, count)).
type Case = (&'static str, Chunks, Vec<(&'static str, &'static str, u64)>);

#[test]
fn a_header_the_server_does_not_speak_is_judged_by_the_servers_answer() {
    use amqpeek::codec::amqp10::Value;
    let open = perf10(0x10, vec![Value::String("broker".into())]);
    let close = perf10(0x18, vec![]);
    let refusal = "header.data-after-refusal";
    let cases: Vec<Case> = vec![
        // Clean: the server answers with the header it speaks and closes (what RabbitMQ does).
        (
            "TLS asked, SASL answered",
            vec![(Dir::C2S, HTLS.into()), (Dir::S2C, HSASL.into())],
            vec![],
        ),
        (
            "plain 1.0 asked, SASL answered",
            vec![(Dir::C2S, H10.into()), (Dir::S2C, HSASL.into())],
            vec![],
        ),
        (
            "SASL asked, plain 1.0 answered",
            vec![(Dir::C2S, HSASL.into()), (Dir::S2C, H10.into())],
            vec![],
        ),
        (
            "0-9-1 asked of a 1.0 broker",
            vec![(Dir::C2S, H091.into()), (Dir::S2C, H10.into())],
            vec![],
        ),
        (
            "1.0 asked of a 0-9-1 broker",
            vec![(Dir::C2S, H10.into()), (Dir::S2C, H091.into())],
            vec![],
        ),
        (
            "0-9 asked, accepted with connection.start",
            vec![
                (Dir::C2S, b"AMQP\x01\x01\x00\x09".to_vec()),
                (Dir::S2C, connection_start()),
            ],
            vec![],
        ),
        // The server refuses, then goes on.
        (
            "SASL header, then a second header, an open and a close",
            vec![
                (Dir::C2S, H10.into()),
                (Dir::S2C, [HSASL, H10, &open, &close].concat()),
            ],
            vec![("s2c", refusal, 3)],
        ),
        (
            "TLS refused with 1.0, then an open",
            vec![(Dir::C2S, HTLS.into()), (Dir::S2C, [H10, &open].concat())],
            vec![("s2c", refusal, 1)],
        ),
        (
            "0-9-1 refused with its own header, then connection.start",
            vec![
                (Dir::C2S, H091.into()),
                (Dir::S2C, [H091, &connection_start()].concat()),
            ],
            vec![("s2c", refusal, 1)],
        ),
        (
            "1.0 refused with 0-9-1, then the start of a frame",
            vec![
                (Dir::C2S, H10.into()),
                (Dir::S2C, [H091, b"\x01\x00"].concat()),
            ],
            vec![("s2c", "codec.truncated-frame", 1), ("s2c", refusal, 1)],
        ),
        // Garbage where a header must be is the client's; the server's answer is judged too.
        (
            "HTTP answered with a header",
            vec![
                (Dir::C2S, b"GET / HTTP/1.1\r\n\r\n".to_vec()),
                (Dir::S2C, H091.into()),
            ],
            vec![("c2s", "codec.undecodable-stream", 1)],
        ),
        (
            "HTTP answered with a header and connection.start",
            vec![
                (Dir::C2S, b"GET / HTTP/1.1\r\n\r\n".to_vec()),
                (Dir::S2C, [H091, &connection_start()].concat()),
            ],
            vec![("c2s", "codec.undecodable-stream", 1), ("s2c", refusal, 1)],
        ),
        // TLS from the first byte (AMQPS): noted as not decoded, never a violation.
        (
            "a TLS ClientHello answered by a TLS server",
            vec![
                (
                    Dir::C2S,
                    [&[0x16u8, 3, 1, 0, 0x2e, 1][..], &[0; 46]].concat(),
                ),
                (
                    Dir::S2C,
                    [&[0x16u8, 3, 3, 0, 0x2e, 2][..], &[0; 46]].concat(),
                ),
            ],
            vec![("c2s", "codec.not-decoded", 1)],
        ),
    ];
    for (what, chunks, want) in cases {
        let chunks: Vec<(Dir, &[u8])> = chunks.iter().map(|(d, b)| (*d, &b[..])).collect();
        let found = assert_lossless(what, conversation(&chunks));
        let mut got: Vec<(&str, &str, u64)> =
            found.iter().map(|f| (f.1, f.2.as_str(), f.4)).collect();
        got.sort();
        assert_eq!(got, want, "{what}: {found:?}");
    }
}

#[test]
fn a_stream_that_is_not_amqp_on_any_port_is_judged_the_same_from_amqpeeks_pcapng() {
    // The proxy relays to a broker on a port no one calls AMQP; the client opens with a TLS
    // ClientHello, the server answers with its header and more. The JSONL keeps the connection;
    // the pcapng amqpeek wrote must too, with the server's answer.
    let hello = [&[0x16u8, 3, 1, 0, 0x2e, 1][..], &[0; 46]].concat();
    let answer = [H091, &connection_start()].concat();
    let found = assert_lossless(
        "TLS to a plain broker on port 15673",
        conversation_on(15673, &[(Dir::C2S, &hello), (Dir::S2C, &answer)]),
    );
    assert_eq!(
        rules(&found),
        ["codec.not-decoded", "header.data-after-refusal"],
        "{found:?}"
    );
}

/// A URL password in the part of a large frame that streams past undecoded is masked as it
/// passes, in the JSONL and in the pcapng, as it is in a frame decoded whole.
#[test]
fn a_url_password_in_the_streamed_part_of_a_large_frame_is_masked() {
    use amqpeek::codec::amqp10;
    let transfer =
        amqp10::described_list(0x14, vec![amqp10::Value::Uint(0), amqp10::Value::Uint(0)]);
    let mut payload = vec![0x00, 0x53, 0x75, 0xb0];
    payload.extend_from_slice(&(5_000_000u32 - 8).to_be_bytes());
    payload.resize(2_500_000, b'm');
    payload.extend_from_slice(b" amqps://guest:s3cretpw@broker.example/ ");
    payload.resize(5_000_000, b'm');
    let mut c10 = b"AMQP\x00\x01\x00\x00".to_vec();
    c10.extend(amqp10::encode_frame(0, 0, Some(&transfer), &payload).unwrap());
    // Cut so that the URL sits inside one chunk (a URL cut by a chunk boundary is not found).
    let events = conversation(&chunked(Dir::C2S, &c10, 1 << 20));
    let run = live(events);
    let written = &jsonl_streams(&run.jsonl)[&(1, "c2s".to_string())];
    assert_eq!(written.len(), c10.len(), "every byte in the JSONL");
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(find(written, b"amqps://guest:"), "the URL is there, masked");
    assert!(
        !find(written, b"s3cretpw"),
        "the password leaked into the JSONL"
    );
    assert!(
        !find(&run.pcapng, b"s3cretpw"),
        "the password leaked into the pcapng"
    );
}
