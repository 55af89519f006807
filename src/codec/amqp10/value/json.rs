//! Rendering [`Value`]s as JSON for the JSONL capture and `decode --json`.

use super::*;
use crate::json::{JsonOut, to_value};

/// Binaries longer than this are cut short in JSON (with their full `len` stated).
pub const JSON_BINARY_MAX: usize = 64;

/// `{"binary": "<hex>"}`, or `{"binary": "<hex of first max>", "len": N}` when longer.
pub fn write_binary<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], max: usize) {
    o.begin_object();
    write_binary_entries(o, b, max);
    o.end_object();
}

/// The entries of [`write_binary`], written into an object open in `o`.
pub fn write_binary_entries<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], max: usize) {
    o.key("binary");
    o.hex(b.get(..max).unwrap_or(b));
    if b.len() > max {
        o.entry_u64("len", b.len() as u64);
    }
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

/// RFC 3339 UTC text for a millisecond timestamp (empty when out of range).
pub fn timestamp_utc(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl Descriptor {
    /// The descriptor as JSON: its code as a number, or its symbol as a string.
    pub fn write_json<O: JsonOut + ?Sized>(&self, o: &mut O) {
        match self {
            Descriptor::Code(c) => o.u64(*c),
            Descriptor::Name(s) => o.str(s.as_str()),
        }
    }
}

/// A map whose keys are all symbols or strings as a plain JSON object; otherwise the generic
/// `{"map": [[k, v], ...]}` form.
pub fn write_fields_map<O: JsonOut + ?Sized>(o: &mut O, pairs: &[(Value, Value)]) {
    let keyed = pairs
        .iter()
        .all(|(k, _)| matches!(k, Value::Symbol(_) | Value::String(_)));
    if !keyed {
        return write_map(o, pairs);
    }
    o.begin_object();
    for (k, v) in pairs {
        o.key(match k {
            Value::Symbol(s) => s.as_str(),
            Value::String(s) => s.as_str(),
            _ => "",
        });
        v.write_json(o);
    }
    o.end_object();
}

/// `{"map": [[k, v], ...]}`.
fn write_map<O: JsonOut + ?Sized>(o: &mut O, pairs: &[(Value, Value)]) {
    o.begin_object();
    o.key("map");
    o.begin_array();
    for (k, v) in pairs {
        o.begin_array();
        k.write_json(o);
        v.write_json(o);
        o.end_array();
    }
    o.end_array();
    o.end_object();
}

impl Value {
    /// The value as JSON, per the project's JSON shape (HELPERS.md).
    pub fn to_json(&self) -> serde_json::Value {
        to_value(|o| self.write_json(o))
    }

    /// [`Value::to_json`], written to `o`.
    pub fn write_json<O: JsonOut + ?Sized>(&self, o: &mut O) {
        match self {
            Value::Null => o.null(),
            Value::Bool(b) => o.bool(*b),
            Value::Ubyte(v) => o.u64((*v).into()),
            Value::Ushort(v) => o.u64((*v).into()),
            Value::Uint(v) => o.u64((*v).into()),
            Value::Ulong(v) => o.u64(*v),
            Value::Byte(v) => o.i64((*v).into()),
            Value::Short(v) => o.i64((*v).into()),
            Value::Int(v) => o.i64((*v).into()),
            Value::Long(v) => o.i64(*v),
            Value::Float(v) => write_float(o, f64::from(*v)),
            Value::Double(v) => write_float(o, *v),
            Value::Decimal32(v) => {
                o.begin_object();
                o.key("decimal32");
                o.str_fmt(format_args!("0x{v:08x}"));
                o.end_object();
            }
            Value::Decimal64(v) => {
                o.begin_object();
                o.key("decimal64");
                o.str_fmt(format_args!("0x{v:016x}"));
                o.end_object();
            }
            Value::Decimal128(v) => {
                o.begin_object();
                o.key("decimal128");
                o.str_fmt(format_args!("0x{}", hex::encode(v)));
                o.end_object();
            }
            Value::Char(c) => o.str(c.encode_utf8(&mut [0; 4])),
            Value::Timestamp(t) => {
                o.begin_object();
                o.key("timestamp");
                o.i64(*t);
                o.entry_str("utc", &timestamp_utc(*t));
                o.end_object();
            }
            Value::Uuid(u) => o.str(&uuid_string(u)),
            Value::Binary(b) => write_binary(o, b, JSON_BINARY_MAX),
            Value::String(s) => o.str(s.as_str()),
            Value::Symbol(s) => {
                o.begin_object();
                o.entry_str("symbol", s.as_str());
                o.end_object();
            }
            Value::List(items) => {
                o.begin_array();
                for v in items {
                    v.write_json(o);
                }
                o.end_array();
            }
            Value::Map(pairs) => write_map(o, pairs),
            Value::Array(a) => {
                o.begin_array();
                for v in &a.items {
                    match &a.descriptor {
                        None => v.write_json(o),
                        Some(d) => crate::codec::amqp10::render::write_described(o, d, v),
                    }
                }
                o.end_array();
            }
            Value::Described(d) => {
                crate::codec::amqp10::render::write_described(o, &d.descriptor, &d.value)
            }
        }
    }
}
