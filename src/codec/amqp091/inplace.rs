//! Argument and property lists read straight from a payload's bytes, for well-formed frames.
//!
//! These readers report no errors: on any shortfall, unknown flag or byte left over they give
//! up (`false`), and the caller decodes the payload again with [`ArgDecoder`](super::method),
//! which words and positions the error. A payload they accept decodes to exactly what that
//! decoder makes of it. The methods and content headers most frames carry (basic.publish,
//! basic.deliver, basic.ack, basic's usual properties) are read with their layout known and
//! their lists built whole; any other list value by value, as its definition lays it out.

use std::sync::Arc;

use bytes::{Buf, Bytes};

use super::content::{BASIC_CLASS_ID, ContentHeader};
use super::field_table::FieldTable;
use super::generated::{MethodKind, class_def};
use super::lists::{Args, Properties};
use super::method::Value;
use super::table::{ArgDef, MethodDef, WireType};
use crate::codec::{DecodeError, Reader};

/// A position in a payload, with the bit-packing state of an argument list (see
/// [`ArgDecoder`](super::method)).
///
/// The payload is `buf[..end]`; reads are bounded by `buf` only (a frame's buffer also holds
/// its frame-end octet). Positions only grow, so a list read whole ends exactly at `end` only
/// when none of its reads went past it: [`Cursor::at_end`] is the one check needed.
struct Cursor<'a> {
    buf: &'a Bytes,
    pos: usize,
    end: usize,
    /// The octet consecutive bits are taken from.
    bits: u8,
    /// Bits of `bits` already used; 8 (or more) = no octet in use.
    used: u8,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a Bytes, pos: usize, end: usize) -> Self {
        Cursor {
            buf,
            pos,
            end,
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
        if n == 0 {
            return Some(Bytes::new());
        }
        // The buffer's handle cut down to the slice (no bounds rechecked).
        let mut out = self.buf.clone();
        out.truncate(end);
        out.advance(self.pos);
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

    /// The next bit of an argument list (from the octet in use, or a new one).
    #[inline(always)]
    fn bit(&mut self) -> Option<bool> {
        if self.used >= 8 {
            let [b] = self.take::<1>()?;
            self.bits = b;
            self.used = 0;
        }
        let v = self.bits & (1 << self.used) != 0;
        self.used += 1;
        Some(v)
    }

    /// The next shortstr, zero-copy.
    #[inline(always)]
    fn shortstr(&mut self) -> Option<Bytes> {
        let [n] = self.take::<1>()?;
        self.slice(n.into())
    }

    /// The next value, of wire type `ty`, handed to `push` (each type's value built right
    /// where `push` puts it).
    #[inline(always)]
    fn value(&mut self, ty: WireType, push: impl FnOnce(Value)) -> Option<()> {
        if ty == WireType::Bit {
            push(Value::Bit(self.bit()?));
            return Some(());
        }
        self.used = 8;
        match ty {
            WireType::Octet => push(Value::Octet(u8::from_be_bytes(self.take()?))),
            WireType::Short => push(Value::Short(u16::from_be_bytes(self.take()?))),
            WireType::Long => push(Value::Long(u32::from_be_bytes(self.take()?))),
            WireType::LongLong => push(Value::LongLong(u64::from_be_bytes(self.take()?))),
            WireType::Timestamp => push(Value::Timestamp(u64::from_be_bytes(self.take()?))),
            WireType::ShortStr => push(Value::ShortStr(self.shortstr()?)),
            WireType::LongStr => {
                let n = u32::from_be_bytes(self.take()?);
                push(Value::LongStr(self.slice(usize::try_from(n).ok()?)?));
            }
            WireType::Table => push(Value::Table(self.table()?)),
            WireType::Bit => return None,
        }
        Some(())
    }

    /// basic.publish's arguments: ticket, exchange, routing-key, mandatory, immediate.
    fn publish(&mut self, out: &mut Args) -> Option<()> {
        let ticket = u16::from_be_bytes(self.take()?);
        let exchange = self.shortstr()?;
        let routing_key = self.shortstr()?;
        let [bits] = self.take::<1>()?;
        out.set_inline([
            Value::Short(ticket),
            Value::ShortStr(exchange),
            Value::ShortStr(routing_key),
            Value::Bit(bits & 1 != 0),
            Value::Bit(bits & 2 != 0),
        ]);
        Some(())
    }

    /// basic.deliver's arguments: consumer-tag, delivery-tag, redelivered, exchange,
    /// routing-key.
    fn deliver(&mut self, out: &mut Args) -> Option<()> {
        let consumer_tag = self.shortstr()?;
        let [t0, t1, t2, t3, t4, t5, t6, t7, bits] = self.take::<9>()?;
        let exchange = self.shortstr()?;
        let routing_key = self.shortstr()?;
        out.set_inline([
            Value::ShortStr(consumer_tag),
            Value::LongLong(u64::from_be_bytes([t0, t1, t2, t3, t4, t5, t6, t7])),
            Value::Bit(bits & 1 != 0),
            Value::ShortStr(exchange),
            Value::ShortStr(routing_key),
        ]);
        Some(())
    }

    /// A delivery tag and one bit (basic.ack's delivery-tag and multiple, basic.reject's
    /// delivery-tag and requeue).
    fn tag_and_bit(&mut self, out: &mut Args) -> Option<()> {
        let [t0, t1, t2, t3, t4, t5, t6, t7, bits] = self.take::<9>()?;
        out.set_inline([
            Value::LongLong(u64::from_be_bytes([t0, t1, t2, t3, t4, t5, t6, t7])),
            Value::Bit(bits & 1 != 0),
        ]);
        Some(())
    }

    /// True when every byte of the payload, and none past it, was read.
    fn at_end(&self) -> bool {
        self.pos == self.end
    }
}

/// A payload the in-place readers do not take (`buf[pos..end]`, at offset `base`), decoded by
/// `decode`, the reader that words and positions every error, into a new shared handle.
#[cold]
pub(super) fn decode_slowly<T>(
    buf: &Bytes,
    pos: usize,
    end: usize,
    base: u64,
    decode: impl FnOnce(&mut Reader) -> Result<T, DecodeError>,
) -> Result<Arc<T>, DecodeError> {
    let mut r = Reader::at(buf.slice(..end.min(buf.len())), pos, base);
    decode(&mut r).map(Arc::new)
}

/// The arguments of method `def`, read from `buf` at `pos` to `end` (the payload's end) and
/// appended to `out` (empty on entry). False when the payload is not such a list; `out` then
/// holds whatever was read before that showed.
pub(super) fn method_args(
    buf: &Bytes,
    pos: usize,
    end: usize,
    def: &MethodDef,
    out: &mut Args,
) -> bool {
    let mut cur = Cursor::new(buf, pos, end);
    // The methods most frames carry, read with their layout known.
    let read = match def.kind {
        MethodKind::BasicPublish => cur.publish(out),
        MethodKind::BasicDeliver => cur.deliver(out),
        MethodKind::BasicAck | MethodKind::BasicReject => cur.tag_and_bit(out),
        _ => def
            .args
            .iter()
            .try_for_each(|d| cur.value(d.ty, |v| out.push(v))),
    };
    read.is_some() && cur.at_end()
}

/// The property-flag bits a class with `n` properties may set (the first word holds at most
/// 15; its lowest bit is the continuation bit).
pub(super) fn known_flags(n: usize) -> u16 {
    match n.min(15) {
        0 => 0,
        k => u16::MAX << (16 - k),
    }
}

/// A content header payload (`buf` from `pos` to `end`) with a single property-flag word,
/// read into `out` (whose properties are empty on entry). False when the payload is not such
/// a header; `out` then holds whatever was read before that showed.
pub(super) fn content_header(buf: &Bytes, pos: usize, end: usize, out: &mut ContentHeader) -> bool {
    let mut cur = Cursor::new(buf, pos, end);
    let Some([c0, c1, w0, w1, s0, s1, s2, s3, s4, s5, s6, s7, f0, f1]) = cur.take::<14>() else {
        return false;
    };
    let class_id = u16::from_be_bytes([c0, c1]);
    let flags = u16::from_be_bytes([f0, f1]);
    let Some(class) = class_def(class_id) else {
        return false;
    };
    let defs = class.properties;
    // A continuation word, or a flag for an undefined property: the full decoder's case.
    if flags & !known_flags(defs.len()) != 0 {
        return false;
    }
    out.class_id = class_id;
    out.weight = u16::from_be_bytes([w0, w1]);
    out.body_size = u64::from_be_bytes([s0, s1, s2, s3, s4, s5, s6, s7]);
    out.extra_flag_words = 0;
    if class_id == BASIC_CLASS_ID
        && matches!(flags, USUAL_FLAGS | USUAL_FLAGS_IDENTIFIED)
        && let Some(read) = usual_basic(&mut cur, defs, flags, &mut out.properties)
    {
        return read.is_some() && cur.at_end();
    }
    let mut left = flags;
    while left != 0 {
        let i = left.leading_zeros() as usize;
        left &= !(0x8000 >> i);
        let Some(d) = defs.get(i) else {
            return false;
        };
        if cur.value(d.ty, |v| out.properties.push(d, v)).is_none() {
            return false;
        }
    }
    cur.at_end()
}

/// The basic properties most messages carry: content-type and delivery-mode.
const USUAL_FLAGS: u16 = 0x9000;
/// The usual ones with message-id and timestamp.
const USUAL_FLAGS_IDENTIFIED: u16 = 0x90c0;

/// basic's usual properties (`flags` being [`USUAL_FLAGS`] or [`USUAL_FLAGS_IDENTIFIED`]),
/// read with their layout known into `out`. `None` when `defs` does not lay them out as the
/// spec does (the general reader's case, nothing read yet); `Some(None)` on a shortfall.
fn usual_basic(
    cur: &mut Cursor,
    defs: &'static [ArgDef],
    flags: u16,
    out: &mut Properties,
) -> Option<Option<()>> {
    let (ct, dm, id, ts) = (defs.first()?, defs.get(3)?, defs.get(8)?, defs.get(9)?);
    let laid_out = [ct.ty, dm.ty, id.ty, ts.ty]
        == [
            WireType::ShortStr,
            WireType::Octet,
            WireType::ShortStr,
            WireType::Timestamp,
        ];
    if !laid_out {
        return None;
    }
    let mut read = || {
        let content_type = Value::ShortStr(cur.shortstr()?);
        let [mode] = cur.take::<1>()?;
        if flags == USUAL_FLAGS {
            out.set_inline([(ct, content_type), (dm, Value::Octet(mode))]);
            return Some(());
        }
        let message_id = Value::ShortStr(cur.shortstr()?);
        let stamp = Value::Timestamp(u64::from_be_bytes(cur.take()?));
        out.set_inline([
            (ct, content_type),
            (dm, Value::Octet(mode)),
            (id, message_id),
            (ts, stamp),
        ]);
        Some(())
    };
    Some(read())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_rng::Rng;
    use crate::codec::amqp091::field_table::FieldValue;
    use crate::codec::amqp091::generated::{CLASSES, METHODS};
    use crate::codec::amqp091::method::{Method, encode_args};
    use crate::codec::amqp091::table::{ClassDef, MethodDef};
    use std::sync::Arc;

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

    /// The payload of a method `def` with random arguments.
    fn method_payload(rng: &mut Rng, def: &'static MethodDef) -> Vec<u8> {
        let args: Vec<Value> = def.args.iter().map(|a| value(rng, a.ty)).collect();
        let mut payload = Vec::new();
        Method {
            def,
            args: args.into(),
        }
        .encode(&mut payload);
        payload
    }

    /// The payload of a content header of `class` with a random body size, each property
    /// present half the time with a random value.
    fn header_payload(rng: &mut Rng, class: &ClassDef) -> Vec<u8> {
        let mut header = ContentHeader {
            class_id: class.id,
            ..ContentHeader::basic(rng.next())
        };
        for p in class.properties {
            if rng.below(2) == 1 {
                header = header.with(p.name, value(rng, p.ty)).expect("typed");
            }
        }
        let mut payload = Vec::new();
        header.encode(&mut payload);
        payload
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
                let mut in_place = Args::new();
                if !method_args(&payload, 0, payload.len(), def, &mut in_place) {
                    continue;
                }
                accepted += 1;
                let decoded = Method::decode_args(&mut Reader::new(payload.clone(), 0), def);
                assert_eq!(decoded.as_ref(), Ok(&in_place), "{} {payload:?}", def.name);
            }
        }
        // Most payloads are well-formed: the in-place reader must take them.
        assert!(accepted > METHODS.len() * 150, "{accepted} accepted");
    }

    #[test]
    fn shared_decodes_build_what_the_plain_decoders_make_and_keep_nothing_on_failure() {
        let mut rng = Rng(0x6a09_e667_f3bc_c908);
        let (mut methods, mut failed) = (0, 0);
        for def in METHODS.iter() {
            for _ in 0..50 {
                let bytes = method_payload(&mut rng, def);
                let payload = mutated(&mut rng, bytes);
                let plain = Method::decode(&mut Reader::new(payload.clone(), 0));
                let shared = Method::decode_shared(&payload, 0, payload.len(), 0);
                assert_eq!(
                    shared.as_deref(),
                    plain.as_ref(),
                    "{} {payload:?}",
                    def.name
                );
                match shared {
                    Ok(m) => {
                        assert_eq!(Arc::strong_count(&m), 1);
                        methods += 1;
                    }
                    Err(_) => failed += 1,
                }
                drop(plain);
                assert!(payload.is_unique(), "{}: a value was kept", def.name);
            }
        }
        assert!(
            methods > METHODS.len() * 15 && failed > 0,
            "{methods} {failed}"
        );
        for class in CLASSES.iter() {
            for _ in 0..200 {
                let bytes = header_payload(&mut rng, class);
                let payload = mutated(&mut rng, bytes);
                let plain = ContentHeader::decode(&mut Reader::new(payload.clone(), 0));
                let shared = ContentHeader::decode_shared(&payload, 0, payload.len(), 0);
                assert_eq!(
                    shared.as_deref(),
                    plain.as_ref(),
                    "{} {payload:?}",
                    class.name
                );
                drop((plain, shared));
                assert!(payload.is_unique(), "{}: a property was kept", class.name);
            }
        }
    }

    /// `payload` as a frame of type `ty`: cut one byte short (its last byte dropped, the
    /// frame-end octet kept right after the rest) or with one byte changed, now and then.
    fn framed(rng: &mut Rng, ty: u8, mut payload: Vec<u8>) -> Bytes {
        match rng.below(4) {
            0 => {
                payload.pop();
            }
            1 if !payload.is_empty() => {
                let at = rng.below(payload.len() as u64) as usize;
                payload[at] = rng.next() as u8;
            }
            _ => {}
        }
        let mut raw = vec![ty, 0, 1];
        raw.extend((payload.len() as u32).to_be_bytes());
        raw.extend(payload);
        raw.push(0xCE);
        raw.into()
    }

    #[test]
    fn frames_read_from_a_kept_buffer_are_what_owned_ones_decode_to() {
        use crate::codec::amqp091::frame::{FrameKind, decode_frame, decode_frame_ref};
        let mut rng = Rng(0xbb67_ae85_84ca_a73b);
        let (mut ok, mut failed) = (0, 0);
        // Each frame is also decoded from a handle of its payload alone, which no read can
        // overrun into the frame-end octet.
        let mut check = |raw: Bytes| {
            let kept = decode_frame_ref(&raw, 40);
            assert_eq!(kept, decode_frame(raw.clone(), 40), "{raw:?}");
            let mut payload = Reader::new(raw.slice(7..raw.len() - 1), 47);
            let alone = match raw[0] {
                1 => Method::decode(&mut payload).map(|m| FrameKind::Method(Arc::new(m))),
                2 => ContentHeader::decode(&mut payload).map(|h| FrameKind::Header(Arc::new(h))),
                _ => kept.clone().map(|f| f.kind),
            };
            let kind = kept.map(|f| f.kind);
            assert_eq!(kind, alone, "{raw:?}");
            if kind.is_ok() {
                ok += 1
            } else {
                failed += 1
            }
            drop((kind, alone, payload));
            assert!(raw.is_unique(), "a handle of {raw:?} was kept");
        };
        for def in METHODS.iter() {
            for _ in 0..40 {
                let payload = method_payload(&mut rng, def);
                check(framed(&mut rng, 1, payload));
            }
        }
        for class in CLASSES.iter() {
            for _ in 0..200 {
                let payload = header_payload(&mut rng, class);
                check(framed(&mut rng, 2, payload));
            }
        }
        for ty in [3, 8, 9] {
            let payload = (0..rng.below(3)).map(|_| rng.next() as u8).collect();
            check(framed(&mut rng, ty, payload));
        }
        assert!(ok > 1000 && failed > 1000, "{ok} decoded, {failed} refused");
    }

    #[test]
    fn content_headers_read_in_place_are_what_the_decoder_makes_of_them() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut accepted = 0;
        for class in CLASSES.iter() {
            for _ in 0..2000 {
                // Now and then the usual basic sets, which are read apart.
                let usual = match rng.below(4) {
                    0 => Some(USUAL_FLAGS),
                    1 => Some(USUAL_FLAGS_IDENTIFIED),
                    _ => None,
                };
                let flags_of: Vec<bool> = (0..class.properties.len())
                    .map(|i| match usual {
                        Some(f) => i < 16 && f & (0x8000 >> i) != 0,
                        None => rng.below(2) == 1,
                    })
                    .collect();
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
                let mut in_place = ContentHeader::basic(0);
                if !content_header(&payload, 0, payload.len(), &mut in_place) {
                    continue;
                }
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
