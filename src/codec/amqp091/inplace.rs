//! Argument and property lists read straight from a payload's bytes, for well-formed frames.
//!
//! These readers report no errors: on any shortfall, unknown flag or byte left over they give
//! up (`None`), and the caller decodes the payload again with [`ArgDecoder`](super::method),
//! which words and positions the error. A payload they accept decodes to exactly what that
//! decoder makes of it.

use bytes::Bytes;

use super::content::ContentHeader;
use super::field_table::FieldTable;
use super::generated::class_def;
use super::method::Value;
use super::table::{ArgDef, WireType};
use crate::codec::Reader;

/// A position in a payload, with the bit-packing state of an argument list (see
/// [`ArgDecoder`](super::method)).
struct Cursor<'a> {
    buf: &'a Bytes,
    pos: usize,
    /// The octet consecutive bits are taken from.
    bits: u8,
    /// Bits of `bits` already used; 8 (or more) = no octet in use.
    used: u8,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a Bytes, pos: usize) -> Self {
        Cursor {
            buf,
            pos,
            bits: 0,
            used: 8,
        }
    }

    /// The next `N` bytes, consumed.
    #[inline(always)]
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos.checked_add(N)?)?;
        self.pos += N;
        bytes.try_into().ok()
    }

    /// The next `n` bytes as a zero-copy slice, consumed.
    #[inline(always)]
    fn slice(&mut self, n: usize) -> Option<Bytes> {
        let end = self.pos.checked_add(n)?;
        if end > self.buf.len() {
            return None;
        }
        let out = self.buf.slice(self.pos..end);
        self.pos = end;
        Some(out)
    }

    /// A field table; an empty one (the usual `arguments`) without a sub-reader.
    fn table(&mut self) -> Option<FieldTable> {
        let [a, b, c, d] = *self.buf.get(self.pos..self.pos.checked_add(4)?)? else {
            return None;
        };
        if u32::from_be_bytes([a, b, c, d]) == 0 {
            self.pos += 4;
            return Some(FieldTable::new());
        }
        // Positions only matter to errors, which are the caller's to report.
        let mut r = Reader::at(self.buf.clone(), self.pos, 0);
        let table = FieldTable::decode(&mut r).ok()?;
        self.pos = r.position();
        Some(table)
    }

    /// The next value, of wire type `ty`.
    #[inline(always)]
    fn value(&mut self, ty: WireType) -> Option<Value> {
        if ty == WireType::Bit {
            if self.used >= 8 {
                let [b] = self.take::<1>()?;
                self.bits = b;
                self.used = 0;
            }
            let v = self.bits & (1 << self.used) != 0;
            self.used += 1;
            return Some(Value::Bit(v));
        }
        self.used = 8;
        Some(match ty {
            WireType::Octet => Value::Octet(u8::from_be_bytes(self.take()?)),
            WireType::Short => Value::Short(u16::from_be_bytes(self.take()?)),
            WireType::Long => Value::Long(u32::from_be_bytes(self.take()?)),
            WireType::LongLong => Value::LongLong(u64::from_be_bytes(self.take()?)),
            WireType::Timestamp => Value::Timestamp(u64::from_be_bytes(self.take()?)),
            WireType::ShortStr => {
                let [n] = self.take::<1>()?;
                Value::ShortStr(self.slice(n.into())?)
            }
            WireType::LongStr => {
                let n = u32::from_be_bytes(self.take()?);
                Value::LongStr(self.slice(usize::try_from(n).ok()?)?)
            }
            WireType::Table => Value::Table(self.table()?),
            WireType::Bit => return None,
        })
    }

    /// True when every byte of the payload was read.
    fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// A method's arguments (`defs`), read from `payload` at `pos` to its very end.
pub(super) fn method_args(payload: &Bytes, pos: usize, defs: &[ArgDef]) -> Option<Vec<Value>> {
    let mut cur = Cursor::new(payload, pos);
    let mut args = Vec::with_capacity(defs.len());
    for d in defs {
        args.push(cur.value(d.ty)?);
    }
    cur.at_end().then_some(args)
}

/// The property-flag bits a class with `n` properties may set (the first word holds at most
/// 15; its lowest bit is the continuation bit).
pub(super) fn known_flags(n: usize) -> u16 {
    match n.min(15) {
        0 => 0,
        k => u16::MAX << (16 - k),
    }
}

/// A content header payload (from `pos` to its very end) with a single property-flag word.
pub(super) fn content_header(payload: &Bytes, pos: usize) -> Option<ContentHeader> {
    let mut cur = Cursor::new(payload, pos);
    let class_id = u16::from_be_bytes(cur.take()?);
    let weight = u16::from_be_bytes(cur.take()?);
    let body_size = u64::from_be_bytes(cur.take()?);
    let flags = u16::from_be_bytes(cur.take()?);
    let defs = class_def(class_id)?.properties;
    let known = known_flags(defs.len());
    // A continuation word, or a flag for an undefined property: the full decoder's case.
    if flags & !known != 0 {
        return None;
    }
    let mut properties = Vec::with_capacity(flags.count_ones() as usize);
    let mut left = flags;
    while left != 0 {
        let i = left.leading_zeros() as usize;
        left &= !(0x8000 >> i);
        let d = defs.get(i)?;
        properties.push((d, cur.value(d.ty)?));
    }
    cur.at_end().then_some(ContentHeader {
        class_id,
        weight,
        body_size,
        properties,
        extra_flag_words: 0,
    })
}
