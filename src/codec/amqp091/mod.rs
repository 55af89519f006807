//! AMQP 0-9-1 (with RabbitMQ's extensions): frames, every class and method, field tables,
//! content headers, and content assembly.
//!
//! PLACEHOLDER: the contract below is what `codec::stream` and the sinks rely on; the
//! implementation replaces the bodies.

use std::ops::Range;

use bytes::Bytes;

use super::{DecodeError, ErrorKind};

/// One decoded AMQP 0-9-1 frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The channel from the frame header.
    pub channel: u16,
}

impl Frame {
    /// The frame's channel.
    pub fn channel(&self) -> u16 {
        self.channel
    }
    /// `class.method` in the spec's spelling (`basic.publish`), or `content-header`,
    /// `content-body`, `heartbeat`, `unknown`.
    pub fn name(&self) -> &'static str {
        "unknown"
    }
    /// One summary line, e.g. `basic.publish exchange="x" routing-key="a.b"`.
    pub fn summary(&self) -> String {
        String::new()
    }
    /// The method's arguments (or the header's properties) keyed by the spec's names.
    pub fn fields_json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Byte ranges (within the raw frame) holding credentials, to be masked.
    pub fn secret_ranges(&self) -> Vec<Range<usize>> {
        Vec::new()
    }
}

/// Total size of the frame starting at `buf[0]` (7-byte header + payload + frame-end), once
/// the header is visible.
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    if buf.len() < 7 {
        return Ok(None);
    }
    let size = u32::from_be_bytes([buf[3], buf[4], buf[5], buf[6]]);
    Ok(Some(size as usize + 8))
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

/// A complete message: the method that carries it, its content header and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {}

impl Message {
    /// Method, properties and body as JSON; bodies longer than `max_body` bytes are truncated
    /// and their full size stated.
    pub fn to_json(&self, max_body: usize) -> serde_json::Value {
        let _ = max_body;
        serde_json::Value::Null
    }
}

/// Assembles method + content header + body frames into messages, per channel, for one
/// direction of one connection.
#[derive(Debug, Default)]
pub struct ContentAssembler {}

impl ContentAssembler {
    /// Feed a frame; returns a message when this frame completes one.
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        let _ = frame;
        None
    }
}
