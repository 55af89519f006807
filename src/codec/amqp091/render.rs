//! Human and JSON renderings of AMQP 0-9-1 frames and values: the one-line summary and the
//! `fields` object (spec names, kebab-case) of the JSONL shape.
//!
//! Pure formatting: never fails, never panics, bounded output for summaries.

use std::fmt::Write;

use bytes::Bytes;
use serde_json::Value as Json;

use super::auth::{AuthResponse, decode_response};
use super::content::ContentHeader;
use super::field_table::{FieldTable, FieldValue};
use super::frame::{Frame, FrameKind};
use super::generated::MethodKind;
use super::method::{Method, Value};
use crate::base::escape;
use crate::json::{JsonOut, to_value};

/// Most bytes of a string shown in a summary (the cut is marked `…(+N bytes)`).
const SUMMARY_STR_MAX: usize = 64;
/// Longest table shown in a summary before it is cut (marked `…(+N entries)`).
const SUMMARY_TABLE_MAX: usize = 120;
/// Body bytes previewed in a content-body summary.
const SUMMARY_BODY_MAX: usize = 32;
/// Reserved/deprecated arguments left out of summaries (still in `fields`).
const SUMMARY_SKIP: &[&str] = &[
    "ticket",
    "out-of-band",
    "known-hosts",
    "capabilities",
    "insist",
];

/// A string's JSON: the text when UTF-8, else `{"hex": ...}`.
pub(super) fn write_bytes<O: JsonOut + ?Sized>(o: &mut O, b: &[u8]) {
    match std::str::from_utf8(b) {
        Ok(s) => o.str(s),
        Err(_) => {
            o.begin_object();
            o.key("hex");
            o.hex(b);
            o.end_object();
        }
    }
}

/// A timestamp's JSON: `{"timestamp": secs, "utc": "<RFC 3339>"}` (no `utc` when out of range).
pub(super) fn write_timestamp<O: JsonOut + ?Sized>(o: &mut O, secs: u64) {
    o.begin_object();
    o.entry_u64("timestamp", secs);
    let utc = i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
    if let Some(utc) = utc {
        o.entry_str("utc", &utc);
    }
    o.end_object();
}

fn write_float<O: JsonOut + ?Sized>(o: &mut O, v: f64) {
    if v.is_nan() {
        o.str("NaN");
    } else if v.is_infinite() {
        o.str(if v > 0.0 { "inf" } else { "-inf" });
    } else {
        o.f64(v);
    }
}

/// A decimal as an exact string (`value * 10^-scale`, e.g. scale 2, value -12345 -> "-123.45").
pub(super) fn decimal_string(scale: u8, value: i32) -> String {
    let neg = value < 0;
    let digits = value.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let s = if scale == 0 {
        digits
    } else if digits.len() > scale {
        let (a, b) = digits.split_at(digits.len() - scale);
        format!("{a}.{b}")
    } else {
        format!("0.{}{digits}", "0".repeat(scale - digits.len()))
    };
    if neg { format!("-{s}") } else { s }
}

/// A field value's JSON: scalars for bool/integers/floats/UTF-8 strings; `{"decimal": "1.23"}`,
/// `{"timestamp": .., "utc": ..}`, `{"bytes": hex}` (x), `{"hex": ..}` (non-UTF-8 S), arrays
/// as arrays, tables as objects, void as null.
pub(super) fn write_field_value<O: JsonOut + ?Sized>(o: &mut O, v: &FieldValue) {
    match v {
        FieldValue::Bool(b) => o.bool(*b),
        FieldValue::I8(x) => o.i64((*x).into()),
        FieldValue::U8(x) => o.u64((*x).into()),
        FieldValue::I16(x) => o.i64((*x).into()),
        FieldValue::U16(x) => o.u64((*x).into()),
        FieldValue::I32(x) => o.i64((*x).into()),
        FieldValue::U32(x) => o.u64((*x).into()),
        FieldValue::I64(x) => o.i64(*x),
        FieldValue::F32(x) => write_float(o, f64::from(*x)),
        FieldValue::F64(x) => write_float(o, *x),
        FieldValue::Decimal { scale, value } => {
            o.begin_object();
            o.entry_str("decimal", &decimal_string(*scale, *value));
            o.end_object();
        }
        FieldValue::LongStr(b) => write_bytes(o, b),
        FieldValue::Bytes(b) => {
            o.begin_object();
            o.key("bytes");
            o.hex(b);
            o.end_object();
        }
        FieldValue::Array(items) => {
            o.begin_array();
            for item in items {
                write_field_value(o, item);
            }
            o.end_array();
        }
        FieldValue::Timestamp(t) => write_timestamp(o, *t),
        FieldValue::Table(t) => write_table(o, t),
        FieldValue::Void => o.null(),
    }
}

