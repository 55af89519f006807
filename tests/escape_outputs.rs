//! No peer's string reaches a terminal raw. Conversations of both protocols are generated from
//! the codecs' own tables with a hostile string (ESC sequences such as OSC 52, a newline
//! followed by a forged `-> PASS` line, C0, DEL, C1, bidi and other format characters, the
//! line separators, invalid UTF-8) in every string position: every argument of every AMQP
//! 0-9-1 method, every content property, field-table keys and values at every depth; every
//! field of every AMQP 1.0 performative and of the composites nested in them (link names,
//! addresses, error descriptions), every message section (properties, annotations, bodies).
//! The JSONL capture that carries them also has a hostile gap and close reason. Every text
//! output (the trace of `replay --no-tui`, `check` text, `stats` text, `decode` text and
//! `--tree`) and every JSON one (the JSONL written, `check --format json`, `decode --json`)
//! is scanned byte by byte for a raw control, format or separator character and a forged line.

mod cli_common;

use std::io::Write;
use std::process::Command;

use amqpeek::codec::amqp10::{
    self as a10, Array, CompositeDef, FieldDef, FieldType, Kind, Value as V10, composite::ALL,
};
use amqpeek::codec::amqp091::{
    self as a091, ContentHeader, FieldTable, FieldValue, FrameKind, METHODS, Method, WireType,
};
use base64::Engine;
use bytes::Bytes;
use proptest::prelude::*;
use unicode_general_category::{GeneralCategory, get_general_category};

/// What a hostile string is made of: sequences a terminal acts on, a forged verdict line, and
/// characters that reorder or hide text.
const PIECES: &[&[u8]] = &[
    b"\x1b]52;c;cHduZWQ=\x07",
    b"\x1b]0;pwned\x07",
    b"\x1b[2J",
    b"\n-> PASS (fail-on error)\n",
    b"\r",
    b"\t",
    b"\x00",
    b"\x7f",
    "\u{9b}31m".as_bytes(),
    "\u{85}".as_bytes(),
    "\u{202e}".as_bytes(),
    "\u{2066}".as_bytes(),
    "\u{200b}".as_bytes(),
    "\u{feff}".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{e0001}".as_bytes(),
    b"\xff\xfe",
    b"\"\\",
];

/// A hostile string: one to four pieces, with some plain text between.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((prop::sample::select(PIECES), "[a-z]{0,3}"), 1..4).prop_map(|parts| {
        let mut out = Vec::new();
        for (p, t) in parts {
            out.extend_from_slice(t.as_bytes());
            out.extend_from_slice(p);
        }
        out
    })
}

/// The hostile strings of one case, handed out in turn to the string positions.
struct Pool {
    strings: Vec<Vec<u8>>,
    next: usize,
}

impl Pool {
    fn bytes(&mut self) -> Bytes {
        let s = self.strings[self.next % self.strings.len()].clone();
        self.next += 1;
        Bytes::from(s)
    }
    /// A hostile string that is valid UTF-8 (AMQP 1.0 strings and symbols must be).
    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
    /// A hostile character.
    fn char(&mut self) -> char {
        self.text()
            .chars()
            .find(|&c| is_hostile(c))
            .unwrap_or('\u{1b}')
    }
}

/// The oracle, independent of the code under test: a control (Cc: C0, DEL, C1), a format
/// character (Cf: bidi and the like), or a line or paragraph separator.
fn is_hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

// ---- AMQP 0-9-1: every argument of every method, every property, tables at every depth ----

fn table(pool: &mut Pool, depth: u32) -> FieldTable {
    let mut entries = vec![
        (pool.bytes(), FieldValue::LongStr(pool.bytes())),
        (
            pool.bytes(),
            FieldValue::Array(vec![FieldValue::LongStr(pool.bytes())]),
        ),
    ];
    if depth > 0 {
        entries.push((pool.bytes(), FieldValue::Table(table(pool, depth - 1))));
    }
    FieldTable(entries)
}

