//! Messages: a transfer payload decoded into its sections (header, delivery-annotations,
//! message-annotations, properties, application-properties, data / amqp-sequence / amqp-value,
//! footer), and [`MessageAssembler`], which reassembles deliveries split over several transfers
//! (`more=true`) per (channel, link handle), discarding aborted ones.
//!
//! Memory is bounded: an in-progress delivery holds zero-copy slices of the frames it came in
//! (so never more than the input), and is dropped with a typed error past
//! [`MAX_DELIVERY_BYTES`]; all in-progress deliveries together are capped at
//! [`MAX_ASSEMBLING_BYTES`].

use crate::hash::HashMap;

use bytes::{Bytes, BytesMut};

use super::Frame;
use super::composite::{check_value, lookup_descriptor};
use super::fields::{FieldList, Map};
use super::performative::Performative;
use super::render::write_fields_entries;
use super::value::{self, Described, Str, Symbol, Value, write_fields_map};
use crate::codec::{DecodeError, ErrorKind, Reader};
use crate::json::{JsonOut, to_value};

/// Largest single delivery the assembler will hold (64 MiB).
pub const MAX_DELIVERY_BYTES: usize = 64 * 1024 * 1024;
/// Largest total of in-progress deliveries per direction (256 MiB).
pub const MAX_ASSEMBLING_BYTES: usize = 256 * 1024 * 1024;

/// One message section.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Section name (`header`, `data` ...).
    pub name: &'static str,
    /// Descriptor code (0x70..=0x78).
    pub code: u64,
    /// The section's value (list for header/properties, map, binary, list, any).
    pub value: Value,
    /// Byte span within the message payload.
    pub span: std::ops::Range<usize>,
}

/// `header` section (0x70), defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Default false.
    pub durable: bool,
    /// Default 4.
    pub priority: u8,
    /// Milliseconds.
    pub ttl: Option<u32>,
    /// Default false.
    pub first_acquirer: bool,
    /// Default 0.
    pub delivery_count: u32,
}

/// `properties` section (0x73).
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub struct Properties {
    pub message_id: Option<Value>,
    pub user_id: Option<Bytes>,
    pub to: Option<Value>,
    pub subject: Option<Str>,
    pub reply_to: Option<Value>,
    pub correlation_id: Option<Value>,
    pub content_type: Option<Symbol>,
    pub content_encoding: Option<Symbol>,
    pub absolute_expiry_time: Option<i64>,
    pub creation_time: Option<i64>,
    pub group_id: Option<Str>,
    pub group_sequence: Option<u32>,
    pub reply_to_group_id: Option<Str>,
}

/// The body of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// One or more `data` sections.
    Data(Vec<Bytes>),
    /// One or more `amqp-sequence` sections.
    Sequence(Vec<Vec<Value>>),
    /// An `amqp-value` section.
    Value(Value),
    /// No body section.
    None,
}

/// A complete message, reassembled from one or more transfers.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// Channel of the transfers.
    pub channel: u16,
    /// Link handle.
    pub handle: u32,
    /// From the first transfer.
    pub delivery_id: Option<u32>,
    /// From the first transfer.
    pub delivery_tag: Option<Bytes>,
    /// From the first transfer.
    pub message_format: Option<u32>,
    /// How many transfers carried it.
    pub transfers: usize,
    /// The whole encoded message.
    pub payload: Bytes,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

impl Message {
    /// Decode `payload` (whose first byte sits at absolute `offset`) into sections.
    pub fn decode_sections(payload: &Bytes, offset: u64) -> Result<Vec<Section>, DecodeError> {
        let mut r = Reader::new(payload.clone(), offset);
        // Most messages are one to three sections.
        let mut sections = Vec::with_capacity(2);
        while !r.is_empty() {
            let start = r.position();
            let at = r.offset();
            let not_a_section = || {
                DecodeError::new(
                    at,
                    ErrorKind::UnexpectedType {
                        expected: "message section",
                        found: "other value",
                    },
                )
                .within("message")
            };
            if r.peek_u8()? != value::code::DESCRIBED {
                // Not a described value: decode it (its own errors first), then refuse it.
                value::decode(&mut r).map_err(|e| e.within("message"))?;
                return Err(not_a_section());
            }
            r.u8()?;
            // Decoded in place: descriptor, then the value, with no boxed `Described`.
            let descriptor =
                value::decode_descriptor(&mut r, 1).map_err(|e| e.within("message"))?;
            let def = lookup_descriptor(&descriptor).filter(|def| def.provides("section"));
            let v = value::decode_at(&mut r, 1).map_err(|e| e.within("message"))?;
            let Some(def) = def else {
                return Err(not_a_section());
            };
            check_value(def, &v, at, 1).map_err(|e| e.within(def.name).within("message"))?;
            sections.push(Section {
                name: def.name,
                code: def.code,
                value: v,
                span: start..r.position(),
            });
        }
        Ok(sections)
    }