/// `write_field_value` as a `serde_json::Value`.
pub fn field_value_json(v: &FieldValue) -> Json {
    to_value(|o| write_field_value(o, v))
}

/// A field table as a JSON object (keys as text, lossily for non-UTF-8 keys).
pub(super) fn write_table<O: JsonOut + ?Sized>(o: &mut O, t: &FieldTable) {
    o.begin_object();
    for (k, v) in &t.0 {
        o.key(&String::from_utf8_lossy(k));
        write_field_value(o, v);
    }
    o.end_object();
}

/// `write_table` as a `serde_json::Value`.
pub fn table_json(t: &FieldTable) -> Json {
    to_value(|o| write_table(o, t))
}

/// An argument/property value's JSON.
pub(super) fn write_value<O: JsonOut + ?Sized>(o: &mut O, v: &Value) {
    match v {
        Value::Bit(b) => o.bool(*b),
        Value::Octet(x) => o.u64((*x).into()),
        Value::Short(x) => o.u64((*x).into()),
        Value::Long(x) => o.u64((*x).into()),
        Value::LongLong(x) => o.u64(*x),
        Value::ShortStr(b) | Value::LongStr(b) => write_bytes(o, b),
        Value::Table(t) => write_table(o, t),
        Value::Timestamp(t) => write_timestamp(o, *t),
    }
}

/// `write_value` as a `serde_json::Value`.
pub fn value_json(v: &Value) -> Json {
    to_value(|o| write_value(o, v))
}

fn write_auth<O: JsonOut + ?Sized>(o: &mut O, a: &AuthResponse) {
    match a {
        AuthResponse::Plain {
            authzid,
            username,
            password,
        } => {
            o.begin_object();
            o.key("authzid");
            write_bytes(o, authzid);
            o.key("username");
            write_bytes(o, username);
            o.key("password");
            write_bytes(o, password);
            o.end_object();
        }
        AuthResponse::AmqPlain(t) => write_table(o, t),
        AuthResponse::Opaque(b) => write_bytes(o, b),
    }
}

/// The decoded SASL response of a connection.start-ok.
fn start_ok_response(m: &Method) -> Option<AuthResponse> {
    if m.def.kind != MethodKind::ConnectionStartOk {
        return None;
    }
    let resp = m.get_bytes(super::Arg::Response)?;
    Some(decode_response(m.mechanism().map_or(&[][..], |b| &b[..]), resp).0)
}

/// A method's arguments as a JSON object keyed by spec names.
pub(super) fn write_method_fields<O: JsonOut + ?Sized>(o: &mut O, m: &Method) {
    let auth = start_ok_response(m);
    let write = |o: &mut O, i: usize| {
        let (Some(def), Some(v)) = (m.def.args.get(i), m.args.get(i)) else {
            return;
        };
        o.key(def.name);
        match (&auth, def.name) {
            (Some(a), "response") => write_auth(o, a),
            _ => write_value(o, v),
        }
    };
    o.begin_object();
    m.def
        .key_order
        .iter()
        .for_each(|&i| write(o, usize::from(i)));
    o.end_object();
}

