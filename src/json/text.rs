//! The [`JsonOut`] backend that writes compact JSON text into a byte buffer, byte for byte what
//! [`crate::json::to_string`] prints for the equivalent `Value`: numbers through `itoa` / `zmij`
//! (as `serde_json` formats them), base64 and hex straight into the buffer, strings escaped
//! with a copy-through fast path.
//!
//! Object keys come out in byte order with the last value of a repeated key, as a
//! `serde_json::Map` keeps them. Keys written in order (the usual case) cost one comparison
//! each; an object written out of order is rearranged in place when it is closed.

use base64::Engine;
use base64::engine::Simd;
use base64::engine::general_purpose::PAD;

use super::JsonOut;
use super::escape::{plain_key, push_str, unescape};
use super::hex::push_hex;

/// Compact JSON text of the values written, one after another (see [`TextWriter::newline`]).
#[derive(Debug)]
pub struct TextWriter {
    buf: Vec<u8>,
    open: Vec<Open>,
    /// The keys of the objects being written, innermost last.
    entries: Vec<Entry>,
    /// Reused by [`TextWriter::reorder`].
    scratch: Vec<u8>,
    /// Reused by [`JsonOut::str_with`].
    text: String,
    order: Vec<usize>,
    /// Standard padded base64, SIMD when the CPU has it.
    base64: Simd,
}

/// An object or array being written.
#[derive(Debug)]
struct Open {
    object: bool,
    /// Nothing written in it yet.
    empty: bool,
    /// Its keys so far came in strictly increasing order.
    sorted: bool,
    /// Where its contents start in `buf` (after the bracket).
    start: usize,
    /// Its first key in `entries`.
    entries: usize,
}

/// One key of an object being written.
#[derive(Debug)]
struct Entry {
    /// Where `"key":value` starts in `buf` (after the separating comma).
    at: usize,
    /// The length of the key's escaped text (between the quotes).
    len: usize,
}

impl Entry {
    /// The key's escaped text in `buf`.
    fn text<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.at + 1..self.at + 1 + self.len)
            .unwrap_or_default()
    }
}

impl Default for TextWriter {
    fn default() -> Self {
        TextWriter::new()
    }
}

impl TextWriter {
    /// An empty writer.
    pub fn new() -> Self {
        TextWriter {
            buf: Vec::with_capacity(4096),
            open: Vec::new(),
            entries: Vec::new(),
            scratch: Vec::new(),
            text: String::new(),
            order: Vec::new(),
            base64: Simd::standard(PAD),
        }
    }