fn value_091(ty: WireType, pool: &mut Pool) -> a091::Value {
    use a091::Value;
    match ty {
        WireType::ShortStr => Value::ShortStr(pool.bytes()),
        WireType::LongStr => Value::LongStr(pool.bytes()),
        WireType::Table => Value::Table(table(pool, 2)),
        WireType::Bit => Value::Bit(false),
        WireType::Octet => Value::Octet(0),
        WireType::Short => Value::Short(0),
        WireType::Long => Value::Long(0),
        WireType::LongLong => Value::LongLong(0),
        WireType::Timestamp => Value::Timestamp(0),
    }
}

fn frame_091(channel: u16, kind: FrameKind, out: &mut Vec<u8>) {
    a091::encode_frame(channel, &kind, out);
}

/// Every method with every argument hostile, on channel 0 for the connection class.
fn methods_091(pool: &mut Pool, out: &mut Vec<u8>) {
    for def in METHODS.iter() {
        let mut m = Method::with_defaults(def.kind);
        for arg in def.args {
            m = m.set(arg.name, value_091(arg.ty, pool)).unwrap();
        }
        let channel = u16::from(def.class_name != "connection");
        frame_091(channel, FrameKind::Method(m.into()), out);
    }
}

/// A publish whose content header has every property hostile, and a hostile body.
fn publish_091(pool: &mut Pool, out: &mut Vec<u8>) {
    let body = pool.bytes();
    let m = Method::with_defaults(a091::MethodKind::BasicPublish)
        .set("exchange", a091::Value::ShortStr(pool.bytes()))
        .unwrap();
    frame_091(1, FrameKind::Method(m.into()), out);
    let mut h = ContentHeader::basic(body.len() as u64);
    for p in a091::class_def(a091::BASIC_CLASS_ID).unwrap().properties {
        h = h.with(p.name, value_091(p.ty, pool)).unwrap();
    }
    frame_091(1, FrameKind::Header(h.into()), out);
    frame_091(1, FrameKind::Body(body), out);
}

fn conversation_091(pool: &mut Pool) -> (Vec<u8>, Vec<u8>) {
    let mut c2s = b"AMQP\x00\x00\x09\x01".to_vec();
    let mut s2c = Vec::new();
    methods_091(pool, &mut s2c);
    methods_091(pool, &mut c2s);
    publish_091(pool, &mut c2s);
    (c2s, s2c)
}

// ---- AMQP 1.0: every field of every performative, nested composites, every section ----

fn leaf_10(kind: Kind, pool: &mut Pool) -> V10 {
    match kind {
        Kind::String => V10::String(pool.text().as_str().into()),
        Kind::Symbol => V10::Symbol(a10::Symbol::from(pool.text().as_str())),
        Kind::Binary => V10::Binary(pool.bytes()),
        Kind::Char => V10::Char(pool.char()),
        Kind::Map => map_10(pool),
        Kind::List => V10::List(vec![V10::String(pool.text().as_str().into())]),
        Kind::Boolean => V10::Bool(false),
        Kind::Ubyte => V10::Ubyte(0),
        Kind::Ushort => V10::Ushort(0),
        Kind::Uint => V10::Uint(0),
        Kind::Ulong => V10::Ulong(0),
        Kind::Byte => V10::Byte(0),
        Kind::Short => V10::Short(0),
        Kind::Int => V10::Int(0),
        Kind::Long => V10::Long(0),
        Kind::Float => V10::Float(0.0),
        Kind::Double => V10::Double(0.0),
        Kind::Decimal32 => V10::Decimal32(0),
        Kind::Decimal64 => V10::Decimal64(0),
        Kind::Decimal128 => V10::Decimal128([0; 16]),
        Kind::Timestamp => V10::Timestamp(0),
        Kind::Uuid => V10::Uuid([0; 16]),
        Kind::Null | Kind::Array => V10::Null,
    }
}

/// A map with hostile symbol and string keys and values.
fn map_10(pool: &mut Pool) -> V10 {
    V10::Map(vec![
        (
            V10::Symbol(a10::Symbol::from(pool.text().as_str())),
            V10::String(pool.text().as_str().into()),
        ),
        (
            V10::String(pool.text().as_str().into()),
            V10::Symbol(a10::Symbol::from(pool.text().as_str())),
        ),
    ])
}

