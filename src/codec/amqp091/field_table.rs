//! AMQP 0-9-1 field tables and arrays as RabbitMQ encodes them: every field-value type tag
//! RabbitMQ uses (`t b B s u I i l f d D S x A T F V`), decoding and encoding.
//!
//! Never allocates on a claimed length before the bytes are there, never nests deeper than
//! [`MAX_DEPTH`], never panics on input.

use bytes::{BufMut, Bytes};

use crate::codec::{DecodeError, ErrorKind, Reader};

/// The deepest nesting of tables/arrays the decoder accepts.
pub const MAX_DEPTH: usize = 32;

/// One field value, tagged as on the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// `t`: boolean.
    Bool(bool),
    /// `b`: signed 8-bit.
    I8(i8),
    /// `B`: unsigned 8-bit.
    U8(u8),
    /// `s`: signed 16-bit (RabbitMQ's reading; the 0-9-1 PDF's `s` short-string is unused).
    I16(i16),
    /// `u`: unsigned 16-bit.
    U16(u16),
    /// `I`: signed 32-bit.
    I32(i32),
    /// `i`: unsigned 32-bit.
    U32(u32),
    /// `l`: signed 64-bit.
    I64(i64),
    /// `f`: 32-bit float.
    F32(f32),
    /// `d`: 64-bit float.
    F64(f64),
    /// `D`: decimal, `value * 10^-scale`.
    Decimal {
        /// Number of decimal digits after the point.
        scale: u8,
        /// The unscaled value.
        value: i32,
    },
    /// `S`: long string (bytes; usually UTF-8).
    LongStr(Bytes),
    /// `x`: byte array.
    Bytes(Bytes),
    /// `A`: array of field values.
    Array(Vec<FieldValue>),
    /// `T`: timestamp, seconds since the epoch.
    Timestamp(u64),
    /// `F`: nested field table.
    Table(FieldTable),
    /// `V`: no value.
    Void,
}

/// A field table: (shortstr key, value) pairs in wire order (duplicates kept).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldTable(pub Vec<(Bytes, FieldValue)>);

impl FieldTable {
    /// An empty table.
    pub fn new() -> Self {
        FieldTable(Vec::new())
    }

    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<&FieldValue> {
        self.0
            .iter()
            .find(|(k, _)| &k[..] == key.as_bytes())
            .map(|(_, v)| v)
    }

    /// Append an entry (builder style).
    pub fn with(mut self, key: &str, value: FieldValue) -> Self {
        self.0.push((Bytes::copy_from_slice(key.as_bytes()), value));
        self
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Decode a table (u32 byte length + entries) at the reader's position.
    pub fn decode(r: &mut Reader) -> Result<FieldTable, DecodeError> {
        decode_table(r, 0)
    }

    /// Decode table entries filling all of `r` (no length prefix; AMQPLAIN's response form).
    pub fn decode_entries(r: &mut Reader) -> Result<FieldTable, DecodeError> {
        decode_entries(r, 0)
    }

    /// Append the encoded table (u32 length + entries) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.put_u32(0);
        self.encode_entries(out);
        patch_len(out, at);
    }

    /// Append the entries without the length prefix.
    pub fn encode_entries(&self, out: &mut Vec<u8>) {
        for (k, v) in &self.0 {
            put_shortstr(out, k);
            v.encode(out);
        }
    }
}

impl FieldValue {
    /// The wire type tag (`S`, `I`, ...).
    pub fn tag(&self) -> u8 {
        match self {
            FieldValue::Bool(_) => b't',
            FieldValue::I8(_) => b'b',
            FieldValue::U8(_) => b'B',
            FieldValue::I16(_) => b's',
            FieldValue::U16(_) => b'u',
            FieldValue::I32(_) => b'I',
            FieldValue::U32(_) => b'i',
            FieldValue::I64(_) => b'l',
            FieldValue::F32(_) => b'f',
            FieldValue::F64(_) => b'd',
            FieldValue::Decimal { .. } => b'D',
            FieldValue::LongStr(_) => b'S',
            FieldValue::Bytes(_) => b'x',
            FieldValue::Array(_) => b'A',
            FieldValue::Timestamp(_) => b'T',
            FieldValue::Table(_) => b'F',
            FieldValue::Void => b'V',
        }
    }

