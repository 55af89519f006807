//! Method frames' payloads: class-id, method-id and the arguments, decoded by the static
//! table into [`Value`]s addressable by spec name, and encoded back (bits packed as the spec
//! packs them). Typed accessors for the state trackers live here too.
//!
//! Never panics on input, never trusts a claimed length.

use std::sync::Arc;

use bytes::{BufMut, Bytes};

use super::field_table::{FieldTable, longstr, put_longstr, put_shortstr, shortstr};
use super::generated::{Arg, MethodKind, arg_index, class_def, method_def};
use super::inplace;
use super::lists::Args;
use super::table::{DefaultValue, MethodDef, WireType};
use crate::codec::{DecodeError, ErrorKind, Reader};

/// One method argument's value, as its wire type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `bit`.
    Bit(bool),
    /// `octet`.
    Octet(u8),
    /// `short`.
    Short(u16),
    /// `long`.
    Long(u32),
    /// `longlong`.
    LongLong(u64),
    /// `shortstr` (bytes as on the wire; usually UTF-8).
    ShortStr(Bytes),
    /// `longstr`.
    LongStr(Bytes),
    /// `table`.
    Table(FieldTable),
    /// `timestamp` (seconds since the epoch).
    Timestamp(u64),
}

impl Value {
    /// The wire type this value has.
    pub fn wire_type(&self) -> WireType {
        match self {
            Value::Bit(_) => WireType::Bit,
            Value::Octet(_) => WireType::Octet,
            Value::Short(_) => WireType::Short,
            Value::Long(_) => WireType::Long,
            Value::LongLong(_) => WireType::LongLong,
            Value::ShortStr(_) => WireType::ShortStr,
            Value::LongStr(_) => WireType::LongStr,
            Value::Table(_) => WireType::Table,
            Value::Timestamp(_) => WireType::Timestamp,
        }
    }

    /// The spec default for an argument of type `ty` (or the type's zero).
    pub fn default_for(ty: WireType, default: Option<DefaultValue>) -> Value {
        let int = match default {
            Some(DefaultValue::Int(v)) => v,
            _ => 0,
        };
        let s = match default {
            Some(DefaultValue::Str(s)) => Bytes::from_static(s.as_bytes()),
            _ => Bytes::new(),
        };
        match ty {
            WireType::Bit => Value::Bit(matches!(default, Some(DefaultValue::Bool(true)))),
            WireType::Octet => Value::Octet(int as u8),
            WireType::Short => Value::Short(int as u16),
            WireType::Long => Value::Long(int as u32),
            WireType::LongLong => Value::LongLong(int),
            WireType::ShortStr => Value::ShortStr(s),
            WireType::LongStr => Value::LongStr(s),
            WireType::Table => Value::Table(FieldTable::new()),
            WireType::Timestamp => Value::Timestamp(int),
        }
    }

    /// Integer value widened to u64 (octet, short, long, longlong, timestamp).
    #[inline]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Octet(v) => Some(v.into()),
            Value::Short(v) => Some(v.into()),
            Value::Long(v) => Some(v.into()),
            Value::LongLong(v) | Value::Timestamp(v) => Some(v),
            _ => None,
        }
    }

    /// Bit value.
    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bit(b) => Some(b),
            _ => None,
        }
    }

    /// String bytes (shortstr or longstr).
    #[inline]
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Value::ShortStr(b) | Value::LongStr(b) => Some(b),
            _ => None,
        }
    }

    /// String value when it is valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// Table value.
    #[inline]
    pub fn as_table(&self) -> Option<&FieldTable> {
        match self {
            Value::Table(t) => Some(t),
            _ => None,
        }
    }
}

/// Why building a method or content header (for encoding) was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The method/class has no argument/property of that name.
    #[error("no argument or property named {0:?}")]
    NoSuchField(String),
    /// The value's wire type is not the field's.
    #[error("{field} is a {expected:?}, not a {found:?}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// Its wire type.
        expected: WireType,
        /// The value's.
        found: WireType,
    },
    /// The content header's class id is not defined by the spec.
    #[error("unknown class {0}")]
    UnknownClass(u16),
}

/// A decoded method: its static definition and its arguments in wire order.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    /// The method's static definition (ids, names, flags, argument list).
    pub def: &'static MethodDef,
    /// One value per `def.args` entry, same order.
    pub args: Args,
}

impl Method {
    /// A method with every argument at the spec's default (or zero).
    pub fn with_defaults(kind: MethodKind) -> Method {
        let def = kind.def();
        Method {
            def,
            args: def
                .args
                .iter()
                .map(|a| Value::default_for(a.ty, a.default))
                .collect(),
        }
    }

