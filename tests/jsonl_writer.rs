//! The JSONL sink writes its lines straight from the events (`amqpeek::json::TextWriter`);
//! `event_json` builds the same objects as `serde_json::Value`s. Both come from one schema
//! (`sinks::jsonl::write_event`), so these tests pin the two backends to each other: for every
//! event of the shipped captures and of a generated conversation that exercises every part of
//! the format (0-9-1 and 1.0 frames and messages, field tables and AMQP 1.0 values of every
//! type, strings that need escaping, non-UTF-8 data, truncated bodies, masked credentials,
//! violations, gaps, connect and close), each line parses to exactly `event_json`'s value and
//! is byte for byte `serde_json`'s rendering of it (with DEL, C1, format characters and U+2028/9
//! escaped as `\uXXXX`, as `amqpeek::json::to_string` renders).

use std::path::Path;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::codec::amqp10::{
    self as a10, Array, Described, Descriptor, Kind, Str, Symbol, described_list,
};
use amqpeek::codec::amqp091::{
    self as a091, ContentHeader, FieldTable, FieldValue, FrameKind, Method, MethodKind as K,
};
use amqpeek::driver::Router;
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector, Sink};
use amqpeek::sinks::{JsonOptions, JsonlSink, event_json};
use bytes::Bytes;
use serde_json::Value;

/// Feed `events` to a `JsonlSink` and compare every line with `event_json`; returns the lines.
fn same_lines(events: &[Event], opts: JsonOptions) -> usize {
    let mut sink = JsonlSink::new(Vec::new(), opts);
    let mut want = Vec::new();
    for ev in events {
        sink.event(ev).unwrap();
        want.extend(event_json(ev, &opts));
    }
    sink.flush().unwrap();
    let text = String::from_utf8(sink.into_inner()).expect("JSONL is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), want.len(), "one line per non-Data event");
    for (line, v) in lines.iter().zip(&want) {
        let parsed: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(&parsed, v, "line parses to event_json's value");
        assert_eq!(
            *line,
            amqpeek::json::to_string(v),
            "serde_json's text, with the controls text outputs escape as \\uXXXX"
        );
    }
    lines.len()
}

fn capture_events(path: &Path) -> Vec<Event> {
    let mut replayer = Router::new(InspectOptions {
        show_secrets: false,
        emit_data: false,
        ..InspectOptions::DEFAULT
    });
    let mut out = Vec::new();
    for ev in capture::open(path, CaptureOptions::default()).unwrap() {
        replayer.feed(ev, &mut out);
    }
    replayer.finish(&mut out);
    out
}

#[test]
fn shipped_captures_write_the_same_lines_as_event_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("pcapng" | "jsonl")
        ) {
            continue;
        }
        let events = capture_events(&path);
        assert!(events.len() > 20, "{}", path.display());
        for max_body in [4096, 3] {
            same_lines(&events, JsonOptions { max_body });
        }
        files += 1;
    }
    assert_eq!(files, 6);
}

#[test]
fn a_conversation_using_every_part_of_the_format_writes_the_same_lines() {
    let events = conversation(false);
    let kinds = |f: fn(&EventKind) -> bool| events.iter().filter(|e| f(&e.kind)).count();

    assert!(kinds(|k| matches!(k, EventKind::Connect { .. })) == 2);
    assert!(kinds(|k| matches!(k, EventKind::Header { .. })) >= 4);
    assert!(kinds(|k| matches!(k, EventKind::Violation(_))) >= 3);
    assert!(kinds(|k| matches!(k, EventKind::Gap { .. })) == 1);
    assert!(kinds(|k| matches!(k, EventKind::Close(_))) == 2);
    let messages = kinds(|k| matches!(k, EventKind::Frame(f) if f.message.is_some()));
    assert!(messages >= 6, "{messages} messages");
    for max_body in [4096, 5, 0] {
        assert_eq!(
            same_lines(&events, JsonOptions { max_body }),
            events.len() - kinds(|k| matches!(k, EventKind::Data { .. } | EventKind::State(_)))
        );
    }
    // Credentials are masked in the lines as in the values (and shown with --show-secrets).
    let line = |events: &[Event]| {
        let mut sink = JsonlSink::new(Vec::new(), JsonOptions::default());
        for ev in events {
            sink.event(ev).unwrap();
        }
        String::from_utf8(sink.into_inner()).unwrap()
    };
    let masked = line(&events);
    assert!(!masked.contains("s3cret") && masked.contains("\"password\":\"******\""));
    assert!(!masked.contains("SharedAccessSignature"));
    let shown = conversation(true);
    same_lines(&shown, JsonOptions::default());
    assert!(line(&shown).contains("s3cret"));
}

