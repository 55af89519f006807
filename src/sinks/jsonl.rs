//! JSON Lines capture: one JSON object per event, the public capture format (documented in
//! docs/jsonl-format.md).
//!
//! Every field name of the format is written here and only here: [`write_event`] writes an
//! [`Event`]'s JSON object to any [`JsonOut`] — the sink's text writer, or [`event_json`]'s
//! `serde_json::Value` — and [`header_json`] / [`frame_json`] give the `decode` command the
//! same objects without the event keys. A JSONL reader or checker should use the [`keys`]
//! constants.
//!
//! The sink writes through a buffer and flushes once per batch, so the file is a valid prefix
//! of complete lines whenever a reader looks at it. It never writes unmasked credentials unless
//! the Inspector was told to show them.

use std::io::{self, Write};

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::codec::{DecodeError, ProtocolHeader};

use super::coalesce::{Coalescer, Repeated};
use crate::event::{ConnId, Dir, Event, EventKind, Violation};
use crate::json::{JsonOut, TextWriter, ValueBuilder, to_value};
use crate::pipeline::{Render, Sink};
use crate::protocol::{AnyFrame, AnyMessage};
use crate::sinks::ts_text::TsText;

/// The format version written as `"v"`.
pub const FORMAT_VERSION: u64 = 1;

/// Field names and event names of the JSONL format.
pub mod keys {
    /// Format version.
    pub const V: &str = "v";
    /// RFC 3339 UTC timestamp with microseconds.
    pub const TS: &str = "ts";
    /// Connection number.
    pub const CONN: &str = "conn";
    /// Event kind.
    pub const EVENT: &str = "event";
    /// `c2s` / `s2c`.
    pub const DIR: &str = "dir";
    /// Protocol name.
    pub const PROTO: &str = "proto";
    /// Byte offset in the direction's stream.
    pub const OFFSET: &str = "offset";
    /// Base64 of the exact bytes (credentials masked).
    pub const RAW: &str = "raw";
    /// A frame's full size, when `raw` holds only its head (a frame larger than the
    /// inspection budget; the rest of its bytes follow in `bytes` records).
    pub const SIZE: &str = "size";
    /// Frame channel.
    pub const CHANNEL: &str = "channel";
    /// Frame name.
    pub const NAME: &str = "name";
    /// Frame fields.
    pub const FIELDS: &str = "fields";
    /// One-line summary.
    pub const SUMMARY: &str = "summary";
    /// The message a frame completes.
    pub const MESSAGE: &str = "message";
    /// Client address (connect).
    pub const CLIENT: &str = "client";
    /// Upstream address (connect).
    pub const UPSTREAM: &str = "upstream";
    /// Violation rule id.
    pub const RULE: &str = "rule";
    /// Violation severity.
    pub const SEVERITY: &str = "severity";
    /// Violation spec reference.
    pub const SPEC: &str = "spec";
    /// Close reason / gap reason.
    pub const REASON: &str = "reason";
    /// Bytes client to server (close).
    pub const BYTES_C2S: &str = "bytes_c2s";
    /// Bytes server to client (close).
    pub const BYTES_S2C: &str = "bytes_s2c";
    /// Gap length.
    pub const LEN: &str = "len";
    /// Violation: how many occurrences a coalesced record stands for (past the first ones,
    /// recorded one by one); its `offset` and `ts` are the last one's.
    pub const COUNT: &str = "count";
    /// Coalesced violation: the first occurrence's offset.
    pub const FIRST_OFFSET: &str = "first_offset";
    /// Coalesced violation: the first occurrence's time.
    pub const FIRST_TS: &str = "first_ts";