    /// The first section with this descriptor code.
    pub fn section(&self, code: u64) -> Option<&Section> {
        self.sections.iter().find(|s| s.code == code)
    }

    /// The header section, defaults applied.
    pub fn header(&self) -> Option<Header> {
        let s = self.section(0x70)?;
        let Value::List(items) = &s.value else {
            return None;
        };
        let f = FieldList(items);
        Some(Header {
            durable: f.bool(0).unwrap_or(false),
            priority: f.ubyte(1).unwrap_or(4),
            ttl: f.uint(2),
            first_acquirer: f.bool(3).unwrap_or(false),
            delivery_count: f.uint(4).unwrap_or(0),
        })
    }

    /// The properties section.
    pub fn properties(&self) -> Option<Properties> {
        let s = self.section(0x73)?;
        let Value::List(items) = &s.value else {
            return None;
        };
        let f = FieldList(items);
        let ts = |i| match f.get(i) {
            Some(Value::Timestamp(t)) => Some(*t),
            _ => None,
        };
        Some(Properties {
            message_id: f.value(0),
            user_id: f.binary(1),
            to: f.value(2),
            subject: f.string(3),
            reply_to: f.value(4),
            correlation_id: f.value(5),
            content_type: f.symbol(6),
            content_encoding: f.symbol(7),
            absolute_expiry_time: ts(8),
            creation_time: ts(9),
            group_id: f.string(10),
            group_sequence: f.uint(11),
            reply_to_group_id: f.string(12),
        })
    }

