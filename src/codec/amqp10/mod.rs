//! AMQP 1.0: the type system, frames, every composite, SASL, and messages.
//!
//! PLACEHOLDER: the contract below is what `codec::stream` and the sinks rely on; the
//! implementation replaces the bodies.

use std::ops::Range;

use bytes::Bytes;

use super::{DecodeError, ErrorKind};

/// One decoded AMQP 1.0 or SASL frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The channel from the frame header (0 for SASL frames).
    pub channel: u16,
}

impl Frame {
    /// The frame's channel.
    pub fn channel(&self) -> u16 {
        self.channel
    }
    /// `open` … `close`, `empty`, `sasl-mechanisms` … `sasl-outcome`, or `unknown`.
    pub fn name(&self) -> &'static str {
        "unknown"
    }
    /// One line in the shape of Qpid Proton's frame trace.
    pub fn summary(&self) -> String {
        String::new()
    }
    /// The performative's fields as a JSON object keyed by the spec's (kebab-case) field names.
    pub fn fields_json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Byte ranges (within the raw frame) holding credentials, to be masked.
    pub fn secret_ranges(&self) -> Vec<Range<usize>> {
        Vec::new()
    }
}

/// Total size of the frame starting at `buf[0]`, once its 4-byte size is visible.
/// Errors when the size field is malformed (less than 8).
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 8 {
        return Err(DecodeError::new(
            0,
            ErrorKind::MalformedFrame("size less than 8"),
        ));
    }
    Ok(Some(size as usize))
}

/// Decode one complete frame (`raw` is exactly one frame), found at absolute `offset`.
pub fn decode_frame(raw: Bytes, offset: u64) -> Result<Frame, DecodeError> {
    let _ = raw;
    Err(DecodeError::new(
        offset,
        ErrorKind::Unknown {
            what: "frame type",
            id: 0,
        },
    ))
}

/// A complete message, reassembled from one or more transfers.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {}

impl Message {
    /// The decoded sections as JSON; bodies longer than `max_body` bytes are truncated and their
    /// full size stated.
    pub fn to_json(&self, max_body: usize) -> serde_json::Value {
        let _ = max_body;
        serde_json::Value::Null
    }
}

/// Reassembles deliveries split over several transfers (`more`), per link handle, for one
/// direction of one connection.
#[derive(Debug, Default)]
pub struct MessageAssembler {}

impl MessageAssembler {
    /// Feed a frame; returns a message when this frame completes a delivery.
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        let _ = frame;
        None
    }
}
