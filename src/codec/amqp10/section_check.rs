//! An in-place check of a whole message's sections: walks each section's constructors and
//! sizes over the bytes (no `Value` tree, bounded depth; no allocation for up to three
//! sections) and records each section's descriptor code and byte span. Each field's type is
//! judged by a table look-up of its format code against the kinds its field accepts, both
//! computed at compile time from the generated composite tables.
//!
//! The check is conservative: it answers only for the encodings it knows the full decode
//! (`Message::decode_kept`) accepts — sections with a small-ulong descriptor that are a
//! `header` or `properties` list of primitives each of its field's type (mandatory fields
//! present), a `data` binary, or an `amqp-value` primitive. For anything else (maps,
//! sequences, arrays, described values, a malformed byte) it declines, and the full decode
//! runs and says what is wrong and where.

use std::ops::Range;

use super::composite::{CompositeDef, FieldDef, FieldType, lookup};
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
pub fn scan(payload: &[u8]) -> Option<SectionSpans> {
    // Up to three sections, each starting where the one before it ends, their codes (0x70 to
    // 0x78) never 0: the first three are held in place as they are found.
    let (mut len, mut codes, mut ends) = (0, [0u8; 3], [0u32; 3]);
    let mut pos = 0;
    while pos < payload.len() {
        let (code, end) = section(payload, pos)?;
        match u32::try_from(end) {
            Ok(e) if len < codes.len() => {
                codes[len] = code;
                ends[len] = e;
                len += 1;
            }
            _ => {
                return scan_on(
                    SectionSpans::Few {
                        len: len as u8,
                        codes,
                        ends,
                    },
                    payload,
                    pos,
                );
            }
        }
        pos = end;
    }
    Some(SectionSpans::Few {
        len: len as u8,
        codes,
        ends,
    })
}

/// [`scan`] going on from `pos` with the sections found before it, `out`.
#[cold]
fn scan_on(mut out: SectionSpans, payload: &[u8], mut pos: usize) -> Option<SectionSpans> {
    while pos < payload.len() {
        let (code, end) = section(payload, pos)?;
        out.push(u64::from(code), pos..end);
        pos = end;
    }
    Some(out)
}

/// The sections [`scan`] found, in order: up to three (most messages are one to three) held
/// in place, with no allocation; more on the heap.
#[derive(Clone, Debug)]
pub enum SectionSpans {
    /// Sections one after another from the payload's start.
    Few {
        /// How many of `codes` and `ends` are sections.
        len: u8,
        /// Each section's code: 0 for one [`SectionSpans::retain`] left out.
        codes: [u8; 3],
        /// Where each section ends; each starts where the one before it ends (the first at 0).
        ends: [u32; 3],
    },
    /// Any sections.
    Many(Vec<SectionSpan>),
}

impl Default for SectionSpans {
    fn default() -> Self {
        SectionSpans::Few {
            len: 0,
            codes: [0; 3],
            ends: [0; 3],
        }
    }
}

impl SectionSpans {
    /// Add a section after the others.
    pub fn push(&mut self, code: u64, span: Range<usize>) {
        if let SectionSpans::Few { len, codes, ends } = self {
            let i = usize::from(*len);
            let start = i.checked_sub(1).map_or(0, |last| ends[last] as usize);
            match (u8::try_from(code), u32::try_from(span.end)) {
                (Ok(c), Ok(end)) if i < codes.len() && c != 0 && span.start == start => {
                    codes[i] = c;
                    ends[i] = end;
                    *len += 1;
                    return;
                }
                _ => *self = SectionSpans::Many(self.iter().collect()),
            }
        }
        if let SectionSpans::Many(all) = self {
            all.push(SectionSpan { code, span });
        }
    }

