//! An in-place check of a whole message's sections: walks each section's constructors and
//! sizes over the bytes (no `Value` tree, no allocation beyond the span list, bounded depth)
//! and records each section's descriptor code and byte span.
//!
//! The check is conservative: it answers only for the encodings it knows the full decode
//! (`Message::decode_kept`) accepts — sections with a small-ulong descriptor that are a
//! `header` or `properties` list of primitives each of its field's type (mandatory fields
//! present), a `data` binary, or an `amqp-value` primitive. For anything else (maps,
//! sequences, arrays, described values, a malformed byte) it declines, and the full decode
//! runs and says what is wrong and where.

use std::ops::Range;

use super::composite::{CompositeDef, FieldType, lookup};
use super::value::{Kind, code};
use super::views::code::{AMQP_VALUE, DATA, HEADER, PROPERTIES};
use super::views::{Header, Properties};

/// One section found by [`scan`]: its descriptor code and byte span within the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionSpan {
    /// Descriptor code (`views::code::HEADER` ... `FOOTER`).
    pub code: u64,
    /// Byte span within the message payload, descriptor included.
    pub span: Range<usize>,
}

/// The sections of `payload`, a whole encoded message, when every one of them is within the
/// encodings this check knows to be valid; `None` when any is not (the full decode then
/// judges the message).
pub fn scan(payload: &[u8]) -> Option<Vec<SectionSpan>> {
    // Most messages are one to three sections.
    let mut out = Vec::with_capacity(3);
    let mut pos = 0;
    while pos < payload.len() {
        let end = section(payload, pos)?;
        out.push(SectionSpan {
            code: u64::from(*payload.get(pos + 2)?),
            span: pos..end,
        });
        pos = end;
    }
    Some(out)
}

/// The message section with this descriptor code.
pub fn def(code: u64) -> Option<&'static CompositeDef> {
    lookup(code).filter(|d| d.provides("section"))
}

/// The end of the section starting at `pos`, when it is valid and within the subset.
fn section(b: &[u8], pos: usize) -> Option<usize> {
    let head = b.get(pos..pos + 3)?;
    if head[0] != code::DESCRIBED || head[1] != code::SMALLULONG {
        return None;
    }
    let at = pos + 3;
    match u64::from(head[2]) {
        HEADER => list(Header::DEF, b, at),
        PROPERTIES => list(Properties::DEF, b, at),
        DATA => match primitive(b, at, b.len())? {
            (Kind::Binary, end) => Some(end),
            _ => None,
        },
        // Any primitive value.
        AMQP_VALUE => primitive(b, at, b.len()).map(|(_, end)| end),
        _ => None,
    }
}

/// The `index`th field of the list section at `span` of `payload`, a span [`scan`] found
/// valid, when it is a `uint`: `Some(None)` when the list ends before it or it is null,
/// `None` otherwise (read it decoded then).
pub fn list_uint(payload: &[u8], span: &Range<usize>, index: usize) -> Option<Option<u32>> {
    let b = payload.get(..span.end)?;
    let at = span.start.checked_add(3)?;
    let (mut pos, end, count) = match *b.get(at)? {
        code::LIST0 => return Some(None),
        code::LIST8 => (
            at + 3,
            at + 2 + usize::from(*b.get(at + 1)?),
            usize::from(*b.get(at + 2)?),
        ),
        code::LIST32 => {
            let size = usize::try_from(be_u32(b, at + 1)?).ok()?;
            let count = usize::try_from(be_u32(b, at + 5)?).ok()?;
            (at + 9, (at + 5).checked_add(size)?, count)
        }
        _ => return None,
    };
    if index >= count {
        return Some(None);
    }
    for _ in 0..index {
        pos = primitive(b, pos, end)?.1;
    }
    if pos >= end {
        return None;
    }
    let body = pos + 1;
    match *b.get(pos)? {
        code::NULL => Some(None),
        code::UINT0 => Some(Some(0)),
        code::SMALLUINT => Some(Some(u32::from(*b.get(body)?))),
        code::UINT => Some(Some(be_u32(b, body)?)),
        _ => None,
    }
}

