//! The field tables of every described type of the spec ([`CompositeDef`], generated into
//! `tables.rs`), lookup by descriptor, and the table-driven decode + check of a described list:
//! field types, `multiple="true"` (single value or array), mandatory fields, per-field byte spans.
//!
//! Never panics and never trusts a count beyond the bytes present; errors carry the field path
//! (`attach.source.filter`). Typed views live in `performative.rs` and friends.

use std::ops::Range;

use bytes::Bytes;

use super::tables;
use super::value::{self, Described, Descriptor, Kind, MAX_DEPTH, Value, code};
use crate::codec::{DecodeError, ErrorKind, Reader};

pub use super::tables::ALL;

/// One allowed value of a restricted type (e.g. `sender-settle-mode` `mixed` = `2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The spec's name for it.
    pub name: &'static str,
    /// The value as the spec writes it (`"2"`, `"true"`, `"session-end"`).
    pub value: &'static str,
}

/// What a field's value must be, its restricted types resolved down to the wire type.
#[derive(Clone, Copy, Debug)]
pub enum FieldType {
    /// A primitive type (restricted types resolved: `handle` -> uint, `role` -> boolean ...).
    Prim(Kind),
    /// `fields`: a map with symbol keys.
    Fields,
    /// A specific composite (e.g. `error`).
    Composite(&'static CompositeDef),
    /// `*`: any value satisfying `requires`.
    Any,
}

/// One field of a composite, as the spec defines it.
#[derive(Clone, Copy, Debug)]
pub struct FieldDef {
    /// Spec name (kebab-case).
    pub name: &'static str,
    /// The type as the spec writes it (`handle`, `*`, `fields` ...).
    pub spec_type: &'static str,
    /// The resolved type used for checking.
    pub ty: FieldType,
    /// The archetypes a `*` field requires (`source`, `delivery-state` ...).
    pub requires: &'static [&'static str],
    /// Must be present and non-null.
    pub mandatory: bool,
    /// May be a single value or an array of them.
    pub multiple: bool,
    /// The spec's default, as the spec writes it.
    pub default: Option<&'static str>,
    /// Allowed values (restricted types with choices).
    pub choices: &'static [Choice],
}

impl FieldDef {
    /// The spec name of a restricted value (`2` -> `mixed`), when the field has choices.
    pub fn choice_name(&self, v: &Value) -> Option<&'static str> {
        let text = match v {
            Value::Bool(b) => b.to_string(),
            Value::Ubyte(x) => x.to_string(),
            Value::Uint(x) => x.to_string(),
            Value::Symbol(s) => s.as_str().to_owned(),
            _ => return None,
        };
        self.choices
            .iter()
            .find(|c| c.value == text)
            .map(|c| c.name)
    }
}

/// A described type of the spec: composite (a described list with named fields) or restricted
/// with a descriptor (message sections).
#[derive(Debug)]
pub struct CompositeDef {
    /// Spec name, e.g. `attach`.
    pub name: &'static str,
    /// Symbolic descriptor, e.g. `amqp:attach:list`.
    pub descriptor_name: &'static str,
    /// Numeric descriptor, e.g. `0x0000_0000_0000_0012`.
    pub code: u64,
    /// `composite` or `restricted`.
    pub class: &'static str,
    /// The underlying type: `list` for composites; `map`, `binary`, `annotations`, `*`...
    pub source: &'static str,
    /// The archetypes it provides (`frame`, `delivery-state`, `outcome`, `section` ...).
    pub provides: &'static [&'static str],
    /// The positions of `fields` in the byte order of their names: the order the JSON writer
    /// puts them in (JSONL keys are byte-ordered), generated so nothing sorts at run time.
    pub key_order: &'static [u8],
    /// The fields in order (empty for restricted types).
    pub fields: &'static [FieldDef],
}

impl PartialEq for CompositeDef {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
    }
}

impl CompositeDef {
    /// True for composites (described lists).
    pub fn is_list(&self) -> bool {
        self.class == "composite"
    }
    /// True when it provides `archetype`.
    pub fn provides(&self, archetype: &str) -> bool {
        self.provides.contains(&archetype)
    }
    /// Index of the field named `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// The definition for a numeric descriptor.
pub fn lookup(code: u64) -> Option<&'static CompositeDef> {
    tables::by_code(code)
}

/// The definition for a symbolic descriptor (`amqp:open:list`).
pub fn lookup_name(name: &str) -> Option<&'static CompositeDef> {
    ALL.iter().copied().find(|d| d.descriptor_name == name)
}

