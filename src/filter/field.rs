//! Field terms of the filter language (`handle:1`, `delivery-id:2`, `settled:false`,
//! `source.address:orders`, `routing-key:invoices`): a field of the decoded frame, looked up by
//! its spec name in the frame's typed fields. Nothing is decoded again: an AMQP 1.0 frame's
//! composite holds its fields as values, a 0-9-1 method its arguments, a content header its
//! properties.
//!
//! How a value matches: a number equals the number given (decimal or `0x` hex) or lies in the
//! range `a..b` (inclusive); a boolean equals `true` / `false`; a restricted value also matches
//! by the spec's name for it (`role:receiver`, `rcv-settle-mode:second`); a string or symbol
//! contains the text given (case-insensitive); binary (a delivery tag) equals the hex given; a
//! described value matches the name of its type (`state:accepted`), and `a.b` names field `b`
//! of the described value in field `a`; an array matches when any element does. An AMQP 1.0
//! field that is absent matches only the default the spec gives it.
//!
//! A number no field of that name can hold (`handle:-1`, `delivery-tag:18446744073709551616`)
//! is refused when the filter is parsed, as `channel:70000` is, rather than matching nothing.

use crate::codec::amqp10::composite::{self, CompositeDef, FieldDef, FieldType};
use crate::codec::amqp10::value::Kind;
use crate::codec::amqp10::{self, Descriptor, Value};
use crate::codec::amqp091::{self, WireType};
use crate::protocol::AnyFrame;
use crate::protocol::amqp10::Amqp10;
use crate::protocol::amqp091::Amqp091;

use super::FilterError;
use super::register::{Choices, Filtered};

/// One value a field term accepts, parsed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The text, lower-case.
    text: String,
    /// The number (or inclusive range) it reads as.
    range: Option<(i128, i128)>,
}

impl Wanted {
    /// `text` as a field value to match.
    pub fn new(text: &str) -> Wanted {
        let text = text.to_lowercase();
        let range = match text.split_once("..") {
            Some((a, b)) => number(a).zip(number(b)),
            None => number(&text).map(|n| (n, n)),
        };
        Wanted { text, range }
    }

    /// The text given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it reads as a number (or range) that holds `n`.
    pub fn number(&self, n: i128) -> bool {
        self.range.is_some_and(|(a, b)| a <= n && n <= b)
    }

    /// Whether `s` contains it (case-insensitive).
    pub fn string(&self, s: &str) -> bool {
        super::contains_ci(s, &self.text)
    }

    fn boolean(&self, b: bool) -> bool {
        self.text == if b { "true" } else { "false" }
    }

    fn binary(&self, b: &[u8]) -> bool {
        let t = self.text.strip_prefix("0x").unwrap_or(&self.text);
        hex::decode(t).is_ok_and(|want| want == b)
    }
}

fn number(s: &str) -> Option<i128> {
    match s.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// What every field of one name holds, across both protocols, when each holds numbers or
/// binary: the smallest and largest number any of them holds, and whether one is binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Numeric {
    lo: i128,
    hi: i128,
    binary: bool,
}

/// One field's type: `Some(Some((lo, hi)))` a number in that range, `Some(None)` binary, `None`
/// anything else (text, booleans, described values, `*`).
pub type Holds = Option<Option<(i128, i128)>>;

fn holds10(ty: FieldType) -> Holds {
    let FieldType::Prim(kind) = ty else {
        return None;
    };
    let range = match kind {
        Kind::Ubyte => (0, u8::MAX.into()),
        Kind::Ushort => (0, u16::MAX.into()),
        Kind::Uint => (0, u32::MAX.into()),
        Kind::Ulong => (0, u64::MAX.into()),
        Kind::Byte => (i8::MIN.into(), i8::MAX.into()),
        Kind::Short => (i16::MIN.into(), i16::MAX.into()),
        Kind::Int => (i32::MIN.into(), i32::MAX.into()),
        Kind::Long | Kind::Timestamp => (i64::MIN.into(), i64::MAX.into()),
        Kind::Binary => return Some(None),
        _ => return None,
    };
    Some(Some(range))
}

fn holds091(ty: WireType) -> Holds {
    let max: u64 = match ty {
        WireType::Octet => u8::MAX.into(),
        WireType::Short => u16::MAX.into(),
        WireType::Long => u32::MAX.into(),
        WireType::LongLong | WireType::Timestamp => u64::MAX,
        _ => return None,
    };
    Some(Some((0, max.into())))
}