/// The end of a composite's described list at `at` (after the descriptor), each element a
/// primitive of its field's type, mandatory fields present.
fn list(def: &CompositeDef, b: &[u8], at: usize) -> Option<usize> {
    let c = *b.get(at)?;
    let (mut pos, end, count) = match c {
        code::LIST0 => (at + 1, at + 1, 0),
        code::LIST8 => {
            let size = usize::from(*b.get(at + 1)?);
            let count = usize::from(*b.get(at + 2)?);
            (at + 3, (at + 2).checked_add(size)?, count)
        }
        code::LIST32 => {
            let size = usize::try_from(be_u32(b, at + 1)?).ok()?;
            let count = usize::try_from(be_u32(b, at + 5)?).ok()?;
            (at + 9, (at + 5).checked_add(size)?, count)
        }
        _ => return None,
    };
    if end > b.len() || pos > end || count > def.fields.len() {
        return None;
    }
    // No mandatory field left out at the list's end.
    if count < def.required {
        return None;
    }
    for f in &def.fields[..count] {
        let (kind, next) = primitive(b, pos, end)?;
        pos = next;
        let fits = match (kind, f.ty) {
            (Kind::Null, _) => !f.mandatory,
            (k, FieldType::Prim(want)) => k == want,
            (_, FieldType::Any) => true,
            _ => false,
        };
        if !fits {
            return None;
        }
    }
    (pos == end).then_some(end)
}

