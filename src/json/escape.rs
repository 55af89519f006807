//! JSON string escaping as `serde_json` does it, and more: `"` and `\` backslashed, `\b \t \n
//! \f \r` by name, other control characters as `\u00xx` (lower-case hex), as `serde_json` does;
//! then every other character text outputs escape (`crate::base::escape::is_escaped`: DEL, C1
//! controls, format characters such as the bidi controls, U+2028 and U+2029) as `\uxxxx` (a
//! surrogate pair above U+FFFF), so that `jq -r` of a capture, or the capture itself on a
//! terminal, shows no peer's control character. Everything else is as is.
//! [`SafeFormatter`] makes `serde_json` write strings the same way.
//!
//! Strings of plain ASCII (the common case) are scanned eight bytes at a time and copied in one
//! go.

use std::borrow::Cow;
use std::io;

use crate::base::escape::is_escaped;

/// What a byte becomes: 0 as is, `u` as `\u00xx`, `h` the start (or rest) of a non-ASCII
/// character, looked at whole, else `\` and that letter.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut h = 0x80;
    while h < 0x100 {
        t[h] = b'h';
        h += 1;
    }
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[0x7f] = b'u';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Ones in every byte.
const LO: u64 = 0x0101_0101_0101_0101;
/// The top bit of every byte.
const HI: u64 = 0x8080_8080_8080_8080;

/// The top bit set in each byte of `w` that needs a look (a control character, `"`, `\` or a
/// byte of a non-ASCII character) — exactly for the lowest such byte; bytes above it may be
/// flagged falsely (borrows), so only the lowest flag is used.
#[inline]
fn escape_flags(w: u64) -> u64 {
    let control = w.wrapping_sub(LO * 0x20) & !w;
    let q = w ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q;
    let b = w ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b;
    let d = w ^ (LO * 0x7f);
    let del = d.wrapping_sub(LO) & !d;
    (control | quote | backslash | del | w) & HI
}

/// The eight bytes at `bytes[at..]` as a little-endian word, if there are eight.
#[inline(always)]
fn word(bytes: &[u8], at: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes.get(at..at + 8)?);
    Some(u64::from_le_bytes(w))
}

/// Whether none of the bytes of `block` needs escaping: a branch-free loop over a fixed-size
/// block, which the compiler turns into a few vector compares.
#[inline(always)]
fn clean(block: &[u8; 32]) -> bool {
    let mut dirty = 0u8;
    for &b in block {
        dirty |= u8::from(b < 0x20)
            | u8::from(b == b'"')
            | u8::from(b == b'\\')
            | u8::from(b == 0x7f)
            | (b >> 7);
    }
    dirty == 0
}