    /// `"event"` values.
    pub const CONNECT: &str = "connect";
    /// `"event"` value for a protocol header.
    pub const HEADER: &str = "header";
    /// `"event"` value for a frame.
    pub const FRAME: &str = "frame";
    /// Violation: the offending frame's summary line (when there is a decoded frame).
    pub const VIOLATION_FRAME: &str = "frame_summary";
    /// `"event"` value for a violation.
    pub const VIOLATION: &str = "violation";
    /// `"event"` value for a close.
    pub const CLOSE: &str = "close";
    /// `"event"` value for a gap.
    pub const GAP: &str = "gap";
    /// `"event"` value for the end of one direction (its sender's FIN: a half-close).
    pub const FIN: &str = "fin";
    /// `"event"` value for relayed bytes that are not a header or a decoded frame.
    pub const BYTES: &str = "bytes";
    /// `"event"` value for a diagnosis's start or end.
    pub const DIAGNOSIS: &str = "diagnosis";
}

/// Options for serialisation.
#[derive(Clone, Copy, Debug)]
pub struct JsonOptions {
    /// Message bodies longer than this are truncated (`--max-body`).
    pub max_body: usize,
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions { max_body: 4096 }
    }
}

/// The JSONL `"proto"` of a frame: `amqp-sasl` for AMQP 1.0 SASL frames, `amqp-1.0` for other
/// 1.0 frames, `amqp-0-9-1`.
pub fn frame_proto(frame: &AnyFrame) -> &'static str {
    frame.proto_name()
}

/// The JSON of a message result: the codec's message JSON (with `"cbs"` for an AMQP 1.0 CBS
/// request or response), or `{"error", "offset", "path"}` when the frames completing it did
/// not assemble into a message.
pub fn write_message<O: JsonOut + ?Sized>(
    o: &mut O,
    message: &Result<AnyMessage, DecodeError>,
    opts: &JsonOptions,
) {
    o.begin_object();
    match message {
        Ok(m) => m.write_json_entries(o, opts.max_body),
        Err(e) => {
            o.key("error");
            o.str_fmt(format_args!("{}", e.kind));
            o.entry_u64("offset", e.offset);
            o.entry_str("path", &e.path_string());
        }
    }
    o.end_object();
}

/// The keys every event object has. Each object writes them in their byte-order place among
/// its own keys, so the text writer never has to move a key (it would sort them anyway).
#[derive(Clone, Copy, Debug)]
struct Envelope<'a> {
    conn: ConnId,
    /// For events about one direction.
    dir: Option<Dir>,
    event: &'static str,
    ts: &'a str,
}

/// `conn`, `dir`, `event` (nothing without an envelope: `decode --json`).
fn head<O: JsonOut + ?Sized>(o: &mut O, env: Option<&Envelope>) {
    if let Some(e) = env {
        o.entry_u64(keys::CONN, e.conn);
        if let Some(dir) = e.dir {
            o.entry_str(keys::DIR, dir.as_str());
        }
        o.entry_str(keys::EVENT, e.event);
    }
}

/// `ts`, `v` (nothing without an envelope).
fn tail<O: JsonOut + ?Sized>(o: &mut O, env: Option<&Envelope>) {
    if let Some(e) = env {
        o.entry_str(keys::TS, e.ts);
        o.entry_u64(keys::V, FORMAT_VERSION);
    }
}

/// A `header` object.
fn write_header<O: JsonOut + ?Sized>(
    o: &mut O,
    env: Option<&Envelope>,
    offset: u64,
    header: ProtocolHeader,
    raw: &[u8],
) {
    o.begin_object();
    head(o, env);
    o.entry_u64(keys::OFFSET, offset);
    o.entry_str(keys::PROTO, header.proto_name());
    o.key(keys::RAW);
    o.base64(raw);
    tail(o, env);
    o.end_object();
}

/// The fields of a `header` object (without `v`/`ts`/`conn`/`event`/`dir`).
pub fn header_json(offset: u64, header: ProtocolHeader, raw: &[u8]) -> Map<String, Value> {
    object(|o| write_header(o, None, offset, header, raw))
}

