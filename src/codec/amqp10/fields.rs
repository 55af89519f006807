//! Typed reads of a composite's field list (decoded values, or a plain list still in its
//! frame's bytes) for the typed views.
//!
//! The lists have already been checked against their tables (types, mandatory fields), so these
//! accessors are total: a field of the wrong type reads as absent, never a panic.

use bytes::Bytes;

use super::encoded_fields::{EncodedFields, Scalars, outcome};
use super::value::{Described, Kind, Str, Symbol, Value};

/// A map in wire order (`fields`, annotations, filter sets ...).
pub type Map = Vec<(Value, Value)>;

/// Read-only typed access to the fields of one composite: decoded values, or a plain list
/// still in its frame's bytes ([`EncodedFields`]: nulls and plain scalars only) with the kind
/// and number of each field ([`Scalars`]), which the numbers and binaries are read from.
#[derive(Clone, Copy, Debug)]
pub enum FieldList<'a> {
    /// Decoded values.
    Values(&'a [Value]),
    /// A plain list where it lies in its frame's bytes, and what each field holds.
    Plain(&'a EncodedFields, &'a Scalars, &'a Bytes),
}

impl<'a> FieldList<'a> {
    /// The fields of a described list (empty for anything else).
    pub fn of(d: &'a Described) -> Self {
        match &d.value {
            Value::List(items) => FieldList::Values(items),
            _ => FieldList::Values(&[]),
        }
    }
    /// Field `i`, `None` when absent or null. A plain list holds no value a reference is
    /// asked for (compound or `*` fields; its empty outcomes are read with
    /// [`FieldList::described`]), so it gives `None` for every field.
    pub fn get(&self, i: usize) -> Option<&'a Value> {
        match self {
            FieldList::Values(v) => v.get(i).filter(|v| !v.is_null()),
            FieldList::Plain(..) => None,
        }
    }
    /// Field `i` read by `read`, `None` when absent or null.
    #[inline]
    fn read<T>(&self, i: usize, read: impl FnOnce(&Value) -> Option<T>) -> Option<T> {
        match self {
            FieldList::Values(v) => v.get(i).filter(|v| !v.is_null()).and_then(read),
            FieldList::Plain(e, _, raw) => e
                .value(raw, i)
                .filter(|v| !v.is_null())
                .as_ref()
                .and_then(read),
        }
    }
    /// A `uint`-based field.
    pub fn uint(&self, i: usize) -> Option<u32> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::Uint).map(|n| n as u32);
        }
        self.read(i, |v| match v {
            Value::Uint(v) => Some(*v),
            _ => None,
        })
    }
    /// A `ushort` field.
    pub fn ushort(&self, i: usize) -> Option<u16> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::Ushort).map(|n| n as u16);
        }
        self.read(i, |v| match v {
            Value::Ushort(v) => Some(*v),
            _ => None,
        })
    }
    /// A `ubyte` field.
    pub fn ubyte(&self, i: usize) -> Option<u8> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::Ubyte).map(|n| n as u8);
        }
        self.read(i, |v| match v {
            Value::Ubyte(v) => Some(*v),
            _ => None,
        })
    }
    /// A `ulong` field.
    pub fn ulong(&self, i: usize) -> Option<u64> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::Ulong);
        }
        self.read(i, |v| match v {
            Value::Ulong(v) => Some(*v),
            _ => None,
        })
    }
    /// A `boolean` field.
    pub fn bool(&self, i: usize) -> Option<bool> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::Boolean).map(|n| n != 0);
        }
        self.read(i, |v| match v {
            Value::Bool(v) => Some(*v),
            _ => None,
        })
    }
    /// A `string` field.
    pub fn string(&self, i: usize) -> Option<Str> {
        self.read(i, |v| match v {
            Value::String(s) => Some(s.clone()),
            _ => None,
        })
    }
    /// A `symbol` field.
    pub fn symbol(&self, i: usize) -> Option<Symbol> {
        self.read(i, |v| match v {
            Value::Symbol(s) => Some(s.clone()),
            _ => None,
        })
    }
    /// A `binary` field (zero-copy).
    #[inline]
    pub fn binary(&self, i: usize) -> Option<Bytes> {
        if let FieldList::Plain(e, s, raw) = self {
            return e.binary(raw, i, s.number(i, Kind::Binary)? as usize);
        }
        self.read(i, |v| match v {
            Value::Binary(b) => Some(b.clone()),
            _ => None,
        })
    }
    /// A `timestamp` field (milliseconds since the Unix epoch).
    pub fn timestamp(&self, i: usize) -> Option<i64> {
        self.read(i, |v| match v {
            Value::Timestamp(t) => Some(*t),
            _ => None,
        })
    }
    /// A map field.
    pub fn map(&self, i: usize) -> Option<Map> {
        self.read(i, |v| match v {
            Value::Map(m) => Some(m.clone()),
            _ => None,
        })
    }
    /// A `multiple="true"` symbol field, normalised: absent -> empty, single -> one, array -> all.
    pub fn symbols(&self, i: usize) -> Vec<Symbol> {
        self.read(i, |v| match v {
            Value::Symbol(s) => Some(vec![s.clone()]),
            Value::Array(a) => Some(
                a.items
                    .iter()
                    .filter_map(|v| match v {
                        Value::Symbol(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
    }
    /// Any field's value, cloned.
    pub fn value(&self, i: usize) -> Option<Value> {
        self.read(i, |v| Some(v.clone()))
    }
    /// A described field (of a plain list, an empty outcome: see [`Scalars`]).
    pub fn described(&self, i: usize) -> Option<&'a Described> {
        if let FieldList::Plain(_, s, _) = self {
            return s.number(i, Kind::List).and_then(outcome);
        }
        self.get(i).and_then(Value::as_described)
    }
}
