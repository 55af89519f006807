//! The AMQP 1.0 type system: [`Value`] covering every encoding of the type reference, with a
//! decoder, an encoder, Proton-style text and JSON rendering.
//!
//! Decoding never panics, never allocates more than the remaining input justifies (counts are
//! checked against the bytes left before any `Vec` is sized), never recurses deeper than
//! [`MAX_DEPTH`], and returns typed errors at absolute offsets. Strings, symbols and binaries are
//! zero-copy `Bytes` slices of the input. Nothing here knows about frames or composites.

use std::fmt::{self, Write as _};

use bytes::Bytes;

use crate::codec::{DecodeError, ErrorKind, Reader};
use crate::json::{JsonOut, to_value};

/// Deepest nesting of lists, maps, arrays and described values the decoder accepts.
pub const MAX_DEPTH: usize = 32;

/// An array of zero-width elements (null, true, false, uint0, ulong0, list0) may claim at most
/// this many elements beyond the bytes present; otherwise each element needs one byte.
pub const MAX_ZERO_WIDTH_ELEMENTS: usize = 256;

/// Format codes of the type reference.
pub mod code {
    #![allow(missing_docs)]
    pub const DESCRIBED: u8 = 0x00;
    pub const NULL: u8 = 0x40;
    pub const BOOLEAN: u8 = 0x56;
    pub const TRUE: u8 = 0x41;
    pub const FALSE: u8 = 0x42;
    pub const UBYTE: u8 = 0x50;
    pub const USHORT: u8 = 0x60;
    pub const UINT: u8 = 0x70;
    pub const SMALLUINT: u8 = 0x52;
    pub const UINT0: u8 = 0x43;
    pub const ULONG: u8 = 0x80;
    pub const SMALLULONG: u8 = 0x53;
    pub const ULONG0: u8 = 0x44;
    pub const BYTE: u8 = 0x51;
    pub const SHORT: u8 = 0x61;
    pub const INT: u8 = 0x71;
    pub const SMALLINT: u8 = 0x54;
    pub const LONG: u8 = 0x81;
    pub const SMALLLONG: u8 = 0x55;
    pub const FLOAT: u8 = 0x72;
    pub const DOUBLE: u8 = 0x82;
    pub const DECIMAL32: u8 = 0x74;
    pub const DECIMAL64: u8 = 0x84;
    pub const DECIMAL128: u8 = 0x94;
    pub const CHAR: u8 = 0x73;
    pub const TIMESTAMP: u8 = 0x83;
    pub const UUID: u8 = 0x98;
    pub const VBIN8: u8 = 0xa0;
    pub const VBIN32: u8 = 0xb0;
    pub const STR8: u8 = 0xa1;
    pub const STR32: u8 = 0xb1;
    pub const SYM8: u8 = 0xa3;
    pub const SYM32: u8 = 0xb3;
    pub const LIST0: u8 = 0x45;
    pub const LIST8: u8 = 0xc0;
    pub const LIST32: u8 = 0xd0;
    pub const MAP8: u8 = 0xc1;
    pub const MAP32: u8 = 0xd1;
    pub const ARRAY8: u8 = 0xe0;
    pub const ARRAY32: u8 = 0xf0;
}

/// A UTF-8 validated, zero-copy string (an AMQP `string`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Str(Bytes);

impl Str {
    /// Validate `b` as UTF-8; gives the bytes back when they are not.
    pub fn from_utf8(b: Bytes) -> Result<Str, Bytes> {
        match std::str::from_utf8(&b) {
            Ok(_) => Ok(Str(b)),
            Err(_) => Err(b),
        }
    }
    /// The text. (Validated at construction; never empty by accident.)
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
    /// The encoded bytes (zero-copy).
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }
    /// Byte length.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Self {
        Str(Bytes::copy_from_slice(s.as_bytes()))
    }
}
impl From<String> for Str {
    fn from(s: String) -> Self {
        Str(Bytes::from(s))
    }
}
impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl PartialEq<str> for Str {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}
impl PartialEq<&str> for Str {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// An AMQP `symbol` (ASCII per the spec; decoded leniently as UTF-8), zero-copy.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Symbol(pub Str);

impl Symbol {
    /// The symbol's text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}
impl From<&str> for Symbol {
    fn from(s: &str) -> Self {
        Symbol(Str::from(s))
    }
}
impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ":{:?}", self.as_str())
    }
}
impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl PartialEq<&str> for Symbol {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// A descriptor: the spec only uses ulong codes and symbols.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Descriptor {
    /// Numeric descriptor (domain-id << 32 | descriptor-id).
    Code(u64),
    /// Symbolic descriptor, e.g. `amqp:open:list`.
    Name(Symbol),
}

