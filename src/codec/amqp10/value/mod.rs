//! The AMQP 1.0 type system: [`Value`] covering every encoding of the type reference, with a
//! decoder, an encoder, Proton-style text and JSON rendering.
//!
//! Decoding never panics, never allocates more than the remaining input justifies (counts are
//! checked against the bytes left before any `Vec` is sized), never recurses deeper than
//! [`MAX_DEPTH`], and returns typed errors at absolute offsets. Strings, symbols and binaries are
//! zero-copy `Bytes` slices of the input. Nothing here knows about frames or composites.
//!
//! This file holds the types; `decode.rs`, `encode.rs`, `text.rs` and `json.rs` each hold one
//! way of turning them into or out of something else.

use std::fmt;

use bytes::Bytes;

mod decode;
mod encode;
mod json;
mod text;

pub use decode::*;
pub(crate) use decode::{plain_scalar, plain_scalar_read};
pub use encode::*;
pub use json::*;
pub use text::*;

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
    /// The text, validated once, when the string was made.
    pub fn as_str(&self) -> &str {
        debug_assert!(std::str::from_utf8(&self.0).is_ok());
        // SAFETY: every constructor (`from_utf8`, `From<&str>`, `From<String>`, `Default`)
        // makes a `Str` of valid UTF-8 only, and nothing changes its bytes afterwards (the
        // field is private and never lent mutably).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
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
    #[inline]
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
    #[inline]
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
