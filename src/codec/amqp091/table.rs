//! The shapes of the static AMQP 0-9-1 method table (the data itself is in `generated.rs`).
//!
//! Holds only type definitions for class/method/argument descriptions; no decoding, no data.

use super::generated::MethodKind;

/// How an argument or property is laid out on the wire (a domain resolved to its base type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireType {
    /// One bit, packed with its neighbouring bits into octets (LSB first).
    Bit,
    /// u8.
    Octet,
    /// u16, big-endian.
    Short,
    /// u32, big-endian.
    Long,
    /// u64, big-endian.
    LongLong,
    /// u8 length + bytes.
    ShortStr,
    /// u32 length + bytes.
    LongStr,
    /// u32 length + field-value pairs.
    Table,
    /// u64 seconds since the epoch.
    Timestamp,
}

impl WireType {
    /// The spec's name of the type (`shortstr`, `longlong`, ...).
    pub fn spec_name(self) -> &'static str {
        match self {
            WireType::Bit => "bit",
            WireType::Octet => "octet",
            WireType::Short => "short",
            WireType::Long => "long",
            WireType::LongLong => "longlong",
            WireType::ShortStr => "shortstr",
            WireType::LongStr => "longstr",
            WireType::Table => "table",
            WireType::Timestamp => "timestamp",
        }
    }
}

/// A default value given by the spec for an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    /// A bit.
    Bool(bool),
    /// Any integer type.
    Int(u64),
    /// A shortstr/longstr.
    Str(&'static str),
    /// An empty field table.
    EmptyTable,
}

/// One method argument (or content property): its spec name, domain, and wire type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgDef {
    /// The spec's name (`routing-key`).
    pub name: &'static str,
    /// The spec's domain, or the type name when the spec gives a bare type.
    pub domain: &'static str,
    /// The wire type the domain resolves to.
    pub ty: WireType,
    /// The spec's default, if any.
    pub default: Option<DefaultValue>,
}

/// One method of one class.
#[derive(Debug, PartialEq, Eq)]
pub struct MethodDef {
    /// Which method this is.
    pub kind: MethodKind,
    /// Class id (e.g. 60 for basic).
    pub class_id: u16,
    /// Method id within the class (e.g. 40 for publish).
    pub method_id: u16,
    /// Class name (`basic`).
    pub class_name: &'static str,
    /// Method name (`publish`).
    pub method_name: &'static str,
    /// `class.method` (`basic.publish`).
    pub name: &'static str,
    /// The spec marks it synchronous (expects a reply).
    pub synchronous: bool,
    /// Content (header + body frames) follows it.
    pub content: bool,
    /// The arguments, in wire order.
    pub args: &'static [ArgDef],
    /// The positions of `args` in the byte order of their names: the order the JSON writer puts
    /// them in (JSONL keys are byte-ordered), generated so nothing sorts at run time.
    pub key_order: &'static [u8],
}

impl MethodDef {
    /// Index of the argument called `name`.
    pub fn arg_index(&self, name: &str) -> Option<usize> {
        self.args.iter().position(|a| a.name == name)
    }
}

/// One class.
#[derive(Debug, PartialEq, Eq)]
pub struct ClassDef {
    /// Class id.
    pub id: u16,
    /// Class name.
    pub name: &'static str,
    /// Its methods' index range (start, end) in `METHODS`; see [`ClassDef::methods`].
    pub method_range: (usize, usize),
    /// Content properties (only `basic` has any), in property-flag order.
    pub properties: &'static [ArgDef],
    /// The positions of `properties` in the byte order of their names (see
    /// [`MethodDef::key_order`]).
    pub property_key_order: &'static [u8],
}

impl ClassDef {
    /// Its methods, in the spec's order.
    pub fn methods(&self) -> &'static [MethodDef] {
        super::generated::METHODS
            .get(self.method_range.0..self.method_range.1)
            .unwrap_or_default()
    }
}