impl Descriptor {
    /// The numeric code, resolving known symbolic names through the composite tables.
    pub fn code(&self) -> Option<u64> {
        match self {
            Descriptor::Code(c) => Some(*c),
            Descriptor::Name(s) => super::composite::lookup_name(s.as_str()).map(|d| d.code),
        }
    }
}

/// A described value (a descriptor plus the value it describes).
#[derive(Clone, Debug, PartialEq)]
pub struct Described {
    /// The descriptor.
    pub descriptor: Descriptor,
    /// The underlying value.
    pub value: Value,
}

/// The primitive types (not encodings), as named by the type reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Kind {
    Null,
    Boolean,
    Ubyte,
    Ushort,
    Uint,
    Ulong,
    Byte,
    Short,
    Int,
    Long,
    Float,
    Double,
    Decimal32,
    Decimal64,
    Decimal128,
    Char,
    Timestamp,
    Uuid,
    Binary,
    String,
    Symbol,
    List,
    Map,
    Array,
}

impl Kind {
    /// The spec's type name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "boolean",
            Kind::Ubyte => "ubyte",
            Kind::Ushort => "ushort",
            Kind::Uint => "uint",
            Kind::Ulong => "ulong",
            Kind::Byte => "byte",
            Kind::Short => "short",
            Kind::Int => "int",
            Kind::Long => "long",
            Kind::Float => "float",
            Kind::Double => "double",
            Kind::Decimal32 => "decimal32",
            Kind::Decimal64 => "decimal64",
            Kind::Decimal128 => "decimal128",
            Kind::Char => "char",
            Kind::Timestamp => "timestamp",
            Kind::Uuid => "uuid",
            Kind::Binary => "binary",
            Kind::String => "string",
            Kind::Symbol => "symbol",
            Kind::List => "list",
            Kind::Map => "map",
            Kind::Array => "array",
        }
    }

    /// The type a format code encodes, if it is a primitive format code.
    pub fn of_code(c: u8) -> Option<Kind> {
        use code::*;
        Some(match c {
            NULL => Kind::Null,
            BOOLEAN | TRUE | FALSE => Kind::Boolean,
            UBYTE => Kind::Ubyte,
            USHORT => Kind::Ushort,
            UINT | SMALLUINT | UINT0 => Kind::Uint,
            ULONG | SMALLULONG | ULONG0 => Kind::Ulong,
            BYTE => Kind::Byte,
            SHORT => Kind::Short,
            INT | SMALLINT => Kind::Int,
            LONG | SMALLLONG => Kind::Long,
            FLOAT => Kind::Float,
            DOUBLE => Kind::Double,
            DECIMAL32 => Kind::Decimal32,
            DECIMAL64 => Kind::Decimal64,
            DECIMAL128 => Kind::Decimal128,
            CHAR => Kind::Char,
            TIMESTAMP => Kind::Timestamp,
            UUID => Kind::Uuid,
            VBIN8 | VBIN32 => Kind::Binary,
            STR8 | STR32 => Kind::String,
            SYM8 | SYM32 => Kind::Symbol,
            LIST0 | LIST8 | LIST32 => Kind::List,
            MAP8 | MAP32 => Kind::Map,
            ARRAY8 | ARRAY32 => Kind::Array,
            _ => return None,
        })
    }

    /// Proton's array tag (`PN_SYMBOL` ...), used in text rendering.
    fn pn_name(self) -> &'static str {
        match self {
            Kind::Null => "PN_NULL",
            Kind::Boolean => "PN_BOOL",
            Kind::Ubyte => "PN_UBYTE",
            Kind::Ushort => "PN_USHORT",
            Kind::Uint => "PN_UINT",
            Kind::Ulong => "PN_ULONG",
            Kind::Byte => "PN_BYTE",
            Kind::Short => "PN_SHORT",
            Kind::Int => "PN_INT",
            Kind::Long => "PN_LONG",
            Kind::Float => "PN_FLOAT",
            Kind::Double => "PN_DOUBLE",
            Kind::Decimal32 => "PN_DECIMAL32",
            Kind::Decimal64 => "PN_DECIMAL64",
            Kind::Decimal128 => "PN_DECIMAL128",
            Kind::Char => "PN_CHAR",
            Kind::Timestamp => "PN_TIMESTAMP",
            Kind::Uuid => "PN_UUID",
            Kind::Binary => "PN_BINARY",
            Kind::String => "PN_STRING",
            Kind::Symbol => "PN_SYMBOL",
            Kind::List => "PN_LIST",
            Kind::Map => "PN_MAP",
            Kind::Array => "PN_ARRAY",
        }
    }
}