/// A `frame` object.
fn write_frame<O: JsonOut + ?Sized>(
    o: &mut O,
    env: Option<&Envelope>,
    f: FrameParts,
    opts: &JsonOptions,
) {
    o.begin_object();
    o.entry_u64(keys::CHANNEL, f.frame.channel().into());
    head(o, env);
    o.key(keys::FIELDS);
    f.frame.write_fields_json(o);
    if let Some(msg) = f.message {
        o.key(keys::MESSAGE);
        write_message(o, msg, opts);
    }
    o.entry_str(keys::NAME, f.frame.name());
    o.entry_u64(keys::OFFSET, f.offset);
    o.entry_str(keys::PROTO, frame_proto(f.frame));
    o.key(keys::RAW);
    o.base64(f.raw);
    if f.frame.streamed() > 0 {
        // `raw` is the frame's head; the rest follows in `bytes` records.
        o.entry_u64(keys::SIZE, f.raw.len() as u64 + f.frame.streamed());
    }
    o.key(keys::SUMMARY);
    o.str_with(&mut |out| f.frame.summary_into(out));
    tail(o, env);
    o.end_object();
}

/// What a `frame` object shows.
#[derive(Clone, Copy)]
struct FrameParts<'a> {
    offset: u64,
    raw: &'a [u8],
    frame: &'a AnyFrame,
    message: Option<&'a Result<AnyMessage, DecodeError>>,
}

/// The fields of a `frame` object (without `v`/`ts`/`conn`/`event`/`dir`).
pub fn frame_json(
    offset: u64,
    raw: &Bytes,
    frame: &AnyFrame,
    message: Option<&Result<AnyMessage, DecodeError>>,
    opts: &JsonOptions,
) -> Map<String, Value> {
    let parts = FrameParts {
        offset,
        raw,
        frame,
        message,
    };
    object(|o| write_frame(o, None, parts, opts))
}

/// A `violation` object.
fn write_violation<O: JsonOut + ?Sized>(o: &mut O, env: &Envelope, v: &Violation) {
    o.begin_object();
    head(o, Some(env));
    if let Some(f) = &v.frame {
        o.entry_str(keys::VIOLATION_FRAME, f);
    }
    o.entry_str(keys::MESSAGE, &v.message);
    o.entry_u64(keys::OFFSET, v.offset);
    o.entry_str(keys::RULE, v.rule.id);
    o.entry_str(keys::SEVERITY, v.severity.as_str());
    o.entry_str(keys::SPEC, &v.spec);
    tail(o, Some(env));
    o.end_object();
}

/// The `violation` record standing for the occurrences `r` counted (see
/// [`super::coalesce`]), at the last one's offset and time.
fn write_repeated<O: JsonOut + ?Sized>(o: &mut O, conn: u64, r: &Repeated) {
    let v = r.violation();
    o.begin_object();
    o.entry_u64(keys::CONN, conn);
    o.entry_u64(keys::COUNT, r.count);
    o.entry_str(keys::DIR, r.dir.as_str());
    o.entry_str(keys::EVENT, keys::VIOLATION);
    o.entry_u64(keys::FIRST_OFFSET, r.first.0);
    o.entry_str(keys::FIRST_TS, &r.first.1.rfc3339());
    o.entry_str(keys::MESSAGE, &v.message);
    o.entry_u64(keys::OFFSET, v.offset);
    o.entry_str(keys::RULE, v.rule.id);
    o.entry_str(keys::SEVERITY, v.severity.as_str());
    o.entry_str(keys::SPEC, &v.spec);
    o.entry_str(keys::TS, &r.last.1.rfc3339());
    o.entry_u64(keys::V, FORMAT_VERSION);
    o.end_object();
}

/// A frame by where it is: `{"dir", "offset"}`.
fn write_frame_ref<O: JsonOut + ?Sized>(o: &mut O, f: &crate::event::FrameRef) {
    o.begin_object();
    o.entry_str(keys::DIR, f.dir.as_str());
    o.entry_u64(keys::OFFSET, f.offset);
    o.end_object();
}

