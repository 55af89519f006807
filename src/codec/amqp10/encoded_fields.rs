//! A composite's field list checked where it lies in the frame, decoded into values only when
//! something asks for them.
//!
//! Most performatives on the wire (transfers above all) hold nothing but nulls, booleans,
//! unsigned integers, a short binary (the delivery tag) and, settling a delivery, an empty
//! `accepted` or `released` outcome. For such a list, [`scan`] checks every field against its
//! table in one pass over the bytes and notes where each starts (kept in the frame) and each
//! field's kind and number ([`Scalars`], handed to the typed view as it is built, then
//! dropped); the list becomes values only if a text or JSON output, a filter or a rule asks
//! for them. Any other encoding (any other described value, a string, a map, an array,
//! anything truncated or a table mismatch) is not a plain list: the caller decodes and checks
//! it value by value, which words and positions the error.
//! A list [`scan`] accepts decodes to exactly what that decoder makes of it.

use bytes::Bytes;
use smallvec::SmallVec;

use super::composite::{ALL, CompositeDef, FieldDef, FieldType};
use super::value::{Described, Descriptor, Kind, Value, plain_scalar, plain_scalar_read};
use super::views::code::{ACCEPTED, RELEASED};

/// The most fields a plain list may have (every composite of the spec has fewer).
pub const MAX_FIELDS: usize = 16;

/// A plain field list as it lies in the frame: where each field starts in the frame's bytes
/// (`raw`, which every read is given: the frame keeps them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedFields {
    /// Where the first field starts in `raw`.
    first: u32,
    /// Where field `i` starts, from `first`, for `i < count`.
    starts: [u16; MAX_FIELDS],
    /// How many fields the list holds.
    count: u8,
}

impl EncodedFields {
    /// How many fields the list holds (trailing absent fields not encoded).
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// True when the list holds no field.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes from field `i`'s start, `None` when the list does not hold it.
    #[inline]
    fn at(&self, i: usize) -> Option<usize> {
        let rel = *self.starts.get(i).filter(|_| i < self.len())?;
        Some(self.first as usize + usize::from(rel))
    }

    /// Field `i`'s value, `None` when absent (a null reads as `Value::Null`).
    pub fn value(&self, raw: &Bytes, i: usize) -> Option<Value> {
        let at = self.at(i)?;
        match outcome_read(raw.get(at..)?) {
            Some((_, _, code)) => outcome(code).map(|d| Value::Described(Box::new(d.clone()))),
            None => plain_scalar(raw, at),
        }
    }

    /// Field `i` when it is a binary of `len` bytes (zero-copy), `None` when it does not fit
    /// in `raw`.
    #[inline]
    pub fn binary(&self, raw: &Bytes, i: usize, len: usize) -> Option<Bytes> {
        let at = self.at(i)? + 2;
        (at + len <= raw.len()).then(|| raw.slice(at..at + len))
    }

    /// The kind and number of every field, read again from `raw`: what [`scan`] read of them.
    pub fn scalars(&self, raw: &[u8]) -> Scalars {
        let mut scalars = Scalars::NONE;
        for i in 0..self.len() {
            let read = self.at(i).and_then(|at| read_field(raw.get(at..)?));
            if let Some((kind, _, n)) = read {
                scalars.set(i, kind, n);
            }
        }
        scalars
    }

    /// Every field's value, in order: what the value-by-value decoder makes of the list.
    pub fn decode_all(&self, raw: &Bytes) -> Vec<Value> {
        let mut values = Vec::with_capacity(self.len());
        values.extend((0..self.len()).map_while(|i| self.value(raw, i)));
        values
    }

    /// `f` of every field's value (what [`EncodedFields::decode_all`] gives), the values held
    /// on the stack: for a caller that only reads them once (a text or JSON rendering).
    pub fn with_values<R>(&self, raw: &Bytes, f: impl FnOnce(&[Value]) -> R) -> R {
        let values: SmallVec<[Value; MAX_FIELDS]> =
            (0..self.len()).map_while(|i| self.value(raw, i)).collect();
        f(&values)
    }
}

