//! AMQP 1.0: the type system, frames, every composite, SASL, and messages (sans-IO).
//!
//! [`decode_frame`] turns one frame's bytes into a [`Frame`]: header, the performative or SASL
//! body checked against the spec's field tables (types, mandatory fields, `multiple`), each
//! top-level field's byte span, a typed view for the state trackers ([`Performative`],
//! [`SaslFrame`]) and the transfer payload (zero-copy). [`MessageAssembler`] turns transfers into
//! [`Message`]s. Nothing here does I/O, panics on input, or allocates beyond what the input
//! justifies.

pub mod amqp_error;
pub mod cbs;
pub mod composite;
pub mod delivery_state;
pub mod encoded_fields;
pub mod fields;
pub mod frame;
pub mod mask;
pub mod message;
pub mod performative;
pub mod render;
pub mod sasl;
pub mod section_check;
pub mod tables;
pub mod terminus;
pub mod transaction;
pub mod value;
pub mod views;

use std::ops::Range;

use bytes::Bytes;

use super::{DecodeError, ErrorKind, Reader};

pub use amqp_error::AmqpError;
pub use composite::{Composite, CompositeDef, FieldDef, FieldType};
pub use delivery_state::DeliveryState;
pub use fields::Map;
pub use frame::{FrameHeader, TYPE_AMQP, TYPE_SASL};
pub use message::{Body as MessageBody, Header, Message, MessageAssembler, Properties, Section};
pub use performative::{
    Attach, Begin, Close, Detach, Disposition, End, Flow, Open, Performative, ReceiverSettleMode,
    Role, SenderSettleMode, Transfer,
};
pub use sasl::{SaslCode, SaslFrame};
pub use terminus::{AnyTarget, Coordinator, LifetimePolicy, Source, Target};
pub use transaction::TxnControl;
pub use value::{Array, Described, Descriptor, EncodeError, Kind, Str, Symbol, Value};

/// What a frame carries.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameBody {
    /// No body: an empty frame (heartbeat).
    Empty,
    /// A performative (frame type 0).
    Amqp {
        /// The generic, table-checked composite with field spans.
        composite: Composite,
        /// The typed view.
        performative: Performative,
    },
    /// A SASL frame (frame type 1).
    Sasl {
        /// The generic, table-checked composite with field spans.
        composite: Composite,
        /// The typed view (boxed: SASL frames are rare, and a frame is moved often).
        sasl: Box<SaslFrame>,
    },
    /// A frame type this codec does not know; its body kept as is.
    Unknown {
        /// The body bytes.
        body: Bytes,
    },
}

/// One decoded AMQP 1.0 or SASL frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The channel from the frame header (ignored by SASL).
    pub channel: u16,
    /// Frame type (0 AMQP, 1 SASL, other values kept).
    pub frame_type: u8,
    /// Absolute offset of the frame's first byte in its direction's stream.
    pub offset: u64,
    /// The frame's exact bytes.
    pub raw: Bytes,
    /// Data offset in 4-byte words: the body starts at `doff * 4` (8 without an extended
    /// header).
    pub doff: u8,
    /// What it carries.
    pub body: FrameBody,
    /// Where the bytes after the performative (a transfer's message payload,
    /// [`Frame::payload`]) start within `raw`.
    pub payload_start: usize,
    /// Bytes of the frame after `raw` that were not held: a frame larger than the inspection
    /// budget is decoded from its head (`raw`), the rest streamed past (0 for a whole frame).
    pub streamed: u64,
}

impl Frame {
    /// The frame's channel.
    pub fn channel(&self) -> u16 {
        self.channel
    }

