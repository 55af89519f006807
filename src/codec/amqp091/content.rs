//! Content header frames: class-id, weight, body size, the property-flag word(s) (continuation
//! bit honoured) and the class's properties (basic's 14), decoded and encoded.
//!
//! Never panics on input; a flag for a property the class does not define is a typed error.

use std::sync::Arc;

use bytes::{BufMut, Bytes};

use super::field_table::FieldTable;
use super::generated::class_def;
use super::inplace;
use super::lists::Properties;
use super::method::{ArgDecoder, BuildError, Value, encode_args};
use super::table::ClassDef;
use crate::codec::{DecodeError, ErrorKind, Reader};

/// The basic class id (the only class with content in 0-9-1).
pub const BASIC_CLASS_ID: u16 = 60;

/// A content header frame's payload.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentHeader {
    /// The class whose content this is (60 = basic).
    pub class_id: u16,
    /// Unused by the spec; must be 0.
    pub weight: u16,
    /// Total body size the body frames must add up to.
    pub body_size: u64,
    /// Present properties, in property-flag order.
    pub properties: Properties,
    /// Extra (all-zero) property-flag words after the first, kept so encoding reproduces them.
    pub extra_flag_words: u16,
}

impl ContentHeader {
    /// A basic-class header with no properties.
    pub fn basic(body_size: u64) -> ContentHeader {
        ContentHeader {
            class_id: BASIC_CLASS_ID,
            weight: 0,
            body_size,
            properties: Properties::new(),
            extra_flag_words: 0,
        }
    }