/// A `diagnosis` object: `phase` `start` or `end` (with `why` and, when a frame ended it,
/// `end_frame`); `since` and `at` (when it became a diagnosis) as times, the evidence frames.
fn write_diagnosis<O: JsonOut + ?Sized>(o: &mut O, env: &Envelope, d: &crate::event::Diagnosis) {
    o.begin_object();
    o.entry_str("at", &d.at.rfc3339());
    head_conn(o, env);
    o.entry_str("detail", &d.detail);
    if let Some(f) = d.ended.as_ref().and_then(|e| e.frame.as_ref()) {
        o.key("end_frame");
        write_frame_ref(o, f);
    }
    o.entry_str(keys::EVENT, env.event);
    o.key("evidence");
    o.begin_array();
    for f in &d.evidence {
        write_frame_ref(o, f);
    }
    o.end_array();
    o.entry_str("id", d.check.id);
    o.entry_str("name", &d.name);
    o.entry_str("phase", if d.ended.is_some() { "end" } else { "start" });
    o.entry_str("scope", d.scope.as_str());
    o.entry_str("since", &d.since.rfc3339());
    tail(o, Some(env));
    if let Some(e) = &d.ended {
        o.entry_str("why", e.why.as_str());
    }
    o.end_object();
}

/// `conn` alone (a diagnosis writes `event` in its own place among its sorted keys).
fn head_conn<O: JsonOut + ?Sized>(o: &mut O, env: &Envelope) {
    o.entry_u64(keys::CONN, env.conn);
}