/// What the fields called `name` hold, when every one of them holds numbers or binary.
fn numeric(name: &str) -> Option<Numeric> {
    let mut out: Option<Numeric> = None;
    for holds in super::register::holds(name) {
        let acc = out.get_or_insert(Numeric {
            lo: 0,
            hi: 0,
            binary: false,
        });
        match holds? {
            Some((lo, hi)) => {
                acc.lo = acc.lo.min(lo);
                acc.hi = acc.hi.max(hi);
            }
            None => acc.binary = true,
        }
    }
    out
}

/// Whether `text` is written as a number or a range of numbers (`12`, `-1`, `0x1f`, `2..4`),
/// whether or not it fits in one.
fn looks_numeric(text: &str) -> bool {
    let one = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s);
        match s.strip_prefix("0x") {
            Some(h) => !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()),
            None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
        }
    };
    match text.split_once("..") {
        Some((a, b)) => one(a) && one(b),
        None => one(text),
    }
}

/// Refuses a value `w` of field `path` (`text` as typed) that is a number no field of that
/// name holds: `handle:-1`, `delivery-tag:18446744073709551616` (a 0-9-1 delivery tag is a
/// longlong; an AMQP 1.0 one is binary, written `0x` and hex to be taken as such).
pub(super) fn check_range(path: &str, text: &str, w: &Wanted) -> Result<(), FilterError> {
    let name = path.rsplit('.').next().unwrap_or(path);
    let Some(holds) = numeric(name) else {
        return Ok(());
    };
    let as_binary = holds.binary && w.text.starts_with("0x");
    let fits = match w.range {
        Some((a, b)) => a <= holds.hi && b >= holds.lo,
        None => !looks_numeric(&w.text),
    };
    if fits || as_binary {
        return Ok(());
    }
    let mut range = format!("{}..={}", holds.lo, holds.hi);
    if holds.binary {
        range.push_str(", or binary as 0x and hex digits");
    }
    Err(FilterError::OutOfRange {
        key: path.to_string(),
        value: text.to_string(),
        range,
    })
}

/// Refuses a value `w` of field `path` that no field of that name can match, when every such
/// field is restricted to values the spec names (`role:recever`, `rcv-settle-mode:frist`):
/// a text that is none of those names or values, no number and not `null`, and names the
/// closest there is.
pub(super) fn check_choice(path: &str, w: &Wanted) -> Result<(), FilterError> {
    let name = path.rsplit('.').next().unwrap_or(path);
    let fields = super::register::choices(name);
    if fields.is_empty() || fields.iter().any(Option::is_none) {
        return Ok(());
    }
    if w.range.is_some() || w.text == "null" {
        return Ok(());
    }
    let mut known: Vec<&'static str> = fields
        .iter()
        .flatten()
        .flatten()
        .flat_map(|&(n, v)| [n, v])
        .collect();
    known.sort_unstable();
    known.dedup();
    if known.iter().any(|k| k.eq_ignore_ascii_case(&w.text)) {
        return Ok(());
    }
    Err(FilterError::UnknownValue {
        key: path.to_string(),
        value: w.text.clone(),
        suggestion: super::closest(&w.text, &known),
    })
}

/// The spec's names for the values of the fields called `name` (`role`: `receiver`,
/// `sender`), for completion; empty when none has such names.
pub(super) fn choice_names(name: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = super::register::choices(name)
        .into_iter()
        .flatten()
        .flatten()
        .map(|(n, _)| n)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The name of every field of a frame of any registered protocol, sorted, each once: the keys
/// a field term takes besides the built-in ones.
pub fn field_names() -> Vec<&'static str> {
    super::register::all_field_names()
}

/// Whether `name` (a field path, `a.b`) names a field some frame of a registered protocol
/// has: a key the filter takes as a field term. Only the first segment is checked.
pub fn is_field_name(path: &str) -> bool {
    let first = path.split('.').next().unwrap_or(path);
    field_names().binary_search(&first).is_ok()
}

/// The text of field `name` of `frame` when it holds a string or symbol (a 0-9-1 method's
/// `queue`, an AMQP 1.0 frame's `name`), lossily decoded; for completion of names seen.
pub fn text_field(frame: &AnyFrame, name: &str) -> Option<String> {
    super::register::text_field(frame, name)
}

