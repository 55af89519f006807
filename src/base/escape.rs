//! The one escaping rule of every text output (trace, `check`, `stats`, `decode`, logs and
//! error messages): a string that came from the wire or a file is written through these
//! functions, so no peer can put a terminal escape sequence, a line break or a bidi override
//! on someone's terminal.
//!
//! Escaped are the characters a terminal or a text viewer acts on instead of showing: the
//! controls (C0, DEL, C1: Unicode category Cc), every format character (Cf: the bidi
//! embeddings, overrides, isolates and marks, zero-width characters, the byte-order mark, the
//! soft hyphen, tag characters) and the line and paragraph separators (U+2028, U+2029).
//! `\t`, `\n` and `\r` are written by name, other ASCII controls as `\xNN`, the others as
//! `\u{NNNN}`; a byte that is not part of valid UTF-8 as `\xNN`. Quoted output
//! ([`quoted_into`]) also backslashes `"` and `\`, so the quotes delimit the string; unquoted
//! output leaves them, and escaping escaped text again changes nothing.
//!
//! Printable ASCII, nearly every string on the wire, is checked sixteen bytes at a time and
//! copied in one go; only the rest is looked up by character (general category).

use std::borrow::Cow;
use std::fmt::{self, Write};

use unicode_general_category::{GeneralCategory, get_general_category};

/// What marks a cut string: `…(+N bytes)`, N the bytes left out.
pub const CUT_MARK: &str = "…(+";

/// Whether `c` is written escaped (in any output, quoted or not).
pub fn is_escaped(c: char) -> bool {
    if c.is_ascii() {
        return c < ' ' || c == '\x7f';
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// Whether the ASCII byte `b` goes out as it is: printable, and no quote or backslash when
/// `quoting`.
#[inline(always)]
fn plain_ascii(b: u8, quoting: bool) -> bool {
    b.wrapping_sub(0x20) < 0x5f && !(quoting && (b == b'"' || b == b'\\'))
}

/// The length of the run of plain printable ASCII `bytes` start with.
#[inline]
fn plain_prefix(bytes: &[u8], quoting: bool) -> usize {
    let mut i = 0;
    // Sixteen bytes a step, branch-free inside (a few vector compares).
    while let Some(block) = bytes
        .get(i..i + 16)
        .and_then(|b| <&[u8; 16]>::try_from(b).ok())
    {
        let mut dirty = 0u8;
        for &b in block {
            let special = u8::from(b == b'"') | u8::from(b == b'\\');
            dirty |= u8::from(b.wrapping_sub(0x20) >= 0x5f) | (u8::from(quoting) & special);
        }
        if dirty != 0 {
            break;
        }
        i += 16;
    }
    while let Some(&b) = bytes.get(i) {
        if !plain_ascii(b, quoting) {
            break;
        }
        i += 1;
    }
    i
}

/// `\xNN` of a byte, lowercase hex (the escape of a control or of a byte that is not UTF-8).
fn byte_escape(b: u8) -> [u8; 4] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    [
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 0xf)],
    ]
}

/// Write `\xNN` of a byte.
fn write_byte_escape<W: Write + ?Sized>(w: &mut W, b: u8) -> fmt::Result {
    byte_escape(b)
        .into_iter()
        .try_for_each(|e| w.write_char(char::from(e)))
}

/// Write the escape of one character.
fn write_char_escape<W: Write + ?Sized>(w: &mut W, c: char) -> fmt::Result {
    match c {
        '\n' => w.write_str("\\n"),
        '\r' => w.write_str("\\r"),
        '\t' => w.write_str("\\t"),
        '"' => w.write_str("\\\""),
        '\\' => w.write_str("\\\\"),
        c if c.is_ascii() => write_byte_escape(w, c as u8),
        c => write!(w, "\\u{{{:04x}}}", c as u32),
    }
}

/// Write `s` escaped (and its quotes and backslashes too when `quoting`), without quotes.
fn write_escaped<W: Write + ?Sized>(w: &mut W, s: &str, quoting: bool) -> fmt::Result {
    let bytes = s.as_bytes();
    let plain = plain_prefix(bytes, quoting);
    if plain == bytes.len() {
        return w.write_str(s);
    }
    // Everything before `plain` is ASCII, so it is a char boundary.
    let (head, rest) = s.split_at(plain);
    w.write_str(head)?;
    let mut start = 0;
    for (i, c) in rest.char_indices() {
        let escape = match u8::try_from(c) {
            Ok(b) if b.is_ascii() => !plain_ascii(b, quoting),
            _ => is_escaped(c),
        };
        if escape {
            w.write_str(rest.get(start..i).unwrap_or_default())?;
            write_char_escape(w, c)?;
            start = i + c.len_utf8();
        }
    }
    w.write_str(rest.get(start..).unwrap_or_default())
}