/// An array: elements all of one type, optionally all described by one descriptor.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The descriptor shared by every element (arrays of described types), if any.
    pub descriptor: Option<Descriptor>,
    /// The elements' primitive type.
    pub kind: Kind,
    /// The elements (undescribed; `descriptor` applies to each).
    pub items: Vec<Value>,
}

/// Any AMQP 1.0 value.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Value {
    Null,
    Bool(bool),
    Ubyte(u8),
    Ushort(u16),
    Uint(u32),
    Ulong(u64),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    /// IEEE 754 decimal32, raw bits.
    Decimal32(u32),
    /// IEEE 754 decimal64, raw bits.
    Decimal64(u64),
    /// IEEE 754 decimal128, raw bytes (big-endian).
    Decimal128([u8; 16]),
    Char(char),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
    Binary(Bytes),
    String(Str),
    Symbol(Symbol),
    List(Vec<Value>),
    /// Key/value pairs in wire order (keys need not be strings or unique).
    Map(Vec<(Value, Value)>),
    Array(Box<Array>),
    Described(Box<Described>),
}

impl Value {
    /// The primitive type, or `None` for a described value.
    pub fn kind(&self) -> Option<Kind> {
        Some(match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Boolean,
            Value::Ubyte(_) => Kind::Ubyte,
            Value::Ushort(_) => Kind::Ushort,
            Value::Uint(_) => Kind::Uint,
            Value::Ulong(_) => Kind::Ulong,
            Value::Byte(_) => Kind::Byte,
            Value::Short(_) => Kind::Short,
            Value::Int(_) => Kind::Int,
            Value::Long(_) => Kind::Long,
            Value::Float(_) => Kind::Float,
            Value::Double(_) => Kind::Double,
            Value::Decimal32(_) => Kind::Decimal32,
            Value::Decimal64(_) => Kind::Decimal64,
            Value::Decimal128(_) => Kind::Decimal128,
            Value::Char(_) => Kind::Char,
            Value::Timestamp(_) => Kind::Timestamp,
            Value::Uuid(_) => Kind::Uuid,
            Value::Binary(_) => Kind::Binary,
            Value::String(_) => Kind::String,
            Value::Symbol(_) => Kind::Symbol,
            Value::List(_) => Kind::List,
            Value::Map(_) => Kind::Map,
            Value::Array(_) => Kind::Array,
            Value::Described(_) => return None,
        })
    }

    /// The type's name for error messages ("described" for described values).
    pub fn type_name(&self) -> &'static str {
        self.kind().map_or("described", Kind::name)
    }

    /// True for `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The described value's parts, if this is one.
    pub fn as_described(&self) -> Option<&Described> {
        match self {
            Value::Described(d) => Some(d),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

fn too_deep(r: &Reader) -> DecodeError {
    r.error(ErrorKind::TooDeep(MAX_DEPTH))
}

/// Decode one value (constructor included) from `r`.
pub fn decode(r: &mut Reader) -> Result<Value, DecodeError> {
    decode_at(r, 0)
}

/// Decode one value at nesting `depth`.
pub fn decode_at(r: &mut Reader, depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(too_deep(r));
    }
    if let Some((v, n)) = fixed_scalar(r.unread()) {
        r.skip(n)?;
        return Ok(v);
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
        items.push(decode_at(r, depth + 1)?);
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

// ---------------------------------------------------------------------------------------------
// Encoding

/// Why a value could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// An array element does not have the array's element type.
    #[error("array element of type {found} in an array of {expected}")]
    MixedArray {
        /// The array's element type.
        expected: &'static str,
        /// The offending element's type.
        found: &'static str,
    },
    /// A compound larger than 2^32 - 1 bytes or elements.
    #[error("value too large to encode")]
    TooLarge,
}

fn len32(n: usize) -> Result<u32, EncodeError> {
    u32::try_from(n).map_err(|_| EncodeError::TooLarge)
}

impl Value {
    /// Append this value's smallest encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        use code::*;
        match self {
            Value::Null => out.push(NULL),
            Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
            Value::Ubyte(v) => out.extend_from_slice(&[UBYTE, *v]),
            Value::Ushort(v) => {
                out.push(USHORT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Uint(0) => out.push(UINT0),
            Value::Uint(v) if *v < 256 => out.extend_from_slice(&[SMALLUINT, *v as u8]),
            Value::Uint(v) => {
                out.push(UINT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Ulong(0) => out.push(ULONG0),
            Value::Ulong(v) if *v < 256 => out.extend_from_slice(&[SMALLULONG, *v as u8]),
            Value::Ulong(v) => {
                out.push(ULONG);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Byte(v) => out.extend_from_slice(&[BYTE, *v as u8]),
            Value::Short(v) => {
                out.push(SHORT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Int(v) if i8::try_from(*v).is_ok() => {
                out.extend_from_slice(&[SMALLINT, *v as i8 as u8])
            }
            Value::Int(v) => {
                out.push(INT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Long(v) if i8::try_from(*v).is_ok() => {
                out.extend_from_slice(&[SMALLLONG, *v as i8 as u8])
            }
            Value::Long(v) => {
                out.push(LONG);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Binary(b) => encode_var(out, VBIN8, VBIN32, b)?,
            Value::String(s) => encode_var(out, STR8, STR32, s.as_bytes())?,
            Value::Symbol(s) => encode_var(out, SYM8, SYM32, s.0.as_bytes())?,
            Value::List(items) if items.is_empty() => out.push(LIST0),
            Value::List(items) => {
                let mut body = Vec::new();
                for v in items {
                    v.encode(&mut body)?;
                }
                encode_compound(out, LIST8, LIST32, items.len(), &body)?;
            }
            Value::Map(pairs) => {
                let mut body = Vec::new();
                for (k, v) in pairs {
                    k.encode(&mut body)?;
                    v.encode(&mut body)?;
                }
                encode_compound(out, MAP8, MAP32, pairs.len().saturating_mul(2), &body)?;
            }
            Value::Array(a) => {
                let mut body = Vec::new();
                a.encode_elements(&mut body)?;
                encode_compound(out, ARRAY8, ARRAY32, a.items.len(), &body)?;
            }
            Value::Described(d) => {
                out.push(DESCRIBED);
                d.descriptor.encode(out)?;
                d.value.encode(out)?;
            }
            other => {
                // Fixed-width types with one encoding each.
                out.push(fixed_code(other));
                encode_fixed_body(other, out);
            }
        }
        Ok(())
    }

    /// This value's encoding as a new buffer.
    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }
}

impl Descriptor {
    /// Append the descriptor's encoding (without the 0x00 constructor).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Descriptor::Code(c) => Value::Ulong(*c).encode(out),
            Descriptor::Name(s) => Value::Symbol(s.clone()).encode(out),
        }
    }
}

fn fixed_code(v: &Value) -> u8 {
    use code::*;
    match v {
        Value::Float(_) => FLOAT,
        Value::Double(_) => DOUBLE,
        Value::Decimal32(_) => DECIMAL32,
        Value::Decimal64(_) => DECIMAL64,
        Value::Decimal128(_) => DECIMAL128,
        Value::Char(_) => CHAR,
        Value::Timestamp(_) => TIMESTAMP,
        Value::Uuid(_) => UUID,
        _ => NULL,
    }
}

fn encode_fixed_body(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Float(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
        Value::Double(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
        Value::Decimal32(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Decimal64(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Decimal128(d) => out.extend_from_slice(d),
        Value::Char(c) => out.extend_from_slice(&u32::from(*c).to_be_bytes()),
        Value::Timestamp(t) => out.extend_from_slice(&t.to_be_bytes()),
        Value::Uuid(u) => out.extend_from_slice(u),
        _ => {}
    }
}

fn encode_var(out: &mut Vec<u8>, c8: u8, c32: u8, b: &[u8]) -> Result<(), EncodeError> {
    if let Ok(n) = u8::try_from(b.len()) {
        out.extend_from_slice(&[c8, n]);
    } else {
        out.push(c32);
        out.extend_from_slice(&len32(b.len())?.to_be_bytes());
    }
    out.extend_from_slice(b);
    Ok(())
}

fn encode_compound(
    out: &mut Vec<u8>,
    c8: u8,
    c32: u8,
    count: usize,
    body: &[u8],
) -> Result<(), EncodeError> {
    match (u8::try_from(count), u8::try_from(body.len() + 1)) {
        (Ok(n), Ok(size)) => out.extend_from_slice(&[c8, size, n]),
        _ => {
            out.push(c32);
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(count)?.to_be_bytes());
        }
    }
    out.extend_from_slice(body);
    Ok(())
}

impl Array {
    /// The element format code this encoder uses for the array's elements.
    fn element_code(&self) -> u8 {
        use code::*;
        let all = |f: fn(&Value) -> bool| self.items.iter().all(f);
        match self.kind {
            Kind::Null => NULL,
            Kind::Boolean => BOOLEAN,
            Kind::Ubyte => UBYTE,
            Kind::Ushort => USHORT,
            Kind::Uint => UINT,
            Kind::Ulong => ULONG,
            Kind::Byte => BYTE,
            Kind::Short => SHORT,
            Kind::Int => INT,
            Kind::Long => LONG,
            Kind::Float => FLOAT,
            Kind::Double => DOUBLE,
            Kind::Decimal32 => DECIMAL32,
            Kind::Decimal64 => DECIMAL64,
            Kind::Decimal128 => DECIMAL128,
            Kind::Char => CHAR,
            Kind::Timestamp => TIMESTAMP,
            Kind::Uuid => UUID,
            Kind::Binary if all(|v| matches!(v, Value::Binary(b) if b.len() < 256)) => VBIN8,
            Kind::Binary => VBIN32,
            Kind::String if all(|v| matches!(v, Value::String(s) if s.len() < 256)) => STR8,
            Kind::String => STR32,
            Kind::Symbol if all(|v| matches!(v, Value::Symbol(s) if s.0.len() < 256)) => SYM8,
            Kind::Symbol => SYM32,
            Kind::List => LIST32,
            Kind::Map => MAP32,
            Kind::Array => ARRAY32,
        }
    }

    /// Encode the element constructor and the elements (the part after count).
    fn encode_elements(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if let Some(d) = &self.descriptor {
            out.push(code::DESCRIBED);
            d.encode(out)?;
        }
        let ec = self.element_code();
        out.push(ec);
        for item in &self.items {
            if item.kind() != Some(self.kind) {
                return Err(EncodeError::MixedArray {
                    expected: self.kind.name(),
                    found: item.type_name(),
                });
            }
            encode_element(item, ec, out)?;
        }
        Ok(())
    }
}

/// Encode one array element's body under element code `ec` (no constructor).
fn encode_element(v: &Value, ec: u8, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    use code::*;
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Ubyte(x) => out.push(*x),
        Value::Ushort(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Uint(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Ulong(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Byte(x) => out.push(*x as u8),
        Value::Short(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Int(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Long(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Binary(b) => var_body(out, ec == VBIN8, b)?,
        Value::String(s) => var_body(out, ec == STR8, s.as_bytes())?,
        Value::Symbol(s) => var_body(out, ec == SYM8, s.0.as_bytes())?,
        Value::List(items) => {
            let mut body = Vec::new();
            for i in items {
                i.encode(&mut body)?;
            }
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(items.len())?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Map(pairs) => {
            let mut body = Vec::new();
            for (k, x) in pairs {
                k.encode(&mut body)?;
                x.encode(&mut body)?;
            }
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(pairs.len().saturating_mul(2))?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Array(a) => {
            let mut body = Vec::new();
            a.encode_elements(&mut body)?;
            out.extend_from_slice(&len32(body.len() + 4)?.to_be_bytes());
            out.extend_from_slice(&len32(a.items.len())?.to_be_bytes());
            out.extend_from_slice(&body);
        }
        Value::Described(_) => {
            return Err(EncodeError::MixedArray {
                expected: "primitive",
                found: "described",
            });
        }
        other => encode_fixed_body(other, out),
    }
    Ok(())
}

fn var_body(out: &mut Vec<u8>, short: bool, b: &[u8]) -> Result<(), EncodeError> {
    if short {
        out.push(u8::try_from(b.len()).map_err(|_| EncodeError::TooLarge)?);
    } else {
        out.extend_from_slice(&len32(b.len())?.to_be_bytes());
    }
    out.extend_from_slice(b);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Text rendering (Qpid Proton's inspect style)

/// Binaries longer than this are cut short in text rendering.
pub const TEXT_BINARY_MAX: usize = 64;

fn quote_into(out: &mut String, bytes: &[u8], is_text: bool) {
    out.push('"');
    if is_text && let Ok(s) = std::str::from_utf8(bytes) {
        // Runs of plain text go in whole; the escaped characters are all ASCII, so the runs
        // split on char boundaries.
        let mut start = 0;
        for (i, b) in s.bytes().enumerate() {
            if !(b < 0x20 || b == 0x7f || b == b'"' || b == b'\\') {
                continue;
            }
            out.push_str(s.get(start..i).unwrap_or_default());
            match b {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                _ => {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            start = i + 1;
        }
        out.push_str(s.get(start..).unwrap_or_default());
        out.push('"');
        return;
    }
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
}

fn symbol_into(out: &mut String, s: &str) {
    out.push(':');
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/'))
    {
        out.push_str(s);
    } else {
        quote_into(out, s.as_bytes(), true);
    }
}

/// Format a UUID as 8-4-4-4-12 lowercase hex.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h = hex::encode(u);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

impl Descriptor {
    /// Proton-style descriptor text: `amqp:open:list` style symbols as `:name`, codes in hex.
    pub fn render_into(&self, out: &mut String) {
        match self {
            Descriptor::Code(c) => {
                let _ = write!(out, "0x{c:x}");
            }
            Descriptor::Name(s) => symbol_into(out, s.as_str()),
        }
    }
}

impl Value {
    /// Append the value in Proton's inspect syntax. Known composites render with field names.
    pub fn render_into(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Ubyte(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Ushort(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Uint(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Ulong(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Byte(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Short(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Int(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Long(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Value::Float(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Double(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Decimal32(v) => {
                let _ = write!(out, "D32(0x{v:08x})");
            }
            Value::Decimal64(v) => {
                let _ = write!(out, "D64(0x{v:016x})");
            }
            Value::Decimal128(v) => {
                let _ = write!(out, "D128(0x{})", hex::encode(v));
            }
            Value::Char(c) => {
                let _ = write!(out, "{c:?}");
            }
            Value::Timestamp(t) => {
                let _ = write!(out, "@timestamp({t})");
            }
            Value::Uuid(u) => {
                let _ = write!(out, "UUID({})", uuid_string(u));
            }
            Value::Binary(b) => {
                out.push('b');
                let cut = b.len().min(TEXT_BINARY_MAX);
                quote_into(out, b.get(..cut).unwrap_or_default(), false);
                if b.len() > cut {
                    let _ = write!(out, "...({} bytes)", b.len());
                }
            }
            Value::String(s) => quote_into(out, s.as_bytes(), true),
            Value::Symbol(s) => symbol_into(out, s.as_str()),
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.render_into(out);
                }
                out.push(']');
            }
            Value::Map(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.render_into(out);
                    out.push('=');
                    v.render_into(out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('@');
                if let Some(d) = &a.descriptor {
                    d.render_into(out);
                    out.push(' ');
                }
                out.push_str(a.kind.pn_name());
                out.push('[');
                for (i, v) in a.items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.render_into(out);
                }
                out.push(']');
            }
            Value::Described(d) => super::render::described_into(d, out),
        }
    }

    /// The value in Proton's inspect syntax.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.render_into(&mut s);
        s
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

// ---------------------------------------------------------------------------------------------
// JSON rendering

/// Binaries longer than this are cut short in JSON (with their full `len` stated).
pub const JSON_BINARY_MAX: usize = 64;

/// `{"binary": "<hex>"}`, or `{"binary": "<hex of first max>", "len": N}` when longer.
pub fn write_binary<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], max: usize) {
    o.begin_object();
    write_binary_entries(o, b, max);
    o.end_object();
}

/// The entries of [`write_binary`], written into an object open in `o`.
pub fn write_binary_entries<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], max: usize) {
    o.key("binary");
    o.hex(b.get(..max).unwrap_or(b));
    if b.len() > max {
        o.entry_u64("len", b.len() as u64);
    }
}

fn write_float<O: JsonOut + ?Sized>(o: &mut O, v: f64) {
    if v.is_nan() {
        o.str("NaN");
    } else if v.is_infinite() {
        o.str(if v > 0.0 { "inf" } else { "-inf" });
    } else {
        o.f64(v);
    }
}

/// RFC 3339 UTC text for a millisecond timestamp (empty when out of range).
pub fn timestamp_utc(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl Descriptor {
    /// The descriptor as JSON: its code as a number, or its symbol as a string.
    pub fn write_json<O: JsonOut + ?Sized>(&self, o: &mut O) {
        match self {
            Descriptor::Code(c) => o.u64(*c),
            Descriptor::Name(s) => o.str(s.as_str()),
        }
    }
}

/// A map whose keys are all symbols or strings as a plain JSON object; otherwise the generic
/// `{"map": [[k, v], ...]}` form.
pub fn write_fields_map<O: JsonOut + ?Sized>(o: &mut O, pairs: &[(Value, Value)]) {
    let keyed = pairs
        .iter()
        .all(|(k, _)| matches!(k, Value::Symbol(_) | Value::String(_)));
    if !keyed {
        return write_map(o, pairs);
    }
    o.begin_object();
    for (k, v) in pairs {
        o.key(match k {
            Value::Symbol(s) => s.as_str(),
            Value::String(s) => s.as_str(),
            _ => "",
        });
        v.write_json(o);
    }
    o.end_object();
}

/// `{"map": [[k, v], ...]}`.
fn write_map<O: JsonOut + ?Sized>(o: &mut O, pairs: &[(Value, Value)]) {
    o.begin_object();
    o.key("map");
    o.begin_array();
    for (k, v) in pairs {
        o.begin_array();
        k.write_json(o);
        v.write_json(o);
        o.end_array();
    }
    o.end_array();
    o.end_object();
}

impl Value {
    /// The value as JSON, per the project's JSON shape (HELPERS.md).
    pub fn to_json(&self) -> serde_json::Value {
        to_value(|o| self.write_json(o))
    }

    /// [`Value::to_json`], written to `o`.
    pub fn write_json<O: JsonOut + ?Sized>(&self, o: &mut O) {
        match self {
            Value::Null => o.null(),
            Value::Bool(b) => o.bool(*b),
            Value::Ubyte(v) => o.u64((*v).into()),
            Value::Ushort(v) => o.u64((*v).into()),
            Value::Uint(v) => o.u64((*v).into()),
            Value::Ulong(v) => o.u64(*v),
            Value::Byte(v) => o.i64((*v).into()),
            Value::Short(v) => o.i64((*v).into()),
            Value::Int(v) => o.i64((*v).into()),
            Value::Long(v) => o.i64(*v),
            Value::Float(v) => write_float(o, f64::from(*v)),
            Value::Double(v) => write_float(o, *v),
            Value::Decimal32(v) => {
                o.begin_object();
                o.key("decimal32");
                o.str_fmt(format_args!("0x{v:08x}"));
                o.end_object();
            }
            Value::Decimal64(v) => {
                o.begin_object();
                o.key("decimal64");
                o.str_fmt(format_args!("0x{v:016x}"));
                o.end_object();
            }
            Value::Decimal128(v) => {
                o.begin_object();
                o.key("decimal128");
                o.str_fmt(format_args!("0x{}", hex::encode(v)));
                o.end_object();
            }
            Value::Char(c) => o.str(c.encode_utf8(&mut [0; 4])),
            Value::Timestamp(t) => {
                o.begin_object();
                o.key("timestamp");
                o.i64(*t);
                o.entry_str("utc", &timestamp_utc(*t));
                o.end_object();
            }
            Value::Uuid(u) => o.str(&uuid_string(u)),
            Value::Binary(b) => write_binary(o, b, JSON_BINARY_MAX),
            Value::String(s) => o.str(s.as_str()),
            Value::Symbol(s) => {
                o.begin_object();
                o.entry_str("symbol", s.as_str());
                o.end_object();
            }
            Value::List(items) => {
                o.begin_array();
                for v in items {
                    v.write_json(o);
                }
                o.end_array();
            }
            Value::Map(pairs) => write_map(o, pairs),
            Value::Array(a) => {
                o.begin_array();
                for v in &a.items {
                    match &a.descriptor {
                        None => v.write_json(o),
                        Some(d) => super::render::write_described(o, d, v),
                    }
                }
                o.end_array();
            }
            Value::Described(d) => super::render::write_described(o, &d.descriptor, &d.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