/// The kind and end of the primitive (neither compound nor described) value at `at`, when it
/// ends by `limit` and its content is valid (booleans 0 or 1, chars, UTF-8 text).
///
/// One match on the format code gives the kind, where the content starts and its length.
/// Always inlined: it runs once per field of every message checked, and its result is then
/// compared right away.
#[inline(always)]
fn primitive(b: &[u8], at: usize, limit: usize) -> Option<(Kind, usize)> {
    use code::*;
    let c = *b.get(at)?;
    let body = at + 1;
    let (kind, start, len) = match c {
        NULL => (Kind::Null, body, 0),
        TRUE | FALSE => (Kind::Boolean, body, 0),
        UINT0 => (Kind::Uint, body, 0),
        ULONG0 => (Kind::Ulong, body, 0),
        BOOLEAN => {
            if *b.get(body)? > 1 {
                return None;
            }
            (Kind::Boolean, body, 1)
        }
        UBYTE => (Kind::Ubyte, body, 1),
        SMALLUINT => (Kind::Uint, body, 1),
        SMALLULONG => (Kind::Ulong, body, 1),
        BYTE => (Kind::Byte, body, 1),
        SMALLINT => (Kind::Int, body, 1),
        SMALLLONG => (Kind::Long, body, 1),
        USHORT => (Kind::Ushort, body, 2),
        SHORT => (Kind::Short, body, 2),
        UINT => (Kind::Uint, body, 4),
        INT => (Kind::Int, body, 4),
        FLOAT => (Kind::Float, body, 4),
        DECIMAL32 => (Kind::Decimal32, body, 4),
        CHAR => {
            char::from_u32(be_u32(b, body)?)?;
            (Kind::Char, body, 4)
        }
        ULONG => (Kind::Ulong, body, 8),
        LONG => (Kind::Long, body, 8),
        DOUBLE => (Kind::Double, body, 8),
        DECIMAL64 => (Kind::Decimal64, body, 8),
        TIMESTAMP => (Kind::Timestamp, body, 8),
        DECIMAL128 => (Kind::Decimal128, body, 16),
        UUID => (Kind::Uuid, body, 16),
        VBIN8 => (Kind::Binary, body + 1, usize::from(*b.get(body)?)),
        STR8 => (Kind::String, body + 1, usize::from(*b.get(body)?)),
        SYM8 => (Kind::Symbol, body + 1, usize::from(*b.get(body)?)),
        VBIN32 => (
            Kind::Binary,
            body + 4,
            usize::try_from(be_u32(b, body)?).ok()?,
        ),
        STR32 => (
            Kind::String,
            body + 4,
            usize::try_from(be_u32(b, body)?).ok()?,
        ),
        SYM32 => (
            Kind::Symbol,
            body + 4,
            usize::try_from(be_u32(b, body)?).ok()?,
        ),
        _ => return None,
    };
    let end = start.checked_add(len)?;
    if end > limit.min(b.len()) {
        return None;
    }
    if matches!(kind, Kind::String | Kind::Symbol) {
        let text = &b[start..end];
        if !text.is_ascii() && std::str::from_utf8(text).is_err() {
            return None;
        }
    }
    Some((kind, end))
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::amqp10::message::Message;
    use bytes::Bytes;

    /// header (durable, a boolean byte), properties (message-id, to, subject, content-type),
    /// then a data section.
    const HEADER: &[u8] = &[0x00, 0x53, 0x70, 0xc0, 0x03, 0x01, 0x56, 0x01];
    const PROPERTIES: &[u8] = &[
        0x00, 0x53, 0x73, 0xc0, 0x14, 0x07, 0x53, 0x07, 0x40, 0xa1, 0x03, b'/', b'q', b'1', 0xa1,
        0x01, b's', 0x40, 0x40, 0xa3, 0x04, b't', b'e', b'x', b't',
    ];
    const DATA: &[u8] = &[0x00, 0x53, 0x75, 0xa0, 0x03, b'a', b'b', b'c'];
    const VALUE: &[u8] = &[0x00, 0x53, 0x77, 0xa1, 0x02, b'h', b'i'];
    const APP_PROPERTIES: &[u8] = &[0x00, 0x53, 0x74, 0xc1, 0x05, 0x02, 0xa1, 0x01, b'k', 0x41];

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// The full decode's codes and spans of `m`, when it decodes.
    fn decoded(m: &[u8]) -> Option<Vec<SectionSpan>> {
        let sections = Message::decode_sections(&Bytes::copy_from_slice(m), 0).ok()?;
        Some(
            sections
                .into_iter()
                .map(|s| SectionSpan {
                    code: s.code,
                    span: s.span,
                })
                .collect(),
        )
    }

    #[test]
    fn the_common_messages_are_checked_in_place_with_the_decoder_s_spans() {
        for m in [
            cat(&[HEADER, PROPERTIES, DATA]),
            cat(&[PROPERTIES, VALUE]),
            cat(&[DATA, DATA]),
            Vec::new(),
        ] {
            let spans = scan(&m);
            assert!(spans.is_some(), "{m:02x?}");
            assert_eq!(spans, decoded(&m), "{m:02x?}");
        }
        assert_eq!(
            scan(&cat(&[HEADER, DATA])).unwrap()[1],
            SectionSpan {
                code: 0x75,
                span: 8..16
            }
        );
    }

    #[test]
    fn maps_and_described_values_are_left_to_the_full_decode() {
        let with_map = cat(&[PROPERTIES, APP_PROPERTIES, DATA]);
        assert!(decoded(&with_map).is_some());
        assert_eq!(scan(&with_map), None);
        // An amqp-value holding a described value.
        let described = [0x00, 0x53, 0x77, 0x00, 0x53, 0x24, 0x45];
        assert_eq!(scan(&described), None);
    }

    /// Every one-byte change and every cut of the messages: whatever the in-place check
    /// accepts, the full decode accepts with the same sections (so a malformed message always
    /// reaches the decoder, which reports it).
    #[test]
    fn nothing_the_full_decode_rejects_is_accepted() {
        let bytes: Vec<u8> = [
            0x00, 0x01, 0x02, 0x03, 0x05, 0x08, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x50, 0x52,
            0x53, 0x55, 0x56, 0x60, 0x70, 0x71, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x80,
            0x83, 0x98, 0xa0, 0xa1, 0xa3, 0xb0, 0xb1, 0xc0, 0xc1, 0xd0, 0xe0, 0xfe, 0xff,
        ]
        .to_vec();
        let (mut accepted, mut rejected) = (0, 0);
        for base in [
            cat(&[HEADER, PROPERTIES, DATA]),
            cat(&[PROPERTIES, VALUE]),
            cat(&[HEADER, VALUE]),
        ] {
            let mut cases: Vec<Vec<u8>> = (0..base.len()).map(|n| base[..n].to_vec()).collect();
            for i in 0..base.len() {
                for &b in &bytes {
                    let mut m = base.clone();
                    m[i] = b;
                    cases.push(m);
                }
            }
            for m in cases {
                let full = decoded(&m);
                match scan(&m) {
                    Some(spans) => {
                        accepted += 1;
                        assert_eq!(Some(spans), full, "{m:02x?}");
                    }
                    None if full.is_none() => rejected += 1,
                    None => {}
                }
            }
        }
        // The cases hold both kinds, many of each.
        assert!(accepted > 100 && rejected > 1000, "{accepted} {rejected}");
    }

    #[test]
    fn field_types_booleans_and_text_are_judged() {
        // durable as a uint: the decoder says "expected boolean".
        let uint = [0x00, 0x53, 0x70, 0xc0, 0x02, 0x01, 0x43];
        assert!(decoded(&uint).is_none());
        assert_eq!(scan(&uint), None);
        let boolean = [0x00, 0x53, 0x70, 0xc0, 0x03, 0x01, 0x56, 0x02];
        assert!(decoded(&boolean).is_none());
        assert_eq!(scan(&boolean), None);
        let text = [0x00, 0x53, 0x77, 0xa1, 0x02, 0xc3, 0x28];
        assert!(decoded(&text).is_none());
        assert_eq!(scan(&text), None);
        // More fields than header has.
        let mut long = vec![0x00, 0x53, 0x70, 0xc0, 0x07, 0x06];
        long.extend([0x40; 6]);
        assert!(decoded(&long).is_none());
        assert_eq!(scan(&long), None);
    }
}