    /// The text written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Forget the text written (keeps the allocations).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.open.clear();
        self.entries.clear();
    }

    /// Empty it and let go of buffers grown beyond `keep` bytes (one huge line grows them to
    /// its size; a writer that is reused would otherwise hold that for good).
    pub fn release_spare(&mut self, keep: usize) {
        self.clear();
        if self.buf.capacity() > keep {
            self.buf = Vec::with_capacity(4096);
        }
        if self.scratch.capacity() > keep {
            self.scratch = Vec::new();
        }
        if self.text.capacity() > keep {
            self.text = String::new();
        }
    }

    /// End a line (JSON Lines): a `\n` after a complete top-level value.
    pub fn newline(&mut self) {
        self.buf.push(b'\n');
    }

    /// The separator before a value in an array (objects separate at the key).
    #[inline]
    fn value_start(&mut self) {
        if let Some(o) = self.open.last_mut()
            && !o.object
        {
            if !o.empty {
                self.buf.push(b',');
            }
            o.empty = false;
        }
    }

    fn begin(&mut self, object: bool) {
        self.value_start();
        self.buf.push(if object { b'{' } else { b'[' });
        self.open.push(Open {
            object,
            empty: true,
            sorted: true,
            start: self.buf.len(),
            entries: self.entries.len(),
        });
    }

    /// Rewrite the contents of the object `o` (which ends at the end of `buf`) with its entries
    /// in key order, keeping the last of equal keys.
    fn reorder(&mut self, o: &Open) {
        let entries = self.entries.get(o.entries..).unwrap_or_default();
        let buf = &self.buf;
        let keys: Vec<_> = entries.iter().map(|e| unescape(e.text(buf))).collect();
        let key = |i: usize| keys.get(i).map_or(&[][..], |k| &k[..]);
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..entries.len());
        order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for (n, &i) in order.iter().enumerate() {
            if order.get(n + 1).is_some_and(|&j| key(j) == key(i)) {
                continue;
            }
            let (Some(e), end) = (
                entries.get(i),
                entries.get(i + 1).map_or(buf.len(), |next| next.at - 1),
            ) else {
                continue;
            };
            if !scratch.is_empty() {
                scratch.push(b',');
            }
            scratch.extend_from_slice(buf.get(e.at..end).unwrap_or_default());
        }
        drop(keys);
        self.buf.truncate(o.start);
        self.buf.extend_from_slice(&scratch);
        self.scratch = scratch;
        self.order = order;
    }

    fn end(&mut self, object: bool) {
        if self.open.last().is_none_or(|o| o.object != object) {
            return;
        }
        let Some(o) = self.open.pop() else {
            return;
        };
        if object {
            if !o.sorted {
                self.reorder(&o);
            }
            self.entries.truncate(o.entries);
        }
        self.buf.push(if object { b'}' } else { b']' });
    }
}

/// Whether `a` sorts strictly before `b`; decided by the first bytes without a call in the
/// usual case (keys of one object mostly differ there).
#[inline]
pub(super) fn before(a: &[u8], b: &[u8]) -> bool {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a < b,
    }
}

/// Append `n` bytes to `buf`, filled by `fill` (which is given exactly those `n`).
#[inline]
fn push_filled(buf: &mut Vec<u8>, n: usize, fill: impl FnOnce(&mut [u8])) {
    let at = buf.len();
    buf.resize(at + n, 0);
    if let Some(dst) = buf.get_mut(at..) {
        fill(dst);
    }
}