// ------------------------------------------------------------------ the conversation

/// Two connections (0-9-1, then AMQP 1.0 with SASL), through the inspector as the proxy and
/// replay feed it; `Data` events included (the sink skips them).
fn conversation(show_secrets: bool) -> Vec<Event> {
    let mut out = Vec::new();
    amqp091(&mut out, show_secrets);
    amqp10(&mut out, show_secrets);
    out
}

struct Conn {
    insp: Inspector,
    now: i64,
}

impl Conn {
    fn open(out: &mut Vec<Event>, conn: u64, show_secrets: bool) -> Conn {
        let now = 1_764_417_600_000_000 + conn as i64 * 86_400_000_000 - 5;
        out.push(Event {
            conn,
            ts: Timestamp(now),
            kind: EventKind::Connect {
                client: format!("[::1]:{}", 40000 + conn).parse().unwrap(),
                upstream: "127.0.0.1:5672".parse().unwrap(),
            },
        });
        Conn {
            insp: Inspector::new(
                conn,
                InspectOptions {
                    show_secrets,
                    emit_data: true,
                    ..InspectOptions::DEFAULT
                },
            ),
            now,
        }
    }

    fn bytes(&mut self, out: &mut Vec<Event>, dir: Dir, b: &[u8]) {
        // Time moves on by a few microseconds (across midnight early on).
        self.now += 3;
        self.insp
            .chunk(dir, Timestamp(self.now), Bytes::copy_from_slice(b), out);
    }

    fn close(mut self, out: &mut Vec<Event>, reason: &str) {
        self.now += 1;
        self.insp.close(Timestamp(self.now), reason.into(), out);
    }
}

fn lstr(s: &[u8]) -> a091::Value {
    a091::Value::LongStr(Bytes::copy_from_slice(s))
}
fn sstr(s: &str) -> a091::Value {
    a091::Value::ShortStr(Bytes::copy_from_slice(s.as_bytes()))
}

fn method(kind: K, args: &[(&str, a091::Value)]) -> FrameKind {
    let mut m = Method::with_defaults(kind);
    for (name, v) in args {
        m = m.set(name, v.clone()).unwrap();
    }
    FrameKind::Method(m.into())
}

fn frame091(ch: u16, kind: &FrameKind) -> Vec<u8> {
    let mut b = Vec::new();
    a091::encode_frame(ch, kind, &mut b);
    b
}