/// Write `b` as [`write_escaped`] does, each byte of it that is not valid UTF-8 as `\xNN`.
fn write_escaped_bytes<W: Write + ?Sized>(w: &mut W, b: &[u8], quoting: bool) -> fmt::Result {
    if plain_prefix(b, quoting) == b.len() {
        // Printable ASCII throughout (nearly every string on the wire): as it is, without
        // checking again what `plain_prefix` just checked (a UTF-8 check costs as much).
        debug_assert!(b.iter().all(|&c| (0x20..0x7f).contains(&c)));
        // SAFETY: every byte of `b` is in 0x20..0x7f (`plain_ascii`), and ASCII is UTF-8.
        return w.write_str(unsafe { std::str::from_utf8_unchecked(b) });
    }
    for chunk in b.utf8_chunks() {
        write_escaped(w, chunk.valid(), quoting)?;
        for &byte in chunk.invalid() {
            write_byte_escape(w, byte)?;
        }
    }
    Ok(())
}

/// Append `s` with its controls, format characters and separators escaped (unquoted: `"` and
/// `\` stay as they are).
pub fn escape_into(out: &mut String, s: &str) {
    let _ = write_escaped(out, s, false);
}

/// `s` escaped as [`escape_into`] does; borrowed when there is nothing to escape.
pub fn escape(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_escaped) {
        let mut out = String::with_capacity(s.len() + 8);
        escape_into(&mut out, s);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// Append bytes escaped as [`escape_into`] does, invalid UTF-8 as `\xNN` (unquoted).
pub fn escape_bytes_into(out: &mut String, b: &[u8]) {
    let _ = write_escaped_bytes(out, b, false);
}

/// Append `"s"`: `s` escaped, its `"` and `\` backslashed.
pub fn quoted_into(out: &mut String, s: &str) {
    out.push('"');
    let _ = write_escaped(out, s, true);
    out.push('"');
}

/// Append `"b"` as [`quoted_into`] does, each byte of `b` that is not valid UTF-8 as `\xNN`.
pub fn quoted_bytes_into(out: &mut String, b: &[u8]) {
    out.push('"');
    let _ = write_escaped_bytes(out, b, true);
    out.push('"');
}

/// Append `"b"` for bytes that are binary, not text (an AMQP 1.0 `binary`): every byte
/// outside printable ASCII as `\xNN`, `"` and `\` backslashed.
pub fn binary_into(out: &mut String, b: &[u8]) {
    // Room for the worst case (every byte `\xNN`) up front: one reservation per value.
    out.reserve(b.len().min(4096) * 4 + 2);
    out.push('"');
    for &c in b {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            c if plain_ascii(c, true) => out.push(char::from(c)),
            c => {
                for e in byte_escape(c) {
                    out.push(char::from(e));
                }
            }
        }
    }
    out.push('"');
}

/// Append a name (a 0-9-1 field-table key, an AMQP 1.0 symbol): as it is when it is a plain
/// name (ASCII letters, digits and `-_.:/`, not empty), else quoted as [`quoted_bytes_into`]
/// does, so a key can neither hide a control nor pass for the punctuation around it.
pub fn name_into(out: &mut String, b: &[u8]) {
    let plain = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b':' | b'/'));
    match std::str::from_utf8(b) {
        Ok(s) if plain => out.push_str(s),
        _ => quoted_bytes_into(out, b),
    }
}

/// The longest prefix of `b` of at most `max` bytes that does not split a UTF-8 character
/// (bytes that are not UTF-8 are cut anywhere).
fn prefix(b: &[u8], max: usize) -> &[u8] {
    if b.len() <= max {
        return b;
    }
    let mut n = max;
    // Back up over continuation bytes (at most three) to the start of the character.
    while n > 0 && max - n < 3 && b.get(n).is_some_and(|&c| c & 0xc0 == 0x80) {
        n -= 1;
    }
    if b.get(n).is_some_and(|&c| c & 0xc0 == 0x80) {
        n = max;
    }
    b.get(..n).unwrap_or(b)
}

/// Append `"b"` as [`quoted_bytes_into`] does, cut to at most `max` of its bytes (on a
/// character boundary), the cut marked after the quote: `"abc"…(+12 bytes)`. `total` is the
/// string's whole length when `b` holds only its start (a body previewed from its first
/// bytes), else `b.len()`.
pub fn quoted_cut_into(out: &mut String, b: &[u8], max: usize, total: u64) {
    let shown = prefix(b, max);
    quoted_bytes_into(out, shown);
    cut_mark_into(out, total.saturating_sub(shown.len() as u64));
}

