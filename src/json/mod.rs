//! Streaming JSON output: every JSON shape of the project (the codecs' `fields` and messages,
//! the JSONL events) is written once, against the [`JsonOut`] trait, and comes out either as a
//! `serde_json::Value` ([`ValueBuilder`]: `decode --json`, the TUI, tests) or as compact JSON text
//! ([`TextWriter`]: the JSONL sink), without building the `Value` first.
//!
//! Both backends give objects the semantics of a `serde_json::Map` (no `preserve_order`):
//! keys come out in byte order whatever order they were written in, and a key written twice
//! keeps its last value. The text is byte for byte what [`to_string`] prints for the `Value`
//! the other backend builds: `serde_json`'s, with the characters text outputs escape
//! (`crate::base::escape`: C1 controls, bidi and other format characters, U+2028/9) as
//! `\uxxxx` too, so neither `jq -r` nor a `cat` of a capture puts a peer's controls on a
//! terminal.

mod escape;
mod hex;
mod text;
mod value;

use std::fmt::{self, Write as _};

pub use escape::SafeFormatter;
pub use text::TextWriter;
pub use value::{ValueBuilder, to_value};

/// `v` as compact JSON text, strings escaped as the JSONL's are ([`SafeFormatter`]).
pub fn to_string<T: serde::Serialize + ?Sized>(v: &T) -> String {
    write_with(v, serde_json::ser::CompactFormatter)
}

/// `v` as indented JSON text, strings escaped as the JSONL's are ([`SafeFormatter`]).
pub fn to_string_pretty<T: serde::Serialize + ?Sized>(v: &T) -> String {
    write_with(v, serde_json::ser::PrettyFormatter::new())
}

fn write_with<T, F>(v: &T, f: F) -> String
where
    T: serde::Serialize + ?Sized,
    F: serde_json::ser::Formatter,
{
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, SafeFormatter(f));
    // Serializing into memory fails only for maps with non-string keys, which no output has.
    let _ = v.serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// A sink for one JSON value, written as a stream of tokens.
///
/// Inside an object every value is preceded by [`JsonOut::key`]; inside an array values follow
/// each other; at the top level one value is written. Misuse (a value without a key in an
/// object, unbalanced ends) never panics but gives unspecified JSON.
pub trait JsonOut {
    /// `null`.
    fn null(&mut self);
    /// `true` / `false`.
    fn bool(&mut self, v: bool);
    /// An unsigned integer.
    fn u64(&mut self, v: u64);
    /// A signed integer.
    fn i64(&mut self, v: i64);
    /// A float; `null` when not finite (as `serde_json` does).
    fn f64(&mut self, v: f64);
    /// A string.
    fn str(&mut self, v: &str);
    /// A string that `render` appends to the (empty) buffer it is given — reused by the text
    /// writer, so rendering costs no allocation.
    fn str_with(&mut self, render: &mut dyn FnMut(&mut String));
    /// A string formatted from `args` (e.g. `format_args!("0x{v:08x}")`).
    fn str_fmt(&mut self, args: fmt::Arguments<'_>) {
        match args.as_str() {
            Some(s) => self.str(s),
            None => self.str_with(&mut |s| {
                let _ = s.write_fmt(args);
            }),
        }
    }
    /// A string holding the standard, padded base64 of `bytes`.
    fn base64(&mut self, bytes: &[u8]);
    /// A string holding the lower-case hex of `bytes`.
    fn hex(&mut self, bytes: &[u8]);
    /// `{`.
    fn begin_object(&mut self);
    /// The key of the next value in the current object.
    fn key(&mut self, k: &str);
    /// `}`.
    fn end_object(&mut self);
    /// `[`.
    fn begin_array(&mut self);
    /// `]`.
    fn end_array(&mut self);

    /// `"k": "v"` in the current object.
    fn entry_str(&mut self, k: &str, v: &str) {
        self.key(k);
        self.str(v);
    }
    /// `"k": v` in the current object.
    fn entry_u64(&mut self, k: &str, v: u64) {
        self.key(k);
        self.u64(v);
    }
}
