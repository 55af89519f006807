//! JSON Lines capture: one JSON object per event, the public capture format (documented in
//! README.md, "JSON Lines capture format").
//!
//! Every field name of the format is written here and only here: [`event_json`] turns an
//! [`Event`] into its JSON object, and the `*_json` helpers build the parts the `decode`
//! command shares. A JSONL reader or checker should use the [`keys`] constants.
//!
//! The sink writes through a buffer and flushes once per batch, so the file is a valid prefix
//! of complete lines whenever a reader looks at it. It never writes unmasked credentials unless
//! the Inspector was told to show them.

use std::io::{self, Write};

use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::codec::{AnyFrame, AnyMessage, DecodeError, ProtocolHeader};
use crate::event::{Dir, Event, EventKind, Timestamp, Violation};
use crate::pipeline::Sink;

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

/// Base64 (standard alphabet, padded) of `bytes`.
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The JSONL `"proto"` of a frame: `amqp-sasl` for AMQP 1.0 SASL frames, `amqp-1.0` for other
/// 1.0 frames, `amqp-0-9-1`.
pub fn frame_proto(frame: &AnyFrame) -> &'static str {
    match frame {
        AnyFrame::Amqp10(_) if frame.name().starts_with("sasl-") => "amqp-sasl",
        AnyFrame::Amqp10(_) => "amqp-1.0",
        AnyFrame::Amqp091(_) => "amqp-0-9-1",
    }
}

/// The JSON of a message result: the codec's message JSON, or `{"error", "offset", "path"}`
/// when the frames completing it did not assemble into a message.
pub fn message_json(message: &Result<AnyMessage, DecodeError>, opts: &JsonOptions) -> Value {
    match message {
        Ok(m) => {
            let mut j = m.to_json(opts.max_body);
            if let (AnyMessage::Amqp10(m), Value::Object(obj)) = (m, &mut j)
                && let Some(cbs) = crate::codec::amqp10::cbs::summary_json(m)
            {
                obj.insert("cbs".into(), cbs);
            }
            j
        }
        Err(e) => json!({
            "error": e.kind.to_string(),
            "offset": e.offset,
            "path": e.path_string(),
        }),
    }
}

/// The fields of a `header` object (without `v`/`ts`/`conn`/`event`/`dir`).
pub fn header_json(offset: u64, header: ProtocolHeader, raw: &[u8]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::PROTO.into(), header.proto_name().into());
    m.insert(keys::OFFSET.into(), offset.into());
    m.insert(keys::RAW.into(), base64(raw).into());
    m
}

/// The fields of a `frame` object (without `v`/`ts`/`conn`/`event`/`dir`).
pub fn frame_json(
    offset: u64,
    raw: &Bytes,
    frame: &AnyFrame,
    message: Option<&Result<AnyMessage, DecodeError>>,
    opts: &JsonOptions,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::PROTO.into(), frame_proto(frame).into());
    m.insert(keys::OFFSET.into(), offset.into());
    m.insert(keys::RAW.into(), base64(raw).into());
    m.insert(keys::CHANNEL.into(), frame.channel().into());
    m.insert(keys::NAME.into(), frame.name().into());
    m.insert(keys::FIELDS.into(), frame.fields_json());
    m.insert(keys::SUMMARY.into(), frame.summary().into());
    if let Some(msg) = message {
        m.insert(keys::MESSAGE.into(), message_json(msg, opts));
    }
    m
}

/// The fields of a `violation` object (without `v`/`ts`/`conn`/`event`).
pub fn violation_json(v: &Violation) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::DIR.into(), v.dir.as_str().into());
    m.insert(keys::OFFSET.into(), v.offset.into());
    m.insert(keys::RULE.into(), v.rule.clone().into());
    m.insert(keys::SEVERITY.into(), v.severity.as_str().into());
    m.insert(keys::SPEC.into(), v.spec.clone().into());
    m.insert(keys::MESSAGE.into(), v.message.clone().into());
    if let Some(f) = &v.frame {
        m.insert(keys::VIOLATION_FRAME.into(), f.clone().into());
    }
    m
}