/// Append `…(+N bytes)` when `dropped` bytes were left out (nothing when none were).
pub fn cut_mark_into(out: &mut String, dropped: u64) {
    if dropped > 0 {
        out.push_str(CUT_MARK);
        out.push_str(itoa::Buffer::new().format(dropped));
        out.push_str(" bytes)");
    }
}

/// A wire or file string for `format!` and `write!`: shown as [`escape_into`] writes it.
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, self.0, false)
    }
}

/// A wire or file string for `format!` and `write!`, in quotes: shown as [`quoted_into`]
/// writes it.
#[derive(Clone, Copy, Debug)]
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        write_escaped(f, self.0, true)?;
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_prefix_ends_at_the_first_byte_that_is_not_printable_ascii() {
        // Every byte value at every position of strings as long as two blocks and a tail,
        // quoting or not: the prefix is exactly the bytes before the first one to escape.
        for len in 1..=40 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    for quoting in [false, true] {
                        let want = s
                            .iter()
                            .position(|&c| {
                                !(0x20..0x7f).contains(&c) || quoting && (c == b'"' || c == b'\\')
                            })
                            .unwrap_or(len);
                        assert_eq!(plain_prefix(&s, quoting), want, "{s:?} {quoting}");
                    }
                }
            }
        }
    }

    fn esc(s: &str) -> String {
        let mut out = String::new();
        escape_into(&mut out, s);
        out
    }

    fn quoted(b: &[u8]) -> String {
        let mut out = String::new();
        quoted_bytes_into(&mut out, b);
        out
    }

    #[test]
    fn controls_bidi_format_and_separators_are_escaped() {
        assert_eq!(esc("a\x1b]52;c;x\x07b"), "a\\x1b]52;c;x\\x07b");
        assert_eq!(esc("k\n-> PASS\r\t"), "k\\n-> PASS\\r\\t");
        assert_eq!(esc("\x7f\u{9b}\u{85}"), "\\x7f\\u{009b}\\u{0085}");
        assert_eq!(
            esc("\u{202e}\u{2066}\u{200b}\u{feff}\u{ad}\u{e0001}"),
            "\\u{202e}\\u{2066}\\u{200b}\\u{feff}\\u{00ad}\\u{e0001}"
        );
        assert_eq!(esc("\u{2028}\u{2029}"), "\\u{2028}\\u{2029}");
        assert_eq!(
            esc("plain \"text\" \\ é ü 日本 🦀"),
            "plain \"text\" \\ é ü 日本 🦀"
        );
    }

    #[test]
    fn quoting_backslashes_quotes_and_backslashes() {
        assert_eq!(quoted(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quoted(b"\xff\xc3(\x1b\xc3\xa9"), r#""\xff\xc3(\x1bé""#);
        assert_eq!(Quoted("x\ny").to_string(), "\"x\\ny\"");
        assert_eq!(Escaped("x\u{9b}y").to_string(), "x\\u{009b}y");
    }

    #[test]
    fn no_output_holds_an_escaped_character_and_escaping_again_changes_nothing() {
        // Every character up to U+3000 and the format characters past it, at every offset of
        // the sixteen-byte scan.
        let specials = [
            '\u{feff}',
            '\u{fff9}',
            '\u{110bd}',
            '\u{1d173}',
            '\u{e007f}',
        ];
        for c in (0..0x3000u32).filter_map(char::from_u32).chain(specials) {
            for pad in [0, 1, 15, 16, 17] {
                let s = format!("{}{c}z", "a".repeat(pad));
                let once = esc(&s);
                assert!(!once.chars().any(is_escaped), "{:x}: {once}", c as u32);
                assert_eq!(esc(&once), once);
                let q = quoted(s.as_bytes());
                assert!(!q.chars().any(is_escaped));
                let inner = q.get(1..q.len() - 1).unwrap();
                assert!(!inner.replace("\\\\", "").replace("\\\"", "").contains('"'));
                assert_eq!(escape(&s), once.as_str());
            }
        }
    }

    #[test]
    fn cuts_fall_on_character_boundaries_and_are_marked() {
        let mut out = String::new();
        quoted_cut_into(&mut out, "ééé".as_bytes(), 3, 6);
        assert_eq!(out, "\"é\"…(+4 bytes)");
        out.clear();
        quoted_cut_into(&mut out, b"abc", 8, 3);
        assert_eq!(out, "\"abc\"");
        out.clear();
        quoted_cut_into(&mut out, b"\x80\x80\x80\x80\x80", 2, 5);
        assert_eq!(out, "\"\\x80\\x80\"…(+3 bytes)");
        out.clear();
        quoted_cut_into(&mut out, b"abcd", 4, 100);
        assert_eq!(out, "\"abcd\"…(+96 bytes)");
    }
}
