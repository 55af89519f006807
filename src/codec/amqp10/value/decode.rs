//! Decoding [`Value`]s from bytes: bounded by the input left, by [`MAX_DEPTH`] and by
//! [`MAX_ZERO_WIDTH_ELEMENTS`], with typed errors at absolute offsets.

use bytes::Bytes;

use super::*;
use crate::codec::{DecodeError, ErrorKind, Reader};

fn too_deep(r: &Reader) -> DecodeError {
    r.error(ErrorKind::TooDeep(MAX_DEPTH))
}

/// Decode one value (constructor included) from `r`.
pub fn decode(r: &mut Reader) -> Result<Value, DecodeError> {
    decode_at(r, 0)
}

/// Decode one value at nesting `depth`.
///
/// The common fixed-width scalars are decoded here, inlined into each caller's loop (always:
/// this wrapper is small and the calls are hot); everything else (and every error) goes
/// through [`decode_general`].
#[inline(always)]
pub fn decode_at(r: &mut Reader, depth: usize) -> Result<Value, DecodeError> {
    if depth <= MAX_DEPTH
        && let Some((v, n)) = fixed_scalar(r.unread())
    {
        r.skip(n)?;
        return Ok(v);
    }
    decode_general(r, depth)
}

/// Decode one value at nesting `depth` onto the end of `out`: what [`decode_at`] does, with
/// the common fixed-width scalars and short binaries (delivery tags) pushed straight from the
/// bytes (no `Result` around them).
#[inline(always)]
pub fn decode_onto(r: &mut Reader, depth: usize, out: &mut Vec<Value>) -> Result<(), DecodeError> {
    if depth <= MAX_DEPTH {
        if let Some((v, n)) = fixed_scalar(r.unread()) {
            r.skip(n)?;
            out.push(v);
            return Ok(());
        }
        if let Some(n) = whole_vbin8(r.unread()) {
            r.skip(2)?;
            out.push(Value::Binary(r.bytes(n)?));
            return Ok(());
        }
    }
    out.push(decode_general(r, depth)?);
    Ok(())
}

/// The plain scalar at the front of `b`, a value [`decode_onto`] takes straight from the bytes
/// (a fixed-width scalar of the kinds performatives are mostly made of, or a whole `vbin8`):
/// its kind (`Kind::Null` for a null), its encoded length and its number: an unsigned
/// integer's value, a boolean's as 0 or 1, a binary's length, 0 for a null. `None` for
/// anything else, exactly where those fast paths decline.
#[inline]
pub(crate) fn plain_scalar_read(b: &[u8]) -> Option<(Kind, usize, u64)> {
    use code::*;
    let (&c, rest) = b.split_first()?;
    let byte = || rest.first().map(|&x| u64::from(x));
    let (kind, len, n) = match c {
        NULL => (Kind::Null, 1, 0),
        TRUE => (Kind::Boolean, 1, 1),
        FALSE => (Kind::Boolean, 1, 0),
        UINT0 => (Kind::Uint, 1, 0),
        ULONG0 => (Kind::Ulong, 1, 0),
        BOOLEAN => match byte()? {
            n @ (0 | 1) => (Kind::Boolean, 2, n),
            _ => return None,
        },
        SMALLUINT => (Kind::Uint, 2, byte()?),
        SMALLULONG => (Kind::Ulong, 2, byte()?),
        UBYTE => (Kind::Ubyte, 2, byte()?),
        USHORT => (
            Kind::Ushort,
            3,
            u64::from(u16::from_be_bytes(*rest.first_chunk()?)),
        ),
        UINT => (
            Kind::Uint,
            5,
            u64::from(u32::from_be_bytes(*rest.first_chunk()?)),
        ),
        ULONG => (Kind::Ulong, 9, u64::from_be_bytes(*rest.first_chunk()?)),
        VBIN8 => {
            let n = byte()?;
            (Kind::Binary, 2 + n as usize, n)
        }
        _ => return None,
    };
    (len <= b.len()).then_some((kind, len, n))
}