fn with_dir(dir: Dir, mut m: Map<String, Value>) -> Map<String, Value> {
    m.insert(keys::DIR.into(), dir.as_str().into());
    m
}

/// The JSONL object for an event, or `None` for `Data` events (not part of the format).
pub fn event_json(ev: &Event, opts: &JsonOptions) -> Option<Value> {
    event_json_at(ev, ev.ts.rfc3339(), opts)
}

/// [`event_json`] with the event's time already formatted (events of one chunk share it).
fn event_json_at(ev: &Event, ts: String, opts: &JsonOptions) -> Option<Value> {
    let (name, body) = match &ev.kind {
        EventKind::Connect { client, upstream } => {
            let mut m = Map::new();
            m.insert(keys::CLIENT.into(), client.to_string().into());
            m.insert(keys::UPSTREAM.into(), upstream.to_string().into());
            (keys::CONNECT, m)
        }
        EventKind::Header {
            dir,
            offset,
            header,
            raw,
        } => (
            keys::HEADER,
            with_dir(*dir, header_json(*offset, *header, raw)),
        ),
        EventKind::Frame(f) => (
            keys::FRAME,
            with_dir(
                f.dir,
                frame_json(f.offset, &f.raw, &f.frame, f.message.as_ref(), opts),
            ),
        ),
        EventKind::Violation(v) => (keys::VIOLATION, violation_json(v)),
        EventKind::Gap {
            dir,
            offset,
            len,
            reason,
        } => {
            let mut m = Map::new();
            m.insert(keys::OFFSET.into(), (*offset).into());
            m.insert(keys::LEN.into(), (*len).into());
            m.insert(keys::REASON.into(), reason.clone().into());
            (keys::GAP, with_dir(*dir, m))
        }
        EventKind::Close(c) => {
            let mut m = Map::new();
            m.insert(keys::REASON.into(), c.reason.clone().into());
            m.insert(keys::BYTES_C2S.into(), c.bytes_c2s.into());
            m.insert(keys::BYTES_S2C.into(), c.bytes_s2c.into());
            (keys::CLOSE, m)
        }
        EventKind::Data { .. } => return None,
    };
    let mut m = body;
    m.insert(keys::V.into(), FORMAT_VERSION.into());
    m.insert(keys::TS.into(), ts.into());
    m.insert(keys::CONN.into(), ev.conn.into());
    m.insert(keys::EVENT.into(), name.into());
    Some(Value::Object(m))
}

/// Writes one JSON object per line to `W` (a buffered file in the CLI).
#[derive(Debug)]
pub struct JsonlSink<W: Write> {
    out: W,
    opts: JsonOptions,
    /// The last timestamp formatted, and its text.
    last_ts: Option<(Timestamp, String)>,
}

impl<W: Write> JsonlSink<W> {
    /// A sink writing to `out`; wrap files in a `BufWriter` (flushed once per batch).
    pub fn new(out: W, opts: JsonOptions) -> Self {
        JsonlSink {
            out,
            opts,
            last_ts: None,
        }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The writer (a parallel replay takes the bytes written to memory so far).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write> Sink for JsonlSink<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if matches!(ev.kind, EventKind::Data { .. }) {
            return Ok(());
        }
        let ts = match &self.last_ts {
            Some((t, text)) if *t == ev.ts => text.clone(),
            _ => {
                let text = ev.ts.rfc3339();
                self.last_ts = Some((ev.ts, text.clone()));
                text
            }
        };
        if let Some(v) = event_json_at(ev, ts, &self.opts) {
            serde_json::to_writer(&mut self.out, &v)?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CloseInfo, Severity};

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
                rule: "r".into(),
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