    /// Set argument `name` (builder style). Fails when the name is unknown or the value's
    /// wire type differs from the argument's.
    pub fn set(mut self, name: &str, value: Value) -> Result<Method, BuildError> {
        let missing = || BuildError::NoSuchField(name.to_owned());
        let i = self.def.arg_index(name).ok_or_else(missing)?;
        let def = self.def.args.get(i).ok_or_else(missing)?;
        let slot = self.args.get_mut(i).ok_or_else(missing)?;
        if def.ty != value.wire_type() {
            return Err(BuildError::WrongType {
                field: def.name,
                expected: def.ty,
                found: value.wire_type(),
            });
        }
        *slot = value;
        Ok(self)
    }

    /// Which method this is.
    #[inline]
    pub fn kind(&self) -> MethodKind {
        self.def.kind
    }
    /// Class id.
    #[inline]
    pub fn class_id(&self) -> u16 {
        self.def.class_id
    }
    /// Method id.
    #[inline]
    pub fn method_id(&self) -> u16 {
        self.def.method_id
    }
    /// `class.method` as the spec spells it.
    #[inline]
    pub fn name(&self) -> &'static str {
        self.def.name
    }

    /// Argument `arg`, when this method has it: a generated match on (method, argument), no
    /// name compared.
    pub fn get(&self, arg: Arg) -> Option<&Value> {
        arg_index(self.def.kind, arg).and_then(|i| self.args.get(i))
    }
    /// Argument `arg` as an integer.
    pub fn get_u64(&self, arg: Arg) -> Option<u64> {
        self.get(arg).and_then(Value::as_u64)
    }
    /// Argument `arg` as a bit.
    pub fn get_bool(&self, arg: Arg) -> Option<bool> {
        self.get(arg).and_then(Value::as_bool)
    }
    /// Argument `arg` as string bytes.
    pub fn get_bytes(&self, arg: Arg) -> Option<&Bytes> {
        self.get(arg).and_then(Value::as_bytes)
    }
    /// Argument `arg` as UTF-8.
    pub fn get_str(&self, arg: Arg) -> Option<&str> {
        self.get(arg).and_then(Value::as_str)
    }
    /// Argument `arg` as a table.
    pub fn get_table(&self, arg: Arg) -> Option<&FieldTable> {
        self.get(arg).and_then(Value::as_table)
    }

    /// The argument spelt `name` in the spec (`delivery-tag`), for what holds a name: a
    /// rendering, a test. Code that knows which argument it wants uses [`Method::get`].
    pub fn arg(&self, name: &str) -> Option<&Value> {
        self.def.arg_index(name).and_then(|i| self.args.get(i))
    }
    /// Argument `name` as an integer.
    pub fn arg_u64(&self, name: &str) -> Option<u64> {
        self.arg(name).and_then(Value::as_u64)
    }
    /// Argument `name` as a bit.
    pub fn arg_bool(&self, name: &str) -> Option<bool> {
        self.arg(name).and_then(Value::as_bool)
    }
    /// Argument `name` as string bytes.
    pub fn arg_bytes(&self, name: &str) -> Option<&Bytes> {
        self.arg(name).and_then(Value::as_bytes)
    }
    /// Argument `name` as UTF-8.
    pub fn arg_str(&self, name: &str) -> Option<&str> {
        self.arg(name).and_then(Value::as_str)
    }
    /// Argument `name` as a table.
    pub fn arg_table(&self, name: &str) -> Option<&FieldTable> {
        self.arg(name).and_then(Value::as_table)
    }

    /// The argument at `at` when the place of `arg` in this method is known without the
    /// generated match (`at` is `Some` only for methods that have `arg` there), else
    /// [`Method::get`].
    #[inline(always)]
    fn get_at(&self, at: Option<usize>, arg: Arg) -> Option<&Value> {
        match at {
            Some(i) => self.args.get(i),
            None => self.get(arg),
        }
    }

    /// `delivery-tag` (basic.deliver/get-ok/ack/nack/reject).
    #[inline]
    pub fn delivery_tag(&self) -> Option<u64> {
        let at = match self.def.kind {
            MethodKind::BasicAck
            | MethodKind::BasicReject
            | MethodKind::BasicNack
            | MethodKind::BasicGetOk => Some(0),
            MethodKind::BasicDeliver => Some(1),
            _ => None,
        };
        self.get_at(at, Arg::DeliveryTag).and_then(Value::as_u64)
    }
    /// `multiple` (basic.ack/nack).
    #[inline]
    pub fn multiple(&self) -> Option<bool> {
        let at = match self.def.kind {
            MethodKind::BasicAck | MethodKind::BasicNack => Some(1),
            _ => None,
        };
        self.get_at(at, Arg::Multiple).and_then(Value::as_bool)
    }
    /// `requeue` (basic.nack/reject/recover).
    pub fn requeue(&self) -> Option<bool> {
        self.get_bool(Arg::Requeue)
    }
    /// `redelivered` (basic.deliver/get-ok).
    pub fn redelivered(&self) -> Option<bool> {
        self.get_bool(Arg::Redelivered)
    }
    /// `nowait` (declares, binds, consume, cancel, confirm.select...).
    pub fn nowait(&self) -> Option<bool> {
        self.get_bool(Arg::Nowait)
    }
    /// `no-ack` (basic.consume/get).
    pub fn no_ack(&self) -> Option<bool> {
        self.get_bool(Arg::NoAck)
    }
    /// `active` (channel.flow/flow-ok).
    pub fn active(&self) -> Option<bool> {
        self.get_bool(Arg::Active)
    }
    /// `consumer-tag`.
    #[inline]
    pub fn consumer_tag(&self) -> Option<&Bytes> {
        let at = match self.def.kind {
            MethodKind::BasicDeliver
            | MethodKind::BasicConsumeOk
            | MethodKind::BasicCancel
            | MethodKind::BasicCancelOk => Some(0),
            _ => None,
        };
        self.get_at(at, Arg::ConsumerTag).and_then(Value::as_bytes)
    }
    /// `exchange`.
    pub fn exchange(&self) -> Option<&Bytes> {
        self.get_bytes(Arg::Exchange)
    }
    /// `routing-key`.
    pub fn routing_key(&self) -> Option<&Bytes> {
        self.get_bytes(Arg::RoutingKey)
    }
    /// `queue`.
    pub fn queue(&self) -> Option<&Bytes> {
        self.get_bytes(Arg::Queue)
    }
    /// `frame-max` (connection.tune/tune-ok).
    pub fn frame_max(&self) -> Option<u32> {
        self.get_u64(Arg::FrameMax).map(|v| v as u32)
    }
    /// `channel-max` (connection.tune/tune-ok).
    pub fn channel_max(&self) -> Option<u16> {
        self.get_u64(Arg::ChannelMax).map(|v| v as u16)
    }
    /// `heartbeat` (connection.tune/tune-ok), seconds.
    pub fn heartbeat(&self) -> Option<u16> {
        self.get_u64(Arg::Heartbeat).map(|v| v as u16)
    }
    /// `reply-code` (connection/channel.close, basic.return).
    pub fn reply_code(&self) -> Option<u16> {
        self.get_u64(Arg::ReplyCode).map(|v| v as u16)
    }
    /// `reply-text`.
    pub fn reply_text(&self) -> Option<&Bytes> {
        self.get_bytes(Arg::ReplyText)
    }
    /// The failing method's (`class-id`, `method-id`) in connection/channel.close.
    pub fn failing_method(&self) -> Option<(u16, u16)> {
        Some((
            self.get_u64(Arg::ClassId)? as u16,
            self.get_u64(Arg::MethodId)? as u16,
        ))
    }
    /// `prefetch-count` (basic.qos).
    pub fn prefetch_count(&self) -> Option<u16> {
        self.get_u64(Arg::PrefetchCount).map(|v| v as u16)
    }
    /// `message-count` (queue.declare-ok/purge-ok/delete-ok, basic.get-ok).
    pub fn message_count(&self) -> Option<u32> {
        self.get_u64(Arg::MessageCount).map(|v| v as u32)
    }
    /// `mechanism` (connection.start-ok).
    pub fn mechanism(&self) -> Option<&Bytes> {
        self.get_bytes(Arg::Mechanism)
    }
    /// `arguments` table (declares, binds, consume).
    pub fn arguments(&self) -> Option<&FieldTable> {
        self.get_table(Arg::Arguments)
    }

    /// Decode a method payload (class-id, method-id, arguments). `r` covers exactly the
    /// payload; bytes left over are an error.
    pub fn decode(r: &mut Reader) -> Result<Method, DecodeError> {
        let def = Self::decode_def(r)?;
        let mut args = Args::new();
        let (buf, pos) = (r.buffer(), r.position());
        if inplace::method_args(buf, pos, buf.len(), def, &mut args) {
            r.skip(r.remaining())?;
            return Ok(Method { def, args });
        }
        let args = Self::decode_args(r, def)?;
        Ok(Method { def, args })
    }

    /// [`Method::decode`] of the payload `buf[pos..end]` (`buf[0]` sitting at absolute offset
    /// `base`), into the shared handle a frame holds: read from the frame's buffer as it
    /// is (no handle of the payload cut from it), the method built in the handle's own room
    /// and its arguments decoded straight into it, none moved there afterwards.
    pub(super) fn decode_shared(
        buf: &Bytes,
        pos: usize,
        end: usize,
        base: u64,
    ) -> Result<Arc<Method>, DecodeError> {
        let def = match buf.get(pos..end).and_then(|p| p.get(..4)) {
            Some(&[c0, c1, m0, m1]) => {
                Self::lookup(u16::from_be_bytes([c0, c1]), u16::from_be_bytes([m0, m1]))
            }
            _ => None,
        };
        let Some(def) = def else {
            // Ids cut short or naming no method: the slow path words the error.
            return inplace::decode_slowly(buf, pos, end, base, Self::decode);
        };
        let mut shared = Arc::<Method>::new_uninit();
        let m = Arc::get_mut(&mut shared)
            .expect("a new Arc is not shared")
            .write(Method {
                def,
                args: Args::new(),
            });
        if inplace::method_args(buf, pos + 4, end, def, &mut m.args) {
            // SAFETY: the method was written into the handle just above.
            return Ok(unsafe { shared.assume_init() });
        }
        // SAFETY: as above; dropped, with what was read into it.
        drop(unsafe { shared.assume_init() });
        inplace::decode_slowly(buf, pos, end, base, Self::decode)
    }

    /// The class-id and method-id at the start of `r`, looked up.
    #[inline]
    fn decode_def(r: &mut Reader) -> Result<&'static MethodDef, DecodeError> {
        if let Some(&[c0, c1, m0, m1]) = r.unread().get(..4)
            && let Some(def) =
                Self::lookup(u16::from_be_bytes([c0, c1]), u16::from_be_bytes([m0, m1]))
        {
            r.skip(4)?;
            return Ok(def);
        }
        Self::undefined(r)
    }

    /// The method of `class_id` and `method_id`, the ones most frames carry first.
    #[inline(always)]
    fn lookup(class_id: u16, method_id: u16) -> Option<&'static MethodDef> {
        match (class_id, method_id) {
            (60, 40) => Some(MethodKind::BasicPublish.def()),
            (60, 60) => Some(MethodKind::BasicDeliver.def()),
            (60, 80) => Some(MethodKind::BasicAck.def()),
            _ => method_def(class_id, method_id),
        }
    }

    /// The error for ids at the start of `r` that are cut short or name no method.
    #[cold]
    fn undefined(r: &mut Reader) -> Result<&'static MethodDef, DecodeError> {
        let at = r.offset();
        let class_id = r.u16().map_err(|e| e.within("class-id"))?;
        let method_id = r.u16().map_err(|e| e.within("method-id"))?;
        if let Some(def) = method_def(class_id, method_id) {
            return Ok(def);
        }
        Err(match class_def(class_id) {
            Some(c) => DecodeError::new(
                at + 2,
                ErrorKind::Unknown {
                    what: "method",
                    id: method_id.into(),
                },
            )
            .within(c.name),
            None => DecodeError::new(
                at,
                ErrorKind::Unknown {
                    what: "class",
                    id: class_id.into(),
                },
            ),
        })
    }

    /// The arguments of `def` decoded one at a time from the rest of `r` (which they must
    /// fill): the reader that words and positions every error.
    pub(super) fn decode_args(
        r: &mut Reader,
        def: &'static MethodDef,
    ) -> Result<Args, DecodeError> {
        let mut args = Args::new();
        let mut dec = ArgDecoder::new();
        for a in def.args {
            args.push(dec.next(r, a.name, a.ty).map_err(|e| e.within(def.name))?);
        }
        if !r.is_empty() {
            return Err(r
                .error(ErrorKind::TrailingBytes(r.remaining() as u64))
                .within(def.name));
        }
        Ok(args)
    }

    /// Append the payload (class-id, method-id, arguments) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.def.class_id);
        out.put_u16(self.def.method_id);
        encode_args(&self.args, out);
    }
}