/// The plain scalar (see [`plain_scalar_read`]) at `raw[pos..]`, as [`decode_onto`] decodes it;
/// a binary is a zero-copy slice of `raw`.
#[inline]
pub(crate) fn plain_scalar(raw: &Bytes, pos: usize) -> Option<Value> {
    let b = raw.get(pos..)?;
    if let Some((v, _)) = fixed_scalar(b) {
        return Some(v);
    }
    let n = whole_vbin8(b)?;
    Some(Value::Binary(raw.slice(pos + 2..pos + 2 + n)))
}

/// The length of the `vbin8` at the front of `b`, when all of its bytes are there.
#[inline]
fn whole_vbin8(b: &[u8]) -> Option<usize> {
    match b {
        [code::VBIN8, n, rest @ ..] if usize::from(*n) <= rest.len() => Some(usize::from(*n)),
        _ => None,
    }
}

/// Decode one value at nesting `depth` that [`fixed_scalar`] does not take: compounds,
/// described values, variable-width and less common scalars, and anything truncated or
/// invalid (reported with its offset).
fn decode_general(r: &mut Reader, depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(too_deep(r));
    }
    // A short binary (a delivery tag) whole in the input, sliced in one step.
    if let Some(n) = whole_vbin8(r.unread()) {
        r.skip(2)?;
        return Ok(Value::Binary(r.bytes(n)?));
    }
    let c = r.u8()?;
    if c == code::DESCRIBED {
        let descriptor = decode_descriptor(r, depth + 1)?;
        let value = decode_at(r, depth + 1)?;
        return Ok(Value::Described(Box::new(Described { descriptor, value })));
    }
    decode_body(c, r, depth)
}

/// The common fixed-width scalars (null, booleans, unsigned integers: what performatives are
/// mostly made of) decoded straight from the front of `b`: the value and its encoded length.
/// `None` for anything else, including truncated or invalid input, which the general path then
/// decodes (and reports) as usual.
#[inline]
fn fixed_scalar(b: &[u8]) -> Option<(Value, usize)> {
    use code::*;
    let (&c, rest) = b.split_first()?;
    Some(match c {
        NULL => (Value::Null, 1),
        TRUE => (Value::Bool(true), 1),
        FALSE => (Value::Bool(false), 1),
        UINT0 => (Value::Uint(0), 1),
        ULONG0 => (Value::Ulong(0), 1),
        BOOLEAN => match rest.first()? {
            0 => (Value::Bool(false), 2),
            1 => (Value::Bool(true), 2),
            _ => return None,
        },
        SMALLUINT => (Value::Uint(u32::from(*rest.first()?)), 2),
        SMALLULONG => (Value::Ulong(u64::from(*rest.first()?)), 2),
        UBYTE => (Value::Ubyte(*rest.first()?), 2),
        USHORT => (Value::Ushort(u16::from_be_bytes(*rest.first_chunk()?)), 3),
        UINT => (Value::Uint(u32::from_be_bytes(*rest.first_chunk()?)), 5),
        ULONG => (Value::Ulong(u64::from_be_bytes(*rest.first_chunk()?)), 9),
        _ => return None,
    })
}

/// Decode a descriptor (after the 0x00 constructor): a ulong or a symbol.
pub fn decode_descriptor(r: &mut Reader, depth: usize) -> Result<Descriptor, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(too_deep(r));
    }
    // The spec's own descriptors all fit a smallulong.
    if let [code::SMALLULONG, v, ..] = *r.unread() {
        r.skip(2)?;
        return Ok(Descriptor::Code(u64::from(v)));
    }
    let at = r.offset();
    let c = r.u8()?;
    match c {
        code::ULONG | code::SMALLULONG | code::ULONG0 => match decode_body(c, r, depth)? {
            Value::Ulong(v) => Ok(Descriptor::Code(v)),
            _ => Err(DecodeError::new(at, ErrorKind::InvalidFormatCode(c))),
        },
        code::SYM8 | code::SYM32 => match decode_body(c, r, depth)? {
            Value::Symbol(s) => Ok(Descriptor::Name(s)),
            _ => Err(DecodeError::new(at, ErrorKind::InvalidFormatCode(c))),
        },
        _ => Err(DecodeError::new(
            at,
            ErrorKind::UnexpectedType {
                expected: "ulong or symbol descriptor",
                found: Kind::of_code(c).map_or("invalid format code", Kind::name),
            },
        )),
    }
}