/// The definition a descriptor names, if the spec defines it.
pub fn lookup_descriptor(d: &Descriptor) -> Option<&'static CompositeDef> {
    match d {
        Descriptor::Code(c) => lookup(*c),
        Descriptor::Name(s) => lookup_name(s.as_str()),
    }
}

/// A decoded top-level composite (a performative or SASL frame body) with per-field spans.
#[derive(Clone, Debug, PartialEq)]
pub struct Composite {
    /// Its definition.
    pub def: &'static CompositeDef,
    /// The descriptor as it appeared on the wire.
    pub descriptor: Descriptor,
    /// The fields present on the wire, in order (`Null` for encoded-absent ones).
    pub fields: Vec<Value>,
    /// Span of the whole described list (relative to the raw frame start).
    pub span: Range<u32>,
}

impl Composite {
    /// Field `i`'s value, `None` when absent or null.
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.fields.get(i).filter(|v| !v.is_null())
    }
    /// Field `name`'s value, `None` when absent or null.
    pub fn get_named(&self, name: &str) -> Option<&Value> {
        self.def.field_index(name).and_then(|i| self.get(i))
    }
    /// Each field's byte span within `raw`, the frame this composite was decoded from.
    ///
    /// Decoding keeps no per-field positions (only the hex highlight, secret masking of rare
    /// frames and error reports need them); they are found again by re-reading the list.
    pub fn spans(&self, raw: &Bytes) -> Vec<Range<usize>> {
        scan_field_spans(raw, self.span.start as usize).unwrap_or_default()
    }
    /// Field `i`'s byte span within `raw`, the frame this composite was decoded from.
    pub fn span(&self, raw: &Bytes, i: usize) -> Option<Range<usize>> {
        self.spans(raw).get(i).cloned()
    }
    /// Field `name`'s byte span within `raw`, the frame this composite was decoded from.
    pub fn span_named(&self, raw: &Bytes, name: &str) -> Option<Range<usize>> {
        self.def.field_index(name).and_then(|i| self.span(raw, i))
    }
}

/// The byte span (within `raw`) of each field of the described list starting at `raw[start]`.
fn scan_field_spans(raw: &Bytes, start: usize) -> Result<Vec<Range<usize>>, DecodeError> {
    let mut r = Reader::at(raw.clone(), start, 0);
    if r.u8()? != code::DESCRIBED {
        return Ok(Vec::new());
    }
    value::decode_descriptor(&mut r, 1)?;
    let count = match r.u8()? {
        code::LIST8 => {
            r.u8()?;
            usize::from(r.u8()?)
        }
        code::LIST32 => {
            r.u32()?;
            r.u32()? as usize
        }
        _ => 0,
    };
    // Each field takes at least one byte: never reserve beyond what the bytes can hold.
    let mut out = Vec::with_capacity(count.min(r.remaining()));
    for _ in 0..count {
        let s = r.position();
        value::decode_at(&mut r, 2)?;
        out.push(s..r.position());
    }
    Ok(out)
}

/// Decode a described list that must be a known composite, recording each field's span
/// (relative to `frame_start`, the absolute offset of the raw frame's first byte), and check it
/// against its table.
pub fn decode_top(r: &mut Reader, frame_start: u64) -> Result<Composite, DecodeError> {
    let rel = |abs: u64| abs.saturating_sub(frame_start).min(u64::from(u32::MAX)) as u32;
    let start = r.offset();
    let at = r.offset();
    let c = r.u8()?;
    if c != code::DESCRIBED {
        return Err(DecodeError::new(
            at,
            ErrorKind::UnexpectedType {
                expected: "described performative",
                found: Kind::of_code(c).map_or("invalid format code", Kind::name),
            },
        ));
    }
    let descriptor = value::decode_descriptor(r, 1)?;
    let def = match lookup_descriptor(&descriptor) {
        Some(d) if d.is_list() => d,
        _ => {
            let id = match &descriptor {
                Descriptor::Code(c) => u32::try_from(*c).unwrap_or(u32::MAX),
                Descriptor::Name(_) => u32::MAX,
            };
            return Err(DecodeError::new(
                at,
                ErrorKind::Unknown {
                    what: "performative descriptor",
                    id,
                },
            ));
        }
    };
    let fields = match list_header(r).map_err(|e| e.within(def.name))? {
        Some((end, count)) => decode_fields(r, def, end, count)?,
        None => Vec::new(),
    };
    if check_fields(def, &fields, &[], frame_start, 1).is_err() {
        // Check again with each field's position, so the error points at the field.
        let start = start.saturating_sub(frame_start) as usize;
        let spans: Vec<Range<u32>> = scan_field_spans(r.buffer(), start)
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.start as u32..s.end as u32)
            .collect();
        check_fields(def, &fields, &spans, frame_start, 1).map_err(|e| e.within(def.name))?;
    }
    Ok(Composite {
        def,
        descriptor,
        fields,
        span: rel(start)..rel(r.offset()),
    })
}

