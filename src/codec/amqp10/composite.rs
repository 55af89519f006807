//! The field tables of every described type of the spec ([`CompositeDef`], generated into
//! `tables.rs`), lookup by descriptor, and the table-driven decode + check of a described list:
//! field types, `multiple="true"` (single value or array), mandatory fields, per-field byte spans.
//!
//! Never panics and never trusts a count beyond the bytes present; errors carry the field path
//! (`attach.source.filter`). Typed views live in `performative.rs` and friends.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;

use super::encoded_fields::{self, EncodedFields, Scalars};
use super::fields::FieldList;
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
    /// The fields up to its last mandatory one: a list of fewer leaves a mandatory field out
    /// (0 when none is mandatory). Generated, so a list's check needs no walk of the fields
    /// it does not hold.
    pub required: usize,
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
    /// The fields: decoded, or a plain list checked where it lies in the frame.
    fields: Fields,
    /// Span of the whole described list (relative to the raw frame start).
    pub span: Range<u32>,
}

/// A composite's fields, decoded or still in the frame's bytes ([`EncodedFields`]).
#[derive(Clone, Debug, PartialEq)]
enum Fields {
    /// Decoded value by value.
    Decoded(Vec<Value>),
    /// A plain list, checked where it lies; decoded each time its values are asked for.
    Encoded(EncodedFields),
}