/// A field table with a value of every type, keys and strings that need escaping, non-UTF-8
/// data, nesting and a repeated key.
fn every_field_value() -> FieldTable {
    let nested = FieldTable::new()
        .with("z", FieldValue::Bool(true))
        .with("a", FieldValue::Void);
    FieldTable::new()
        .with("bool", FieldValue::Bool(false))
        .with("i8", FieldValue::I8(-8))
        .with("u8", FieldValue::U8(200))
        .with("i16", FieldValue::I16(-16_000))
        .with("u16", FieldValue::U16(65_000))
        .with("i32", FieldValue::I32(i32::MIN))
        .with("u32", FieldValue::U32(u32::MAX))
        .with("i64", FieldValue::I64(i64::MIN))
        .with("f32", FieldValue::F32(1.5e-3))
        .with("f64", FieldValue::F64(-2.5e300))
        .with("nan", FieldValue::F64(f64::NAN))
        .with("inf", FieldValue::F32(f32::NEG_INFINITY))
        .with(
            "decimal",
            FieldValue::Decimal {
                scale: 3,
                value: -12_345,
            },
        )
        .with(
            "text",
            FieldValue::LongStr(Bytes::from_static(
                "quote \" backslash \\ tab \t nl \n nul \0 del \x7f é 😀".as_bytes(),
            )),
        )
        .with(
            "latin1",
            FieldValue::LongStr(Bytes::from_static(b"caf\xe9")),
        )
        .with("bytes", FieldValue::Bytes(Bytes::from_static(b"\x00\xff")))
        .with(
            "array",
            FieldValue::Array(vec![
                FieldValue::I32(1),
                FieldValue::Table(nested.clone()),
                FieldValue::Array(vec![]),
            ]),
        )
        .with("timestamp", FieldValue::Timestamp(1_700_000_000))
        .with("far-future", FieldValue::Timestamp(u64::MAX))
        .with("table", FieldValue::Table(nested))
        .with("key \"quoted\"\n", FieldValue::U8(1))
        .with("Z-upper", FieldValue::U8(2))
        .with("é-key", FieldValue::U8(3))
        .with("bool", FieldValue::Bool(true))
}