/// Read the header of the list a composite's fields are in: `Some((end, count))`, where the
/// list ends and how many fields it holds (at most one per byte left in it), or `None` for an
/// empty `list0`.
fn list_header(r: &mut Reader) -> Result<Option<(usize, usize)>, DecodeError> {
    // A valid list8 (what performatives mostly are) in one step.
    if let [code::LIST8, size, count, ..] = *r.unread() {
        let (size, count) = (usize::from(size), usize::from(count));
        if size + 2 <= r.remaining() && count < size {
            r.skip(3)?;
            return Ok(Some((r.position() + size - 1, count)));
        }
    }
    let list_at = r.offset();
    let lc = r.u8()?;
    match lc {
        code::LIST0 => Ok(None),
        code::LIST8 | code::LIST32 => {
            let size = if lc == code::LIST8 {
                u64::from(r.u8()?)
            } else {
                u64::from(r.u32()?)
            };
            if size > r.remaining() as u64 {
                return Err(r.error(ErrorKind::LengthExceedsInput {
                    what: "list size",
                    claimed: size,
                    available: r.remaining() as u64,
                }));
            }
            let end = r.position() + size as usize;
            let count = if lc == code::LIST8 {
                u64::from(r.u8()?)
            } else {
                u64::from(r.u32()?)
            };
            let left = end.saturating_sub(r.position()) as u64;
            if r.position() > end || count > left {
                return Err(r.error(ErrorKind::LengthExceedsInput {
                    what: "list count",
                    claimed: count,
                    available: left,
                }));
            }
            Ok(Some((end, count as usize)))
        }
        other => Err(DecodeError::new(
            list_at,
            ErrorKind::UnexpectedType {
                expected: "list",
                found: Kind::of_code(other).map_or("invalid format code", Kind::name),
            },
        )),
    }
}

/// Decode the `count` fields of `def`'s list, which ends at `end`; errors name the field.
fn decode_fields(
    r: &mut Reader,
    def: &'static CompositeDef,
    end: usize,
    count: usize,
) -> Result<Vec<Value>, DecodeError> {
    // `count` is at most the bytes left in the list (see `list_header`).
    let mut fields = Vec::with_capacity(count);
    for i in 0..count {
        value::decode_onto(r, 2, &mut fields).map_err(|e| {
            let e = match def.fields.get(i) {
                Some(f) => e.within(f.name),
                None => e,
            };
            e.within(def.name)
        })?;
    }
    value::finish(r, end).map_err(|e| e.within(def.name))?;
    Ok(fields)
}

/// Check a composite's field values against its table. `spans` (relative to `base`) position
/// errors when known; otherwise errors sit at `base`.
fn check_fields(
    def: &'static CompositeDef,
    fields: &[Value],
    spans: &[Range<u32>],
    base: u64,
    depth: usize,
) -> Result<(), DecodeError> {
    let at = |i: usize| base + spans.get(i).map_or(0, |s| u64::from(s.start));
    // A missing mandatory field sits at its own span, or after the last field present.
    let missing = |i: usize, f: &FieldDef| {
        let pos = base
            + spans
                .get(i)
                .or(spans.last())
                .map_or(0, |s| u64::from(s.start));
        DecodeError::new(pos, ErrorKind::MissingMandatory).within(f.name)
    };
    let Some((present, absent)) = def.fields.split_at_checked(fields.len()) else {
        return Err(DecodeError::new(
            at(def.fields.len()),
            ErrorKind::InvalidEncoding("more fields than the composite defines"),
        ));
    };
    for (i, (f, v)) in present.iter().zip(fields).enumerate() {
        if v.is_null() {
            if f.mandatory {
                return Err(missing(i, f));
            }
        } else if !is_plain_primitive_of(f, v) {
            check_field(f, v, at(i), depth).map_err(|e| e.within(f.name))?;
        }
    }
    match absent.iter().position(|f| f.mandatory) {
        Some(j) => Err(missing(present.len() + j, &absent[j])),
        None => Ok(()),
    }
}