    /// A UTF-8 string value (`S`), if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FieldValue::LongStr(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// Any integer value widened to i128 (for lenient readers of `x-*` arguments).
    pub fn as_int(&self) -> Option<i128> {
        Some(match *self {
            FieldValue::I8(v) => v.into(),
            FieldValue::U8(v) => v.into(),
            FieldValue::I16(v) => v.into(),
            FieldValue::U16(v) => v.into(),
            FieldValue::I32(v) => v.into(),
            FieldValue::U32(v) => v.into(),
            FieldValue::I64(v) => v.into(),
            FieldValue::Timestamp(v) => v.into(),
            _ => return None,
        })
    }

    /// Decode one tagged value.
    pub fn decode(r: &mut Reader) -> Result<FieldValue, DecodeError> {
        decode_value(r, 0)
    }

    /// Append the tag and value to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.tag());
        match self {
            FieldValue::Bool(v) => out.push(u8::from(*v)),
            FieldValue::I8(v) => out.put_i8(*v),
            FieldValue::U8(v) => out.put_u8(*v),
            FieldValue::I16(v) => out.put_i16(*v),
            FieldValue::U16(v) => out.put_u16(*v),
            FieldValue::I32(v) => out.put_i32(*v),
            FieldValue::U32(v) => out.put_u32(*v),
            FieldValue::I64(v) => out.put_i64(*v),
            FieldValue::F32(v) => out.put_f32(*v),
            FieldValue::F64(v) => out.put_f64(*v),
            FieldValue::Decimal { scale, value } => {
                out.put_u8(*scale);
                out.put_i32(*value);
            }
            FieldValue::LongStr(b) | FieldValue::Bytes(b) => put_longstr(out, b),
            FieldValue::Array(items) => {
                let at = out.len();
                out.put_u32(0);
                for v in items {
                    v.encode(out);
                }
                patch_len(out, at);
            }
            FieldValue::Timestamp(v) => out.put_u64(*v),
            FieldValue::Table(t) => t.encode(out),
            FieldValue::Void => {}
        }
    }
}

/// The reader position where a u32-length-prefixed structure ends, checked against the input
/// before anything is decoded.
fn extent(r: &mut Reader, what: &'static str) -> Result<usize, DecodeError> {
    let len = r.u32()?;
    if u64::from(len) > r.remaining() as u64 {
        return Err(r.error(ErrorKind::LengthExceedsInput {
            what,
            claimed: len.into(),
            available: r.remaining() as u64,
        }));
    }
    Ok(r.position() + len as usize)
}

/// After a value: it must not have run past the end of its table/array.
fn within_extent(r: &Reader, end: usize, start: u64) -> Result<(), DecodeError> {
    if r.position() > end {
        return Err(DecodeError::new(
            start,
            ErrorKind::InvalidEncoding("value runs past the end of its table or array"),
        ));
    }
    Ok(())
}

fn decode_table(r: &mut Reader, depth: usize) -> Result<FieldTable, DecodeError> {
    let end = extent(r, "table length")?;
    entries_until(r, end, depth)
}

fn decode_entries(r: &mut Reader, depth: usize) -> Result<FieldTable, DecodeError> {
    let end = r.position() + r.remaining();
    entries_until(r, end, depth)
}

/// Table entries from the reader's position up to position `end` (decoded in place, no
/// sub-buffer).
fn entries_until(r: &mut Reader, end: usize, depth: usize) -> Result<FieldTable, DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(r.error(ErrorKind::TooDeep(MAX_DEPTH)));
    }
    let mut entries = Vec::new();
    while r.position() < end {
        let start = r.offset();
        let key = shortstr(r).map_err(|e| e.within("key"))?;
        let value = decode_value(r, depth + 1).map_err(|e| e.within("value"))?;
        within_extent(r, end, start)?;
        entries.push((key, value));
    }
    Ok(FieldTable(entries))
}