/// The kind and number of each field of a plain list (see [`plain_scalar_read`]: a number's
/// value, a boolean's as 0 or 1, a binary's length; for an empty outcome, `Kind::List` and its
/// descriptor code, see [`outcome_read`]), as [`scan`] read them: for the typed view
/// to take without reading the bytes again. Not kept in the frame (its size would be copied
/// with every frame).
#[derive(Clone, Debug)]
pub struct Scalars {
    /// Field `i`'s kind: `Kind::Null` for a null and for a field the list does not hold.
    kinds: [Kind; MAX_FIELDS],
    /// Field `i`'s number (never read for a null or a field the list does not hold).
    numbers: [u64; MAX_FIELDS],
}

impl Scalars {
    /// No field (every kind `Null`): what a [`scan`] is given to fill in.
    pub const NONE: Scalars = Scalars {
        kinds: [Kind::Null; MAX_FIELDS],
        numbers: [0; MAX_FIELDS],
    };

    #[inline]
    fn set(&mut self, i: usize, kind: Kind, n: u64) {
        self.kinds[i] = kind;
        self.numbers[i] = n;
    }

    /// Field `i`'s number when it is of kind `kind` (a number, a boolean or a binary).
    #[inline]
    pub fn number(&self, i: usize, kind: Kind) -> Option<u64> {
        (*self.kinds.get(i)? == kind).then(|| self.numbers[i])
    }
}

/// Check the `count` fields of `def`'s list that lie in `raw` from `pos` up to exactly `end`,
/// when each is null, a plain scalar of its field's primitive type or an empty outcome in a
/// field that takes a delivery state ([`Shape`]): where each lies, and what
/// each holds written to `scalars` (`Null` for the fields the list does not hold). `None` for
/// anything else (the caller then decodes the list value by value; `scalars` then holds
/// nothing of use).
pub fn scan(
    raw: &Bytes,
    mut pos: usize,
    end: usize,
    count: usize,
    def: &'static CompositeDef,
    scalars: &mut Scalars,
) -> Option<EncodedFields> {
    if count > MAX_FIELDS || count > def.fields.len() || end > raw.len() {
        return None;
    }
    let built;
    let accepts = match SHAPES.get(def.code as usize) {
        Some(s) if s.def.is_some_and(|d| std::ptr::eq(d, def)) => &s.accepts,
        _ => {
            built = Shape::of(def);
            &built.accepts
        }
    };
    let first = pos;
    let mut starts = [0u16; MAX_FIELDS];
    // A field the list does not hold reads as null (its number is not read).
    scalars.kinds = [Kind::Null; MAX_FIELDS];
    for i in 0..count {
        // A plain field takes at most 257 bytes (a `vbin8` of 255), so the fields before the
        // last of at most 16 start within 15 * 257 bytes of the first: a `u16` holds it.
        starts[i] = (pos - first) as u16;
        let (kind, len, n) = read_field(raw.get(pos..end)?)?;
        if accepts[i] & bit(kind) == 0 {
            return None;
        }
        scalars.set(i, kind, n);
        pos += len;
    }
    // Every byte of the list read, and no mandatory field left out at its end.
    if pos != end || count < def.required {
        return None;
    }
    Some(EncodedFields {
        first: u32::try_from(first).ok()?,
        starts,
        count: count as u8,
    })
}

/// The field at the front of `b` as a plain list holds it: a plain scalar
/// ([`plain_scalar_read`]) or an empty outcome ([`outcome_read`]).
#[inline(always)]
fn read_field(b: &[u8]) -> Option<(Kind, usize, u64)> {
    plain_scalar_read(b).or_else(|| outcome_read(b))
}

/// An empty `accepted` or `released` outcome at the front of `b` (`00 53 code 45`: a
/// small-ulong descriptor and a `list0`, what settles most deliveries): `Kind::List` (the
/// mark a plain list gives it, no plain scalar being a list), its length and its code.
#[inline]
fn outcome_read(b: &[u8]) -> Option<(Kind, usize, u64)> {
    match *b {
        [0x00, 0x53, code @ (0x24 | 0x26), 0x45, ..] => Some((Kind::List, 4, u64::from(code))),
        _ => None,
    }
}