fn amqp091(out: &mut Vec<Event>, show_secrets: bool) {
    let mut c = Conn::open(out, 1, show_secrets);
    let table = every_field_value();
    c.bytes(out, Dir::C2S, b"AMQP\x00\x00\x09\x01");
    let start = method(
        K::ConnectionStart,
        &[
            ("server-properties", a091::Value::Table(table.clone())),
            ("mechanisms", lstr(b"PLAIN AMQPLAIN")),
            ("locales", lstr(b"en_US")),
        ],
    );
    c.bytes(out, Dir::S2C, &frame091(0, &start));
    let start_ok = method(
        K::ConnectionStartOk,
        &[
            ("client-properties", a091::Value::Table(table.clone())),
            ("mechanism", sstr("PLAIN")),
            ("response", lstr(b"\0guest\0s3cret")),
        ],
    );
    // The start-ok arrives in two pieces (the mask is applied across them).
    let bytes = frame091(0, &start_ok);
    let (a, b) = bytes.split_at(bytes.len() / 2);
    c.bytes(out, Dir::C2S, a);
    c.bytes(out, Dir::C2S, b);
    let tune = method(
        K::ConnectionTune,
        &[
            ("channel-max", a091::Value::Short(16)),
            ("frame-max", a091::Value::Long(4096)),
            ("heartbeat", a091::Value::Short(60)),
        ],
    );
    c.bytes(out, Dir::S2C, &frame091(0, &tune));
    let tune_ok = method(
        K::ConnectionTuneOk,
        &[
            ("channel-max", a091::Value::Short(16)),
            ("frame-max", a091::Value::Long(4096)),
            ("heartbeat", a091::Value::Short(60)),
        ],
    );
    c.bytes(out, Dir::C2S, &frame091(0, &tune_ok));
    c.bytes(
        out,
        Dir::C2S,
        &frame091(
            0,
            &method(K::ConnectionOpen, &[("virtual-host", sstr("/"))]),
        ),
    );
    c.bytes(
        out,
        Dir::S2C,
        &frame091(0, &method(K::ConnectionOpenOk, &[])),
    );
    c.bytes(out, Dir::C2S, &frame091(1, &method(K::ChannelOpen, &[])));
    c.bytes(out, Dir::S2C, &frame091(1, &method(K::ChannelOpenOk, &[])));
    // Publishes: a text body with escapes, a non-UTF-8 body, a body cut inside a multi-byte
    // char by --max-body, an empty body, a body in two frames; rich properties.
    let header = |size: u64| {
        ContentHeader::basic(size)
            .with("content-type", sstr("text/plain; charset=\"utf-8\""))
            .unwrap()
            .with("headers", a091::Value::Table(table.clone()))
            .unwrap()
            .with("delivery-mode", a091::Value::Octet(2))
            .unwrap()
            .with("priority", a091::Value::Octet(9))
            .unwrap()
            .with("timestamp", a091::Value::Timestamp(1_764_417_600))
            .unwrap()
            .with("message-id", sstr("m\u{1}"))
            .unwrap()
    };
    let bodies: [&[&[u8]]; 5] = [
        &["hello \"world\"\n\t\\ é".as_bytes()],
        &[b"\x00\x01\xfe\xff binary"],
        &["ééééé".as_bytes()],
        &[],
        &[b"first part, ", b"second part"],
    ];
    for (i, parts) in bodies.iter().enumerate() {
        let size = parts.iter().map(|p| p.len() as u64).sum();
        let publish = method(
            K::BasicPublish,
            &[("exchange", sstr("ex")), ("routing-key", sstr("rk.é"))],
        );
        let mut bytes = frame091(1, &publish);
        bytes.extend(frame091(1, &FrameKind::Header(header(size).into())));
        for p in *parts {
            bytes.extend(frame091(1, &FrameKind::Body(Bytes::copy_from_slice(p))));
        }
        // All in one chunk for some (events sharing a timestamp), frame by frame for others.
        if i % 2 == 0 {
            c.bytes(out, Dir::C2S, &bytes);
        } else {
            for b in bytes.chunks(7) {
                c.bytes(out, Dir::C2S, b);
            }
        }
    }
    let deliver = method(
        K::BasicDeliver,
        &[
            ("consumer-tag", sstr("ctag")),
            ("delivery-tag", a091::Value::LongLong(1)),
            ("exchange", sstr("ex")),
            ("routing-key", sstr("rk")),
        ],
    );
    let mut bytes = frame091(1, &deliver);
    bytes.extend(frame091(
        1,
        &FrameKind::Header(ContentHeader::basic(3).into()),
    ));
    bytes.extend(frame091(1, &FrameKind::Body(Bytes::from_static(b"abc"))));
    c.bytes(out, Dir::S2C, &bytes);
    // An ack of a tag never delivered (a violation with the frame's summary).
    let ack = method(K::BasicAck, &[("delivery-tag", a091::Value::LongLong(999))]);
    c.bytes(out, Dir::C2S, &frame091(1, &ack));
    c.bytes(out, Dir::C2S, &frame091(0, &FrameKind::Heartbeat));
    // Bytes lost on the way in, then a malformed frame (bad frame-end octet).
    c.now += 1;
    c.insp.gap(
        Dir::S2C,
        Timestamp(c.now),
        c.insp.bytes_seen(Dir::S2C),
        0,
        "capture dropped packets (\"len\" unknown)".into(),
        None,
        out,
    );
    let mut bad = frame091(0, &FrameKind::Heartbeat);
    if let Some(end) = bad.last_mut() {
        *end = 0x00;
    }
    c.bytes(out, Dir::C2S, &bad);
    c.close(out, "client reset: Connection reset by peer (os error 104)");
}

fn s(x: &str) -> a10::Value {
    a10::Value::String(Str::from(x))
}
fn sym(x: &str) -> a10::Value {
    a10::Value::Symbol(Symbol(Str::from(x)))
}
fn bin(x: &[u8]) -> a10::Value {
    a10::Value::Binary(Bytes::copy_from_slice(x))
}
fn u(x: u32) -> a10::Value {
    a10::Value::Uint(x)
}
fn described(code: u64, value: a10::Value) -> a10::Value {
    a10::Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value,
    }))
}

