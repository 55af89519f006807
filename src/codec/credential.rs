//! Where credentials may sit in bytes that did not decode, and URL passwords in any bytes.
//!
//! Masking fails closed: a frame that could carry a credential (a SASL frame, an AMQP 0-9-1
//! `connection.start-ok`, `secure-ok` or `update-secret`, a `$cbs` put-token) but cannot be
//! fully decoded has its whole payload masked, since where the secret sits inside it is not
//! known. These checks look at a unit's first bytes only (its frame header and, for 0-9-1, the
//! class and method ids), so they work on a malformed frame, a frame cut short, or the bytes
//! where framing was lost. Pure functions: no allocation beyond the returned ranges.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::amqp10::value::code::{DESCRIBED, SMALLULONG, ULONG};
use super::amqp10::views::code::{SASL_MECHANISMS, SASL_OUTCOME};

/// AMQP 1.0 frame header length.
const AMQP10_HEADER: usize = 8;
/// AMQP 0-9-1 frame header length (type, channel, size).
const AMQP091_HEADER: usize = 7;
/// 0-9-1 frame header plus class and method ids.
const AMQP091_IDS_END: usize = AMQP091_HEADER + 4;
/// 0-9-1 `connection` class id, and its methods that carry a secret: start-ok (11),
/// secure-ok (21), update-secret (70).
const CONNECTION: u16 = 10;
const SECRET_METHODS: [u16; 3] = [11, 21, 70];

/// Where to mask an AMQP 1.0 unit from: after its frame header, when it could carry a
/// credential.
pub fn amqp10_mask_from(head: &[u8]) -> Option<usize> {
    amqp10_could_carry(head).then_some(AMQP10_HEADER.min(head.len()))
}

/// An AMQP 1.0 unit that could be a SASL frame (type 1, or a SASL descriptor where the body
/// starts, whatever the type) or a put-token request.
fn amqp10_could_carry(head: &[u8]) -> bool {
    if head.get(5) == Some(&1) {
        return true;
    }
    let doff = head.get(4).map_or(2, |d| usize::from(*d) * 4).max(8);
    let body = head.get(doff..).unwrap_or_default();
    let sasl = |code: u8| (SASL_MECHANISMS..=SASL_OUTCOME).contains(&u64::from(code));
    let sasl_small =
        body.len() >= 3 && body[0] == DESCRIBED && body[1] == SMALLULONG && sasl(body[2]);
    let sasl_ulong = body.len() >= 10
        && body[0] == DESCRIBED
        && body[1] == ULONG
        && body[2..9] == [0; 7]
        && sasl(body[9]);
    // A body cut before its descriptor could be anything: fail closed.
    let too_short = body.len() < 3;
    sasl_small || sasl_ulong || too_short || contains_put_token(head)
}

/// Where to mask an AMQP 0-9-1 unit from: after the ids of a credential method, after the
/// frame header of a method frame too short to tell which method it is.
pub fn amqp091_mask_from(head: &[u8]) -> Option<usize> {
    match head.get(AMQP091_HEADER..AMQP091_IDS_END) {
        Some(&[c0, c1, m0, m1]) => {
            let class = u16::from_be_bytes([c0, c1]);
            let method = u16::from_be_bytes([m0, m1]);
            (class == CONNECTION && SECRET_METHODS.contains(&method)).then_some(AMQP091_IDS_END)
        }
        // Cut before its ids: a method frame (type 1) could be any method.
        _ => (head[0] == 1).then_some(AMQP091_HEADER.min(head.len())),
    }
}

/// True when `hay` holds `put-token` (the searcher is built once: this runs on every unit
/// that did not decode).
fn contains_put_token(hay: &[u8]) -> bool {
    static PUT_TOKEN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"put-token"));
    PUT_TOKEN.find(hay).is_some()
}

/// The passwords of `amqp://user:password@host` and `amqps://` URLs in `bytes`: the bytes
/// between the userinfo's first `:` and its `@`. The scheme is matched case-insensitively; the
/// userinfo ends at the first byte no URL userinfo holds (`/`, `?`, `#`, a space, a quote, a
/// control byte), so text that merely mentions a scheme masks nothing.
///
/// This runs on every frame and message: the `://` every URL has is found from its `:` (a
/// byte few small binary frames hold) with a vectorised byte scan, which costs less on a small
/// frame than starting a substring searcher. Bytes with no `:`, or fewer than the shortest URL
/// with a password (`amqp://:p@`), are answered before anything else is set up.
#[inline]
pub fn url_passwords(bytes: &[u8]) -> Vec<Range<usize>> {
    if bytes.len() < SHORTEST_URL_WITH_PASSWORD {
        return Vec::new();
    }
    match find_colon(bytes) {
        None => Vec::new(),
        Some(first) => url_passwords_from(bytes, first),
    }
}