/// Whether `frame` has a field at `path` whose value matches one of `wanted`.
pub(super) fn matches(frame: &AnyFrame, path: &[String], wanted: &[Wanted]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    super::register::matches(frame, first, rest, wanted)
}

/// The AMQP 1.0 fields called `name`, of every composite.
fn defs10(name: &str) -> impl Iterator<Item = &'static FieldDef> + '_ {
    composite::ALL
        .iter()
        .flat_map(|d| d.fields.iter())
        .filter(move |f| f.name == name)
}

/// The AMQP 0-9-1 method arguments and content properties called `name`.
fn args091(name: &str) -> impl Iterator<Item = &'static amqp091::ArgDef> + '_ {
    amqp091::METHODS
        .iter()
        .flat_map(|m| m.args.iter())
        .chain(amqp091::CLASSES.iter().flat_map(|c| c.properties.iter()))
        .filter(move |a| a.name == name)
}

impl Filtered for Amqp10 {
    fn field_names() -> Vec<&'static str> {
        composite::ALL
            .iter()
            .flat_map(|d| d.fields.iter().map(|f| f.name))
            .collect()
    }
    fn holds(name: &str) -> Vec<Holds> {
        defs10(name).map(|f| holds10(f.ty)).collect()
    }
    fn choices(name: &str) -> Vec<Choices> {
        defs10(name)
            .map(|f| {
                (!f.choices.is_empty())
                    .then(|| f.choices.iter().map(|c| (c.name, c.value)).collect())
            })
            .collect()
    }
    fn text_field(f: &amqp10::Frame, name: &str) -> Option<String> {
        let c = f.composite()?;
        match c.fields(&f.raw).get(c.def.field_index(name)?)? {
            Value::String(s) => Some(s.as_str().to_owned()),
            Value::Symbol(s) => Some(s.as_str().to_owned()),
            _ => None,
        }
    }
    fn matches(f: &amqp10::Frame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool {
        f.composite()
            .is_some_and(|c| field10(c.def, &c.fields(&f.raw), first, rest, wanted))
    }
}

impl Filtered for Amqp091 {
    fn holds(name: &str) -> Vec<Holds> {
        args091(name).map(|a| holds091(a.ty)).collect()
    }
    fn choices(name: &str) -> Vec<Choices> {
        args091(name).map(|_| None).collect()
    }
    fn field_names() -> Vec<&'static str> {
        amqp091::METHODS
            .iter()
            .flat_map(|m| m.args.iter().map(|a| a.name))
            .chain(
                amqp091::CLASSES
                    .iter()
                    .flat_map(|c| c.properties.iter().map(|p| p.name)),
            )
            .collect()
    }
    fn text_field(f: &amqp091::Frame, name: &str) -> Option<String> {
        match f.method()?.arg(name)? {
            amqp091::Value::ShortStr(b) | amqp091::Value::LongStr(b) => {
                Some(String::from_utf8_lossy(b).into_owned())
            }
            _ => None,
        }
    }
    fn matches(f: &amqp091::Frame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool {
        if !rest.is_empty() {
            return false;
        }
        let v = f
            .method()
            .and_then(|m| m.arg(first))
            .or_else(|| f.content_header().and_then(|h| h.get(first)));
        v.is_some_and(|v| wanted.iter().any(|w| value091(v, w)))
    }
}

/// Field `name` of a composite of type `def` with field values `fields`, then `rest` inside it.
fn field10(
    def: &CompositeDef,
    fields: &[Value],
    name: &str,
    rest: &[String],
    wanted: &[Wanted],
) -> bool {
    let Some(i) = def.field_index(name) else {
        return false;
    };
    let fd = &def.fields[i];
    match fields.get(i).filter(|v| !v.is_null()) {
        Some(v) => match rest.split_first() {
            None => wanted.iter().any(|w| value10(v, Some(fd), w)),
            Some((next, rest)) => inner10(v, next, rest, wanted),
        },
        None if rest.is_empty() => fd
            .default
            .is_some_and(|d| wanted.iter().any(|w| default10(d, fd, w))),
        None => false,
    }
}

/// Field `name` (then `rest`) of the described composite `v`.
fn inner10(v: &Value, name: &str, rest: &[String], wanted: &[Wanted]) -> bool {
    let Some(d) = v.as_described() else {
        return false;
    };
    let (Some(def), Value::List(items)) = (composite::lookup_descriptor(&d.descriptor), &d.value)
    else {
        return false;
    };
    field10(def, items, name, rest, wanted)
}