impl JsonOut for TextWriter {
    fn null(&mut self) {
        self.value_start();
        self.buf.extend_from_slice(b"null");
    }
    fn bool(&mut self, v: bool) {
        self.value_start();
        self.buf
            .extend_from_slice(if v { b"true" } else { b"false" });
    }
    #[inline]
    fn u64(&mut self, v: u64) {
        self.value_start();
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
    #[inline]
    fn i64(&mut self, v: i64) {
        self.value_start();
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
    fn f64(&mut self, v: f64) {
        if !v.is_finite() {
            return self.null();
        }
        self.value_start();
        self.buf
            .extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    }
    #[inline]
    fn str(&mut self, v: &str) {
        self.value_start();
        push_str(&mut self.buf, v);
    }
    fn str_with(&mut self, render: &mut dyn FnMut(&mut String)) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        render(&mut text);
        self.str(&text);
        self.text = text;
    }
    fn base64(&mut self, bytes: &[u8]) {
        self.value_start();
        self.buf.push(b'"');
        let n = base64::encoded_len(bytes.len(), true).unwrap_or(0);
        let engine = &self.base64;
        push_filled(&mut self.buf, n, |dst| {
            let _ = engine.encode_slice(bytes, dst);
        });
        self.buf.push(b'"');
    }
    fn hex(&mut self, bytes: &[u8]) {
        self.value_start();
        self.buf.push(b'"');
        push_hex(&mut self.buf, bytes);
        self.buf.push(b'"');
    }
    fn begin_object(&mut self) {
        self.begin(true);
    }
    #[inline]
    fn key(&mut self, k: &str) {
        let Some(o) = self.open.last_mut() else {
            return;
        };
        if !o.object {
            return;
        }
        if !o.empty {
            self.buf.push(b',');
        }
        o.empty = false;
        let at = self.buf.len();
        let len = if plain_key(k) {
            // Nearly every key: short, nothing to escape, written as it is.
            self.buf.reserve(k.len() + 3);
            self.buf.push(b'"');
            self.buf.extend_from_slice(k.as_bytes());
            self.buf.push(b'"');
            k.len()
        } else {
            push_str(&mut self.buf, k);
            self.buf.len() - at - 2
        };
        // Compare with the previous key while both are plain text; an escaped key leaves the
        // order to `reorder`, which compares the keys themselves.
        if o.sorted
            && (len != k.len()
                || self.entries.len() > o.entries
                    && self
                        .entries
                        .last()
                        .is_some_and(|prev| !before(prev.text(&self.buf), k.as_bytes())))
        {
            o.sorted = false;
        }
        self.entries.push(Entry { at, len });
        self.buf.push(b':');
    }
    fn end_object(&mut self) {
        self.end(true);
    }
    fn begin_array(&mut self) {
        self.begin(false);
    }
    fn end_array(&mut self) {
        self.end(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::to_value;

    /// Write the same tokens to both backends; the text must be serde_json's text of the value.
    fn same(write: impl Fn(&mut dyn JsonOut)) {
        let mut t = TextWriter::new();
        write(&mut t);
        let v = to_value(|b| write(b));
        assert_eq!(
            String::from_utf8(t.as_bytes().to_vec()).unwrap(),
            super::super::to_string(&v)
        );
    }

    #[test]
    fn scalars_match_serde_json() {
        same(|o| {
            o.begin_array();
            o.null();
            o.bool(true);
            o.bool(false);
            o.u64(0);
            o.u64(u64::MAX);
            o.i64(i64::MIN);
            o.i64(-1);
            for f in [
                0.0,
                -0.0,
                1.0,
                0.1,
                1e21,
                1.5e-7,
                f64::MAX,
                f64::MIN_POSITIVE,
                f64::from(3.3f32),
                f64::NAN,
                f64::INFINITY,
            ] {
                o.f64(f);
            }
            o.str("tab\there \"q\" \\ \u{1} é");
            o.str_fmt(format_args!("0x{:08x}", 10));
            o.base64(b"");
            o.base64(&(0..=255).collect::<Vec<u8>>());
            o.hex(&[0, 0xff, 0x10]);
            o.begin_array();
            o.end_array();
            o.begin_object();
            o.end_object();
            o.end_array();
        });
    }

    #[test]
    fn keys_come_out_in_byte_order_and_the_last_repeat_wins() {
        same(|o| {
            o.begin_object();
            o.entry_u64("b", 1);
            o.key("a");
            o.begin_object();
            o.entry_str("z", "1");
            o.entry_str("é", "2");
            o.entry_str("Z", "3");
            o.entry_str("\"", "4");
            o.entry_str("\u{1}", "5");
            o.end_object();
            o.entry_u64("b", 2);
            o.entry_u64("10", 0);
            o.entry_u64("2", 0);
            o.key("c");
            o.begin_array();
            o.begin_object();
            o.entry_u64("y", 1);
            o.entry_u64("x", 1);
            o.entry_u64("x", 2);
            o.end_object();
            o.end_array();
            o.entry_u64("b", 3);
            o.end_object();
        });
        // Already ordered: nothing moves.
        same(|o| {
            o.begin_object();
            o.entry_u64("a", 1);
            o.entry_u64("b", 2);
            o.end_object();
        });
    }

    #[test]
    fn values_follow_each_other_after_clear_and_newline() {
        let mut t = TextWriter::new();
        t.begin_object();
        t.entry_u64("b", 1);
        t.entry_u64("a", 1);
        t.end_object();
        t.newline();
        t.u64(7);
        t.newline();
        assert_eq!(t.as_bytes(), b"{\"a\":1,\"b\":1}\n7\n");
        t.clear();
        t.str("x");
        assert_eq!(t.as_bytes(), b"\"x\"");
    }
}
