//! JSON string escaping exactly as `serde_json` does it: `"` and `\` backslashed, `\b \t \n \f
//! \r` by name, other control characters as `\u00xx` (lower-case hex), everything else as is
//! (including DEL and all non-ASCII UTF-8).
//!
//! Strings with nothing to escape (the common case) are scanned eight bytes at a time and copied
//! in one go.

use std::borrow::Cow;

/// What a byte becomes: 0 as is, `u` as `\u00xx`, else `\` and that letter.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
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
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Ones in every byte.
const LO: u64 = 0x0101_0101_0101_0101;
/// The top bit of every byte.
const HI: u64 = 0x8080_8080_8080_8080;

/// The top bit set in each byte of `w` that needs escaping (a control character, `"` or `\`)
/// — exactly for the lowest such byte; bytes above it may be flagged falsely (borrows), so
/// only the lowest flag is used.
#[inline]
fn escape_flags(w: u64) -> u64 {
    let control = w.wrapping_sub(LO * 0x20) & !w;
    let q = w ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q;
    let b = w ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b;
    (control | quote | backslash) & HI
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
        dirty |= u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\');
    }
    dirty == 0
}

/// The index of the first byte at or after `from` that needs escaping.
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

/// Append `s` as a quoted, escaped JSON string.
#[inline]
pub(super) fn push_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(i) = next_escape(bytes, start) {
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        let b = bytes.get(i).copied().unwrap_or_default();
        match ESCAPE[usize::from(b)] {
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
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
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
        out.push(match e {
            b'b' => 0x08,
            b't' => b'\t',
            b'n' => b'\n',
            b'f' => 0x0c,
            b'r' => b'\r',
            b'u' => {
                // `\u00xx`: the last two digits are the byte.
                let hex = text.get(i + 2..i + 4).unwrap_or_default();
                i += 4;
                std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .unwrap_or_default()
            }
            other => other,
        });
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        push_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn matches_serde_json_on_every_char_class_and_position() {
        let mut specials: Vec<char> = (0u8..0x20).map(char::from).collect();
        specials.extend(['"', '\\', '\x7f', '/', 'é', '€', '😀', 'a', ' ']);
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
    fn unescape_inverts_push_str() {
        let all: String = (0u8..0x80).map(char::from).chain(['é', '😀']).collect();
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
