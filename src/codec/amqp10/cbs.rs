//! Claims-based security (`$cbs`, Azure Service Bus / Event Hubs): recognise put-token requests
//! and their responses, and find the token's bytes so they can be masked.
//!
//! A put-token request is a message whose application-properties hold `operation` =
//! `put-token`, `type`, `name` (the audience) and `expiration`, with the token as the
//! `amqp-value` body; the response carries `status-code` and `status-description`. This module
//! only reads already decoded values: it never allocates beyond them and never panics.

use std::ops::Range;

use super::message::{Message, Section};
use super::value::Value;
use super::views::Transfer;
use super::{Frame, Map};
use crate::json::JsonOut;

use super::views::code::{AMQP_VALUE, APPLICATION_PROPERTIES};

/// The string (or symbol) an application-property holds under `key`.
fn prop<'a>(props: &'a Map, key: &str) -> Option<&'a Value> {
    props.iter().find_map(|(k, v)| match k {
        Value::String(s) if s.as_str() == key => Some(v),
        Value::Symbol(s) if s.as_str() == key => Some(v),
        _ => None,
    })
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s.as_str()),
        Value::Symbol(s) => Some(s.as_str()),
        _ => None,
    }
}

fn app_props(sections: &[Section]) -> Option<&Map> {
    match &sections
        .iter()
        .find(|s| s.code == APPLICATION_PROPERTIES)?
        .value
    {
        Value::Map(m) => Some(m),
        _ => None,
    }
}

/// True when these application-properties ask for `put-token`.
pub fn is_put_token(props: &Map) -> bool {
    prop(props, "operation").and_then(text) == Some("put-token")
}

/// A put-token request's audience (`name`) and `expiration` (ms since the epoch, when it is a
/// timestamp); `None` for any other message.
pub fn put_token(msg: &Message) -> Option<(&str, Option<i64>)> {
    let props = msg.application_properties()?;
    if !is_put_token(props) {
        return None;
    }
    let name = prop(props, "name").and_then(text)?;
    let expiration = match prop(props, "expiration") {
        Some(Value::Timestamp(ms)) => Some(*ms),
        _ => None,
    };
    Some((name, expiration))
}

/// The byte range (within `section`'s span, relative to the message payload) of the token: the
/// content bytes of the `amqp-value` string or binary, which end the section.
fn token_span(section: &Section) -> Option<Range<usize>> {
    let len = match &section.value {
        Value::String(s) => s.as_bytes().len(),
        Value::Binary(b) => b.len(),
        _ => return None,
    };
    let start = section.span.end.checked_sub(len)?;
    (start >= section.span.start && len > 0).then_some(start..section.span.end)
}

/// True when `msg`, the message a transfer completes, cannot be a put-token request: it is
/// whole, carried by that one transfer alone, and has no application-properties section (where
/// a request names its `operation`). The payload of such a transfer needs no search for a token:
/// [`put_token_ranges`] would find none in it.
#[inline]
pub fn rules_out_put_token(msg: &Message) -> bool {
    msg.transfers == 1
        && msg.payload.len() as u64 == msg.size
        && !msg.has_section(APPLICATION_PROPERTIES)
}

/// Byte ranges (within the raw frame) of the token of a put-token request carried whole by this
/// transfer frame. Empty for anything else, including a put-token split over several transfers
/// (the token is then not masked).
#[inline]
pub fn put_token_ranges(frame: &Frame) -> Vec<Range<usize>> {
    match frame.transfer() {
        Some(t) if !t.more && !t.aborted && contains_put_token(frame.payload()) => {
            token_in_frame(frame)
        }
        _ => Vec::new(),
    }
}

/// [`put_token_ranges`] of a single transfer whose payload holds `put-token` somewhere.
#[inline(never)]
fn token_in_frame(frame: &Frame) -> Vec<Range<usize>> {
    let payload = frame.payload_bytes(usize::MAX);
    token_in_sections(&payload, frame.payload_abs_offset())
        .into_iter()
        .filter_map(|r| {
            Some(
                frame.payload_start.checked_add(r.start)?
                    ..frame.payload_start.checked_add(r.end)?,
            )
        })
        .filter(|r| r.end <= frame.raw.len())
        .collect()
}

/// Put-token requests split over several transfers, followed per link so that every transfer
/// of one carries the mask: once a delivery's payload so far holds `put-token` (the
/// application-properties, which come before the token), the whole payload of that transfer
/// and of every later one of the delivery is masked. The token cannot be located in a part of
/// a message, so this fails closed: all of it goes.
#[derive(Debug, Default)]
pub struct SplitPutTokens {
    /// Deliveries under way: (channel, handle), the last bytes of their payload so far (to
    /// find `put-token` cut between two transfers), and whether it was found.
    open: Vec<((u16, u32), Vec<u8>, bool)>,
}