/// An AMQP 1.0 map with a value of every type, including keys that need escaping.
fn every_value() -> a10::Value {
    use a10::Value as V;
    a10::Value::Map(vec![
        (sym("null"), V::Null),
        (sym("bool"), V::Bool(true)),
        (sym("ubyte"), V::Ubyte(255)),
        (sym("ushort"), V::Ushort(65535)),
        (sym("uint"), V::Uint(u32::MAX)),
        (sym("ulong"), V::Ulong(u64::MAX)),
        (sym("byte"), V::Byte(-128)),
        (sym("short"), V::Short(-32768)),
        (sym("int"), V::Int(i32::MIN)),
        (sym("long"), V::Long(i64::MIN)),
        (sym("float"), V::Float(0.1)),
        (sym("double"), V::Double(1e21)),
        (sym("nan"), V::Double(f64::NAN)),
        (sym("-inf"), V::Float(f32::NEG_INFINITY)),
        (sym("decimal32"), V::Decimal32(0x2200_0001)),
        (sym("decimal64"), V::Decimal64(0x2238_0000_0000_0001)),
        (sym("decimal128"), V::Decimal128([0xab; 16])),
        (sym("char"), V::Char('\u{1F600}')),
        (sym("nul-char"), V::Char('\0')),
        (sym("timestamp"), V::Timestamp(1_764_417_600_123)),
        (sym("bad-timestamp"), V::Timestamp(i64::MAX)),
        (sym("uuid"), V::Uuid([0x5a; 16])),
        (sym("binary"), bin(&[0u8, 1, 0xfe, 0xff])),
        (sym("long-binary"), bin(&[7u8; 100])),
        (sym("string"), s("line\nbreak \"quoted\" \\ \u{7f} é")),
        (sym("symbol"), sym("sym")),
        (
            sym("list"),
            V::List(vec![V::Int(1), s("two"), V::List(vec![])]),
        ),
        (
            sym("generic-map"),
            V::Map(vec![(V::Int(1), s("one")), (s("k"), V::Null)]),
        ),
        (
            sym("array"),
            V::Array(Box::new(Array {
                descriptor: None,
                kind: Kind::Int,
                items: vec![V::Int(1), V::Int(2)],
            })),
        ),
        (
            sym("described-array"),
            V::Array(Box::new(Array {
                descriptor: Some(Descriptor::Code(0x24)),
                kind: Kind::List,
                items: vec![V::List(vec![]), V::List(vec![])],
            })),
        ),
        (sym("known-composite"), described(0x25, V::List(vec![]))),
        (
            sym("unknown-described"),
            a10::Value::Described(Box::new(Described {
                descriptor: Descriptor::Name(Symbol(Str::from("com.example:thing"))),
                value: s("x"),
            })),
        ),
        (sym("unknown-code"), described(0x1234, V::Int(5))),
        (s("string key \"q\"\t"), V::Int(1)),
        (s("A"), V::Int(0)),
        (sym("bool"), V::Bool(false)),
    ])
}

fn frame10(ty: u8, ch: u16, body: &a10::Value, payload: &[u8]) -> Vec<u8> {
    a10::encode_frame(ty, ch, Some(body), payload).unwrap()
}

/// A message payload with every section type.
fn rich_message(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let sections = [
        described(
            0x70,
            a10::Value::List(vec![a10::Value::Bool(true), a10::Value::Ubyte(9), u(1000)]),
        ),
        described(
            0x71,
            a10::Value::Map(vec![(sym("x-opt-da"), s("delivery"))]),
        ),
        described(0x72, every_value()),
        described(
            0x73,
            a10::Value::List(vec![
                a10::Value::Uuid([1; 16]),
                bin(b"user"),
                s("/queue/q"),
                s("subject \"s\""),
                s("reply"),
                a10::Value::Ulong(7),
                sym("text/plain"),
                sym("utf-8"),
                a10::Value::Timestamp(1_764_417_600_000),
                a10::Value::Timestamp(-1),
                s("group"),
                u(3),
                s("reply-group"),
            ]),
        ),
        described(0x74, every_value()),
        described(0x75, bin(body)),
        described(0x75, bin(b"\xff second data section, not UTF-8")),
        described(0x78, a10::Value::Map(vec![(sym("x-footer"), u(1))])),
    ];
    for sec in sections {
        sec.encode(&mut out).unwrap();
    }
    out
}

