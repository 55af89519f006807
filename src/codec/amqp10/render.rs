//! Rendering of composites: the one-line summary in the shape of Qpid Proton's frame trace
//! (`@attach(18) [name="x", handle=0, ...]`, null fields omitted) and the JSON objects keyed by
//! the spec's field names (HELPERS.md), both driven by the composite tables.
//!
//! Pure formatting of already-decoded values: no decoding, no I/O.

use std::fmt::Write as _;

use serde_json::{Map as JMap, Value as J};

use super::composite::{CompositeDef, FieldDef, FieldType, lookup_descriptor};
use super::value::{Described, Kind, Value, fields_map_json};

/// Append `@name(code) [field=value, ...]` (null fields omitted) for a composite.
pub fn composite_into(def: &CompositeDef, fields: &[Value], out: &mut String) {
    let _ = write!(out, "@{}({}) [", def.name, def.code);
    let mut first = true;
    for (i, v) in fields.iter().enumerate() {
        if v.is_null() {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        match def.fields.get(i) {
            Some(f) => out.push_str(f.name),
            None => {
                let _ = write!(out, "{i}");
            }
        }
        out.push('=');
        v.render_into(out);
    }
    out.push(']');
}

/// Append a described value: known composites with field names, others `@descriptor value`.
pub fn described_into(d: &Described, out: &mut String) {
    match (lookup_descriptor(&d.descriptor), &d.value) {
        (Some(def), Value::List(items)) if def.is_list() => composite_into(def, items, out),
        (Some(def), v) => {
            let _ = write!(out, "@{}({}) ", def.name, def.code);
            v.render_into(out);
        }
        (None, v) => {
            out.push('@');
            d.descriptor.render_into(out);
            out.push(' ');
            v.render_into(out);
        }
    }
}

/// One field's value as JSON: multiple fields normalised to arrays, maps with symbol/string
/// keys as plain objects, nested composites as objects with `$type`.
pub fn field_json(f: &FieldDef, v: &Value) -> J {
    if f.multiple {
        return match v {
            Value::Array(a) if a.descriptor.is_none() => {
                J::Array(a.items.iter().map(|x| single_json(f, x)).collect())
            }
            Value::Array(_) => v.to_json(),
            other => J::Array(vec![single_json(f, other)]),
        };
    }
    single_json(f, v)
}

fn single_json(f: &FieldDef, v: &Value) -> J {
    match (f.ty, v) {
        (FieldType::Fields | FieldType::Prim(Kind::Map), Value::Map(pairs)) => {
            fields_map_json(pairs)
        }
        _ => v.to_json(),
    }
}

/// A composite's fields as a JSON object keyed by spec names (absent/null fields omitted).
pub fn fields_json(def: &CompositeDef, fields: &[Value]) -> JMap<String, J> {
    let mut obj = JMap::with_capacity(fields.len());
    for (i, v) in fields.iter().enumerate() {
        if v.is_null() {
            continue;
        }
        match def.fields.get(i) {
            Some(f) => obj.insert(f.name.to_owned(), field_json(f, v)),
            None => obj.insert(i.to_string(), v.to_json()),
        };
    }
    obj
}

/// A described value as JSON: known composites as `{"$type": name, fields...}`, known
/// restricted types as `{"$type": name, "value": ...}`, others `{"descriptor", "value"}`.
pub fn described_json(d: &Described) -> J {
    match (lookup_descriptor(&d.descriptor), &d.value) {
        (Some(def), Value::List(items)) if def.is_list() => {
            let mut obj = JMap::with_capacity(items.len() + 1);
            obj.insert("$type".into(), def.name.into());
            obj.extend(fields_json(def, items));
            J::Object(obj)
        }
        (Some(def), v) => {
            let value = match v {
                Value::Map(pairs) => fields_map_json(pairs),
                other => other.to_json(),
            };
            serde_json::json!({ "$type": def.name, "value": value })
        }
        (None, v) => {
            serde_json::json!({ "descriptor": d.descriptor.to_json(), "value": v.to_json() })
        }
    }
}
