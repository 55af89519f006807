//! Typed reads of a composite's field list (`&[Value]`) for the typed views.
//!
//! The lists have already been checked against their tables (types, mandatory fields), so these
//! accessors are total: a field of the wrong type reads as absent, never a panic.

use bytes::Bytes;

use super::value::{Described, Str, Symbol, Value};

/// A map in wire order (`fields`, annotations, filter sets ...).
pub type Map = Vec<(Value, Value)>;

/// Read-only typed access to the fields of one composite.
#[derive(Clone, Copy, Debug)]
pub struct FieldList<'a>(pub &'a [Value]);

impl<'a> FieldList<'a> {
    /// The fields of a described list (empty for anything else).
    pub fn of(d: &'a Described) -> Self {
        match &d.value {
            Value::List(items) => FieldList(items),
            _ => FieldList(&[]),
        }
    }
    /// Field `i`, `None` when absent or null.
    pub fn get(&self, i: usize) -> Option<&'a Value> {
        self.0.get(i).filter(|v| !v.is_null())
    }
    /// A `uint`-based field.
    pub fn uint(&self, i: usize) -> Option<u32> {
        match self.get(i)? {
            Value::Uint(v) => Some(*v),
            _ => None,
        }
    }
    /// A `ushort` field.
    pub fn ushort(&self, i: usize) -> Option<u16> {
        match self.get(i)? {
            Value::Ushort(v) => Some(*v),
            _ => None,
        }
    }
    /// A `ubyte` field.
    pub fn ubyte(&self, i: usize) -> Option<u8> {
        match self.get(i)? {
            Value::Ubyte(v) => Some(*v),
            _ => None,
        }
    }
    /// A `ulong` field.
    pub fn ulong(&self, i: usize) -> Option<u64> {
        match self.get(i)? {
            Value::Ulong(v) => Some(*v),
            _ => None,
        }
    }
    /// A `boolean` field.
    pub fn bool(&self, i: usize) -> Option<bool> {
        match self.get(i)? {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }
    /// A `string` field.
    pub fn string(&self, i: usize) -> Option<Str> {
        match self.get(i)? {
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    }
    /// A `symbol` field.
    pub fn symbol(&self, i: usize) -> Option<Symbol> {
        match self.get(i)? {
            Value::Symbol(s) => Some(s.clone()),
            _ => None,
        }
    }
    /// A `binary` field (zero-copy).
    pub fn binary(&self, i: usize) -> Option<Bytes> {
        match self.get(i)? {
            Value::Binary(b) => Some(b.clone()),
            _ => None,
        }
    }
    /// A `timestamp` field (milliseconds since the Unix epoch).
    pub fn timestamp(&self, i: usize) -> Option<i64> {
        match self.get(i)? {
            Value::Timestamp(t) => Some(*t),
            _ => None,
        }
    }
    /// A map field.
    pub fn map(&self, i: usize) -> Option<Map> {
        match self.get(i)? {
            Value::Map(m) => Some(m.clone()),
            _ => None,
        }
    }
    /// A `multiple="true"` symbol field, normalised: absent -> empty, single -> one, array -> all.
    pub fn symbols(&self, i: usize) -> Vec<Symbol> {
        match self.get(i) {
            Some(Value::Symbol(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .items
                .iter()
                .filter_map(|v| match v {
                    Value::Symbol(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
    /// Any field's value, cloned.
    pub fn value(&self, i: usize) -> Option<Value> {
        self.get(i).cloned()
    }
    /// A described field.
    pub fn described(&self, i: usize) -> Option<&'a Described> {
        self.get(i).and_then(Value::as_described)
    }
}