/// The first `:` in `bytes`. On x86-64 the SSE2 search (which every x86-64 CPU has) is
/// inlined here: on a small frame, choosing a search at run time costs more than the search.
#[inline]
fn find_colon(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(colon) = memchr::arch::x86_64::sse2::memchr::One::new(b':') {
        return colon.find(bytes);
    }
    memchr::memchr(b':', bytes)
}

/// The length of the shortest URL [`url_passwords`] finds a password in: `amqp://:p@`.
const SHORTEST_URL_WITH_PASSWORD: usize = 10;

/// [`url_passwords`] of `bytes`, whose first `:` is at `first`.
#[inline(never)]
fn url_passwords_from(bytes: &[u8], first: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let scheme_ends = memchr::memchr_iter(b':', &bytes[first..])
        .map(|at| first + at)
        .filter(|&at| bytes[at..].starts_with(b"://"));
    for at in scheme_ends {
        let scheme_ok = |s: &[u8]| at >= s.len() && bytes[at - s.len()..at].eq_ignore_ascii_case(s);
        if !(scheme_ok(b"amqp") || scheme_ok(b"amqps")) {
            continue;
        }
        let start = at + 3;
        let Some(len) = bytes[start..]
            .iter()
            .position(|&b| !userinfo_byte(b) || b == b'@')
        else {
            continue;
        };
        if bytes[start + len] != b'@' {
            continue;
        }
        let userinfo = &bytes[start..start + len];
        if let Some(colon) = userinfo.iter().position(|&b| b == b':')
            && colon + 1 < len
        {
            out.push(start + colon + 1..start + len);
        }
    }
    out
}

/// A byte a URL's userinfo can hold (RFC 3986 unreserved, sub-delims, `:`, `%`), plus any
/// non-ASCII byte (an IRI's UTF-8) and `@` (which ends it).
fn userinfo_byte(b: u8) -> bool {
    b >= 0x80 || b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:%@".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_rng::Rng;

    /// URL passwords found the plain way: every `:` tried, no shortcut.
    fn url_passwords_plain(bytes: &[u8]) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        for at in (0..bytes.len()).filter(|&at| bytes[at..].starts_with(b"://")) {
            let scheme_ok =
                |s: &[u8]| at >= s.len() && bytes[at - s.len()..at].eq_ignore_ascii_case(s);
            if !(scheme_ok(b"amqp") || scheme_ok(b"amqps")) {
                continue;
            }
            let start = at + 3;
            let Some(len) = bytes[start..]
                .iter()
                .position(|&b| !userinfo_byte(b) || b == b'@')
            else {
                continue;
            };
            let userinfo = &bytes[start..start + len];
            if bytes[start + len] == b'@'
                && let Some(colon) = userinfo.iter().position(|&b| b == b':')
                && colon + 1 < len
            {
                out.push(start + colon + 1..start + len);
            }
        }
        out
    }

    #[test]
    fn url_passwords_are_what_trying_every_colon_finds() {
        let pieces: [&[u8]; 14] = [
            b"amqp://",
            b"AmQpS://",
            b"http://",
            b"amqp",
            b"u:pw@",
            b":p@",
            b"u@",
            b":",
            b"@",
            b"u",
            b"/",
            b" ",
            b"\x00",
            b"%4",
        ];
        let mut rng = Rng(0x5eed_c0de);
        let mut found = 0;
        for _ in 0..20_000 {
            let mut s = Vec::new();
            for _ in 0..rng.below(40) {
                s.extend_from_slice(pieces[rng.below(pieces.len() as u64) as usize]);
            }
            let plain = url_passwords_plain(&s);
            found += plain.len();
            assert_eq!(url_passwords(&s), plain, "{s:?}");
        }
        // The generated inputs hold passwords often, not just bytes that hold none.
        assert!(found > 2_000, "{found}");
    }

    #[test]
    fn url_passwords_are_found_only_in_userinfo() {
        let s = b"x amqp://guest:s3cr%40t@host:5672/vh AMQPS://u:p@h amqp://nopass@h amqp://a:b/c";
        let got: Vec<&[u8]> = url_passwords(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(got, vec![&b"s3cr%40t"[..], &b"p"[..]]);
        assert!(url_passwords(b"http://u:p@h").is_empty());
        assert!(url_passwords(b"amqp://").is_empty());
        assert!(url_passwords(b"amqp://u:").is_empty());
        // The shortest URL with a password, alone and after colons that start none.
        assert_eq!(url_passwords(b"amqp://:p@"), vec![8..9]);
        assert!(url_passwords(b"amqp://:@").is_empty());
        let s = b"a:b:: amqp://u:pw@h";
        assert_eq!(url_passwords(s), vec![15..17]);
        // A `:` past the first 16 or 64 bytes (where the vectorised scan changes step).
        for pad in [0, 5, 15, 16, 17, 63, 64, 65, 200] {
            let mut s = vec![b'x'; pad];
            s.extend_from_slice(b" amqps://user:secret@host");
            let got: Vec<&[u8]> = url_passwords(&s).into_iter().map(|r| &s[r]).collect();
            assert_eq!(got, vec![&b"secret"[..]], "pad {pad}");
        }
    }
}
