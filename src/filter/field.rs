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

use crate::codec::amqp10::composite::{self, CompositeDef, FieldDef};
use crate::codec::amqp10::{Descriptor, Value};
use crate::codec::amqp091;
use crate::protocol::AnyFrame;

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

    fn number(&self, n: i128) -> bool {
        self.range.is_some_and(|(a, b)| a <= n && n <= b)
    }

    fn string(&self, s: &str) -> bool {
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

/// Whether `name` (a field path, `a.b`) names a field some frame of either protocol has: a
/// key the filter takes as a field term. Only the first segment is checked.
pub fn is_field_name(path: &str) -> bool {
    let first = path.split('.').next().unwrap_or(path);
    composite::ALL
        .iter()
        .any(|d| d.fields.iter().any(|f| f.name == first))
        || amqp091::METHODS
            .iter()
            .any(|m| m.args.iter().any(|a| a.name == first))
        || amqp091::CLASSES
            .iter()
            .any(|c| c.properties.iter().any(|p| p.name == first))
}

/// Whether `frame` has a field at `path` whose value matches one of `wanted`.
pub(super) fn matches(frame: &AnyFrame, path: &[String], wanted: &[Wanted]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match frame {
        AnyFrame::Amqp10(f) => f
            .composite()
            .is_some_and(|c| field10(c.def, &c.fields, first, rest, wanted)),
        AnyFrame::Amqp091(f) => {
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