impl Composite {
    /// A composite of decoded fields.
    pub fn new(
        def: &'static CompositeDef,
        descriptor: Descriptor,
        fields: Vec<Value>,
        span: Range<u32>,
    ) -> Self {
        Composite {
            def,
            descriptor,
            fields: Fields::Decoded(fields),
            span,
        }
    }
    /// The fields present on the wire, in order (`Null` for encoded-absent ones); `raw` is the
    /// frame this composite was decoded from (a plain list is decoded from it on each call).
    pub fn fields(&self, raw: &Bytes) -> Cow<'_, [Value]> {
        match &self.fields {
            Fields::Decoded(v) => Cow::Borrowed(v),
            Fields::Encoded(e) => Cow::Owned(e.decode_all(raw)),
        }
    }
    /// `f` of the fields ([`Composite::fields`]), a plain list's values decoded onto the stack
    /// rather than into a new vector: for a rendering that reads them once.
    pub fn with_fields<R>(&self, raw: &Bytes, f: impl FnOnce(&[Value]) -> R) -> R {
        match &self.fields {
            Fields::Decoded(v) => f(v),
            Fields::Encoded(e) => e.with_values(raw, f),
        }
    }
    /// `f` of typed access to the fields, for the typed views; `raw` as for
    /// [`Composite::fields`] (a plain list is read in place, each field's kind and number read
    /// again).
    pub fn with_field_list<R>(&self, raw: &Bytes, f: impl FnOnce(&FieldList<'_>) -> R) -> R {
        match &self.fields {
            Fields::Decoded(v) => f(&FieldList::Values(v)),
            Fields::Encoded(e) => f(&FieldList::Plain(e, &e.scalars(raw), raw)),
        }
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
/// against its table; with `view` of its checked fields (its typed view), made as they are
/// checked: a plain list's fields are read once, the view built from each one's kind and
/// number as the check read them.
pub fn decode_top<T>(
    r: &mut Reader,
    frame_start: u64,
    view: impl FnOnce(&'static CompositeDef, &FieldList<'_>) -> T,
) -> Result<(Composite, T), DecodeError> {
    decode_top_with(r, frame_start, true, view)
}

/// [`decode_top`], reading a plain list in place when `in_place` (else value by value: what
/// the in-place reading must agree with).
fn decode_top_with<T>(
    r: &mut Reader,
    frame_start: u64,
    in_place: bool,
    view: impl FnOnce(&'static CompositeDef, &FieldList<'_>) -> T,
) -> Result<(Composite, T), DecodeError> {
    let rel = |abs: u64| abs.saturating_sub(frame_start).min(u64::from(u32::MAX)) as u32;
    let start = r.offset();
    let (descriptor, def, list) = match usual_head(r) {
        Some((def, end, count)) => (Descriptor::Code(def.code), def, Some((end, count))),
        None => head(r)?,
    };
    let Some((end, count)) = list else {
        let span = rel(start)..rel(r.offset());
        check_fields(def, &[], &[], frame_start, 1).map_err(|e| e.within(def.name))?;
        let view = view(def, &FieldList::Values(&[]));
        return Ok((Composite::new(def, descriptor, Vec::new(), span), view));
    };
    // A plain list (what transfers and most performatives are) is checked where it lies.
    let mut scalars = Scalars::NONE;
    if in_place
        && let Some(encoded) =
            encoded_fields::scan(r.buffer(), r.position(), end, count, def, &mut scalars)
    {
        r.skip(end - r.position())?;
        let view = view(def, &FieldList::Plain(&encoded, &scalars, r.buffer()));
        let composite = Composite {
            def,
            descriptor,
            fields: Fields::Encoded(encoded),
            span: rel(start)..rel(r.offset()),
        };
        return Ok((composite, view));
    }
    let fields = decode_fields(r, def, end, count)?;
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
    let view = view(def, &FieldList::Values(&fields));
    let composite = Composite::new(def, descriptor, fields, rel(start)..rel(r.offset()));
    Ok((composite, view))
}

/// A top-level composite's descriptor, definition, and list end and field count (see [`head`]).
type Head = (Descriptor, &'static CompositeDef, Option<(usize, usize)>);

/// The head of a top-level composite at `r`: its descriptor, its definition, and where its
/// list ends and how many fields it holds (`None` for an empty `list0`, see [`list_header`]).
fn head(r: &mut Reader) -> Result<Head, DecodeError> {
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
    let list = list_header(r).map_err(|e| e.within(def.name))?;
    Ok((descriptor, def, list))
}

/// The usual head of a performative or SASL frame, `00 53 code c0 size count` (a small-ulong
/// descriptor, then a `list8` that fits in what is left), read in one step: the composite,
/// where its list ends and how many fields it holds, as [`head`] reads them. `None` (nothing
/// read) for any other head.
#[inline]
fn usual_head(r: &mut Reader) -> Option<(&'static CompositeDef, usize, usize)> {
    let [
        code::DESCRIBED,
        code::SMALLULONG,
        c,
        code::LIST8,
        size,
        count,
        ..,
    ] = *r.unread()
    else {
        return None;
    };
    let def = frame_def(c)?;
    let (size, count) = (usize::from(size), usize::from(count));
    // What `list_header` takes in one step, from the list's code three bytes on.
    if size + 5 > r.remaining() || count >= size {
        return None;
    }
    r.skip(6).ok()?;
    Some((def, r.position() + size - 1, count))
}

/// The performative or SASL frame (all composites) of descriptor code `c`.
#[inline]
fn frame_def(c: u8) -> Option<&'static CompositeDef> {
    /// The definitions of codes 0x10 to 0x18 and of 0x40 to 0x44.
    static PERFORMATIVES: [&CompositeDef; 9] = [
        &tables::OPEN,
        &tables::BEGIN,
        &tables::ATTACH,
        &tables::FLOW,
        &tables::TRANSFER,
        &tables::DISPOSITION,
        &tables::DETACH,
        &tables::END,
        &tables::CLOSE,
    ];
    static SASL: [&CompositeDef; 5] = [
        &tables::SASL_MECHANISMS,
        &tables::SASL_INIT,
        &tables::SASL_CHALLENGE,
        &tables::SASL_RESPONSE,
        &tables::SASL_OUTCOME,
    ];
    match c {
        0x10..=0x18 => PERFORMATIVES.get(usize::from(c - 0x10)).copied(),
        0x40..=0x44 => SASL.get(usize::from(c - 0x40)).copied(),
        _ => None,
    }
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

#[cfg(test)]
mod in_place_tests {
    use super::*;
    use crate::base::test_rng::Rng;
    use crate::codec::amqp10::{Performative, SaslFrame};

    /// One field's encoding: mostly plain scalars (of every encoding of their kind), sometimes
    /// something no plain list holds (a string, a symbol, an invalid boolean, a described
    /// value) or a cut-short one.
    fn field(rng: &mut Rng, out: &mut Vec<u8>) {
        let byte = rng.next() as u8;
        match rng.below(18) {
            0 | 1 => out.push(0x40),
            2 => out.push(0x41),
            3 => out.push(0x42),
            4 => out.extend([0x56, (rng.below(3)) as u8]),
            5 => out.push(0x43),
            6 => out.extend([0x52, byte]),
            7 => out.extend([0x70, 0, 1, byte, 7]),
            8 => out.push(0x44),
            9 => out.extend([0x53, byte]),
            10 => out.extend([0x80, 0, 0, 0, 9, 0, 0, byte, 1]),
            11 => out.extend([0x50, byte]),
            12 => out.extend([0x60, byte, 3]),
            13 | 14 => {
                let tag = rng.bytes(9);
                out.extend([0xa0, tag.len() as u8]);
                out.extend_from_slice(&tag);
            }
            15 => out.extend([0xa1, 2, b'h', b'i']),
            16 => out.extend([0xa3, 1, b'x']),
            // Outcomes: accepted and released empty (what a plain list takes), accepted in a
            // list8, rejected empty, and a described value of no known code.
            _ => match rng.below(6) {
                0 | 1 => out.extend([0x00, 0x53, 0x24, 0x45]),
                2 => out.extend([0x00, 0x53, 0x26, 0x45]),
                3 => out.extend([0x00, 0x53, 0x24, 0xc0, 0x01, 0x00]),
                4 => out.extend([0x00, 0x53, 0x25, 0x45]),
                _ => out.extend([0x00, 0x53, byte, 0x45]),
            },
        }
    }

    /// A plain encoding of a field of type `ty`, when it has one.
    fn fitting(rng: &mut Rng, ty: Option<FieldType>, out: &mut Vec<u8>) -> bool {
        let byte = rng.next() as u8;
        match ty {
            Some(FieldType::Any) => {
                out.extend([0x00, 0x53, [0x24, 0x26][rng.below(2) as usize], 0x45])
            }
            Some(FieldType::Prim(Kind::Uint)) => match rng.below(3) {
                0 => out.push(0x43),
                1 => out.extend([0x52, byte]),
                _ => out.extend([0x70, byte, 0, 0, 1]),
            },
            Some(FieldType::Prim(Kind::Boolean)) => match rng.below(3) {
                0 => out.push(0x41),
                1 => out.push(0x42),
                _ => out.extend([0x56, byte & 1]),
            },
            Some(FieldType::Prim(Kind::Ubyte)) => out.extend([0x50, byte % 3]),
            Some(FieldType::Prim(Kind::Ushort)) => out.extend([0x60, 0, byte]),
            Some(FieldType::Prim(Kind::Ulong)) => out.extend([0x53, byte]),
            Some(FieldType::Prim(Kind::Binary)) => {
                let tag = rng.bytes(6);
                out.extend([0xa0, tag.len() as u8]);
                out.extend_from_slice(&tag);
            }
            _ => return false,
        }
        true
    }

    /// A frame holding performative `def` with `count` generated fields, in a `list8` or
    /// `list32`, sometimes cut short or with a byte too many.
    fn frame(rng: &mut Rng, def: &CompositeDef) -> Bytes {
        let count = rng.below(def.fields.len() as u64 + 2) as usize;
        let mut fields = Vec::new();
        for i in 0..count {
            let ty = def.fields.get(i).map(|f| f.ty);
            if rng.below(3) == 0 || !fitting(rng, ty, &mut fields) {
                field(rng, &mut fields);
            }
        }
        match rng.below(12) {
            0 => {
                fields.pop();
            }
            1 => fields.push(0x40),
            _ => {}
        }
        let mut body = vec![0x00, 0x53, def.code as u8];
        if rng.below(4) == 0 {
            body.push(0xd0);
            body.extend(((fields.len() + 4) as u32).to_be_bytes());
            body.extend((count as u32).to_be_bytes());
        } else {
            body.extend([0xc0, (fields.len() + 1) as u8, count as u8]);
        }
        body.extend(fields);
        let mut raw = ((8 + body.len()) as u32).to_be_bytes().to_vec();
        raw.extend([2, 0, 0, 1]);
        raw.extend(body);
        raw.into()
    }

    /// Every performative, generated with fields of every plain encoding and some that are
    /// not: checked in place, it decodes (or fails) exactly as value by value does, to the
    /// same fields, spans and typed view.
    #[test]
    fn plain_lists_read_in_place_are_what_the_value_decoder_makes_of_them() {
        let mut rng = Rng(0x5eed_1a2b);
        let mut in_place = 0;
        for def in Performative::NAMES.iter().map(|n| lookup_name_of(n)) {
            for _ in 0..400 {
                in_place += usize::from(read_alike(&frame(&mut rng, def)));
            }
        }
        // The generator reaches the in-place path often enough to say something.
        assert!(in_place > 400, "{in_place} frames read in place");
    }

    /// Whether the performative at byte 8 of `raw` is read in place; it decodes (or fails)
    /// exactly as value by value, to the same fields, spans and typed view.
    fn read_alike(raw: &Bytes) -> bool {
        let decode = |plain| {
            let mut r = Reader::at(raw.clone(), 8, 0);
            decode_top_with(&mut r, 0, plain, |_, _| ()).map(|(c, ())| (c, r.position()))
        };
        match (decode(true), decode(false)) {
            (Ok((a, at_a)), Ok((b, at_b))) => {
                assert_eq!(at_a, at_b, "{raw:02x?}");
                assert_eq!(
                    Performative::from_composite(&a, raw),
                    Performative::from_composite(&b, raw),
                    "{raw:02x?}"
                );
                assert_eq!(a.spans(raw), b.spans(raw), "{raw:02x?}");
                assert_eq!(a.fields(raw), b.fields(raw), "{raw:02x?}");
                let on_stack = a.with_fields(raw, <[Value]>::to_vec);
                assert_eq!(on_stack[..], b.fields(raw)[..], "{raw:02x?}");
                assert_eq!((a.def, &a.descriptor), (b.def, &b.descriptor));
                assert_eq!(a.span, b.span, "{raw:02x?}");
                matches!(a.fields, Fields::Encoded(_))
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{raw:02x?}");
                false
            }
            (a, b) => panic!("{raw:02x?}: in place {a:?}, by value {b:?}"),
        }
    }

    /// Transfers and dispositions whose `state` is each outcome encoding (empty or not, known
    /// or not, cut short), their other fields plain: read in place or value by value alike,
    /// and an empty `accepted` or `released` read in place.
    #[test]
    fn outcomes_are_read_in_place_as_the_value_decoder_reads_them() {
        let outcomes: [&[u8]; 10] = [
            &[0x00, 0x53, 0x24, 0x45],
            &[0x00, 0x53, 0x26, 0x45],
            &[0x00, 0x53, 0x25, 0x45],
            &[0x00, 0x53, 0x27, 0x45],
            &[0x00, 0x53, 0x23, 0x45],
            &[0x00, 0x53, 0x24, 0xc0, 0x01, 0x00],
            &[0x00, 0x53, 0x99, 0x45],
            &[0x00, 0xa3, 0x01, b'x', 0x45],
            &[0x00, 0x53, 0x24],
            &[0x40],
        ];
        let transfer: &[u8] = &[0x43, 0x52, 0x01, 0xa0, 0x01, 0x07, 0x43, 0x41, 0x42, 0x40];
        let disposition: &[u8] = &[0x41, 0x43, 0x52, 0x03, 0x41];
        // Each with the code and the number of fields before `state`.
        for (code, head, before) in [(0x14, transfer, 7), (0x15, disposition, 4)] {
            for (i, outcome) in outcomes.iter().enumerate() {
                for tail in [&[][..], &[0x42]] {
                    let fields = [head, outcome, tail].concat();
                    let count = before + 1 + tail.len();
                    let mut raw = vec![0, 0, 0, 0, 2, 0, 0, 0, 0x00, 0x53, code];
                    raw.extend([0xc0, fields.len() as u8 + 1, count as u8]);
                    raw.extend(fields);
                    let size = raw.len() as u32;
                    raw[..4].copy_from_slice(&size.to_be_bytes());
                    let in_place = read_alike(&raw.into());
                    assert_eq!(in_place, i < 2 || i == 9, "{code:#x} {outcome:02x?}");
                }
            }
        }
    }

    /// Every performative and SASL frame, generated as above: the typed view of a plain list,
    /// built from each field's kind and number as the check read them, is the view of the
    /// values the list decodes to.
    #[test]
    fn views_of_plain_lists_are_the_views_of_their_decoded_values() {
        let mut rng = Rng(0x5ca1_a125);
        let mut plain = 0;
        let names = Performative::NAMES.iter().chain(&SaslFrame::NAMES);
        for def in names.map(|n| lookup_name_of(n)) {
            for _ in 0..400 {
                let raw = frame(&mut rng, def);
                let mut r = Reader::at(raw.clone(), 8, 0);
                let views = |_: &_, f: &FieldList| {
                    let sasl = SaslFrame::from_fields(def, f);
                    (Performative::from_fields(def, f), sasl)
                };
                let Ok((c, (performative, sasl))) = decode_top(&mut r, 0, views) else {
                    continue;
                };
                if !matches!(c.fields, Fields::Encoded(_)) {
                    continue;
                }
                plain += 1;
                let values = c.fields(&raw);
                let decoded = FieldList::Values(&values);
                let (by_value, sasl_by_value) = views(def, &decoded);
                assert_eq!(performative, by_value, "{raw:02x?}");
                assert_eq!(sasl, sasl_by_value, "{raw:02x?}");
            }
        }
        // The generator makes plain lists often enough to say something.
        assert!(plain > 500, "{plain} plain lists");
    }

    /// Heads of every frame code and some others, their sizes, counts and lengths random,
    /// now and then a byte changed: where [`usual_head`] reads one, [`head`] reads the same
    /// descriptor, composite, list end and count, and stops at the same byte.
    #[test]
    fn usual_heads_are_read_as_head_reads_them() {
        let mut rng = Rng(0x4ead_5eed);
        let mut usual = 0;
        for _ in 0..20_000 {
            let code = match rng.below(4) {
                0 => rng.next() as u8,
                1 => 0x40 + rng.below(5) as u8,
                _ => 0x10 + rng.below(9) as u8,
            };
            let (size, count) = (rng.below(40) as u8, rng.below(20) as u8);
            let mut b = vec![0x00, 0x53, code, 0xc0, size, count];
            if rng.below(8) == 0 {
                b[rng.below(6) as usize] = rng.next() as u8;
            }
            b.extend((0..rng.below(48)).map(|_| rng.next() as u8));
            let raw = Bytes::from(b);
            let mut fast = Reader::at(raw.clone(), 0, 0);
            let mut slow = fast.clone();
            let Some((def, end, count)) = usual_head(&mut fast) else {
                assert_eq!(fast.position(), 0);
                continue;
            };
            usual += 1;
            let (descriptor, slow_def, list) = head(&mut slow).expect("a usual head reads");
            assert_eq!(descriptor, Descriptor::Code(def.code), "{raw:02x?}");
            assert!(std::ptr::eq(def, slow_def), "{raw:02x?}");
            assert_eq!(list, Some((end, count)), "{raw:02x?}");
            assert_eq!(fast.position(), slow.position(), "{raw:02x?}");
        }
        // The generator makes usual heads often enough to say something.
        assert!(usual > 2000, "{usual} usual heads");
    }

    /// Every code: the frame definition of the usual head is the table's, a composite, for
    /// exactly the performative and SASL codes.
    #[test]
    fn frame_defs_are_the_tables_performatives_and_sasl_frames() {
        for c in 0..=255u8 {
            let frame = matches!(c, 0x10..=0x18 | 0x40..=0x44);
            match frame_def(c) {
                Some(def) => {
                    assert!(frame, "{c:#x}");
                    assert!(std::ptr::eq(def, lookup(u64::from(c)).unwrap()), "{c:#x}");
                    assert!(def.is_list() && def.code == u64::from(c), "{c:#x}");
                }
                None => assert!(!frame, "{c:#x}"),
            }
        }
    }

    fn lookup_name_of(name: &str) -> &'static CompositeDef {
        ALL.iter().copied().find(|d| d.name == name).unwrap()
    }

    #[test]
    fn every_table_requires_its_fields_up_to_the_last_mandatory_one() {
        for def in ALL {
            let last = def.fields.iter().rposition(|f| f.mandatory);
            assert_eq!(def.required, last.map_or(0, |i| i + 1), "{}", def.name);
        }
        assert_eq!(lookup_name_of("transfer").required, 1);
        assert_eq!(lookup_name_of("attach").required, 3);
    }
}