/// Decodes arguments one at a time, packing consecutive bits from shared octets.
pub(crate) struct ArgDecoder {
    bits: u8,
    /// Bits of `bits` already used; 8 (or more) = no octet in use.
    used: u8,
}

impl ArgDecoder {
    /// A decoder at the start of an argument list.
    pub(crate) fn new() -> Self {
        ArgDecoder { bits: 0, used: 8 }
    }

    /// Decode the next argument, of type `ty`, called `name` (for error paths).
    #[inline]
    pub(crate) fn next(
        &mut self,
        r: &mut Reader,
        name: &'static str,
        ty: WireType,
    ) -> Result<Value, DecodeError> {
        if ty != WireType::Bit {
            self.used = 8;
        }
        let v = match ty {
            WireType::Bit => {
                if self.used >= 8 {
                    self.bits = r.u8().map_err(|e| e.within(name))?;
                    self.used = 0;
                }
                let v = self.bits & (1 << self.used) != 0;
                self.used += 1;
                Value::Bit(v)
            }
            WireType::Octet => Value::Octet(r.u8().map_err(|e| e.within(name))?),
            WireType::Short => Value::Short(r.u16().map_err(|e| e.within(name))?),
            WireType::Long => Value::Long(r.u32().map_err(|e| e.within(name))?),
            WireType::LongLong => Value::LongLong(r.u64().map_err(|e| e.within(name))?),
            WireType::Timestamp => Value::Timestamp(r.u64().map_err(|e| e.within(name))?),
            WireType::ShortStr => Value::ShortStr(shortstr(r).map_err(|e| e.within(name))?),
            WireType::LongStr => Value::LongStr(longstr(r).map_err(|e| e.within(name))?),
            WireType::Table => Value::Table(FieldTable::decode(r).map_err(|e| e.within(name))?),
        };
        Ok(v)
    }
}