fn var_len(c: u8, r: &mut Reader) -> Result<u64, DecodeError> {
    Ok(
        if c & 0xf0 == 0xa0 || c & 0xf0 == 0xc0 || c & 0xf0 == 0xe0 {
            u64::from(r.u8()?)
        } else {
            u64::from(r.u32()?)
        },
    )
}

fn utf8(b: Bytes, at: u64) -> Result<Str, DecodeError> {
    Str::from_utf8(b).map_err(|_| DecodeError::new(at, ErrorKind::InvalidUtf8))
}

/// Decode the body of a value whose format code `c` has already been read.
pub fn decode_body(c: u8, r: &mut Reader, depth: usize) -> Result<Value, DecodeError> {
    use code::*;
    Ok(match c {
        NULL => Value::Null,
        BOOLEAN => {
            let at = r.offset();
            match r.u8()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                _ => {
                    return Err(DecodeError::new(
                        at,
                        ErrorKind::InvalidEncoding("boolean byte must be 0 or 1"),
                    ));
                }
            }
        }
        TRUE => Value::Bool(true),
        FALSE => Value::Bool(false),
        UBYTE => Value::Ubyte(r.u8()?),
        USHORT => Value::Ushort(r.u16()?),
        UINT => Value::Uint(r.u32()?),
        SMALLUINT => Value::Uint(u32::from(r.u8()?)),
        UINT0 => Value::Uint(0),
        ULONG => Value::Ulong(r.u64()?),
        SMALLULONG => Value::Ulong(u64::from(r.u8()?)),
        ULONG0 => Value::Ulong(0),
        BYTE => Value::Byte(r.u8()? as i8),
        SHORT => Value::Short(r.u16()? as i16),
        INT => Value::Int(r.u32()? as i32),
        SMALLINT => Value::Int(i32::from(r.u8()? as i8)),
        LONG => Value::Long(r.u64()? as i64),
        SMALLLONG => Value::Long(i64::from(r.u8()? as i8)),
        FLOAT => Value::Float(f32::from_bits(r.u32()?)),
        DOUBLE => Value::Double(f64::from_bits(r.u64()?)),
        DECIMAL32 => Value::Decimal32(r.u32()?),
        DECIMAL64 => Value::Decimal64(r.u64()?),
        DECIMAL128 => Value::Decimal128(r.array()?),
        CHAR => {
            let at = r.offset();
            let v = r.u32()?;
            Value::Char(
                char::from_u32(v).ok_or_else(|| DecodeError::new(at, ErrorKind::InvalidChar(v)))?,
            )
        }
        TIMESTAMP => Value::Timestamp(r.u64()? as i64),
        UUID => Value::Uuid(r.array()?),
        VBIN8 | VBIN32 => {
            let n = var_len(c, r)?;
            Value::Binary(r.bytes_len(n)?)
        }
        STR8 | STR32 => {
            let n = var_len(c, r)?;
            let at = r.offset();
            Value::String(utf8(r.bytes_len(n)?, at)?)
        }
        SYM8 | SYM32 => {
            let n = var_len(c, r)?;
            let at = r.offset();
            Value::Symbol(Symbol(utf8(r.bytes_len(n)?, at)?))
        }
        LIST0 => Value::List(Vec::new()),
        LIST8 | LIST32 => Value::List(decode_list_body(c, r, depth)?),
        MAP8 | MAP32 => Value::Map(decode_map_body(c, r, depth)?),
        ARRAY8 | ARRAY32 => Value::Array(Box::new(decode_array_body(c, r, depth)?)),
        other => {
            return Err(DecodeError::new(
                r.offset().saturating_sub(1),
                ErrorKind::InvalidFormatCode(other),
            ));
        }
    })
}