fn decode_array(r: &mut Reader, depth: usize) -> Result<Vec<FieldValue>, DecodeError> {
    let end = extent(r, "array length")?;
    if depth >= MAX_DEPTH {
        return Err(r.error(ErrorKind::TooDeep(MAX_DEPTH)));
    }
    let mut items = Vec::new();
    while r.position() < end {
        let start = r.offset();
        items.push(decode_value(r, depth + 1).map_err(|e| e.within("element"))?);
        within_extent(r, end, start)?;
    }
    Ok(items)
}

fn decode_value(r: &mut Reader, depth: usize) -> Result<FieldValue, DecodeError> {
    let at = r.offset();
    let tag = r.u8()?;
    Ok(match tag {
        b't' => FieldValue::Bool(r.u8()? != 0),
        b'b' => FieldValue::I8(r.u8()? as i8),
        b'B' => FieldValue::U8(r.u8()?),
        b's' => FieldValue::I16(r.u16()? as i16),
        b'u' => FieldValue::U16(r.u16()?),
        b'I' => FieldValue::I32(r.u32()? as i32),
        b'i' => FieldValue::U32(r.u32()?),
        b'l' => FieldValue::I64(r.u64()? as i64),
        b'f' => FieldValue::F32(f32::from_bits(r.u32()?)),
        b'd' => FieldValue::F64(f64::from_bits(r.u64()?)),
        b'D' => FieldValue::Decimal {
            scale: r.u8()?,
            value: r.u32()? as i32,
        },
        b'S' => FieldValue::LongStr(longstr(r)?),
        b'x' => FieldValue::Bytes(longstr(r)?),
        b'A' => FieldValue::Array(decode_array(r, depth)?),
        b'T' => FieldValue::Timestamp(r.u64()?),
        b'F' => FieldValue::Table(decode_table(r, depth)?),
        b'V' => FieldValue::Void,
        other => return Err(DecodeError::new(at, ErrorKind::InvalidFormatCode(other))),
    })
}

/// Read a shortstr (u8 length + bytes), zero-copy.
#[inline]
pub(super) fn shortstr(r: &mut Reader) -> Result<Bytes, DecodeError> {
    let n = r.u8()?;
    r.bytes(n.into())
}

/// Read a longstr (u32 length + bytes), zero-copy.
#[inline]
pub(super) fn longstr(r: &mut Reader) -> Result<Bytes, DecodeError> {
    let n = r.u32()?;
    r.bytes_len(n.into())
}