/// A field's spec default (as the spec writes it) against a wanted value.
fn default10(default: &str, fd: &FieldDef, w: &Wanted) -> bool {
    let d = default.to_lowercase();
    w.text == d
        || number(&d).is_some_and(|n| w.number(n))
        || fd
            .choices
            .iter()
            .any(|c| c.value == default && c.name == w.text)
}

fn value10(v: &Value, fd: Option<&FieldDef>, w: &Wanted) -> bool {
    if fd
        .and_then(|fd| fd.choice_name(v))
        .is_some_and(|c| c == w.text)
    {
        return true;
    }
    match v {
        Value::Null => w.text == "null",
        Value::Bool(b) => w.boolean(*b),
        Value::Ubyte(x) => w.number((*x).into()),
        Value::Ushort(x) => w.number((*x).into()),
        Value::Uint(x) => w.number((*x).into()),
        Value::Ulong(x) => w.number((*x).into()),
        Value::Byte(x) => w.number((*x).into()),
        Value::Short(x) => w.number((*x).into()),
        Value::Int(x) => w.number((*x).into()),
        Value::Long(x) | Value::Timestamp(x) => w.number((*x).into()),
        Value::Char(c) => w.string(c.encode_utf8(&mut [0; 4])),
        Value::String(s) => w.string(s.as_str()),
        Value::Symbol(s) => w.string(s.as_str()),
        Value::Binary(b) => w.binary(b),
        Value::Uuid(u) => w.string(&crate::codec::amqp10::value::uuid_string(u)),
        Value::Array(a) => a.items.iter().any(|x| value10(x, None, w)),
        Value::List(items) => items.iter().any(|x| value10(x, None, w)),
        Value::Described(d) => {
            let name = composite::lookup_descriptor(&d.descriptor).map(|def| def.name);
            let sym = match &d.descriptor {
                Descriptor::Name(s) => Some(s.as_str()),
                Descriptor::Code(_) => None,
            };
            name.or(sym).is_some_and(|n| w.string(n)) || value10(&d.value, None, w)
        }
        _ => false,
    }
}

fn value091(v: &amqp091::Value, w: &Wanted) -> bool {
    use amqp091::Value as V;
    match v {
        V::Bit(b) => w.boolean(*b),
        V::ShortStr(b) | V::LongStr(b) => w.string(&String::from_utf8_lossy(b)),
        V::Table(_) => false,
        other => other.as_u64().is_some_and(|n| w.number(n.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_decimal_hex_or_an_inclusive_range() {
        let w = Wanted::new("0x10");
        assert!(w.number(16));
        let r = Wanted::new("2..4");
        assert!(r.number(2) && r.number(4) && !r.number(5));
        assert!(!Wanted::new("orders").number(0));
    }

    #[test]
    fn numbers_no_field_of_the_name_holds_are_refused() {
        let refused = |path: &str, text: &str| check_range(path, text, &Wanted::new(text)).is_err();
        // 0-9-1 delivery-tag is a longlong; 1.0's is binary, taken as such with `0x`.
        assert!(!refused("delivery-tag", "18446744073709551615"));
        assert!(refused("delivery-tag", "18446744073709551616"));
        assert!(refused("delivery-tag", "-1"));
        assert!(!refused("delivery-tag", "0x0102030405060708090a"));
        // handle is a uint.
        assert!(!refused("handle", "4294967295"));
        assert!(refused("handle", "4294967296"));
        assert!(refused("handle", "0x100000000"));
        assert!(refused("handle", "5000000000..6000000000"));
        assert!(!refused("handle", "4294967295..6000000000"));
        assert!(refused(
            "handle",
            "99999999999999999999999999999999999999999"
        ));
        // Inner fields and restricted values by name.
        assert!(refused("source.timeout", "4294967296"));
        assert!(!refused("rcv-settle-mode", "second"));
        // Fields that hold text take any text.
        assert!(!refused("routing-key", "99999999999999999999999"));
    }

    #[test]
    fn field_names_of_both_protocols_are_known() {
        for name in [
            "handle",
            "delivery-id",
            "settled",
            "source.address",
            "delivery-tag",
            "routing-key",
            "content-type",
        ] {
            assert!(is_field_name(name), "{name}");
        }
        assert!(!is_field_name("colour"));
    }
}