/// The empty outcome of descriptor `code` ([`outcome_read`]) as the value decoder makes it.
pub(crate) fn outcome(code: u64) -> Option<&'static Described> {
    static EMPTY_ACCEPTED: Described = Described {
        descriptor: Descriptor::Code(ACCEPTED),
        value: Value::List(Vec::new()),
    };
    static EMPTY_RELEASED: Described = Described {
        descriptor: Descriptor::Code(RELEASED),
        value: Value::List(Vec::new()),
    };
    match code {
        ACCEPTED => Some(&EMPTY_ACCEPTED),
        RELEASED => Some(&EMPTY_RELEASED),
        _ => None,
    }
}

/// A kind's bit in a set of kinds.
const fn bit(k: Kind) -> u32 {
    1 << k as u32
}

/// The kinds ([`bit`]s) each field of a composite takes in a plain list: null unless it is
/// mandatory; its primitive type unless that is an array or a list (a plain list holds no
/// other); and, marked as `Kind::List`, an empty outcome ([`outcome_read`]) for a `*` field
/// that requires a `delivery-state` (which `accepted` and `released` provide; their tables have
/// no field, so the empty list checks).
#[derive(Clone, Copy)]
struct Shape {
    /// The composite it is of (`None` for a code no composite has).
    def: Option<&'static CompositeDef>,
    accepts: [u32; MAX_FIELDS],
}

impl Shape {
    const NONE: Shape = Shape {
        def: None,
        accepts: [0; MAX_FIELDS],
    };

    /// The shape of `def`'s first [`MAX_FIELDS`] fields.
    const fn of(def: &'static CompositeDef) -> Shape {
        let mut accepts = [0; MAX_FIELDS];
        let mut i = 0;
        while i < def.fields.len() && i < MAX_FIELDS {
            let f = &def.fields[i];
            let null = if f.mandatory { 0 } else { bit(Kind::Null) };
            let value = match f.ty {
                FieldType::Prim(Kind::Array | Kind::List) => 0,
                FieldType::Prim(k) => bit(k),
                FieldType::Any if takes_delivery_state(f) => bit(Kind::List),
                _ => 0,
            };
            accepts[i] = null | value;
            i += 1;
        }
        Shape {
            def: Some(def),
            accepts,
        }
    }
}

/// True for a field that requires exactly a `delivery-state` (a transfer's or disposition's
/// `state`).
const fn takes_delivery_state(f: &FieldDef) -> bool {
    let [only] = f.requires else {
        return false;
    };
    let (a, b) = (only.as_bytes(), b"delivery-state");
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// [`Shape`] by descriptor code, for every composite whose code is below 128 (all the spec's):
/// [`scan`] builds the shape of any other when it meets one.
static SHAPES: [Shape; 128] = {
    let mut t = [Shape::NONE; 128];
    let mut i = 0;
    while i < ALL.len() {
        let def = ALL[i];
        if def.code < 128 {
            t[def.code as usize] = Shape::of(def);
        }
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds a field's shape accepts are exactly those the field-by-field check lets
    /// through: null where the field is not mandatory, its primitive type unless an array or
    /// a list; and the mark of an empty outcome (`List`) in a field requiring a delivery state.
    #[test]
    fn every_composite_has_its_shape_by_code() {
        for def in ALL {
            let shape = &SHAPES[def.code as usize];
            assert!(
                shape.def.is_some_and(|d| std::ptr::eq(d, *def)),
                "{}",
                def.name
            );
            for (i, f) in def.fields.iter().enumerate() {
                let kinds = [Kind::Null, Kind::Boolean, Kind::Uint, Kind::Binary];
                for kind in kinds.into_iter().chain([Kind::Array, Kind::List]) {
                    let fits = match f.ty {
                        _ if kind == Kind::Null => !f.mandatory,
                        FieldType::Any => kind == Kind::List && f.requires == ["delivery-state"],
                        FieldType::Prim(k) => ![Kind::Array, Kind::List].contains(&k) && kind == k,
                        _ => false,
                    };
                    let accepted = shape.accepts[i] & bit(kind) != 0;
                    assert_eq!(accepted, fits, "{}.{} {kind:?}", def.name, f.name);
                }
            }
        }
    }
}
