//! Rendering of composites: the one-line summary in the shape of Qpid Proton's frame trace
//! (`@attach(18) [name="x", handle=0, ...]`, null fields omitted) and the JSON objects keyed by
//! the spec's field names (HELPERS.md), both driven by the composite tables.
//!
//! Pure formatting of already-decoded values: no decoding, no I/O.

use super::composite::{CompositeDef, FieldDef, FieldType, lookup_descriptor};
use super::value::{Described, Descriptor, Kind, Value, write_fields_map};
use crate::json::JsonOut;

/// Append `@name(code) [field=value, ...]` (null fields omitted) for a composite.
pub fn composite_into(def: &CompositeDef, fields: &[Value], out: &mut String) {
    name_code_into(def, out);
    out.push_str(" [");
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
            None => out.push_str(itoa::Buffer::new().format(i)),
        }
        out.push('=');
        v.render_into(out);
    }
    out.push(']');
}

/// Append `@name(code)` of a described type.
fn name_code_into(def: &CompositeDef, out: &mut String) {
    out.push('@');
    out.push_str(def.name);
    out.push('(');
    out.push_str(itoa::Buffer::new().format(def.code));
    out.push(')');
}

/// Append a described value: known composites with field names, others `@descriptor value`.
pub fn described_into(d: &Described, out: &mut String) {
    match (lookup_descriptor(&d.descriptor), &d.value) {
        (Some(def), Value::List(items)) if def.is_list() => composite_into(def, items, out),
        (Some(def), v) => {
            name_code_into(def, out);
            out.push(' ');
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
pub fn write_field<O: JsonOut + ?Sized>(o: &mut O, f: &FieldDef, v: &Value) {
    if f.multiple {
        return match v {
            Value::Array(a) if a.descriptor.is_none() => {
                o.begin_array();
                for x in &a.items {
                    write_single(o, f, x);
                }
                o.end_array();
            }
            Value::Array(_) => v.write_json(o),
            other => {
                o.begin_array();
                write_single(o, f, other);
                o.end_array();
            }
        };
    }
    write_single(o, f, v);
}

fn write_single<O: JsonOut + ?Sized>(o: &mut O, f: &FieldDef, v: &Value) {
    match (f.ty, v) {
        (FieldType::Fields | FieldType::Prim(Kind::Map), Value::Map(pairs)) => {
            write_fields_map(o, pairs)
        }
        _ => v.write_json(o),
    }
}

/// A composite's fields as the entries of a JSON object keyed by spec names (absent/null
/// fields omitted), written into an object open in `o` in key order.
pub fn write_fields_entries<O: JsonOut + ?Sized>(o: &mut O, def: &CompositeDef, fields: &[Value]) {
    let known = fields.len().min(def.fields.len());
    for &i in def.key_order {
        let i = usize::from(i);
        if let (Some(f), Some(v)) = (def.fields.get(i), fields.get(i))
            && !v.is_null()
        {
            o.key(f.name);
            write_field(o, f, v);
        }
    }
    // Fields beyond the definition, keyed by position.
    for (i, v) in fields.iter().enumerate().skip(known) {
        if !v.is_null() {
            o.key(itoa::Buffer::new().format(i));
            v.write_json(o);
        }
    }
}

/// A described value as JSON: known composites as `{"$type": name, fields...}`, known
/// restricted types as `{"$type": name, "value": ...}`, others `{"descriptor", "value"}`.
pub fn write_described<O: JsonOut + ?Sized>(o: &mut O, descriptor: &Descriptor, value: &Value) {
    o.begin_object();
    match (lookup_descriptor(descriptor), value) {
        (Some(def), Value::List(items)) if def.is_list() => {
            o.entry_str("$type", def.name);
            write_fields_entries(o, def, items);
        }
        (Some(def), v) => {
            o.entry_str("$type", def.name);
            o.key("value");
            match v {
                Value::Map(pairs) => write_fields_map(o, pairs),
                other => other.write_json(o),
            }
        }
        (None, v) => {
            o.key("descriptor");
            descriptor.write_json(o);
            o.key("value");
            v.write_json(o);
        }
    }
    o.end_object();
}