/// Encode arguments, packing consecutive bits into octets (LSB first, 8 per octet).
pub(crate) fn encode_args<'a>(args: impl IntoIterator<Item = &'a Value>, out: &mut Vec<u8>) {
    let mut bit_at: Option<(usize, u8)> = None;
    for v in args {
        if !matches!(v, Value::Bit(_)) {
            bit_at = None;
        }
        match v {
            Value::Bit(b) => {
                let (at, n) = match bit_at {
                    Some((at, n)) if n < 8 => (at, n),
                    _ => {
                        out.push(0);
                        (out.len() - 1, 0)
                    }
                };
                if let (true, Some(o)) = (*b, out.get_mut(at)) {
                    *o |= 1 << n;
                }
                bit_at = Some((at, n + 1));
            }
            Value::Octet(x) => out.put_u8(*x),
            Value::Short(x) => out.put_u16(*x),
            Value::Long(x) => out.put_u32(*x),
            Value::LongLong(x) | Value::Timestamp(x) => out.put_u64(*x),
            Value::ShortStr(s) => put_shortstr(out, s),
            Value::LongStr(s) => put_longstr(out, s),
            Value::Table(t) => t.encode(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::amqp091::generated::METHODS;

    /// A method of `def` whose every argument differs from the others: the argument at
    /// place `i` is a value of its type made from `i`.
    fn distinct(def: &'static MethodDef) -> Method {
        let args = def.args.iter().enumerate().map(|(i, a)| {
            let n = i as u64 + 1;
            match a.ty {
                WireType::Bit => Value::Bit(i % 2 == 0),
                WireType::ShortStr | WireType::LongStr => {
                    let v = Bytes::from(format!("arg{i}"));
                    if a.ty == WireType::ShortStr {
                        Value::ShortStr(v)
                    } else {
                        Value::LongStr(v)
                    }
                }
                ty => match Value::default_for(ty, None) {
                    Value::Octet(_) => Value::Octet(n as u8),
                    Value::Short(_) => Value::Short(n as u16),
                    Value::Long(_) => Value::Long(n as u32),
                    Value::Timestamp(_) => Value::Timestamp(n),
                    Value::LongLong(_) => Value::LongLong(n),
                    other => other,
                },
            }
        });
        Method {
            def,
            args: args.collect(),
        }
    }

    #[test]
    fn accessors_with_places_known_read_what_the_generated_match_finds() {
        for def in METHODS.iter() {
            let m = distinct(def);
            let name = def.name;
            assert_eq!(
                m.delivery_tag(),
                m.get_u64(Arg::DeliveryTag),
                "{name} delivery-tag"
            );
            assert_eq!(m.multiple(), m.get_bool(Arg::Multiple), "{name} multiple");
            assert_eq!(
                m.consumer_tag(),
                m.get_bytes(Arg::ConsumerTag),
                "{name} consumer-tag"
            );
        }
    }
}
