//! Rendering [`Value`]s as text in Qpid Proton's inspect style (`@open(16) [container-id=...]`).

use std::fmt::{self, Write as _};

use super::*;
use crate::base::escape;

/// Binaries longer than this are cut short in text rendering.
pub const TEXT_BINARY_MAX: usize = 64;

/// A string's text, quoted and escaped (`crate::base::escape`); a binary's bytes quoted, each
/// byte outside printable ASCII as `\xNN`.
fn quote_into(out: &mut String, bytes: &[u8], is_text: bool) {
    if is_text {
        escape::quoted_bytes_into(out, bytes);
    } else {
        escape::binary_into(out, bytes);
    }
}

fn symbol_into(out: &mut String, s: &str) {
    out.push(':');
    escape::name_into(out, s.as_bytes());
}

/// Format a UUID as 8-4-4-4-12 lowercase hex.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h = hex::encode(u);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

impl Descriptor {
    /// Proton-style descriptor text: `amqp:open:list` style symbols as `:name`, codes in hex.
    pub fn render_into(&self, out: &mut String) {
        match self {
            Descriptor::Code(c) => {
                let _ = write!(out, "0x{c:x}");
            }
            Descriptor::Name(s) => symbol_into(out, s.as_str()),
        }
    }
}

impl Value {
    /// Append the value in Proton's inspect syntax. Known composites render with field names.
    pub fn render_into(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Ubyte(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Ushort(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Uint(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Ulong(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Byte(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Short(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Int(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Long(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Float(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Double(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Decimal32(v) => {
                let _ = write!(out, "D32(0x{v:08x})");
            }
            Value::Decimal64(v) => {
                let _ = write!(out, "D64(0x{v:016x})");
            }
            Value::Decimal128(v) => {
                let _ = write!(out, "D128(0x{})", hex::encode(v));
            }
            Value::Char(c) => {
                out.push('\'');
                match c {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    c => escape::escape_into(out, c.encode_utf8(&mut [0; 4])),
                }
                out.push('\'');
            }
            Value::Timestamp(t) => {
                let _ = write!(out, "@timestamp({t})");
            }
            Value::Uuid(u) => {
                let _ = write!(out, "UUID({})", uuid_string(u));
            }
            Value::Binary(b) => {
                out.push('b');
                let cut = b.len().min(TEXT_BINARY_MAX);
                quote_into(out, b.get(..cut).unwrap_or_default(), false);
                escape::cut_mark_into(out, (b.len() - cut) as u64);
            }
            Value::String(s) => quote_into(out, s.as_bytes(), true),
            Value::Symbol(s) => symbol_into(out, s.as_str()),
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.render_into(out);
                }
                out.push(']');
            }
            Value::Map(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.render_into(out);
                    out.push('=');
                    v.render_into(out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('@');
                if let Some(d) = &a.descriptor {
                    d.render_into(out);
                    out.push(' ');
                }
                out.push_str(a.kind.pn_name());
                out.push('[');
                for (i, v) in a.items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.render_into(out);
                }
                out.push(']');
            }
            Value::Described(d) => crate::codec::amqp10::render::described_into(d, out),
        }
    }

    /// The value in Proton's inspect syntax.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.render_into(&mut s);
        s
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}