/// A content header's properties as a JSON object keyed by spec names.
pub(super) fn write_properties<O: JsonOut + ?Sized>(o: &mut O, h: &ContentHeader) {
    o.begin_object();
    if let Some(class) = h.class() {
        for &i in class.property_key_order {
            let Some(want) = class.properties.get(usize::from(i)) else {
                continue;
            };
            if let Some((def, v)) = h.properties.iter().find(|(d, _)| std::ptr::eq(*d, want)) {
                o.key(def.name);
                write_value(o, v);
            }
        }
    }
    o.end_object();
}

/// The `fields` object of a frame.
pub(super) fn write_frame_fields<O: JsonOut + ?Sized>(o: &mut O, f: &Frame) {
    match &f.kind {
        FrameKind::Method(m) => write_method_fields(o, m),
        FrameKind::Header(h) => {
            o.begin_object();
            o.entry_u64("body-size", h.body_size);
            o.entry_u64("class-id", h.class_id.into());
            o.key("properties");
            write_properties(o, h);
            o.entry_u64("weight", h.weight.into());
            o.end_object();
        }
        FrameKind::Body(b) => {
            o.begin_object();
            o.entry_u64("size", f.body_len().unwrap_or(b.len() as u64));
            o.end_object();
        }
        FrameKind::Heartbeat => {
            o.begin_object();
            o.end_object();
        }
    }
}

