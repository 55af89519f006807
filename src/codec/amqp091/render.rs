//! Human and JSON renderings of AMQP 0-9-1 frames and values: the one-line summary and the
//! `fields` object (spec names, kebab-case) of the JSONL shape.
//!
//! Pure formatting: never fails, never panics, bounded output for summaries.

use std::fmt::Write;

use bytes::Bytes;
use serde_json::{Map, Value as Json, json};

use super::auth::{AuthResponse, decode_response};
use super::content::ContentHeader;
use super::field_table::{FieldTable, FieldValue};
use super::frame::{Frame, FrameKind};
use super::generated::MethodKind;
use super::method::{Method, Value};

/// Longest string shown in a summary before it is cut with `...`.
const SUMMARY_STR_MAX: usize = 64;
/// Longest table shown in a summary before it is cut with `...`.
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
pub fn bytes_json(b: &[u8]) -> Json {
    match std::str::from_utf8(b) {
        Ok(s) => Json::String(s.to_owned()),
        Err(_) => json!({ "hex": hex::encode(b) }),
    }
}

/// A timestamp's JSON: `{"timestamp": secs, "utc": "<RFC 3339>"}` (no `utc` when out of range).
pub fn timestamp_json(secs: u64) -> Json {
    let mut m = Map::new();
    m.insert("timestamp".into(), secs.into());
    let utc = i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
    if let Some(utc) = utc {
        m.insert("utc".into(), utc.into());
    }
    Json::Object(m)
}

fn float_json(v: f64) -> Json {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        json!(v)
    }
}