/// True when `f` is a primitive-typed field and `v`, not an array, is of its type: the common
/// case, which needs no further check.
#[inline]
fn is_plain_primitive_of(f: &FieldDef, v: &Value) -> bool {
    match f.ty {
        FieldType::Prim(k) => k != Kind::Array && v.kind() == Some(k),
        _ => false,
    }
}

fn unexpected(at: u64, expected: &'static str, v: &Value) -> DecodeError {
    DecodeError::new(
        at,
        ErrorKind::UnexpectedType {
            expected,
            found: v.type_name(),
        },
    )
}

/// Check one non-null field value.
fn check_field(f: &FieldDef, v: &Value, at: u64, depth: usize) -> Result<(), DecodeError> {
    if f.multiple
        && let Value::Array(a) = v
    {
        for item in &a.items {
            if a.descriptor.is_some() {
                // Arrays of described values: rebuild each to check it.
                continue;
            }
            check_single(f, item, at, depth)?;
        }
        return Ok(());
    }
    check_single(f, v, at, depth)
}

fn check_single(f: &FieldDef, v: &Value, at: u64, depth: usize) -> Result<(), DecodeError> {
    match f.ty {
        FieldType::Prim(k) => {
            if v.kind() == Some(k) {
                Ok(())
            } else {
                Err(unexpected(at, k.name(), v))
            }
        }
        FieldType::Fields => match v {
            Value::Map(_) => Ok(()),
            _ => Err(unexpected(at, "map", v)),
        },
        FieldType::Composite(def) => match v {
            Value::Described(d)
                if lookup_descriptor(&d.descriptor).is_some_and(|x| std::ptr::eq(x, def)) =>
            {
                check_described(def, d, at, depth + 1)
            }
            _ => Err(unexpected(at, def.name, v)),
        },
        FieldType::Any => {
            if let Value::Described(d) = v
                && let Some(def) = lookup_descriptor(&d.descriptor)
            {
                if !f.requires.is_empty()
                    && !f.requires.iter().any(|r| def.provides(r))
                    && f.requires.iter().any(|r| is_archetype_of_composites(r))
                {
                    return Err(DecodeError::new(
                        at,
                        ErrorKind::UnexpectedType {
                            expected: f.requires.first().copied().unwrap_or("*"),
                            found: def.name,
                        },
                    ));
                }
                return check_described(def, d, at, depth + 1);
            }
            Ok(())
        }
    }
}

/// Archetypes only composites provide (a bare string can't be a `source`; it can be an
/// `address` or a `message-id`).
fn is_archetype_of_composites(r: &str) -> bool {
    matches!(
        r,
        "source" | "target" | "delivery-state" | "outcome" | "lifetime-policy"
    )
}

/// Check a described value against a known definition (recursively for nested composites).
pub fn check_described(
    def: &'static CompositeDef,
    d: &Described,
    at: u64,
    depth: usize,
) -> Result<(), DecodeError> {
    check_value(def, &d.value, at, depth)
}

/// Check the value of a described type (its descriptor already resolved to `def`) against the
/// definition, recursively for nested composites.
pub fn check_value(
    def: &'static CompositeDef,
    value: &Value,
    at: u64,
    depth: usize,
) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::new(at, ErrorKind::TooDeep(MAX_DEPTH)));
    }
    if def.is_list() {
        match value {
            Value::List(items) => check_fields(def, items, &[], at, depth),
            other => Err(unexpected(at, "list", other)),
        }
    } else {
        let ok = match def.source {
            "map" | "annotations" => matches!(value, Value::Map(_)),
            "binary" => matches!(value, Value::Binary(_)),
            "list" => matches!(value, Value::List(_)),
            _ => {
                // `*` (amqp-value): check a known composite inside it.
                if let Value::Described(inner) = value
                    && let Some(idef) = lookup_descriptor(&inner.descriptor)
                {
                    check_described(idef, inner, at, depth + 1).map_err(|e| e.within(idef.name))?;
                }
                true
            }
        };
        if ok {
            Ok(())
        } else {
            Err(unexpected(
                at,
                match def.source {
                    "binary" => "binary",
                    "list" => "list",
                    _ => "map",
                },
                value,
            ))
        }
    }
}