/// The object `write` writes, as a map.
fn object(write: impl FnOnce(&mut ValueBuilder)) -> Map<String, Value> {
    match to_value(write) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Write the JSONL object for an event, its time already formatted as `ts` (events of one
/// chunk share it); `false`, with nothing written, for `Data` events (not part of the format).
pub fn write_event<O: JsonOut + ?Sized>(
    o: &mut O,
    ev: &Event,
    ts: &str,
    opts: &JsonOptions,
) -> bool {
    let env = |dir, event| Envelope {
        conn: ev.conn,
        dir,
        event,
        ts,
    };
    match &ev.kind {
        EventKind::Connect { client, upstream } => {
            o.begin_object();
            o.key(keys::CLIENT);
            o.str_fmt(format_args!("{client}"));
            let env = env(None, keys::CONNECT);
            head(o, Some(&env));
            tail(o, Some(&env));
            o.key(keys::UPSTREAM);
            o.str_fmt(format_args!("{upstream}"));
            o.end_object();
        }
        EventKind::Header {
            dir,
            offset,
            header,
            raw,
        } => write_header(
            o,
            Some(&env(Some(*dir), keys::HEADER)),
            *offset,
            *header,
            raw,
        ),
        EventKind::Frame(f) => {
            let parts = FrameParts {
                offset: f.offset,
                raw: &f.raw,
                frame: &f.frame,
                message: f.message.as_ref(),
            };
            write_frame(o, Some(&env(Some(f.dir), keys::FRAME)), parts, opts);
        }
        EventKind::Violation(v) => write_violation(o, &env(Some(v.dir), keys::VIOLATION), v),
        EventKind::Gap {
            dir,
            offset,
            len,
            reason,
        } => {
            let env = env(Some(*dir), keys::GAP);
            o.begin_object();
            head(o, Some(&env));
            o.entry_u64(keys::LEN, *len);
            o.entry_u64(keys::OFFSET, *offset);
            o.entry_str(keys::REASON, reason);
            tail(o, Some(&env));
            o.end_object();
        }
        EventKind::Undecoded { dir, offset, bytes } => {
            let env = env(Some(*dir), keys::BYTES);
            o.begin_object();
            head(o, Some(&env));
            o.entry_u64(keys::OFFSET, *offset);
            o.key(keys::RAW);
            o.base64(bytes);
            tail(o, Some(&env));
            o.end_object();
        }
        EventKind::Fin { dir, offset } => {
            let env = env(Some(*dir), keys::FIN);
            o.begin_object();
            head(o, Some(&env));
            o.entry_u64(keys::OFFSET, *offset);
            tail(o, Some(&env));
            o.end_object();
        }
        EventKind::Close(c) => {
            let env = env(None, keys::CLOSE);
            o.begin_object();
            o.entry_u64(keys::BYTES_C2S, c.bytes_c2s);
            o.entry_u64(keys::BYTES_S2C, c.bytes_s2c);
            head(o, Some(&env));
            o.entry_str(keys::REASON, &c.reason.to_string());
            tail(o, Some(&env));
            o.end_object();
        }
        EventKind::Diagnosis(d) => write_diagnosis(o, &env(None, keys::DIAGNOSIS), d),
        // Not part of the format: the bytes go to pcapng, the state to live views.
        EventKind::Data { .. } | EventKind::State(_) => return false,
    }
    true
}

/// The JSONL object for an event, or `None` for `Data` events (not part of the format).
pub fn event_json(ev: &Event, opts: &JsonOptions) -> Option<Value> {
    let mut o = ValueBuilder::default();
    write_event(&mut o, ev, &ev.ts.rfc3339(), opts).then(|| o.finish())
}

/// Writes one JSON object per line to `W` (a buffered file in the CLI), straight from the
/// events (no `serde_json::Value` in between).
#[derive(Debug)]
pub struct JsonlSink<W: Write> {
    out: W,
    lines: Lines,
}

/// Makes the JSONL line of one event: what [`JsonlSink`] writes, and what its [`Render`] makes
/// on an inspection worker.
#[derive(Debug)]
struct Lines {
    opts: JsonOptions,
    /// Event times as text.
    ts: TsText,
    /// The line being written (reused).
    line: TextWriter,
    /// Which violations are written one by one, which counted.
    coalescer: Coalescer,
}

impl Lines {
    fn new(opts: JsonOptions) -> Self {
        Lines {
            opts,
            ts: TsText::default(),
            line: TextWriter::new(),
            coalescer: Coalescer::default(),
        }
    }

    /// The line of `ev`, newline included; `None` for events JSONL leaves out (data, state,
    /// a violation counted instead: [`super::coalesce`]). A close is preceded by the records
    /// of what was counted on its connection.
    fn line(&mut self, ev: &Event) -> Option<&[u8]> {
        if matches!(ev.kind, EventKind::Data { .. } | EventKind::State(_)) {
            return None;
        }
        if !self.coalescer.keep(ev) {
            return None;
        }
        self.line.clear();
        if let EventKind::Close(_) = ev.kind {
            for r in self.coalescer.close(ev.conn) {
                write_repeated(&mut self.line, ev.conn, &r);
                self.line.newline();
            }
        }
        let ts = self.ts.get(ev.ts);
        if !write_event(&mut self.line, ev, ts, &self.opts) {
            return None;
        }
        self.line.newline();
        Some(self.line.as_bytes())
    }
}

impl Render for Lines {
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
        if let Some(line) = self.line(ev) {
            out.extend_from_slice(line);
        }
    }

    fn release_spare(&mut self) {
        // A line of a large frame's head grows the writer to megabytes.
        self.line.release_spare(KEEP_LINE);
    }
}

/// Bytes a renderer's line writer keeps room for while its worker waits for traffic.
const KEEP_LINE: usize = 64 * 1024;

impl<W: Write> JsonlSink<W> {
    /// A sink writing to `out`; wrap files in a `BufWriter` (flushed once per batch).
    pub fn new(out: W, opts: JsonOptions) -> Self {
        JsonlSink {
            out,
            lines: Lines::new(opts),
        }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write> Sink for JsonlSink<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        match self.lines.line(ev) {
            Some(line) => self.out.write_all(line),
            None => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn records_cuts(&self) -> bool {
        true
    }

    fn renderer(&self) -> Option<Box<dyn Render>> {
        Some(Box::new(Lines::new(self.lines.opts)))
    }

    fn write_rendered(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CloseInfo, Severity, Timestamp};
    use serde_json::json;

    fn ev(kind: EventKind) -> Event {
        Event {
            conn: 3,
            ts: Timestamp(1_764_417_600_123_456),
            kind,
        }
    }

    #[test]
    fn every_object_has_version_time_conn_and_event() {
        let v = event_json(
            &ev(EventKind::Connect {
                client: "127.0.0.1:4000".parse().unwrap(),
                upstream: "127.0.0.1:5672".parse().unwrap(),
            }),
            &JsonOptions::default(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"v": 1, "ts": "2025-11-29T12:00:00.123456Z", "conn": 3, "event": "connect",
                   "client": "127.0.0.1:4000", "upstream": "127.0.0.1:5672"})
        );
    }

    #[test]
    fn header_violation_close_have_the_documented_fields() {
        let o = JsonOptions::default();
        let h = event_json(
            &ev(EventKind::Header {
                dir: Dir::C2S,
                offset: 0,
                header: ProtocolHeader::Amqp091,
                raw: Bytes::from_static(b"AMQP\x00\x00\x09\x01"),
            }),
            &o,
        )
        .unwrap();
        assert_eq!(h["proto"], "amqp-0-9-1");
        assert_eq!(h["dir"], "c2s");
        assert_eq!(h["raw"], "QU1RUAAACQE=");
        let v = event_json(
            &ev(EventKind::Violation(Violation {
                rule: &crate::state::rules::CODEC_MALFORMED_FRAME,
                severity: Severity::Warning,
                spec: "s".into(),
                message: "m".into(),
                dir: Dir::S2C,
                offset: 9,
                frame: None,
            })),
            &o,
        )
        .unwrap();
        assert_eq!(
            (&v["event"], &v["dir"], &v["offset"], &v["severity"]),
            (
                &json!("violation"),
                &json!("s2c"),
                &json!(9),
                &json!("warning")
            )
        );
        let c = event_json(
            &ev(EventKind::Close(CloseInfo {
                reason: "client closed".into(),
                bytes_c2s: 1,
                bytes_s2c: 2,
            })),
            &o,
        )
        .unwrap();
        assert_eq!((&c["bytes_c2s"], &c["bytes_s2c"]), (&json!(1), &json!(2)));
    }

    #[test]
    fn undecoded_bytes_are_a_bytes_record_with_their_offset_and_raw() {
        let v = event_json(
            &ev(EventKind::Undecoded {
                dir: Dir::S2C,
                offset: 8,
                bytes: Bytes::from_static(b"GET /"),
            }),
            &JsonOptions::default(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"v": 1, "ts": "2025-11-29T12:00:00.123456Z", "conn": 3, "event": "bytes",
                   "dir": "s2c", "offset": 8, "raw": "R0VUIC8="})
        );
    }

    #[test]
    fn sink_writes_one_line_per_event_and_skips_data() {
        let mut sink = JsonlSink::new(Vec::new(), JsonOptions::default());
        sink.event(&ev(EventKind::Data {
            dir: Dir::C2S,
            offset: 0,
            bytes: Bytes::from_static(b"x"),
        }))
        .unwrap();
        sink.event(&ev(EventKind::Gap {
            dir: Dir::C2S,
            offset: 5,
            len: 6,
            reason: "lost".into(),
        }))
        .unwrap();
        let text = String::from_utf8(sink.into_inner()).unwrap();
        assert_eq!(text.lines().count(), 1);
        let v: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["event"], "gap");
        assert_eq!(v["len"], 6);
    }
}