    /// `open` … `close`, `empty`, `sasl-mechanisms` … `sasl-outcome`, or `unknown`.
    pub fn name(&self) -> &'static str {
        match &self.body {
            FrameBody::Empty => "empty",
            FrameBody::Amqp { performative, .. } => performative.name(),
            FrameBody::Sasl { sasl, .. } => sasl.name(),
            FrameBody::Unknown { .. } => "unknown",
        }
    }

    /// True for SASL frames (JSON `"proto": "amqp-sasl"`).
    pub fn is_sasl(&self) -> bool {
        self.frame_type == TYPE_SASL
    }

    /// The typed performative, for AMQP frames.
    pub fn performative(&self) -> Option<&Performative> {
        match &self.body {
            FrameBody::Amqp { performative, .. } => Some(performative),
            _ => None,
        }
    }

    /// The typed SASL body, for SASL frames.
    pub fn sasl(&self) -> Option<&SaslFrame> {
        match &self.body {
            FrameBody::Sasl { sasl, .. } => Some(sasl.as_ref()),
            _ => None,
        }
    }

    /// The transfer, if this is one.
    pub fn transfer(&self) -> Option<&Transfer> {
        match self.performative()? {
            Performative::Transfer(t) => Some(t),
            _ => None,
        }
    }

    /// The generic composite (field values as on the wire, with spans).
    pub fn composite(&self) -> Option<&Composite> {
        match &self.body {
            FrameBody::Amqp { composite, .. } | FrameBody::Sasl { composite, .. } => {
                Some(composite)
            }
            _ => None,
        }
    }

    /// The extended header: the bytes between the 8-byte header and the body (usually none).
    pub fn extended_header(&self) -> &[u8] {
        let end = (usize::from(self.doff) * 4).min(self.raw.len());
        self.raw.get(frame::HEADER_LEN..end).unwrap_or_default()
    }

    /// The payload after the performative (a transfer's message bytes).
    pub fn payload(&self) -> &[u8] {
        self.raw.get(self.payload_start..).unwrap_or_default()
    }

    /// [`Frame::payload`]'s first `len` bytes (at most), sharing the frame's bytes.
    pub fn payload_bytes(&self, len: usize) -> Bytes {
        let start = self.payload_start.min(self.raw.len());
        self.raw
            .slice(start..start + len.min(self.raw.len() - start))
    }

    /// The frame's full size: its bytes held (`raw`) and those streamed past.
    pub fn size(&self) -> u64 {
        self.raw.len() as u64 + self.streamed
    }

    /// The payload's full length (`payload` may hold only its head, see [`Frame::streamed`]).
    pub fn payload_len(&self) -> u64 {
        self.payload().len() as u64 + self.streamed
    }

    /// Absolute stream offset of the payload's first byte.
    pub fn payload_abs_offset(&self) -> u64 {
        self.offset + self.payload_start as u64
    }

    /// Byte span (within the raw frame) of the top-level field `name`, for hex highlighting.
    pub fn field_span(&self, name: &str) -> Option<Range<usize>> {
        self.composite()?.span_named(&self.raw, name)
    }

    /// One line in the shape of Qpid Proton's frame trace, e.g.
    /// `@attach(18) [name="x", handle=0, role=false, ...]`; transfers add a payload note.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.summary_into(&mut out);
        out
    }

    /// [`Frame::summary`], appended to `out`.
    pub fn summary_into(&self, out: &mut String) {
        use std::fmt::Write as _;
        match &self.body {
            FrameBody::Empty => out.push_str("(empty frame)"),
            FrameBody::Amqp { composite, .. } | FrameBody::Sasl { composite, .. } => {
                composite.with_fields(&self.raw, |fields| {
                    render::composite_into(composite.def, fields, out)
                });
                let payload = self.payload_len();
                if payload > 0 {
                    out.push_str(" (payload ");
                    out.push_str(itoa::Buffer::new().format(payload));
                    out.push_str(" bytes)");
                }
            }
            FrameBody::Unknown { body } => {
                let _ = write!(
                    out,
                    "(unknown frame type {}, {} byte body)",
                    self.frame_type,
                    body.len()
                );
            }
        }
    }

    /// The performative's fields as a JSON object keyed by the spec's (kebab-case) field names.
    pub fn fields_json(&self) -> serde_json::Value {
        crate::json::to_value(|o| self.write_fields_json(o))
    }

    /// [`Frame::fields_json`], written to `o`.
    pub fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
        o.begin_object();
        match &self.body {
            FrameBody::Amqp { composite, .. } | FrameBody::Sasl { composite, .. } => {
                composite.with_fields(&self.raw, |fields| {
                    render::write_fields_entries(o, composite.def, fields)
                });
            }
            FrameBody::Empty => {}
            FrameBody::Unknown { body } => {
                o.key("body");
                value::write_binary(o, body, value::JSON_BINARY_MAX);
                o.entry_u64("frame-type", self.frame_type.into());
            }
        }
        o.end_object();
    }

    /// Byte ranges (within the raw frame) holding credentials, to be masked: SASL responses and
    /// the token of a `$cbs` put-token request carried by one transfer.
    #[inline]
    pub fn secret_ranges(&self) -> Vec<Range<usize>> {
        self.secret_ranges_knowing(None)
    }

    /// [`Frame::secret_ranges`], knowing `message`, the message this frame completes (when it
    /// decoded): a transfer whose message [`cbs::rules_out_put_token`] is not searched for a
    /// put-token.
    #[inline]
    pub fn secret_ranges_knowing(&self, message: Option<&Message>) -> Vec<Range<usize>> {
        match &self.body {
            FrameBody::Sasl { composite, sasl } => sasl::secret_ranges(sasl, composite, &self.raw),
            FrameBody::Amqp { .. } if message.is_some_and(cbs::rules_out_put_token) => Vec::new(),
            FrameBody::Amqp { .. } => cbs::put_token_ranges(self),
            _ => Vec::new(),
        }
    }
}