    /// The sections in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            spans: self,
            next: 0,
            start: 0,
        }
    }

    /// Whether a section with this code is there.
    pub fn has(&self, code: u64) -> bool {
        match self {
            // The codes past `len` are 0, as are those of the sections left out.
            SectionSpans::Few { codes, .. } => {
                u8::try_from(code).is_ok_and(|c| c != 0 && codes.contains(&c))
            }
            SectionSpans::Many(all) => all.iter().any(|s| s.code == code),
        }
    }

    /// The first section with this code.
    pub fn find(&self, code: u64) -> Option<SectionSpan> {
        self.iter().find(|s| s.code == code)
    }

    /// Keep only the sections `keep` says to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&SectionSpan) -> bool) {
        match self {
            SectionSpans::Few { len, codes, ends } => {
                let mut start = 0;
                for i in 0..usize::from(*len) {
                    let span = start..ends[i] as usize;
                    start = span.end;
                    let code = u64::from(codes[i]);
                    if code != 0 && !keep(&SectionSpan { code, span }) {
                        codes[i] = 0;
                    }
                }
            }
            SectionSpans::Many(all) => all.retain(keep),
        }
    }
}

/// The sections of a [`SectionSpans`], in order.
pub struct Iter<'a> {
    spans: &'a SectionSpans,
    /// The index of the next section to look at.
    next: usize,
    /// Where it starts, for [`SectionSpans::Few`].
    start: usize,
}

impl Iterator for Iter<'_> {
    type Item = SectionSpan;

    fn next(&mut self) -> Option<SectionSpan> {
        match self.spans {
            SectionSpans::Few { len, codes, ends } => {
                while self.next < usize::from(*len) {
                    let i = self.next;
                    self.next += 1;
                    let span = self.start..ends[i] as usize;
                    self.start = span.end;
                    if codes[i] != 0 {
                        let code = u64::from(codes[i]);
                        return Some(SectionSpan { code, span });
                    }
                }
                None
            }
            SectionSpans::Many(all) => {
                let s = all.get(self.next)?.clone();
                self.next += 1;
                Some(s)
            }
        }
    }
}

/// The message section with this descriptor code.
pub fn def(code: u64) -> Option<&'static CompositeDef> {
    lookup(code).filter(|d| d.provides("section"))
}

/// The descriptor code and end of the section starting at `pos`, when it is valid and within
/// the subset.
#[inline(always)]
fn section(b: &[u8], pos: usize) -> Option<(u8, usize)> {
    let &[described, smallulong, code] = b.get(pos..)?.first_chunk()?;
    if described != code::DESCRIBED || smallulong != code::SMALLULONG {
        return None;
    }
    let at = pos + 3;
    let end = match u64::from(code) {
        HEADER => list(&HEADER_LIST, b, at),
        PROPERTIES => list(&PROPERTIES_LIST, b, at),
        DATA => primitive(b, at, bit(Kind::Binary)),
        AMQP_VALUE => primitive(b, at, PRIMITIVES),
        _ => None,
    }?;
    Some((code, end))
}