/// Append a shortstr; bytes beyond 255 are cut off (the wire cannot say more).
pub(super) fn put_shortstr(out: &mut Vec<u8>, s: &[u8]) {
    let s = &s[..s.len().min(255)];
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// Append a longstr (u32 length + bytes).
pub(super) fn put_longstr(out: &mut Vec<u8>, s: &[u8]) {
    out.put_u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(&s[..s.len().min(u32::MAX as usize)]);
}

/// Write the length of everything after the u32 at `at` into that u32.
fn patch_len(out: &mut [u8], at: usize) {
    let len = out.len().saturating_sub(at + 4);
    let len = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> FieldTable {
        FieldTable::new()
            .with("t", FieldValue::Bool(true))
            .with("b", FieldValue::I8(-5))
            .with("B", FieldValue::U8(250))
            .with("s", FieldValue::I16(-300))
            .with("u", FieldValue::U16(60000))
            .with("I", FieldValue::I32(-70000))
            .with("i", FieldValue::U32(4_000_000_000))
            .with("l", FieldValue::I64(-1 << 40))
            .with("f", FieldValue::F32(1.5))
            .with("d", FieldValue::F64(-2.25))
            .with(
                "D",
                FieldValue::Decimal {
                    scale: 2,
                    value: -12345,
                },
            )
            .with("S", FieldValue::LongStr(Bytes::from_static(b"hello")))
            .with("x", FieldValue::Bytes(Bytes::from_static(&[0, 1, 0xff])))
            .with(
                "A",
                FieldValue::Array(vec![FieldValue::U8(1), FieldValue::Void]),
            )
            .with("T", FieldValue::Timestamp(1_700_000_000))
            .with(
                "F",
                FieldValue::Table(FieldTable::new().with("k", FieldValue::Bool(false))),
            )
            .with("V", FieldValue::Void)
    }

    #[test]
    fn every_type_matches_hand_written_bytes_and_round_trips() {
        let mut expected: Vec<u8> = Vec::new();
        let mut e = |key: &[u8], rest: &[u8]| {
            expected.push(key.len() as u8);
            expected.extend_from_slice(key);
            expected.extend_from_slice(rest);
        };
        e(b"t", b"t\x01");
        e(b"b", b"b\xfb");
        e(b"B", b"B\xfa");
        e(b"s", b"s\xfe\xd4");
        e(b"u", b"u\xea\x60");
        e(b"I", b"I\xff\xfe\xee\x90");
        e(b"i", b"i\xee\x6b\x28\x00");
        e(b"l", b"l\xff\xff\xff\x00\x00\x00\x00\x00");
        e(b"f", b"f\x3f\xc0\x00\x00");
        e(b"d", b"d\xc0\x02\x00\x00\x00\x00\x00\x00");
        e(b"D", b"D\x02\xff\xff\xcf\xc7");
        e(b"S", b"S\x00\x00\x00\x05hello");
        e(b"x", b"x\x00\x00\x00\x03\x00\x01\xff");
        e(b"A", b"A\x00\x00\x00\x03B\x01V");
        e(b"T", b"T\x00\x00\x00\x00\x65\x53\xf1\x00");
        e(b"F", b"F\x00\x00\x00\x04\x01kt\x00");
        e(b"V", b"V");
        let mut framed = (expected.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&expected);

        let mut enc = Vec::new();
        every_type().encode(&mut enc);
        assert_eq!(enc, framed);

        let mut r = Reader::new(Bytes::from(framed), 0);
        let t = FieldTable::decode(&mut r).unwrap();
        assert!(r.is_empty());
        assert_eq!(t, every_type());
    }

    #[test]
    fn unknown_tag_is_a_typed_error_at_its_offset() {
        // table len 4: key "k", tag 'Z'
        let bytes = Bytes::from_static(b"\x00\x00\x00\x04\x01kZ\x00");
        let err = FieldTable::decode(&mut Reader::new(bytes, 100)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidFormatCode(b'Z'));
        assert_eq!(err.offset, 106);
        assert_eq!(err.path, vec!["value"]);
    }

    #[test]
    fn claimed_length_beyond_input_fails_without_allocating() {
        let bytes = Bytes::from_static(b"\xff\xff\xff\xff\x01kS");
        assert!(matches!(
            FieldTable::decode(&mut Reader::new(bytes, 0))
                .unwrap_err()
                .kind,
            ErrorKind::LengthExceedsInput {
                claimed: 0xffff_ffff,
                available: 3,
                ..
            }
        ));
    }

    #[test]
    fn nesting_beyond_max_depth_is_rejected() {
        let mut v = FieldValue::Void;
        for _ in 0..MAX_DEPTH + 2 {
            v = FieldValue::Array(vec![v]);
        }
        let mut enc = Vec::new();
        v.encode(&mut enc);
        let err = FieldValue::decode(&mut Reader::new(Bytes::from(enc), 0)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TooDeep(MAX_DEPTH));

        let mut v = FieldValue::Void;
        for _ in 0..MAX_DEPTH - 2 {
            v = FieldValue::Array(vec![v]);
        }
        let mut enc = Vec::new();
        v.encode(&mut enc);
        assert_eq!(
            FieldValue::decode(&mut Reader::new(Bytes::from(enc), 0)).unwrap(),
            v
        );
    }
}

#[cfg(test)]
mod extent_tests {
    use super::*;

    #[test]
    fn a_value_overrunning_its_table_is_rejected() {
        // table of length 3 holding key "k" and a 'B' value whose byte lies outside the table
        let bytes = Bytes::from_static(b"\x00\x00\x00\x03\x01kB\x07");
        let err = FieldTable::decode(&mut Reader::new(bytes, 0)).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::InvalidEncoding(_)), "{err}");
        assert_eq!(err.offset, 4);
    }
}