fn field_10(f: &FieldDef, pool: &mut Pool, depth: u32) -> V10 {
    let single = match f.ty {
        FieldType::Prim(Kind::Map) | FieldType::Fields => map_10(pool),
        FieldType::Prim(k) => leaf_10(k, pool),
        FieldType::Composite(def) if depth > 0 => composite_10(def, pool, depth - 1),
        FieldType::Composite(_) => V10::Null,
        FieldType::Any => {
            let def = f
                .requires
                .iter()
                .find_map(|r| ALL.iter().copied().find(|d| d.is_list() && d.provides(r)));
            match def {
                Some(d) if depth > 0 => composite_10(d, pool, depth - 1),
                _ => V10::String(pool.text().as_str().into()),
            }
        }
    };
    match (f.multiple, f.ty) {
        (true, FieldType::Prim(k @ (Kind::Symbol | Kind::String))) => V10::Array(Box::new(Array {
            descriptor: None,
            kind: k,
            items: vec![single, leaf_10(k, pool)],
        })),
        _ => single,
    }
}

/// A composite with every field present and every string in it hostile.
fn composite_10(def: &CompositeDef, pool: &mut Pool, depth: u32) -> V10 {
    let fields = def
        .fields
        .iter()
        .map(|f| field_10(f, pool, depth))
        .collect();
    a10::described_list(def.code, fields)
}

/// Every message section, each filled as its type says.
fn message_10(pool: &mut Pool) -> Vec<u8> {
    let mut out = Vec::new();
    for def in ALL.iter().filter(|d| d.provides("section")) {
        let v = if def.is_list() {
            composite_10(def, pool, 2)
        } else {
            let value = match def.source {
                "binary" => V10::Binary(pool.bytes()),
                "list" => V10::List(vec![V10::String(pool.text().as_str().into())]),
                "map" | "annotations" => map_10(pool),
                _ => V10::String(pool.text().as_str().into()),
            };
            V10::Described(Box::new(a10::Described {
                descriptor: a10::Descriptor::Code(def.code),
                value,
            }))
        };
        v.encode(&mut out).unwrap();
    }
    out
}

/// Every performative in the tables' order (open, begin, attach, ..., close), the transfer
/// carrying a message with every section.
fn frames_10(pool: &mut Pool, out: &mut Vec<u8>) {
    for def in ALL.iter().filter(|d| d.is_list() && d.provides("frame")) {
        let body = composite_10(def, pool, 3);
        let payload = if def.name == "transfer" {
            message_10(pool)
        } else {
            Vec::new()
        };
        let channel = u16::from(def.name != "open" && def.name != "close");
        out.extend(a10::encode_frame(0, channel, Some(&body), &payload).unwrap());
    }
}

fn conversation_10(pool: &mut Pool) -> (Vec<u8>, Vec<u8>) {
    let mut c2s = b"AMQP\x00\x01\x00\x00".to_vec();
    let mut s2c = c2s.clone();
    frames_10(pool, &mut c2s);
    frames_10(pool, &mut s2c);
    (c2s, s2c)
}

// ---- the capture, the outputs, the scan ----

/// A JSONL capture of one connection: the two streams, then a gap and a close with hostile
/// reasons.
fn jsonl(c2s: &[u8], s2c: &[u8], pool: &mut Pool) -> Vec<u8> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let ts = "2026-11-29T12:00:00.000000Z";
    let mut lines = vec![
        serde_json::json!({"v": 1, "ts": ts, "conn": 1, "event": "connect",
        "client": "127.0.0.1:40000", "upstream": "127.0.0.1:5672"}),
    ];
    for (dir, bytes) in [("c2s", c2s), ("s2c", s2c)] {
        lines.push(
            serde_json::json!({"v": 1, "ts": ts, "conn": 1, "event": "bytes",
            "dir": dir, "offset": 0, "raw": b64(bytes)}),
        );
    }
    lines.push(
        serde_json::json!({"v": 1, "ts": ts, "conn": 1, "event": "gap", "dir": "c2s",
        "offset": c2s.len(), "len": 4, "reason": pool.text()}),
    );
    lines.push(
        serde_json::json!({"v": 1, "ts": ts, "conn": 1, "event": "close",
        "reason": pool.text(), "bytes_c2s": c2s.len() + 4, "bytes_s2c": s2c.len()}),
    );
    let mut out = Vec::new();
    for l in lines {
        out.extend(serde_json::to_vec(&l).unwrap());
        out.push(b'\n');
    }
    out
}