fn transfer(id: u32, more: bool) -> a10::Value {
    described_list(
        0x14,
        vec![
            u(0),
            u(id),
            bin(&id.to_be_bytes()),
            u(0),
            a10::Value::Bool(false),
            a10::Value::Bool(more),
        ],
    )
}

fn amqp10(out: &mut Vec<Event>, show_secrets: bool) {
    let mut c = Conn::open(out, 2, show_secrets);
    c.bytes(out, Dir::C2S, b"AMQP\x03\x01\x00\x00");
    c.bytes(out, Dir::S2C, b"AMQP\x03\x01\x00\x00");
    let mechanisms = described_list(
        0x40,
        vec![a10::Value::Array(Box::new(Array {
            descriptor: None,
            kind: Kind::Symbol,
            items: vec![sym("PLAIN"), sym("ANONYMOUS")],
        }))],
    );
    c.bytes(out, Dir::S2C, &frame10(1, 0, &mechanisms, &[]));
    let init = described_list(0x41, vec![sym("PLAIN"), bin(b"\0guest\0s3cret"), s("host")]);
    c.bytes(out, Dir::C2S, &frame10(1, 0, &init, &[]));
    let outcome = described_list(0x44, vec![a10::Value::Ubyte(0), bin(b"welcome")]);
    c.bytes(out, Dir::S2C, &frame10(1, 0, &outcome, &[]));
    c.bytes(out, Dir::C2S, b"AMQP\x00\x01\x00\x00");
    c.bytes(out, Dir::S2C, b"AMQP\x00\x01\x00\x00");
    let open = described_list(
        0x10,
        vec![
            s("container \"c\""),
            s("localhost"),
            u(65536),
            a10::Value::Ushort(255),
            u(60_000),
            a10::Value::Null,
            a10::Value::Null,
            sym("amqp:link:redirect"),
            a10::Value::Null,
            every_value(),
        ],
    );
    c.bytes(out, Dir::C2S, &frame10(0, 0, &open, &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &open, &[]));
    let begin = |remote: Option<u16>| {
        described_list(
            0x11,
            vec![
                remote.map_or(a10::Value::Null, a10::Value::Ushort),
                u(0),
                u(100),
                u(100),
            ],
        )
    };
    c.bytes(out, Dir::C2S, &frame10(0, 0, &begin(None), &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &begin(Some(0)), &[]));
    let attach = |role: bool| {
        described_list(
            0x12,
            vec![
                s("link \"one\""),
                u(0),
                a10::Value::Bool(role),
                a10::Value::Null,
                a10::Value::Null,
                described(
                    0x28,
                    a10::Value::List(vec![s("/queue/q"), u(0), sym("link-detach")]),
                ),
                described(0x29, a10::Value::List(vec![s("$cbs")])),
                a10::Value::Null,
                a10::Value::Null,
                u(0),
                a10::Value::Null,
                sym("opt"),
                a10::Value::Null,
                a10::Value::Map(vec![(sym("p"), s("v"))]),
            ],
        )
    };
    c.bytes(out, Dir::C2S, &frame10(0, 0, &attach(false), &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &attach(true), &[]));
    let flow = described_list(0x13, vec![u(0), u(100), u(0), u(100), u(0), u(0), u(10)]);
    c.bytes(out, Dir::S2C, &frame10(0, 0, &flow, &[]));
    // Whole messages: a rich one with escapes in its text body, a long one (truncated by
    // --max-body), one whose text is cut inside a multi-byte char.
    let long = "x".repeat(5000);
    for (id, body) in [
        (0, "body \"text\"\n\\ é".as_bytes()),
        (1, long.as_bytes()),
        (2, "éééé".as_bytes()),
    ] {
        c.bytes(
            out,
            Dir::C2S,
            &frame10(0, 0, &transfer(id, false), &rich_message(body)),
        );
    }
    // A message over two transfers, with amqp-sequence and amqp-value sections.
    let mut payload = Vec::new();
    for sec in [
        described(0x76, a10::Value::List(vec![s("a"), a10::Value::Int(1)])),
        described(0x76, a10::Value::List(vec![])),
    ] {
        sec.encode(&mut payload).unwrap();
    }
    let (p1, p2) = payload.split_at(payload.len() / 2);
    c.bytes(out, Dir::C2S, &frame10(0, 0, &transfer(3, true), p1));
    c.bytes(out, Dir::C2S, &frame10(0, 0, &transfer(3, false), p2));
    let mut value = Vec::new();
    described(0x77, every_value()).encode(&mut value).unwrap();
    c.bytes(out, Dir::C2S, &frame10(0, 0, &transfer(4, false), &value));
    // A message that does not decode (an error object in place of the message).
    c.bytes(
        out,
        Dir::C2S,
        &frame10(0, 0, &transfer(5, false), b"\x00\x53\x75\xa0\xff"),
    );
    // A CBS put-token (its token masked) and its response.
    let mut put = Vec::new();
    for sec in [
        described(
            0x74,
            a10::Value::Map(vec![
                (s("operation"), s("put-token")),
                (s("type"), s("servicebus.windows.net:sastoken")),
                (s("name"), s("amqp://ns/q")),
                (s("expiration"), a10::Value::Timestamp(1_764_417_600_000)),
            ]),
        ),
        described(0x77, s("SharedAccessSignature sr=x&sig=s3cret")),
    ] {
        sec.encode(&mut put).unwrap();
    }
    c.bytes(out, Dir::C2S, &frame10(0, 0, &transfer(6, false), &put));
    let mut reply = Vec::new();
    described(
        0x74,
        a10::Value::Map(vec![
            (s("status-code"), a10::Value::Int(202)),
            (s("status-description"), s("Accepted")),
        ]),
    )
    .encode(&mut reply)
    .unwrap();
    c.bytes(out, Dir::S2C, &frame10(0, 0, &transfer(0, false), &reply));
    let disposition = described_list(
        0x15,
        vec![
            a10::Value::Bool(true),
            u(0),
            u(6),
            a10::Value::Bool(true),
            described(
                0x25,
                a10::Value::List(vec![described(
                    0x1d,
                    a10::Value::List(vec![sym("amqp:internal-error"), s("oops \"x\"")]),
                )]),
            ),
        ],
    );
    c.bytes(out, Dir::S2C, &frame10(0, 0, &disposition, &[]));
    // An empty frame, a frame of unknown type, then a frame after close (violations).
    c.bytes(out, Dir::C2S, &a10::encode_frame(0, 0, None, &[]).unwrap());
    c.bytes(
        out,
        Dir::C2S,
        &a10::encode_frame(7, 0, None, b"\x01\x02unknown").unwrap(),
    );
    let detach = described_list(0x16, vec![u(0), a10::Value::Bool(true)]);
    c.bytes(out, Dir::C2S, &frame10(0, 0, &detach, &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &detach, &[]));
    let end = described_list(0x17, vec![]);
    c.bytes(out, Dir::C2S, &frame10(0, 0, &end, &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &end, &[]));
    let close = described_list(0x18, vec![]);
    c.bytes(out, Dir::C2S, &frame10(0, 0, &close, &[]));
    c.bytes(out, Dir::S2C, &frame10(0, 0, &close, &[]));
    c.bytes(out, Dir::C2S, &frame10(0, 0, &begin(None), &[]));
    c.close(out, "client closed");
}