/// A decimal as an exact string (`value * 10^-scale`, e.g. scale 2, value -12345 -> "-123.45").
pub fn decimal_string(scale: u8, value: i32) -> String {
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
pub fn field_value_json(v: &FieldValue) -> Json {
    match v {
        FieldValue::Bool(b) => (*b).into(),
        FieldValue::I8(x) => (*x).into(),
        FieldValue::U8(x) => (*x).into(),
        FieldValue::I16(x) => (*x).into(),
        FieldValue::U16(x) => (*x).into(),
        FieldValue::I32(x) => (*x).into(),
        FieldValue::U32(x) => (*x).into(),
        FieldValue::I64(x) => (*x).into(),
        FieldValue::F32(x) => float_json(f64::from(*x)),
        FieldValue::F64(x) => float_json(*x),
        FieldValue::Decimal { scale, value } => {
            json!({ "decimal": decimal_string(*scale, *value) })
        }
        FieldValue::LongStr(b) => bytes_json(b),
        FieldValue::Bytes(b) => json!({ "bytes": hex::encode(b) }),
        FieldValue::Array(items) => Json::Array(items.iter().map(field_value_json).collect()),
        FieldValue::Timestamp(t) => timestamp_json(*t),
        FieldValue::Table(t) => table_json(t),
        FieldValue::Void => Json::Null,
    }
}

/// A field table as a JSON object (keys as text, lossily for non-UTF-8 keys).
pub fn table_json(t: &FieldTable) -> Json {
    let mut m = Map::new();
    for (k, v) in &t.0 {
        m.insert(String::from_utf8_lossy(k).into_owned(), field_value_json(v));
    }
    Json::Object(m)
}

/// An argument/property value's JSON.
pub fn value_json(v: &Value) -> Json {
    match v {
        Value::Bit(b) => (*b).into(),
        Value::Octet(x) => (*x).into(),
        Value::Short(x) => (*x).into(),
        Value::Long(x) => (*x).into(),
        Value::LongLong(x) => (*x).into(),
        Value::ShortStr(b) | Value::LongStr(b) => bytes_json(b),
        Value::Table(t) => table_json(t),
        Value::Timestamp(t) => timestamp_json(*t),
    }
}

fn auth_json(a: &AuthResponse) -> Json {
    match a {
        AuthResponse::Plain {
            authzid,
            username,
            password,
        } => json!({
            "authzid": bytes_json(authzid),
            "username": bytes_json(username),
            "password": bytes_json(password),
        }),
        AuthResponse::AmqPlain(t) => table_json(t),
        AuthResponse::Opaque(b) => bytes_json(b),
    }
}

/// The decoded SASL response of a connection.start-ok.
fn start_ok_response(m: &Method) -> Option<AuthResponse> {
    if m.def.kind != MethodKind::ConnectionStartOk {
        return None;
    }
    let resp = m.arg_bytes("response")?;
    Some(decode_response(m.mechanism().map_or(&[][..], |b| &b[..]), resp).0)
}

/// A method's arguments as a JSON object keyed by spec names.
pub fn method_fields_json(m: &Method) -> Json {
    let auth = start_ok_response(m);
    let mut obj = Map::new();
    for (def, v) in m.def.args.iter().zip(&m.args) {
        let j = match (&auth, def.name) {
            (Some(a), "response") => auth_json(a),
            _ => value_json(v),
        };
        obj.insert(def.name.to_owned(), j);
    }
    Json::Object(obj)
}

/// A content header's properties as a JSON object keyed by spec names.
pub fn properties_json(h: &ContentHeader) -> Json {
    let mut obj = Map::new();
    for (def, v) in &h.properties {
        obj.insert(def.name.to_owned(), value_json(v));
    }
    Json::Object(obj)
}

/// The `fields` object of a frame.
pub fn frame_fields_json(f: &Frame) -> Json {
    match &f.kind {
        FrameKind::Method(m) => method_fields_json(m),
        FrameKind::Header(h) => json!({
            "class-id": h.class_id,
            "weight": h.weight,
            "body-size": h.body_size,
            "properties": properties_json(h),
        }),
        FrameKind::Body(b) => json!({ "size": b.len() }),
        FrameKind::Heartbeat => json!({}),
    }
}

fn push_str(out: &mut String, b: &[u8]) {
    match std::str::from_utf8(b) {
        Ok(s) => {
            let cut: String = s.chars().take(SUMMARY_STR_MAX).collect();
            let _ = write!(out, "{cut:?}");
            if cut.len() < s.len() {
                out.push_str("...");
            }
        }
        Err(_) => {
            let n = b.len().min(SUMMARY_STR_MAX);
            let _ = write!(out, "\"{}\"", b.get(..n).unwrap_or(b).escape_ascii());
            if n < b.len() {
                out.push_str("...");
            }
        }
    }
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
                    out.push_str("...");
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
            out.push_str("...");
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}=", String::from_utf8_lossy(k));
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
        Value::Bit(b) => {
            let _ = write!(out, "{b}");
        }
        other => {
            let _ = write!(out, "{}", other.as_u64().unwrap_or(0));
        }
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

/// One summary line for a method: `basic.publish exchange="x" routing-key="a.b" ...`.
pub fn method_summary(m: &Method) -> String {
    let mut out = String::from(m.def.name);
    let auth = start_ok_response(m);
    for (def, v) in m.def.args.iter().zip(&m.args) {
        if SUMMARY_SKIP.contains(&def.name) {
            continue;
        }
        out.push(' ');
        out.push_str(def.name);
        out.push('=');
        match (&auth, def.name) {
            (Some(a), "response") => push_auth(&mut out, a),
            _ => push_value(&mut out, v),
        }
    }
    out
}

/// One summary line for a content header.
pub fn header_summary(h: &ContentHeader) -> String {
    let mut out = format!(
        "content-header class={} body-size={}",
        h.class_name(),
        h.body_size
    );
    for (def, v) in &h.properties {
        out.push(' ');
        out.push_str(def.name);
        out.push('=');
        push_value(&mut out, v);
    }
    out
}

/// One summary line for a content body: size and an escaped, truncated preview.
pub fn body_summary(b: &Bytes) -> String {
    let n = b.len().min(SUMMARY_BODY_MAX);
    let mut out = format!(
        "content-body {} bytes \"{}\"",
        b.len(),
        b.get(..n).unwrap_or(&b[..]).escape_ascii()
    );
    if n < b.len() {
        out.push_str("...");
    }
    out
}

/// The frame's summary line.
pub fn frame_summary(f: &Frame) -> String {
    match &f.kind {
        FrameKind::Method(m) => method_summary(m),
        FrameKind::Header(h) => header_summary(h),
        FrameKind::Body(b) => body_summary(b),
        FrameKind::Heartbeat => "heartbeat".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_render_exactly() {
        assert_eq!(decimal_string(2, -12345), "-123.45");
        assert_eq!(decimal_string(0, 7), "7");
        assert_eq!(decimal_string(3, 5), "0.005");
        assert_eq!(decimal_string(1, i32::MIN), "-214748364.8");
    }

    #[test]
    fn timestamps_carry_utc() {
        assert_eq!(
            timestamp_json(1_700_000_000),
            json!({"timestamp": 1_700_000_000u64, "utc": "2023-11-14T22:13:20Z"})
        );
        assert_eq!(timestamp_json(u64::MAX), json!({"timestamp": u64::MAX}));
    }

    #[test]
    fn body_summary_escapes_and_truncates() {
        let b = Bytes::from_static(b"hello\n\x00world, this is longer than thirty-two bytes");
        let s = body_summary(&b);
        assert!(
            s.starts_with("content-body 50 bytes \"hello\\n\\x00world"),
            "{s}"
        );
        assert!(s.ends_with("\"..."), "{s}");
    }
}