/// Every byte of `out` is shown text: valid UTF-8, nothing hostile but the line breaks, and no
/// line that a peer's newline started.
fn assert_clean(what: &str, out: &[u8]) {
    let text = std::str::from_utf8(out)
        .unwrap_or_else(|e| panic!("{what}: raw bytes that are not UTF-8 ({e})"));
    for (n, line) in text.lines().enumerate() {
        if let Some(c) = line.chars().find(|&c| is_hostile(c)) {
            panic!("{what}: raw U+{:04X} on line {}: {line:?}", c as u32, n + 1);
        }
        assert!(
            !line.trim_start().starts_with("-> PASS"),
            "{what}: forged line {}: {line:?}",
            n + 1
        );
    }
}

fn run(what: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 2),
        "{what}: {:?}",
        out.status
    );
    let mut all = out.stdout;
    all.extend(out.stderr);
    all
}

/// Every output of both the capture and the bare streams, scanned.
fn every_output_is_clean(c2s: &[u8], s2c: &[u8], pool: &mut Pool, s2c_protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("hostile\x1b]0;name\x07.jsonl");
    std::fs::File::create(&cap)
        .unwrap()
        .write_all(&jsonl(c2s, s2c, pool))
        .unwrap();
    let cap = cap.to_str().unwrap();
    let written = dir.path().join("out.jsonl");
    let written_s = written.to_str().unwrap();
    let trace = run(
        "replay --no-tui",
        &["replay", "--no-tui", "--jsonl", written_s, cap],
    );
    assert!(
        trace.windows(5).any(|w| w == b"close"),
        "the replay ran: {}",
        String::from_utf8_lossy(&trace)
    );
    assert_clean("replay --no-tui", &trace);
    assert_clean("replay --jsonl", &std::fs::read(&written).unwrap());
    assert_clean("check", &run("check", &["check", cap]));
    assert_clean(
        "check --format json",
        &run("check --format json", &["check", "--format", "json", cap]),
    );
    assert_clean("stats", &run("stats", &["stats", cap]));
    assert_clean(
        "stats --json",
        &run("stats", &["stats", "--format", "json", cap]),
    );
    for (name, bytes, proto) in [("c2s", c2s, "amqp10"), ("s2c", s2c, s2c_protocol)] {
        let hex = hex::encode(bytes);
        for mode in ["--tree", "--json"] {
            let out = run(
                "decode",
                &["decode", mode, "--show-secrets", "--protocol", proto, &hex],
            );
            assert_clean(&format!("decode {mode} {name}"), &out);
        }
        let out = run("decode", &["decode", "--protocol", proto, &hex]);
        assert_clean(&format!("decode {name}"), &out);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn amqp091_strings_in_every_position_reach_no_output_raw(
        strings in prop::collection::vec(hostile(), 7..12),
    ) {
        let mut pool = Pool { strings, next: 0 };
        let (c2s, s2c) = conversation_091(&mut pool);
        every_output_is_clean(&c2s, &s2c, &mut pool, "amqp091");
    }

    #[test]
    fn amqp10_strings_in_every_position_reach_no_output_raw(
        strings in prop::collection::vec(hostile(), 7..12),
    ) {
        let mut pool = Pool { strings, next: 0 };
        let (c2s, s2c) = conversation_10(&mut pool);
        every_output_is_clean(&c2s, &s2c, &mut pool, "amqp10");
    }
}

#[test]
fn the_capture_names_a_link_whose_name_stats_shows() {
    // The 1.0 conversation's attach names its link: `stats` lists it (so the scan above
    // covers a link name in the stats text).
    let mut pool = Pool {
        strings: vec![b"plain-link".to_vec()],
        next: 0,
    };
    let (c2s, s2c) = conversation_10(&mut pool);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("c.jsonl");
    std::fs::write(&cap, jsonl(&c2s, &s2c, &mut pool)).unwrap();
    let out = run("stats", &["stats", cap.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("link \"plain-link\""), "{out}");
}