/// Most multi-transfer deliveries followed at once (one per link is the norm); beyond it the
/// oldest is forgotten, so hostile input cannot grow this.
const MAX_OPEN: usize = 1024;
/// Payload bytes kept of each transfer to join with the next one's (more than `put-token`).
const TAIL: usize = 16;

impl SplitPutTokens {
    /// The byte range (within the raw frame) to mask of this transfer: its whole payload, when
    /// it belongs to a multi-transfer delivery known to be a put-token by now. `None` for other
    /// frames and for single-transfer messages ([`put_token_ranges`] masks those precisely).
    #[inline]
    pub fn transfer(&mut self, frame: &Frame) -> Option<Range<usize>> {
        let t = frame.transfer()?;
        // A single-transfer message with no delivery under way: nothing to follow.
        if self.open.is_empty() && !t.more {
            return None;
        }
        self.follow(frame, t)
    }

    /// [`SplitPutTokens::transfer`] of a transfer that starts, continues or ends a delivery
    /// of several.
    #[inline(never)]
    fn follow(&mut self, frame: &Frame, t: &Transfer) -> Option<Range<usize>> {
        let key = (frame.channel, t.handle);
        let at = self.open.iter().position(|(k, _, _)| *k == key);
        if at.is_none() && !t.more {
            return None;
        }
        let payload = frame.payload();
        let (mut tail, mut hit) = match at {
            Some(i) => {
                let (_, tail, hit) = self.open.swap_remove(i);
                (tail, hit)
            }
            None => (Vec::new(), false),
        };
        // `tail` becomes the previous tail followed by this payload's first bytes, so a
        // `put-token` cut between the two transfers is found too.
        tail.extend_from_slice(&payload[..payload.len().min(TAIL)]);
        hit = hit || contains_put_token(&tail) || contains_put_token(payload);
        if t.more && !t.aborted {
            let tail = if payload.len() >= TAIL {
                payload[payload.len() - TAIL..].to_vec()
            } else {
                tail[tail.len().saturating_sub(TAIL)..].to_vec()
            };
            if self.open.len() >= MAX_OPEN {
                self.open.remove(0);
            }
            self.open.push((key, tail, hit));
        }
        (hit && frame.payload_start < frame.raw.len())
            .then_some(frame.payload_start..frame.raw.len())
    }
}

/// Byte ranges (within `payload`, a whole message) of the token, when the message is a
/// put-token request.
#[inline]
pub fn put_token_in_payload(payload: &bytes::Bytes, abs: u64) -> Vec<Range<usize>> {
    // Cheap pre-check: most transfers are not CBS; only decode the sections when they can be.
    if !contains_put_token(payload) {
        return Vec::new();
    }
    token_in_sections(payload, abs)
}

/// [`put_token_in_payload`] of a payload that holds `put-token` somewhere.
#[inline(never)]
fn token_in_sections(payload: &bytes::Bytes, abs: u64) -> Vec<Range<usize>> {
    let Ok(sections) = Message::decode_sections(payload, abs) else {
        return Vec::new();
    };
    if !app_props(&sections).is_some_and(is_put_token) {
        return Vec::new();
    }
    sections
        .iter()
        .filter(|s| s.code == AMQP_VALUE)
        .filter_map(token_span)
        .collect()
}

/// `put-token`, the operation a token is put with.
const PUT_TOKEN: &[u8] = b"put-token";

/// True when `hay` holds `put-token`. This runs on every transfer: on x86-64 with AVX2, a
/// search for the `-` and the `k` three bytes apart (which text rarely has), each candidate
/// compared whole; elsewhere, and for a payload too short for it, a substring searcher.
fn contains_put_token(hay: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use memchr::arch::all::packedpair::Pair;
        use memchr::arch::x86_64::avx2::packedpair::Finder;
        static PAIR: std::sync::LazyLock<Option<Finder>> = std::sync::LazyLock::new(|| {
            Finder::with_pair(PUT_TOKEN, Pair::with_indices(PUT_TOKEN, 3, 6)?)
        });
        if let Some(finder) = &*PAIR
            && hay.len() >= finder.min_haystack_len()
        {
            return finder.find(hay, PUT_TOKEN).is_some();
        }
    }
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(PUT_TOKEN));
    FINDER.find(hay).is_some()
}

/// The summary of a CBS message for the JSON `"cbs"` key: a put-token request
/// (`operation`, `type`, `name`, `expiration`) or a response (`status-code`,
/// `status-description`).
#[derive(Clone, Copy, Debug)]
pub struct Summary<'a> {
    props: &'a Map,
    keys: &'static [&'static str],
}

/// The CBS summary of `msg`; `None` for messages that are not CBS requests or responses.
pub fn summary(msg: &Message) -> Option<Summary<'_>> {
    let props = msg.application_properties()?;
    let keys: &'static [&'static str] = if is_put_token(props) {
        &["operation", "type", "name", "expiration"]
    } else if prop(props, "status-code").is_some() && prop(props, "operation").is_none() {
        &["status-code", "status-description"]
    } else {
        return None;
    };
    Some(Summary { props, keys })
}