/// Read a compound's size and count; returns the position where the compound ends and the
/// count. Elements are then read from `r` itself (no sub-buffer) and [`finish`] checks that
/// they ended exactly at the end.
fn compound_header(
    c: u8,
    r: &mut Reader,
    what: &'static str,
) -> Result<(usize, usize), DecodeError> {
    let size = var_len(c, r)?;
    if size > r.remaining() as u64 {
        return Err(r.error(ErrorKind::LengthExceedsInput {
            what,
            claimed: size,
            available: r.remaining() as u64,
        }));
    }
    let end = r.position() + size as usize;
    let count = var_len(c, r)?;
    if r.position() > end {
        return Err(r.error(ErrorKind::InvalidEncoding(
            "compound size smaller than its count field",
        )));
    }
    Ok((end, usize::try_from(count).unwrap_or(usize::MAX)))
}

fn check_count(
    r: &Reader,
    end: usize,
    count: usize,
    per_item: usize,
    what: &'static str,
) -> Result<(), DecodeError> {
    let left = end.saturating_sub(r.position());
    let fits = match left.checked_div(per_item) {
        Some(most) => count <= most,
        // Zero-width elements (e.g. an array of nulls): bounded by a fixed count.
        None => count <= left.max(MAX_ZERO_WIDTH_ELEMENTS),
    };
    if fits {
        Ok(())
    } else {
        Err(r.error(ErrorKind::LengthExceedsInput {
            what,
            claimed: count as u64,
            available: left as u64,
        }))
    }
}

/// Check that a compound's elements ended exactly at its declared end.
pub(crate) fn finish(r: &Reader, end: usize) -> Result<(), DecodeError> {
    let pos = r.position();
    if pos == end {
        Ok(())
    } else if pos < end {
        Err(r.error(ErrorKind::TrailingBytes((end - pos) as u64)))
    } else {
        Err(r.error(ErrorKind::InvalidEncoding(
            "elements overrun the compound's size",
        )))
    }
}

/// Decode a list8/list32 body (after its format code), each element with its own constructor.
pub fn decode_list_body(c: u8, r: &mut Reader, depth: usize) -> Result<Vec<Value>, DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(r));
    }
    let (end, count) = compound_header(c, r, "list count")?;
    check_count(r, end, count, 1, "list count")?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        decode_onto(r, depth + 1, &mut items)?;
    }
    finish(r, end)?;
    Ok(items)
}

/// Decode a map8/map32 body (after its format code).
pub fn decode_map_body(
    c: u8,
    r: &mut Reader,
    depth: usize,
) -> Result<Vec<(Value, Value)>, DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(r));
    }
    let (end, count) = compound_header(c, r, "map count")?;
    if count % 2 != 0 {
        return Err(r.error(ErrorKind::InvalidEncoding("map count must be even")));
    }
    check_count(r, end, count, 1, "map count")?;
    let mut items = Vec::with_capacity(count / 2);
    for _ in 0..count / 2 {
        let k = decode_at(r, depth + 1)?;
        let v = decode_at(r, depth + 1)?;
        items.push((k, v));
    }
    finish(r, end)?;
    Ok(items)
}

/// Minimum encoded width of one array element under format code `c` (0 for fixed-width-0).
fn element_width(c: u8) -> usize {
    use code::*;
    match c {
        NULL | TRUE | FALSE | UINT0 | ULONG0 | LIST0 => 0,
        BOOLEAN | UBYTE | BYTE | SMALLUINT | SMALLULONG | SMALLINT | SMALLLONG => 1,
        USHORT | SHORT => 2,
        UINT | INT | FLOAT | DECIMAL32 | CHAR => 4,
        ULONG | LONG | DOUBLE | DECIMAL64 | TIMESTAMP => 8,
        DECIMAL128 | UUID => 16,
        VBIN8 | STR8 | SYM8 => 1,
        LIST8 | MAP8 => 2,
        ARRAY8 => 3,
        VBIN32 | STR32 | SYM32 => 4,
        LIST32 | MAP32 => 8,
        ARRAY32 => 9,
        _ => 1,
    }
}