    fn map_section(&self, code: u64) -> Option<&Map> {
        match &self.section(code)?.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    /// delivery-annotations.
    pub fn delivery_annotations(&self) -> Option<&Map> {
        self.map_section(0x71)
    }
    /// message-annotations.
    pub fn message_annotations(&self) -> Option<&Map> {
        self.map_section(0x72)
    }
    /// application-properties.
    pub fn application_properties(&self) -> Option<&Map> {
        self.map_section(0x74)
    }
    /// footer.
    pub fn footer(&self) -> Option<&Map> {
        self.map_section(0x78)
    }

    /// The body.
    pub fn body(&self) -> Body {
        let mut data = Vec::new();
        let mut seq = Vec::new();
        for s in &self.sections {
            match (s.code, &s.value) {
                (0x75, Value::Binary(b)) => data.push(b.clone()),
                (0x76, Value::List(l)) => seq.push(l.clone()),
                (0x77, v) => return Body::Value(v.clone()),
                _ => {}
            }
        }
        if !data.is_empty() {
            Body::Data(data)
        } else if !seq.is_empty() {
            Body::Sequence(seq)
        } else {
            Body::None
        }
    }

    /// The decoded sections as JSON; bodies longer than `max_body` bytes are truncated and
    /// their full size stated (`len`).
    pub fn to_json(&self, max_body: usize) -> serde_json::Value {
        to_value(|o| {
            o.begin_object();
            self.write_json_entries(o, max_body);
            o.end_object();
        })
    }

    /// The entries of [`Message::to_json`], written into an object open in `o`: each section
    /// under its name, all `data` sections as one array, all `amqp-sequence` sections as one
    /// array, then `size` and `transfers`.
    pub fn write_json_entries<O: JsonOut + ?Sized>(&self, o: &mut O, max_body: usize) {
        for code in SECTIONS_BY_NAME {
            let mut of_code = self.sections.iter().filter(|s| s.code == code).peekable();
            if of_code.peek().is_none() {
                continue;
            }
            match code {
                AMQP_SEQUENCE => {
                    o.key("amqp-sequence");
                    o.begin_array();
                    for s in of_code {
                        s.value.write_json(o);
                    }
                    o.end_array();
                }
                DATA => {
                    // Binary data sections make the array; anything else would be shown as a
                    // section of its own, under the same key (so the array wins).
                    let mut binary = false;
                    for s in of_code {
                        if matches!(s.value, Value::Binary(_)) {
                            binary = true;
                        } else {
                            o.key(s.name);
                            write_section_value(o, s);
                        }
                    }
                    if binary {
                        o.key("data");
                        o.begin_array();
                        for s in self.sections.iter().filter(|s| s.code == DATA) {
                            if let Value::Binary(b) = &s.value {
                                write_data(o, b, max_body);
                            }
                        }
                        o.end_array();
                    }
                }
                _ => {
                    for s in of_code {
                        o.key(s.name);
                        write_section_value(o, s);
                    }
                }
            }
        }
        o.entry_u64("size", self.payload.len() as u64);
        o.entry_u64("transfers", self.transfers as u64);
    }
}

/// `data` section code.
const DATA: u64 = 0x75;
/// `amqp-sequence` section code.
const AMQP_SEQUENCE: u64 = 0x76;
/// The section codes in the byte order of their names (`amqp-sequence`, `amqp-value`,
/// `application-properties`, `data`, `delivery-annotations`, `footer`, `header`,
/// `message-annotations`, `properties`), so the JSON keys are written in order.
const SECTIONS_BY_NAME: [u64; 9] = [
    AMQP_SEQUENCE,
    0x77,
    0x74,
    DATA,
    0x71,
    0x78,
    0x70,
    0x72,
    0x73,
];

/// A section's value: known composites (header, properties) as objects keyed by field name,
/// symbol/string-keyed maps as objects, anything else as a value.
fn write_section_value<O: JsonOut + ?Sized>(o: &mut O, s: &Section) {
    match &s.value {
        Value::List(items) => match lookup_descriptor(&value::Descriptor::Code(s.code)) {
            Some(def) => {
                o.begin_object();
                write_fields_entries(o, def, items);
                o.end_object();
            }
            None => s.value.write_json(o),
        },
        Value::Map(pairs) => write_fields_map(o, pairs),
        v => v.write_json(o),
    }
}

/// A data section: `{"text"}` when the whole body is UTF-8, else `{"binary"}` (hex) as for
/// any binary; either cut at `max_body` bytes (text on a char boundary), with `"len"` then. The
/// body is shown once: the frame's `raw` holds its exact bytes.
fn write_data<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], max_body: usize) {
    o.begin_object();
    match std::str::from_utf8(b) {
        Ok(text) => {
            let mut cut = text.len().min(max_body);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            o.entry_str("text", text.get(..cut).unwrap_or_default());
            if cut < text.len() {
                o.entry_u64("len", b.len() as u64);
            }
        }
        Err(_) => value::write_binary_entries(o, b, max_body),
    }
    o.end_object();
}

/// An in-progress delivery.
#[derive(Debug)]
struct Partial {
    delivery_id: Option<u32>,
    delivery_tag: Option<Bytes>,
    message_format: Option<u32>,
    offset: u64,
    chunks: Vec<Bytes>,
    len: usize,
    transfers: usize,
    /// Dropped for size; ignore the rest of this delivery.
    overflowed: bool,
}

/// Reassembles deliveries split over several transfers (`more`), per (channel, link handle),
/// for one direction of one connection.
#[derive(Debug, Default)]
pub struct MessageAssembler {
    partial: HashMap<(u16, u32), Partial>,
    total: usize,
}

impl MessageAssembler {
    /// Bytes held in in-progress deliveries.
    pub fn buffered(&self) -> usize {
        self.total
    }