/// The `index`th field of the list section at `span` of `payload`, a span [`scan`] found
/// valid, when it is a `uint`: `Some(None)` when the list ends before it or it is null,
/// `None` otherwise (read it decoded then).
pub fn list_uint(payload: &[u8], span: &Range<usize>, index: usize) -> Option<Option<u32>> {
    let b = payload.get(..span.end)?;
    let (mut pos, end, count) = list_head(b, span.start.checked_add(3)?)?;
    if index >= count {
        return Some(None);
    }
    let fields = &b[..end.min(b.len())];
    for _ in 0..index {
        pos = primitive(fields, pos, PRIMITIVES)?;
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

/// The list constructor at `at`: where its first element starts, where the list ends (by its
/// size; not checked against `b`) and its count.
#[inline(always)]
fn list_head(b: &[u8], at: usize) -> Option<(usize, usize, usize)> {
    Some(match *b.get(at)? {
        code::LIST0 => (at + 1, at + 1, 0),
        code::LIST8 => {
            let &[size, count] = b.get(at + 1..)?.first_chunk()?;
            (at + 3, at + 2 + usize::from(size), usize::from(count))
        }
        code::LIST32 => {
            let size = usize::try_from(be_u32(b, at + 1)?).ok()?;
            let count = usize::try_from(be_u32(b, at + 5)?).ok()?;
            (at + 9, (at + 5).checked_add(size)?, count)
        }
        _ => return None,
    })
}

/// The end of a composite's described list at `at` (after the descriptor), each element a
/// primitive of its field's type, mandatory fields present.
#[inline(always)]
fn list(shape: &ListShape, b: &[u8], at: usize) -> Option<usize> {
    let (mut pos, end, count) = list_head(b, at)?;
    let fields = b.get(..end)?;
    // No more fields than the composite has, no mandatory field left out at the list's end.
    if pos > end || count > shape.fields || count < shape.required {
        return None;
    }
    for &accepts in &shape.accepts[..count] {
        pos = primitive(fields, pos, accepts)?;
    }
    (pos == end).then_some(end)
}

/// The most fields a list this check reads has (`properties` has 13).
const MAX_FIELDS: usize = 13;

/// What a list's check needs of its composite: each field's accepted kinds ([`accepts`]),
/// how many fields it has and how many a list must hold (its last mandatory one).
struct ListShape {
    accepts: [u32; MAX_FIELDS],
    fields: usize,
    required: usize,
}

impl ListShape {
    const fn of(def: &CompositeDef) -> ListShape {
        assert!(def.fields.len() <= MAX_FIELDS);
        let mut accepts = [0; MAX_FIELDS];
        let mut i = 0;
        while i < def.fields.len() {
            accepts[i] = self::accepts(&def.fields[i]);
            i += 1;
        }
        ListShape {
            accepts,
            fields: def.fields.len(),
            required: def.required,
        }
    }
}

static HEADER_LIST: ListShape = ListShape::of(Header::DEF);
static PROPERTIES_LIST: ListShape = ListShape::of(Properties::DEF);

/// The kinds (as [`bit`]s) of the primitive values a field takes: a null unless it is
/// mandatory; a value of its primitive type; any primitive for a `*` field; nothing else (a
/// map, a composite or a described value is left to the full decode).
const fn accepts(f: &FieldDef) -> u32 {
    let null = if f.mandatory { 0 } else { bit(Kind::Null) };
    let value = match f.ty {
        FieldType::Prim(k) => bit(k),
        FieldType::Any => PRIMITIVES,
        FieldType::Fields | FieldType::Composite(_) => 0,
    };
    null | (value & PRIMITIVES & !bit(Kind::Null))
}

/// A kind's bit in a set of kinds.
const fn bit(k: Kind) -> u32 {
    1 << k as u32
}

/// Every kind a primitive (neither compound nor described) value has.
const PRIMITIVES: u32 = !(bit(Kind::List) | bit(Kind::Map) | bit(Kind::Array));

/// How a value goes on after its format code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// [`Format::size`] bytes in all, any content.
    Sized,
    /// A `boolean` byte: 0 or 1.
    Boolean,
    /// A `char`: four bytes, a Unicode scalar value.
    Char,
    /// A one-byte length, then that many bytes: any (`vbin8`) or UTF-8 (`str8`, `sym8`).
    Var8 { text: bool },
    /// A four-byte length, then that many bytes: any (`vbin32`) or UTF-8 (`str32`, `sym32`).
    Var32 { text: bool },
}

/// What the check knows of one format code: the [`bit`] of the kind it encodes (none, 0, for
/// a code of no primitive), how the value goes on and, for a fixed width with any content,
/// its encoded size.
#[derive(Clone, Copy)]
struct Format {
    kind: u32,
    rest: Rest,
    size: u8,
}

/// [`Format`] by format code.
static FORMATS: [Format; 256] = {
    let mut t = [format(0); 256];
    let mut c = 0;
    while c < 256 {
        t[c] = format(c as u8);
        c += 1;
    }
    t
};

/// The [`Format`] of the format code `c`.
const fn format(c: u8) -> Format {
    use code::*;
    let (kind, rest, width) = match c {
        NULL => (Kind::Null, Rest::Sized, 0),
        TRUE | FALSE => (Kind::Boolean, Rest::Sized, 0),
        UINT0 => (Kind::Uint, Rest::Sized, 0),
        ULONG0 => (Kind::Ulong, Rest::Sized, 0),
        BOOLEAN => (Kind::Boolean, Rest::Boolean, 0),
        UBYTE => (Kind::Ubyte, Rest::Sized, 1),
        SMALLUINT => (Kind::Uint, Rest::Sized, 1),
        SMALLULONG => (Kind::Ulong, Rest::Sized, 1),
        BYTE => (Kind::Byte, Rest::Sized, 1),
        SMALLINT => (Kind::Int, Rest::Sized, 1),
        SMALLLONG => (Kind::Long, Rest::Sized, 1),
        USHORT => (Kind::Ushort, Rest::Sized, 2),
        SHORT => (Kind::Short, Rest::Sized, 2),
        UINT => (Kind::Uint, Rest::Sized, 4),
        INT => (Kind::Int, Rest::Sized, 4),
        FLOAT => (Kind::Float, Rest::Sized, 4),
        DECIMAL32 => (Kind::Decimal32, Rest::Sized, 4),
        CHAR => (Kind::Char, Rest::Char, 0),
        ULONG => (Kind::Ulong, Rest::Sized, 8),
        LONG => (Kind::Long, Rest::Sized, 8),
        DOUBLE => (Kind::Double, Rest::Sized, 8),
        DECIMAL64 => (Kind::Decimal64, Rest::Sized, 8),
        TIMESTAMP => (Kind::Timestamp, Rest::Sized, 8),
        DECIMAL128 => (Kind::Decimal128, Rest::Sized, 16),
        UUID => (Kind::Uuid, Rest::Sized, 16),
        VBIN8 => (Kind::Binary, Rest::Var8 { text: false }, 0),
        STR8 => (Kind::String, Rest::Var8 { text: true }, 0),
        SYM8 => (Kind::Symbol, Rest::Var8 { text: true }, 0),
        VBIN32 => (Kind::Binary, Rest::Var32 { text: false }, 0),
        STR32 => (Kind::String, Rest::Var32 { text: true }, 0),
        SYM32 => (Kind::Symbol, Rest::Var32 { text: true }, 0),
        _ => {
            return Format {
                kind: 0,
                rest: Rest::Sized,
                size: 0,
            };
        }
    };
    Format {
        kind: bit(kind),
        rest,
        size: 1 + width,
    }
}

/// The end of the primitive (neither compound nor described) value at `at`, when its kind is
/// one of `accepts` ([`bit`]s), it ends within `b` and its content is valid (booleans 0 or 1,
/// chars, UTF-8 text).
///
/// One look-up of the format code in [`FORMATS`] gives its kind and, for most, its size.
/// Always inlined: it runs once per field of every message checked.
#[inline(always)]
fn primitive(b: &[u8], at: usize, accepts: u32) -> Option<usize> {
    let f = FORMATS[usize::from(*b.get(at)?)];
    if accepts & f.kind == 0 {
        return None;
    }
    let body = at + 1;
    let (start, len, text) = match f.rest {
        Rest::Sized => {
            let end = at + usize::from(f.size);
            return (end <= b.len()).then_some(end);
        }
        Rest::Boolean => return (*b.get(body)? <= 1).then_some(body + 1),
        Rest::Char => return char::from_u32(be_u32(b, body)?).map(|_| body + 4),
        Rest::Var8 { text } => (body + 1, usize::from(*b.get(body)?), text),
        Rest::Var32 { text } => (body + 4, usize::try_from(be_u32(b, body)?).ok()?, text),
    };
    let end = start.checked_add(len)?;
    if end > b.len() || text && !utf8(b, start, end) {
        return None;
    }
    Some(end)
}

/// Whether `b[start..end]` is UTF-8: text of up to 32 ASCII bytes (the usual) told by a few
/// word reads over it (its first and last 16 or 8 bytes; for text shorter than a word, the
/// word ending at `end`, the bytes before `start` masked off), any other by `str::from_utf8`.
#[inline(always)]
fn utf8(b: &[u8], start: usize, end: usize) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const HIGH2: u128 = (HIGH as u128) << 64 | HIGH as u128;
    let Some(text) = b.get(start..end) else {
        return false;
    };
    let ascii = if let (Some(h), Some(t)) = (text.first_chunk(), text.last_chunk()) {
        text.len() <= 32 && (u128::from_le_bytes(*h) | u128::from_le_bytes(*t)) & HIGH2 == 0
    } else if let (Some(h), Some(t)) = (text.first_chunk(), text.last_chunk()) {
        (u64::from_le_bytes(*h) | u64::from_le_bytes(*t)) & HIGH == 0
    } else {
        // The last `len` bytes of the word ending at `end` (its high bytes, little-endian).
        let keep = (!0u64)
            .checked_shl(8 * (8 - text.len() as u32))
            .unwrap_or(0);
        end.checked_sub(8)
            .and_then(|at| b.get(at..end)?.first_chunk())
            .is_some_and(|w| u64::from_le_bytes(*w) & keep & HIGH == 0)
    };
    ascii || text.is_ascii() || std::str::from_utf8(text).is_ok()
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(*b.get(at..)?.first_chunk()?))
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

    /// The sections [`scan`] finds in `m`, when it takes it.
    fn scanned(m: &[u8]) -> Option<Vec<SectionSpan>> {
        scan(m).map(|s| s.iter().collect())
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
            let spans = scanned(&m);
            assert!(spans.is_some(), "{m:02x?}");
            assert_eq!(spans, decoded(&m), "{m:02x?}");
        }
        assert_eq!(
            scanned(&cat(&[HEADER, DATA])).unwrap()[1],
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
        assert_eq!(scanned(&with_map), None);
        // An amqp-value holding a described value.
        let described = [0x00, 0x53, 0x77, 0x00, 0x53, 0x24, 0x45];
        assert_eq!(scanned(&described), None);
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
                match scanned(&m) {
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
        assert_eq!(scanned(&uint), None);
        let boolean = [0x00, 0x53, 0x70, 0xc0, 0x03, 0x01, 0x56, 0x02];
        assert!(decoded(&boolean).is_none());
        assert_eq!(scanned(&boolean), None);
        let text = [0x00, 0x53, 0x77, 0xa1, 0x02, 0xc3, 0x28];
        assert!(decoded(&text).is_none());
        assert_eq!(scanned(&text), None);
        // More fields than header has.
        let mut long = vec![0x00, 0x53, 0x70, 0xc0, 0x07, 0x06];
        long.extend([0x40; 6]);
        assert!(decoded(&long).is_none());
        assert_eq!(scanned(&long), None);
    }

    /// The check as the spec reads: each field's type matched against its [`FieldType`], one
    /// match per format code, the text of strings and symbols by `str::from_utf8`. What
    /// [`scan`] must agree with, section for section.
    mod reference {
        use super::super::*;

        pub(super) fn scan(payload: &[u8]) -> Option<Vec<SectionSpan>> {
            let mut out = Vec::new();
            let mut pos = 0;
            while pos < payload.len() {
                let head = payload.get(pos..pos + 3)?;
                if head[0] != code::DESCRIBED || head[1] != code::SMALLULONG {
                    return None;
                }
                let (at, code) = (pos + 3, u64::from(head[2]));
                let end = match code {
                    HEADER => list(Header::DEF, payload, at),
                    PROPERTIES => list(Properties::DEF, payload, at),
                    DATA => primitive(payload, at, payload.len())
                        .filter(|&(k, _)| k == Kind::Binary)
                        .map(|(_, end)| end),
                    AMQP_VALUE => primitive(payload, at, payload.len()).map(|(_, end)| end),
                    _ => None,
                }?;
                out.push(SectionSpan {
                    code,
                    span: pos..end,
                });
                pos = end;
            }
            Some(out)
        }

        fn list(def: &CompositeDef, b: &[u8], at: usize) -> Option<usize> {
            let (mut pos, end, count) = match *b.get(at)? {
                code::LIST0 => (at + 1, at + 1, 0),
                code::LIST8 => (at + 3, at + 2 + usize::from(*b.get(at + 1)?), {
                    usize::from(*b.get(at + 2)?)
                }),
                code::LIST32 => {
                    let size = be_u32(b, at + 1)? as usize;
                    (at + 9, at + 5 + size, be_u32(b, at + 5)? as usize)
                }
                _ => return None,
            };
            if end > b.len() || pos > end || count > def.fields.len() || count < def.required {
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

        fn primitive(b: &[u8], at: usize, limit: usize) -> Option<(Kind, usize)> {
            use code::*;
            let body = at + 1;
            let var8 = || Some((body + 1, usize::from(*b.get(body)?)));
            let var32 = || Some((body + 4, be_u32(b, body)? as usize));
            let (kind, (start, len)) = match *b.get(at)? {
                NULL => (Kind::Null, (body, 0)),
                TRUE | FALSE => (Kind::Boolean, (body, 0)),
                UINT0 => (Kind::Uint, (body, 0)),
                ULONG0 => (Kind::Ulong, (body, 0)),
                BOOLEAN if *b.get(body)? > 1 => return None,
                BOOLEAN => (Kind::Boolean, (body, 1)),
                UBYTE => (Kind::Ubyte, (body, 1)),
                SMALLUINT => (Kind::Uint, (body, 1)),
                SMALLULONG => (Kind::Ulong, (body, 1)),
                BYTE => (Kind::Byte, (body, 1)),
                SMALLINT => (Kind::Int, (body, 1)),
                SMALLLONG => (Kind::Long, (body, 1)),
                USHORT => (Kind::Ushort, (body, 2)),
                SHORT => (Kind::Short, (body, 2)),
                UINT => (Kind::Uint, (body, 4)),
                INT => (Kind::Int, (body, 4)),
                FLOAT => (Kind::Float, (body, 4)),
                DECIMAL32 => (Kind::Decimal32, (body, 4)),
                CHAR => {
                    char::from_u32(be_u32(b, body)?)?;
                    (Kind::Char, (body, 4))
                }
                ULONG => (Kind::Ulong, (body, 8)),
                LONG => (Kind::Long, (body, 8)),
                DOUBLE => (Kind::Double, (body, 8)),
                DECIMAL64 => (Kind::Decimal64, (body, 8)),
                TIMESTAMP => (Kind::Timestamp, (body, 8)),
                DECIMAL128 => (Kind::Decimal128, (body, 16)),
                UUID => (Kind::Uuid, (body, 16)),
                VBIN8 => (Kind::Binary, var8()?),
                STR8 => (Kind::String, var8()?),
                SYM8 => (Kind::Symbol, var8()?),
                VBIN32 => (Kind::Binary, var32()?),
                STR32 => (Kind::String, var32()?),
                SYM32 => (Kind::Symbol, var32()?),
                _ => return None,
            };
            let end = start.checked_add(len)?;
            if end > limit.min(b.len()) {
                return None;
            }
            if matches!(kind, Kind::String | Kind::Symbol) {
                std::str::from_utf8(&b[start..end]).ok()?;
            }
            Some((kind, end))
        }
    }

    /// A small deterministic generator (xorshift) of test encodings.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// Text of 0 to 40 bytes: mostly ASCII, sometimes with a two-byte character, a stray
        /// high byte or a cut character somewhere in it.
        fn text(&mut self) -> Vec<u8> {
            let mut t: Vec<u8> = (0..self.below(41))
                .map(|_| b' ' + self.below(95) as u8)
                .collect();
            let at = self.below(t.len() + 1);
            match self.below(6) {
                0 => drop(t.splice(at..at, "é".bytes())),
                1 => t.insert(at, 0x80 | self.below(128) as u8),
                2 => drop(t.splice(at..at, [0xe2, 0x82])),
                _ => {}
            }
            t
        }

        /// One primitive of any format code (or a few bytes of no primitive).
        fn value(&mut self) -> Vec<u8> {
            const CODES: &[u8] = &[
                0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x60,
                0x61, 0x70, 0x71, 0x72, 0x73, 0x74, 0x80, 0x81, 0x82, 0x83, 0x84, 0x94, 0x98, 0xa0,
                0xa1, 0xa3, 0xb0, 0xb1, 0xb3, 0xc1, 0x00, 0x99,
            ];
            let c = CODES[self.below(CODES.len())];
            let mut v = vec![c];
            match c {
                0xa0 | 0xa1 | 0xa3 => {
                    let t = self.text();
                    v.push(t.len() as u8);
                    v.extend(t);
                }
                0xb0 | 0xb1 | 0xb3 => {
                    let t = self.text();
                    v.extend((t.len() as u32).to_be_bytes());
                    v.extend(t);
                }
                // Booleans and chars, valid or not.
                0x56 => v.push(self.below(3) as u8),
                0x73 => v.extend([0, 0x10 + self.below(2) as u8, 0xd8, 0].map(|b| b & 0x1f)),
                // Mostly the width the code's subcategory gives, sometimes any.
                _ => {
                    let width = match (c >> 4, self.below(8)) {
                        (4, 1..) => 0,
                        (5, 1..) => 1,
                        (6, 1..) => 2,
                        (7, 1..) => 4,
                        (8, 1..) => 8,
                        (9, 1..) => 16,
                        _ => self.below(17),
                    };
                    v.extend((0..width).map(|_| self.next() as u8));
                }
            }
            v
        }

        /// A section: a header or properties list (list0, list8 or list32, up to 14 fields),
        /// a data binary, an amqp-value or an application-properties map.
        fn section(&mut self) -> Vec<u8> {
            let code = [0x70, 0x73, 0x75, 0x77, 0x74][self.below(5)];
            let mut s = vec![0x00, 0x53, code];
            match code {
                0x70 | 0x73 => {
                    let count = self.below(15);
                    let fields: Vec<u8> = (0..count)
                        .flat_map(|_| {
                            if self.below(3) == 0 {
                                vec![0x40]
                            } else {
                                self.value()
                            }
                        })
                        .collect();
                    match self.below(5) {
                        0 if count == 0 => s.push(0x45),
                        0 | 1 => {
                            s.push(0xd0);
                            s.extend((fields.len() as u32 + 4).to_be_bytes());
                            s.extend((count as u32).to_be_bytes());
                        }
                        _ => s.extend([0xc0, fields.len() as u8 + 1, count as u8]),
                    }
                    s.extend(fields);
                }
                0x75 => {
                    let t = self.text();
                    s.extend([0xa0, t.len() as u8]);
                    s.extend(t);
                }
                0x77 => s.extend(self.value()),
                _ => s.extend([0xc1, 0x01, 0x00]),
            }
            s
        }
    }

    /// Random messages of random sections and fields, each also with one byte changed and
    /// cut short: the check takes exactly the messages the spec-reading check takes, with the
    /// same sections, and the full decode takes each of them alike.
    #[test]
    fn the_check_answers_as_the_spec_reading_check_on_random_messages() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut declined) = (0, 0);
        for _ in 0..20_000 {
            let m: Vec<u8> = (0..1 + g.below(4)).flat_map(|_| g.section()).collect();
            let mut changed = m.clone();
            let i = g.below(m.len());
            changed[i] = g.next() as u8;
            let cut = m[..g.below(m.len())].to_vec();
            for m in [m, changed, cut] {
                let want = reference::scan(&m);
                assert_eq!(scanned(&m), want, "{m:02x?}");
                match want {
                    Some(mut spans) => {
                        accepted += 1;
                        assert_eq!(Some(&spans), decoded(&m).as_ref(), "{m:02x?}");
                        // Leaving sections out, held in place or not.
                        let mut kept = scan(&m).unwrap();
                        kept.retain(|s| s.code != super::DATA);
                        spans.retain(|s| s.code != super::DATA);
                        assert_eq!(kept.iter().collect::<Vec<_>>(), spans, "{m:02x?}");
                        assert!(!kept.has(super::DATA));
                        assert_eq!(
                            kept.has(super::HEADER),
                            spans.iter().any(|s| s.code == super::HEADER)
                        );
                    }
                    None => declined += 1,
                }
            }
        }
        assert!(
            accepted > 4_000 && declined > 10_000,
            "{accepted} {declined}"
        );
    }
}