impl Summary<'_> {
    /// The summary as a JSON object (properties that are absent are left out).
    pub fn write_json<O: JsonOut + ?Sized>(&self, o: &mut O) {
        o.begin_object();
        for k in self.keys {
            if let Some(v) = prop(self.props, k) {
                o.key(k);
                v.write_json(o);
            }
        }
        o.end_object();
    }
}

#[cfg(test)]
mod tests {
    use super::super::value::{Described, Descriptor};
    use super::super::{decode_frame, described_list, encode_frame};
    use super::*;

    fn section(code: u64, value: Value) -> Value {
        Value::Described(Box::new(Described {
            descriptor: Descriptor::Code(code),
            value,
        }))
    }

    fn s(t: &str) -> Value {
        Value::String(t.into())
    }

    /// A transfer frame carrying a put-token request with `token`.
    pub(crate) fn put_token_frame(token: &str, more: bool) -> Vec<u8> {
        let transfer = described_list(
            super::super::views::code::TRANSFER,
            vec![
                Value::Uint(0),
                Value::Uint(0),
                Value::Binary(bytes::Bytes::from_static(b"\x00")),
                Value::Uint(0),
                Value::Bool(false),
                Value::Bool(more),
            ],
        );
        let mut payload = Vec::new();
        section(
            APPLICATION_PROPERTIES,
            Value::Map(vec![
                (s("operation"), s("put-token")),
                (s("type"), s("servicebus.windows.net:sastoken")),
                (s("name"), s("amqp://ns.servicebus.windows.net/q")),
                (s("expiration"), Value::Timestamp(1_700_000_000_000)),
            ]),
        )
        .encode(&mut payload)
        .unwrap();
        section(AMQP_VALUE, s(token)).encode(&mut payload).unwrap();
        encode_frame(0, 0, Some(&transfer), &payload).unwrap()
    }

    #[test]
    fn put_token_range_covers_exactly_the_token() {
        for token in ["SharedAccessSignature sr=x&sig=abc", &"t".repeat(300)] {
            let raw = bytes::Bytes::from(put_token_frame(token, false));
            let frame = decode_frame(raw.clone(), 0).unwrap();
            let ranges = frame.secret_ranges();
            assert_eq!(ranges.len(), 1);
            assert_eq!(&raw[ranges[0].clone()], token.as_bytes());
        }
    }

    #[test]
    fn put_token_is_found_wherever_it_sits() {
        let naive = |h: &[u8]| h.windows(9).any(|w| w == b"put-token");
        let cases: [&[u8]; 10] = [
            b"put-token",
            b"xput-token",
            b"put-tokenx",
            b"-put-token-",
            b"put-toke",
            b"ut-token",
            b"-",
            b"",
            b"a-b-c-put-tok-put-token",
            b"put--token put-token",
        ];
        for h in cases {
            assert_eq!(
                contains_put_token(h),
                naive(h),
                "{:?}",
                String::from_utf8_lossy(h)
            );
        }
        // Generated haystacks of look-alike pieces.
        let pieces: [&[u8]; 8] = [
            b"put-token",
            b"put-",
            b"-",
            b"token",
            b"k",
            b"put",
            b"-tok",
            b"x",
        ];
        let mut rng = crate::base::test_rng::Rng(0x7075_742d);
        for _ in 0..20_000 {
            let mut h = Vec::new();
            for _ in 0..rng.below(24) {
                h.extend_from_slice(pieces[rng.below(pieces.len() as u64) as usize]);
            }
            assert_eq!(contains_put_token(&h), naive(&h), "{h:?}");
        }
        // Every position in haystacks long and short, among look-alikes.
        for len in [9, 15, 21, 22, 23, 31, 32, 33, 47, 64, 65, 100, 255] {
            let base = b"octet-stream put-toke -token ".repeat(10)[..len].to_vec();
            assert!(!contains_put_token(&base));
            for at in 0..=len - 9 {
                let mut h = base.clone();
                h[at..at + 9].copy_from_slice(b"put-token");
                assert!(contains_put_token(&h), "len {len} at {at}");
                h[at + 6] = b'K';
                assert_eq!(contains_put_token(&h), naive(&h), "len {len} at {at}");
            }
        }
    }

    #[test]
    fn other_transfers_and_split_put_tokens_report_nothing() {
        let raw = bytes::Bytes::from(put_token_frame("secret", true));
        assert!(decode_frame(raw, 0).unwrap().secret_ranges().is_empty());
        let transfer = described_list(super::super::views::code::TRANSFER, vec![Value::Uint(0)]);
        let mut payload = Vec::new();
        section(AMQP_VALUE, s("put-token but no properties"))
            .encode(&mut payload)
            .unwrap();
        let raw = encode_frame(0, 0, Some(&transfer), &payload).unwrap();
        assert!(
            decode_frame(raw.into(), 0)
                .unwrap()
                .secret_ranges()
                .is_empty()
        );
    }
}