/// Decode an array8/array32 body (after its format code).
pub fn decode_array_body(c: u8, r: &mut Reader, depth: usize) -> Result<Array, DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(r));
    }
    let (end, count) = compound_header(c, r, "array count")?;
    let ctor_at = r.offset();
    let mut ec = r.u8()?;
    let descriptor = if ec == code::DESCRIBED {
        let d = decode_descriptor(r, depth + 1)?;
        ec = r.u8()?;
        if ec == code::DESCRIBED {
            return Err(DecodeError::new(
                ctor_at,
                ErrorKind::InvalidEncoding("array element constructor described twice"),
            ));
        }
        Some(d)
    } else {
        None
    };
    let kind = Kind::of_code(ec).ok_or_else(|| {
        DecodeError::new(
            r.offset().saturating_sub(1),
            ErrorKind::InvalidFormatCode(ec),
        )
    })?;
    if r.position() > end {
        return Err(r.error(ErrorKind::InvalidEncoding(
            "array constructor overruns the array's size",
        )));
    }
    check_count(r, end, count, element_width(ec), "array count")?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(decode_body(ec, r, depth + 1)?);
    }
    finish(r, end)?;
    Ok(Array {
        descriptor,
        kind,
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::to_value;

    /// The fixed-width fast path must decode exactly what the general path decodes, and leave
    /// truncated or invalid encodings to it (so errors keep their kind and offset).
    #[test]
    fn fixed_scalar_fast_path_agrees_with_the_general_decoder() {
        let cases: &[&[u8]] = &[
            &[0x40],
            &[0x41],
            &[0x42],
            &[0x43],
            &[0x44],
            &[0x56, 0],
            &[0x56, 1],
            &[0x52, 7],
            &[0x53, 9],
            &[0x50, 0xff],
            &[0x60, 1, 2],
            &[0x70, 0xde, 0xad, 0xbe, 0xef],
            &[0x80, 1, 2, 3, 4, 5, 6, 7, 8],
        ];
        for bytes in cases {
            let (fast, n) = fixed_scalar(bytes).expect("a fixed scalar");
            assert_eq!(n, bytes.len(), "{bytes:02x?}");
            let mut r = Reader::new(Bytes::copy_from_slice(&bytes[1..]), 1);
            assert_eq!(
                decode_body(bytes[0], &mut r, 0).unwrap(),
                fast,
                "{bytes:02x?}"
            );
        }
        // Truncated or invalid: not taken by the fast path; the general path reports it.
        for bytes in [&[0x70, 1, 2][..], &[0x56, 2], &[0x80], &[0x60, 1]] {
            assert!(fixed_scalar(bytes).is_none(), "{bytes:02x?}");
            let mut r = Reader::new(Bytes::copy_from_slice(bytes), 100);
            let e = decode(&mut r).unwrap_err();
            assert!(e.offset >= 100, "{e:?}");
        }
        let mut r = Reader::new(Bytes::from_static(&[0x70, 1, 2]), 100);
        let e = decode(&mut r).unwrap_err();
        assert_eq!(e.offset, 101);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                needed: 4,
                available: 2
            }
        ));
    }

    #[test]
    fn binary_json_hex_matches_hex_encode_and_truncates_at_max() {
        let binary_json = |b: &[u8], max| to_value(|o| write_binary(o, b, max));
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(
            binary_json(&all, 256),
            serde_json::json!({ "binary": hex::encode(&all) })
        );
        assert_eq!(binary_json(&[], 0), serde_json::json!({ "binary": "" }));
        assert_eq!(
            binary_json(&all[..3], 64),
            serde_json::json!({ "binary": "000102" })
        );
        assert_eq!(
            binary_json(&all, 2),
            serde_json::json!({ "binary": "0001", "len": 256 })
        );
    }
}