/// Total size of the frame starting at `buf[0]`, once its 4-byte size is visible.
/// Errors when the size field is malformed (less than 8).
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    frame::frame_size(buf)
}

/// Decode one complete frame (`raw` is exactly one frame), found at absolute `offset`.
pub fn decode_frame(raw: Bytes, offset: u64) -> Result<Frame, DecodeError> {
    let size = raw.len() as u64;
    decode_frame_of(raw, offset, size)
}

/// Decode `raw`, the first bytes of a frame of `size` bytes (the whole frame when `size` is
/// `raw.len()`) found at absolute `offset`, as if the frame ended where `raw` ends: the
/// performative and payload are read from `raw` alone, without copying it.
pub fn decode_frame_of(raw: Bytes, offset: u64, size: u64) -> Result<Frame, DecodeError> {
    let h = frame::parse_header_of(&raw, offset, size)?;
    let body_start = h.body_offset();
    // The frame is made once, whole, from its parts (a frame is some hundred bytes: made
    // empty and then filled in, it would be built twice).
    let (body, payload_start, raw) = if body_start >= raw.len() {
        (FrameBody::Empty, raw.len(), raw)
    } else if matches!(h.frame_type, TYPE_AMQP | TYPE_SASL) {
        // Read the body in place (the reader owns `raw` meanwhile; no sub-buffer).
        let mut r = Reader::at(raw, body_start, offset);
        let body = decode_body(&mut r, h.frame_type, offset + body_start as u64, offset)?;
        (body, r.position(), r.into_buffer())
    } else {
        let body = raw.slice(body_start..);
        (FrameBody::Unknown { body }, raw.len(), raw)
    };
    Ok(Frame {
        channel: h.channel,
        frame_type: h.frame_type,
        offset,
        raw,
        doff: h.doff,
        body,
        payload_start,
        streamed: 0,
    })
}

/// The performative or SASL frame (`frame_type`) that `r` holds at `at`, the body of the
/// frame found at `offset`; `r` is left after it, at the payload.
fn decode_body(
    r: &mut Reader,
    frame_type: u8,
    at: u64,
    offset: u64,
) -> Result<FrameBody, DecodeError> {
    let (composite, view) = composite::decode_top(r, offset, |def, f| {
        if frame_type == TYPE_AMQP {
            Performative::from_fields(def, f).map(BodyView::Amqp)
        } else {
            SaslFrame::from_fields(def, f).map(|s| BodyView::Sasl(Box::new(s)))
        }
    })?;
    Ok(match view {
        Some(BodyView::Amqp(performative)) => FrameBody::Amqp {
            composite,
            performative,
        },
        Some(BodyView::Sasl(sasl)) => FrameBody::Sasl { composite, sasl },
        None => {
            let expected = match frame_type {
                TYPE_AMQP => "performative",
                _ => "SASL frame",
            };
            let found = composite.def.name;
            return Err(DecodeError::new(
                at,
                ErrorKind::UnexpectedType { expected, found },
            ));
        }
    })
}

/// The typed view of a frame body's composite.
enum BodyView {
    Amqp(Performative),
    Sasl(Box<SaslFrame>),
}

/// Encode a frame: header (doff 2), then `body` (a performative or SASL composite as a
/// described value) and `payload`. For tests, fuzz seeds and tools.
pub fn encode_frame(
    frame_type: u8,
    channel: u16,
    body: Option<&Value>,
    payload: &[u8],
) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![0, 0, 0, 0, 2, frame_type];
    out.extend_from_slice(&channel.to_be_bytes());
    if let Some(b) = body {
        b.encode(&mut out)?;
    }
    out.extend_from_slice(payload);
    let size = u32::try_from(out.len()).map_err(|_| EncodeError::TooLarge)?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}

/// A described list `@code [fields...]` for a composite (helper for encoding composites).
pub fn described_list(code: u64, fields: Vec<Value>) -> Value {
    Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value: Value::List(fields),
    }))
}