fn push_u64(out: &mut String, v: u64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// A wire string, quoted and escaped (`crate::base::escape`), cut after
/// [`SUMMARY_STR_MAX`] bytes with the cut marked.
fn push_str(out: &mut String, b: &[u8]) {
    escape::quoted_cut_into(out, b, SUMMARY_STR_MAX, b.len() as u64);
}

/// `…(+N entries)` for the `n` entries of a table or array left out of a summary.
fn push_entries_cut(out: &mut String, n: usize) {
    out.push_str("…(+");
    push_u64(out, n as u64);
    out.push_str(if n == 1 { " entry)" } else { " entries)" });
}

fn push_field_value(out: &mut String, v: &FieldValue, limit: usize) {
    if out.len() > limit {
        return;
    }
    match v {
        FieldValue::LongStr(b) => push_str(out, b),
        FieldValue::Table(t) => push_table(out, t, limit),
        FieldValue::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() > limit {
                    push_entries_cut(out, items.len() - i);
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                push_field_value(out, item, limit);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{}", field_value_json(other));
        }
    }
}

fn push_table(out: &mut String, t: &FieldTable, limit: usize) {
    out.push('{');
    for (i, (k, v)) in t.0.iter().enumerate() {
        if out.len() > limit {
            push_entries_cut(out, t.0.len() - i);
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        // A key is a peer's string like any other (RabbitMQ passes a publisher's header keys
        // to every consumer): bare when a plain name, else quoted and escaped.
        escape::name_into(out, k);
        out.push('=');
        push_field_value(out, v, limit);
    }
    out.push('}');
}

fn push_value(out: &mut String, v: &Value) {
    match v {
        Value::ShortStr(b) | Value::LongStr(b) => push_str(out, b),
        Value::Table(t) => {
            let limit = out.len() + SUMMARY_TABLE_MAX;
            push_table(out, t, limit);
        }
        Value::Bit(b) => out.push_str(if *b { "true" } else { "false" }),
        other => push_u64(out, other.as_u64().unwrap_or(0)),
    }
}

fn push_auth(out: &mut String, a: &AuthResponse) {
    match a {
        AuthResponse::Plain {
            authzid,
            username,
            password,
        } => {
            out.push_str("{authzid=");
            push_str(out, authzid);
            out.push_str(" username=");
            push_str(out, username);
            out.push_str(" password=");
            push_str(out, password);
            out.push('}');
        }
        AuthResponse::AmqPlain(t) => {
            let limit = out.len() + SUMMARY_TABLE_MAX;
            push_table(out, t, limit);
        }
        AuthResponse::Opaque(b) => push_str(out, b),
    }
}

/// Append the summary line of a method: `basic.publish exchange="x" routing-key="a.b" ...`.
fn method_summary_into(m: &Method, out: &mut String) {
    out.push_str(m.def.name);
    let auth = start_ok_response(m);
    for (def, v) in m.def.args.iter().zip(&m.args) {
        if SUMMARY_SKIP.contains(&def.name) {
            continue;
        }
        out.push(' ');
        out.push_str(def.name);
        out.push('=');
        match (&auth, def.name) {
            (Some(a), "response") => push_auth(out, a),
            _ => push_value(out, v),
        }
    }
}

/// Append the summary line of a content header.
fn header_summary_into(h: &ContentHeader, out: &mut String) {
    out.push_str("content-header class=");
    out.push_str(h.class_name());
    out.push_str(" body-size=");
    push_u64(out, h.body_size);
    for (def, v) in &h.properties {
        out.push(' ');
        out.push_str(def.name);
        out.push('=');
        push_value(out, v);
    }
}

/// Append the summary line of a content body: size and an escaped preview of its first
/// [`SUMMARY_BODY_MAX`] bytes, the cut marked.
fn body_summary_into(b: &Bytes, len: u64, out: &mut String) {
    out.push_str("content-body ");
    push_u64(out, len);
    out.push_str(" bytes ");
    escape::quoted_cut_into(out, b, SUMMARY_BODY_MAX, len);
}

/// Append the frame's summary line to `out`.
pub(super) fn frame_summary_into(f: &Frame, out: &mut String) {
    match &f.kind {
        FrameKind::Method(m) => method_summary_into(m, out),
        FrameKind::Header(h) => header_summary_into(h, out),
        FrameKind::Body(b) => body_summary_into(b, f.body_len().unwrap_or(0), out),
        FrameKind::Heartbeat => out.push_str("heartbeat"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decimals_render_exactly() {
        assert_eq!(decimal_string(2, -12345), "-123.45");
        assert_eq!(decimal_string(0, 7), "7");
        assert_eq!(decimal_string(3, 5), "0.005");
        assert_eq!(decimal_string(1, i32::MIN), "-214748364.8");
    }

    #[test]
    fn timestamps_carry_utc() {
        let ts = |secs| to_value(|o| write_timestamp(o, secs));
        assert_eq!(
            ts(1_700_000_000),
            json!({"timestamp": 1_700_000_000u64, "utc": "2023-11-14T22:13:20Z"})
        );
        assert_eq!(ts(u64::MAX), json!({"timestamp": u64::MAX}));
    }

    #[test]
    fn long_strings_are_cut_on_a_char_boundary_and_marked() {
        let s = "é".repeat(SUMMARY_STR_MAX);
        let mut out = String::new();
        push_str(&mut out, s.as_bytes());
        let cut = "é".repeat(SUMMARY_STR_MAX / 2);
        assert_eq!(out, format!("\"{cut}\"…(+{} bytes)", SUMMARY_STR_MAX));
        out.clear();
        push_str(&mut out, cut.as_bytes());
        assert_eq!(out, format!("\"{cut}\""));
    }

    #[test]
    fn table_keys_and_values_are_escaped() {
        let t = FieldTable(vec![
            (
                Bytes::from_static(b"x-plain"),
                FieldValue::LongStr(Bytes::from_static(b"v")),
            ),
            (
                Bytes::from_static(b"k\x1b]52;c;eA==\x07\n-> PASS"),
                FieldValue::LongStr(Bytes::from_static("\u{202e}\u{9b}".as_bytes())),
            ),
        ]);
        let mut out = String::new();
        push_table(&mut out, &t, usize::MAX);
        assert_eq!(
            out,
            r#"{x-plain="v", "k\x1b]52;c;eA==\x07\n-> PASS"="\u{202e}\u{009b}"}"#
        );
    }

    #[test]
    fn body_summary_escapes_and_marks_the_cut() {
        let b = Bytes::from_static(b"hello\n\x00world, this is longer than thirty-two bytes");
        let mut s = String::new();
        body_summary_into(&b, b.len() as u64, &mut s);
        assert_eq!(
            s,
            r#"content-body 50 bytes "hello\n\x00world, this is longer tha"…(+18 bytes)"#
        );
    }
}