/// The index of the first byte at or after `from` that needs a look.
#[inline]
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    // Long clean runs (message bodies) 32 bytes a step; the step with a hit is redone below.
    while let Some(block) = bytes
        .get(i..i + 32)
        .and_then(|b| <&[u8; 32]>::try_from(b).ok())
    {
        if !clean(block) {
            break;
        }
        i += 32;
    }
    while let Some(w) = word(bytes, i) {
        let flags = escape_flags(w);
        if flags != 0 {
            return Some(i + (flags.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let tail = bytes.get(i..)?;
    tail.iter()
        .position(|&b| ESCAPE[usize::from(b)] != 0)
        .map(|p| i + p)
}

/// `\uxxxx` for `c` (two of them, a surrogate pair, above U+FFFF), lower-case hex.
fn u_escape(c: char, out: &mut impl Extend<u8>) {
    let mut units = [0u16; 2];
    for &u in c.encode_utf16(&mut units).iter() {
        out.extend(*b"\\u");
        out.extend([12u32, 8, 4, 0].map(|s| HEX[((u >> s) & 0xf) as usize]));
    }
}

/// Whether nothing in `bytes` (a short string) needs escaping: eight bytes a step, then the
/// few left one by one. Without a byte to escape, [`escape_flags`] flags none (its false flags
/// come only from borrows above a true one), so any flag is a byte to look at.
#[inline(always)]
fn plain_short(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let mut flags = 0;
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        flags |= escape_flags(u64::from_le_bytes(word));
    }
    flags == 0
        && words
            .remainder()
            .iter()
            .all(|&b| ESCAPE[usize::from(b)] == 0)
}

/// Whether `s` goes into JSON as it is, quotes around it: short, and nothing in it to escape.
#[inline(always)]
pub(super) fn plain_key(s: &str) -> bool {
    s.len() <= SHORT && plain_short(s.as_bytes())
}

/// Strings up to this long are checked whole before the general scan.
const SHORT: usize = 24;

/// Append `s` as a quoted, escaped JSON string.
#[inline]
pub(super) fn push_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if plain_key(s) {
        // A short string with nothing to escape (every key, most values): copied at once.
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut from = 0;
    while let Some(i) = next_escape(bytes, from) {
        let b = bytes.get(i).copied().unwrap_or_default();
        let e = ESCAPE[usize::from(b)];
        if e == b'h' {
            // A non-ASCII character: escaped only when text outputs escape it.
            let c = s
                .get(i..)
                .and_then(|t| t.chars().next())
                .unwrap_or_default();
            from = i + c.len_utf8().max(1);
            if is_escaped(c) {
                out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
                u_escape(c, out);
                start = from;
            }
            continue;
        }
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        match e {
            b'u' => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            e => {
                out.push(b'\\');
                out.push(e);
            }
        }
        start = i + 1;
        from = start;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
}

/// A `serde_json` formatter (compact or pretty, the one it wraps) that escapes strings as
/// [`push_str`] does: for every JSON `serde_json` writes to a file or a terminal (the verdict,
/// the baseline, `stats --json`, `decode`).
#[derive(Clone, Debug, Default)]
pub struct SafeFormatter<F>(pub F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for SafeFormatter<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if fragment.bytes().all(|b| b.is_ascii() && b != 0x7f) {
            return w.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_escaped(c) {
                w.write_all(fragment.get(start..i).unwrap_or_default().as_bytes())?;
                let mut buf = Vec::with_capacity(12);
                u_escape(c, &mut buf);
                w.write_all(&buf)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(fragment.get(start..).unwrap_or_default().as_bytes())
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// The text of a string [`push_str`] wrote (without its quotes), unescaped.
pub(super) fn unescape(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.contains(&b'\\') {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&e) = text.get(i) else { break };
        i += 1;
        if e == b'u' {
            let (c, used) = u_unescape(text.get(i..).unwrap_or_default());
            i += used;
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        out.push(match e {
            b'b' => 0x08,
            b't' => b'\t',
            b'n' => b'\n',
            b'f' => 0x0c,
            b'r' => b'\r',
            other => other,
        });
    }
    Cow::Owned(out)
}

/// The character of the `xxxx` (and, for a surrogate pair, the `\uyyyy` that follows) after a
/// `\u`, and how many bytes of `text` it took.
fn u_unescape(text: &[u8]) -> (char, usize) {
    let unit = |at: usize| {
        std::str::from_utf8(text.get(at..at + 4)?)
            .ok()
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let Some(hi) = unit(0) else {
        return (char::REPLACEMENT_CHARACTER, text.len().min(4));
    };
    if (0xd800..0xdc00).contains(&hi)
        && text.get(4..6) == Some(&b"\\u"[..])
        && let Some(lo) = unit(6)
        && let Some(Ok(c)) = char::decode_utf16([hi, lo]).next()
    {
        return (c, 10);
    }
    (
        char::from_u32(u32::from(hi)).unwrap_or(char::REPLACEMENT_CHARACTER),
        4,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_check_finds_every_byte_to_escape_wherever_it_is() {
        // Every byte value at every position of every short length, among plain bytes and
        // among bytes that borrow (just above a control character).
        for len in 1..=SHORT {
            for at in 0..len {
                for b in 0..=255u8 {
                    for fill in [b'a', b' ', b'!', b'~'] {
                        let mut s = vec![fill; len];
                        s[at] = b;
                        let want = s.iter().all(|&c| ESCAPE[usize::from(c)] == 0);
                        assert_eq!(plain_short(&s), want, "{s:?}");
                    }
                }
            }
        }
    }

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        push_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn matches_serde_json_on_every_char_class_and_position() {
        let mut specials: Vec<char> = (0u8..0x20).map(char::from).collect();
        specials.extend(['"', '\\', '/', 'é', '€', '😀', 'a', ' ']);
        for c in &specials {
            for pad in 0..18 {
                let s = format!("{}{c}{}", "x".repeat(pad), "y".repeat(17 - pad));
                assert_eq!(esc(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
            }
        }
        for s in ["", "a", "\"", "abc\u{0}def", "longer than eight \\ bytes"] {
            assert_eq!(esc(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn every_escaped_byte_is_found_at_every_position_and_length() {
        for len in 1..40 {
            for at in 0..len {
                for b in [0u8, 0x1f, b'"', b'\\'] {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    // A second one further on: both escaped (the scan resumes after the first).
                    if at + 3 < len {
                        text[at + 3] = b'\n';
                    }
                    let s = std::str::from_utf8(&text).unwrap();
                    assert_eq!(esc(s), serde_json::to_string(s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn c1_format_characters_and_separators_are_escaped_as_text_outputs_escape_them() {
        let s = "a\u{9b}b\u{202e}\u{2066}\u{2028}\u{feff}é\u{e0001}z\x7f";
        assert_eq!(
            esc(s),
            r#""a\u009bb\u202e\u2066\u2028\ufeffé\udb40\udc01z\u007f""#
        );
        // What serde_json writes through the formatter is the same text.
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            SafeFormatter(serde_json::ser::CompactFormatter),
        );
        serde::Serialize::serialize(s, &mut ser).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), esc(s));
        assert_eq!(serde_json::from_str::<String>(&esc(s)).unwrap(), s);
        // At every offset of the word scan.
        for pad in 0..18 {
            let t = format!("{}\u{85}{}", "x".repeat(pad), "y".repeat(17 - pad));
            assert_eq!(
                esc(&t),
                format!("\"{}\\u0085{}\"", "x".repeat(pad), "y".repeat(17 - pad))
            );
        }
    }

    #[test]
    fn unescape_inverts_push_str() {
        let all: String = (0u8..0x80)
            .map(char::from)
            .chain(['é', '😀', '\u{9b}', '\u{202e}', '\u{e0001}', '\u{2029}'])
            .collect();
        for s in [&all[..], "plain", "", "\\", "\"q\""] {
            let mut out = Vec::new();
            push_str(&mut out, s);
            assert_eq!(&*unescape(&out[1..out.len() - 1]), s.as_bytes());
        }
    }

    #[test]
    fn word_scan_finds_exactly_the_first_escaped_byte() {
        let naive = |w: &[u8; 8]| w.iter().position(|&b| ESCAPE[usize::from(b)] != 0);
        for b in 0..=255u8 {
            for pos in 0..8 {
                for other in [b'a', 0x00, b'"', 0xff, 0x1f, 0x20] {
                    let mut w = [b'a'; 8];
                    w[pos] = b;
                    if let Some(after) = w.get_mut(pos + 1) {
                        *after = other;
                    }
                    let flags = escape_flags(u64::from_le_bytes(w));
                    let first = (flags != 0).then(|| (flags.trailing_zeros() / 8) as usize);
                    assert_eq!(first, naive(&w), "{w:02x?}");
                }
            }
        }
    }
}