    /// Feed a frame; returns a message (or why it could not be decoded) when this frame
    /// completes a delivery.
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        let t = match frame.performative() {
            Some(Performative::Transfer(t)) => t,
            Some(Performative::Detach(d)) => {
                self.drop_partial(frame.channel, d.handle);
                return None;
            }
            Some(Performative::End(_)) => {
                let ch = frame.channel;
                let keys: Vec<_> = self.partial.keys().filter(|k| k.0 == ch).copied().collect();
                for k in keys {
                    self.drop_partial(k.0, k.1);
                }
                return None;
            }
            _ => return None,
        };
        let key = (frame.channel, t.handle);
        let payload = frame.payload();
        if t.aborted {
            self.drop_partial(key.0, key.1);
            return None;
        }
        if !t.more && !self.partial.contains_key(&key) {
            if payload.is_empty() {
                return None;
            }
            // The common case: a whole message in one transfer, decoded zero-copy.
            let offset = frame.payload_abs_offset();
            return Some(
                Message::decode_sections(payload, offset).map(|sections| Message {
                    channel: frame.channel,
                    handle: t.handle,
                    delivery_id: t.delivery_id,
                    delivery_tag: t.delivery_tag.clone(),
                    message_format: t.message_format,
                    transfers: 1,
                    payload: payload.clone(),
                    sections,
                }),
            );
        }
        let p = self.partial.entry(key).or_insert_with(|| Partial {
            delivery_id: t.delivery_id,
            delivery_tag: t.delivery_tag.clone(),
            message_format: t.message_format,
            offset: frame.payload_abs_offset(),
            chunks: Vec::new(),
            len: 0,
            transfers: 0,
            overflowed: false,
        });
        p.transfers += 1;
        let mut report = None;
        if !p.overflowed {
            let len = p.len.saturating_add(payload.len());
            let total = self.total.saturating_add(payload.len());
            if len > MAX_DELIVERY_BYTES || total > MAX_ASSEMBLING_BYTES {
                p.overflowed = true;
                self.total = self.total.saturating_sub(p.len);
                p.chunks = Vec::new();
                p.len = 0;
                let max = if len > MAX_DELIVERY_BYTES {
                    MAX_DELIVERY_BYTES
                } else {
                    MAX_ASSEMBLING_BYTES
                };
                report = Some(Err(DecodeError::new(
                    frame.offset,
                    ErrorKind::FrameTooLarge {
                        size: len as u64,
                        max: max as u64,
                    },
                )
                .within("message")));
            } else if !payload.is_empty() {
                p.chunks.push(payload.clone());
                p.len = len;
                self.total = total;
            }
        }
        if t.more {
            return report;
        }
        let p = self.partial.remove(&key)?;
        self.total = self.total.saturating_sub(p.len);
        if p.overflowed {
            return report;
        }
        let payload = match p.chunks.len() {
            0 => Bytes::new(),
            1 => p.chunks.into_iter().next().unwrap_or_default(),
            _ => {
                let mut buf = BytesMut::with_capacity(p.len);
                for c in &p.chunks {
                    buf.extend_from_slice(c);
                }
                buf.freeze()
            }
        };
        Some(
            Message::decode_sections(&payload, p.offset).map(|sections| Message {
                channel: frame.channel,
                handle: t.handle,
                delivery_id: p.delivery_id,
                delivery_tag: p.delivery_tag,
                message_format: p.message_format,
                transfers: p.transfers,
                payload,
                sections,
            }),
        )
    }

    fn drop_partial(&mut self, channel: u16, handle: u32) {
        if let Some(p) = self.partial.remove(&(channel, handle)) {
            self.total = self.total.saturating_sub(p.len);
        }
    }
}

/// A described section value as a `Described` (for callers that want the generic form).
pub fn section_described(s: &Section) -> Described {
    Described {
        descriptor: value::Descriptor::Code(s.code),
        value: s.value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_by_name_lists_every_section_in_name_order() {
        let names: Vec<&str> = SECTIONS_BY_NAME
            .iter()
            .map(|&c| lookup_descriptor(&value::Descriptor::Code(c)).unwrap().name)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let mut codes = SECTIONS_BY_NAME.to_vec();
        codes.sort_unstable();
        let all: Vec<u64> = (0x70..=0x78)
            .filter(|&c| {
                lookup_descriptor(&value::Descriptor::Code(c))
                    .is_some_and(|d| d.provides("section"))
            })
            .collect();
        assert_eq!(codes, all);
    }
}
