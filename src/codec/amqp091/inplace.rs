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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_rng::Rng;
    use crate::codec::amqp091::field_table::FieldValue;
    use crate::codec::amqp091::generated::{CLASSES, METHODS};
    use crate::codec::amqp091::method::{Method, encode_args};

    /// A value of wire type `ty`, with strings and tables short and sometimes empty.
    fn value(rng: &mut Rng, ty: WireType) -> Value {
        match ty {
            WireType::Bit => Value::Bit(rng.below(2) == 1),
            WireType::Octet => Value::Octet(rng.next() as u8),
            WireType::Short => Value::Short(rng.next() as u16),
            WireType::Long => Value::Long(rng.next() as u32),
            WireType::LongLong => Value::LongLong(rng.next()),
            WireType::Timestamp => Value::Timestamp(rng.next()),
            WireType::ShortStr => Value::ShortStr(rng.bytes(12)),
            WireType::LongStr => Value::LongStr(rng.bytes(12)),
            WireType::Table => Value::Table(FieldTable(
                (0..rng.below(3))
                    .map(|_| (rng.bytes(6), FieldValue::LongStr(rng.bytes(6))))
                    .collect(),
            )),
        }
    }

    /// `bytes`, sometimes with one byte changed, one cut off or one added.
    fn mutated(rng: &mut Rng, mut bytes: Vec<u8>) -> Bytes {
        match rng.below(6) {
            0 | 1 if !bytes.is_empty() => {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next() as u8;
            }
            2 => {
                bytes.pop();
            }
            3 => bytes.push(rng.next() as u8),
            _ => {}
        }
        bytes.into()
    }

    #[test]
    fn argument_lists_read_in_place_are_what_the_decoder_makes_of_them() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for def in METHODS.iter() {
            for _ in 0..300 {
                let args: Vec<Value> = def.args.iter().map(|a| value(&mut rng, a.ty)).collect();
                let mut bytes = Vec::new();
                encode_args(&args, &mut bytes);
                let payload = mutated(&mut rng, bytes);
                let Some(in_place) = method_args(&payload, 0, def.args) else {
                    continue;
                };
                accepted += 1;
                let decoded = Method::decode_args(&mut Reader::new(payload.clone(), 0), def);
                assert_eq!(decoded.as_ref(), Ok(&in_place), "{} {payload:?}", def.name);
            }
        }
        // Most payloads are well-formed: the in-place reader must take them.
        assert!(accepted > METHODS.len() * 150, "{accepted} accepted");
    }

    #[test]
    fn content_headers_read_in_place_are_what_the_decoder_makes_of_them() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut accepted = 0;
        for class in CLASSES.iter() {
            for _ in 0..2000 {
                let flags_of: Vec<bool> =
                    class.properties.iter().map(|_| rng.below(2) == 1).collect();
                let mut bytes = Vec::new();
                bytes.extend(class.id.to_be_bytes());
                bytes.extend((rng.next() as u16 % 2).to_be_bytes());
                bytes.extend(rng.next().to_be_bytes());
                let mut flags = 0u16;
                for (i, &on) in flags_of.iter().enumerate() {
                    if on {
                        flags |= 1 << (15 - i);
                    }
                }
                bytes.extend(flags.to_be_bytes());
                let props: Vec<Value> = class
                    .properties
                    .iter()
                    .zip(&flags_of)
                    .filter(|(_, on)| **on)
                    .map(|(p, _)| value(&mut rng, p.ty))
                    .collect();
                encode_args(&props, &mut bytes);
                let payload = mutated(&mut rng, bytes);
                let Some(in_place) = content_header(&payload, 0) else {
                    continue;
                };
                accepted += 1;
                let decoded = ContentHeader::decode_fields(&mut Reader::new(payload.clone(), 0));
                assert_eq!(
                    decoded.as_ref(),
                    Ok(&in_place),
                    "{} {payload:?}",
                    class.name
                );
            }
        }
        assert!(accepted > 2000, "{accepted} accepted");
    }
}