/// Every event kind written as docs/jsonl-format.md says, each line written out by hand:
/// keys in byte order, `v` 1, `ts` RFC 3339 UTC with microseconds, base64 `raw`, the frame's
/// `fields` and `summary`.
#[test]
fn each_event_kind_writes_the_documented_line() {
    let ts = Timestamp(1_700_000_000_123_456); // 2023-11-14T22:13:20.123456Z
    let ev = |kind| Event { conn: 7, ts, kind };
    let mut events = vec![ev(EventKind::Connect {
        client: "127.0.0.1:40001".parse().unwrap(),
        upstream: "[::1]:5672".parse().unwrap(),
    })];
    // A 0-9-1 header and a heartbeat frame, decoded by the inspector.
    let mut insp = Inspector::new(7, InspectOptions::default());
    let mut out = Vec::new();
    insp.chunk(
        Dir::C2S,
        ts,
        Bytes::from_static(b"AMQP\x00\x00\x09\x01\x08\x00\x00\x00\x00\x00\x00\xce"),
        &mut out,
    );
    events.extend(
        out.into_iter()
            .filter(|e| matches!(e.kind, EventKind::Header { .. } | EventKind::Frame(_))),
    );
    events.push(ev(EventKind::Undecoded {
        dir: Dir::S2C,
        offset: 3,
        bytes: Bytes::from_static(b"\x00\xff"),
    }));
    events.push(ev(EventKind::Violation(amqpeek::event::Violation {
        rule: &amqpeek::state::amqp091::rules::CONNECTION_PIPELINED,
        severity: amqpeek::event::Severity::Warning,
        spec: "AMQP 0-9-1 §1.2".into(),
        message: "a \"quoted\" message\n".into(),
        dir: Dir::S2C,
        offset: 16,
        frame: Some("heartbeat".into()),
    })));
    events.push(ev(EventKind::Gap {
        dir: Dir::C2S,
        offset: 16,
        len: 0,
        reason: "capture started mid-stream".into(),
    }));
    events.push(ev(EventKind::Fin {
        dir: Dir::C2S,
        offset: 16,
    }));
    events.push(ev(EventKind::Close(amqpeek::event::CloseInfo {
        reason: "client closed".into(),
        bytes_c2s: 16,
        bytes_s2c: 5,
    })));
    let mut sink = JsonlSink::new(Vec::new(), JsonOptions::default());
    for e in &events {
        sink.event(e).unwrap();
    }
    sink.flush().unwrap();
    let text = String::from_utf8(sink.into_inner()).unwrap();
    let t = r#""ts":"2023-11-14T22:13:20.123456Z""#;
    let want = [
        format!(
            r#"{{"client":"127.0.0.1:40001","conn":7,"event":"connect",{t},"upstream":"[::1]:5672","v":1}}"#
        ),
        format!(
            r#"{{"conn":7,"dir":"c2s","event":"header","offset":0,"proto":"amqp-0-9-1","raw":"QU1RUAAACQE=",{t},"v":1}}"#
        ),
        format!(
            r#"{{"channel":0,"conn":7,"dir":"c2s","event":"frame","fields":{{}},"name":"heartbeat","offset":8,"proto":"amqp-0-9-1","raw":"CAAAAAAAAM4=","summary":"heartbeat",{t},"v":1}}"#
        ),
        format!(r#"{{"conn":7,"dir":"s2c","event":"bytes","offset":3,"raw":"AP8=",{t},"v":1}}"#),
        format!(
            r#"{{"conn":7,"dir":"s2c","event":"violation","frame_summary":"heartbeat","message":"a \"quoted\" message\n","offset":16,"rule":"amqp091.connection.pipelined-before-open-ok","severity":"warning","spec":"AMQP 0-9-1 §1.2",{t},"v":1}}"#
        ),
        format!(
            r#"{{"conn":7,"dir":"c2s","event":"gap","len":0,"offset":16,"reason":"capture started mid-stream",{t},"v":1}}"#
        ),
        format!(r#"{{"conn":7,"dir":"c2s","event":"fin","offset":16,{t},"v":1}}"#),
        format!(
            r#"{{"bytes_c2s":16,"bytes_s2c":5,"conn":7,"event":"close","reason":"client closed",{t},"v":1}}"#
        ),
    ];
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got.len(), want.len(), "{text}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
}