    /// The class definition, if the class id is known.
    pub fn class(&self) -> Option<&'static ClassDef> {
        class_def(self.class_id)
    }

    /// Class name (`basic`), or `unknown`.
    pub fn class_name(&self) -> &'static str {
        self.class().map_or("unknown", |c| c.name)
    }

    /// Set property `name` (builder style), keeping property-flag order. Fails when the class
    /// has no such property or the value's wire type differs.
    pub fn with(mut self, name: &str, value: Value) -> Result<ContentHeader, BuildError> {
        let defs = self
            .class()
            .ok_or(BuildError::UnknownClass(self.class_id))?
            .properties;
        let idx = defs
            .iter()
            .position(|d| d.name == name)
            .ok_or_else(|| BuildError::NoSuchField(name.to_owned()))?;
        let def = &defs[idx];
        if def.ty != value.wire_type() {
            return Err(BuildError::WrongType {
                field: def.name,
                expected: def.ty,
                found: value.wire_type(),
            });
        }
        self.properties.retain(|(d, _)| d.name != name);
        let pos = self
            .properties
            .iter()
            .position(|(d, _)| defs.iter().position(|x| x.name == d.name) > Some(idx))
            .unwrap_or(self.properties.len());
        self.properties.insert(pos, def, value);
        Ok(self)
    }

    /// The property called `name` (spec spelling), if present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.properties
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(_, v)| v)
    }

    /// `content-type`.
    pub fn content_type(&self) -> Option<&Bytes> {
        self.get("content-type").and_then(Value::as_bytes)
    }
    /// `content-encoding`.
    pub fn content_encoding(&self) -> Option<&Bytes> {
        self.get("content-encoding").and_then(Value::as_bytes)
    }
    /// `headers`.
    pub fn headers(&self) -> Option<&FieldTable> {
        self.get("headers").and_then(Value::as_table)
    }
    /// `delivery-mode` (1 transient, 2 persistent).
    pub fn delivery_mode(&self) -> Option<u8> {
        self.get("delivery-mode")
            .and_then(Value::as_u64)
            .map(|v| v as u8)
    }
    /// `priority`.
    pub fn priority(&self) -> Option<u8> {
        self.get("priority")
            .and_then(Value::as_u64)
            .map(|v| v as u8)
    }
    /// `correlation-id`.
    pub fn correlation_id(&self) -> Option<&Bytes> {
        self.get("correlation-id").and_then(Value::as_bytes)
    }
    /// `reply-to`.
    pub fn reply_to(&self) -> Option<&Bytes> {
        self.get("reply-to").and_then(Value::as_bytes)
    }
    /// `expiration`.
    pub fn expiration(&self) -> Option<&Bytes> {
        self.get("expiration").and_then(Value::as_bytes)
    }
    /// `message-id`.
    pub fn message_id(&self) -> Option<&Bytes> {
        self.get("message-id").and_then(Value::as_bytes)
    }
    /// `timestamp`, seconds since the epoch.
    pub fn timestamp(&self) -> Option<u64> {
        self.get("timestamp").and_then(Value::as_u64)
    }
    /// `type`.
    pub fn type_(&self) -> Option<&Bytes> {
        self.get("type").and_then(Value::as_bytes)
    }
    /// `user-id`.
    pub fn user_id(&self) -> Option<&Bytes> {
        self.get("user-id").and_then(Value::as_bytes)
    }
    /// `app-id`.
    pub fn app_id(&self) -> Option<&Bytes> {
        self.get("app-id").and_then(Value::as_bytes)
    }
    /// `cluster-id`.
    pub fn cluster_id(&self) -> Option<&Bytes> {
        self.get("cluster-id").and_then(Value::as_bytes)
    }

    /// Decode a content header payload; `r` covers exactly the payload.
    pub fn decode(r: &mut Reader) -> Result<ContentHeader, DecodeError> {
        let mut h = ContentHeader::basic(0);
        let (buf, pos) = (r.buffer(), r.position());
        if inplace::content_header(buf, pos, buf.len(), &mut h) {
            r.skip(r.remaining())?;
            return Ok(h);
        }
        Self::decode_fields(r)
    }

    /// [`ContentHeader::decode`] of the payload `buf[pos..end]` (`buf[0]` sitting at absolute
    /// offset `base`), into the shared handle a frame holds: read from the frame's buffer as
    /// it is (no handle of the payload cut from it), the header built in the handle's own room
    /// and its properties decoded straight into it, none moved there afterwards.
    pub(super) fn decode_shared(
        buf: &Bytes,
        pos: usize,
        end: usize,
        base: u64,
    ) -> Result<Arc<ContentHeader>, DecodeError> {
        let mut shared = Arc::<ContentHeader>::new_uninit();
        let h = Arc::get_mut(&mut shared)
            .expect("a new Arc is not shared")
            .write(ContentHeader::basic(0));
        let read = inplace::content_header(buf, pos, end, h);
        // SAFETY: the header was written into the handle just above.
        let shared = unsafe { shared.assume_init() };
        if read {
            return Ok(shared);
        }
        drop(shared);
        inplace::decode_slowly(buf, pos, end, base, Self::decode_fields)
    }

    /// A content header payload decoded field by field: the reader that words and positions
    /// every error.
    pub(super) fn decode_fields(r: &mut Reader) -> Result<ContentHeader, DecodeError> {
        let at = r.offset();
        let class_id = r.u16().map_err(|e| e.within("class-id"))?;
        let weight = r.u16().map_err(|e| e.within("weight"))?;
        let body_size = r.u64().map_err(|e| e.within("body-size"))?;
        let class = class_def(class_id).ok_or_else(|| {
            DecodeError::new(
                at,
                ErrorKind::Unknown {
                    what: "class",
                    id: class_id.into(),
                },
            )
            .within("class-id")
        })?;
        let defs = class.properties;
        // Collect the flags of the first word; later words must flag nothing (no class defines
        // more than 15 properties) but may exist.
        let flags_at = r.offset();
        let mut word = r.u16().map_err(|e| e.within("property-flags"))?;
        let flags = word;
        let mut extra_flag_words: u16 = 0;
        while word & 1 != 0 {
            let at = r.offset();
            word = r.u16().map_err(|e| e.within("property-flags"))?;
            if word & !1 != 0 {
                return Err(DecodeError::new(
                    at,
                    ErrorKind::InvalidEncoding("property flag for an undefined property"),
                )
                .within("property-flags"));
            }
            extra_flag_words = extra_flag_words.saturating_add(1);
        }
        let known_mask = inplace::known_flags(defs.len());
        if flags & !known_mask & !1 != 0 {
            return Err(DecodeError::new(
                flags_at,
                ErrorKind::InvalidEncoding("property flag for an undefined property"),
            )
            .within("property-flags"));
        }
        let mut properties = Properties::new();
        let mut dec = ArgDecoder::new();
        for (i, d) in defs.iter().take(15).enumerate() {
            if flags & (1 << (15 - i)) != 0 {
                let v = dec
                    .next(r, d.name, d.ty)
                    .map_err(|e| e.within("properties"))?;
                properties.push(d, v);
            }
        }
        if !r.is_empty() {
            return Err(r.error(ErrorKind::TrailingBytes(r.remaining() as u64)));
        }
        Ok(ContentHeader {
            class_id,
            weight,
            body_size,
            properties,
            extra_flag_words,
        })
    }

    /// Append the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.class_id);
        out.put_u16(self.weight);
        out.put_u64(self.body_size);
        let defs = self.class().map_or(&[][..], |c| c.properties);
        let mut flags: u16 = 0;
        for (d, _) in &self.properties {
            if let Some(i) = defs.iter().take(15).position(|x| x.name == d.name) {
                flags |= 1 << (15 - i);
            }
        }
        if self.extra_flag_words > 0 {
            flags |= 1;
        }
        out.put_u16(flags);
        for i in 0..self.extra_flag_words {
            out.put_u16(if i + 1 < self.extra_flag_words { 1 } else { 0 });
        }
        // Properties are laid out like arguments, in flag order.
        encode_args(self.properties.iter().map(|(_, v)| v), out);
    }
}
