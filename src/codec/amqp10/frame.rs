//! The 8-byte AMQP 1.0 frame header: size, doff, type, channel; the extended header; and the
//! body's position. Type 0 is AMQP, type 1 SASL; unknown types are kept, not rejected; a frame
//! with no body is an empty frame (a heartbeat).
//!
//! Pure header arithmetic over the raw bytes; never panics, never trusts size or doff.

use bytes::Bytes;

use crate::codec::{DecodeError, ErrorKind};

/// Frame type 0: an AMQP performative.
pub const TYPE_AMQP: u8 = 0;
/// Frame type 1: a SASL frame.
pub const TYPE_SASL: u8 = 1;
/// Fixed header length.
pub const HEADER_LEN: usize = 8;

/// A parsed frame header. The extended header, usually empty, is the frame's bytes from the
/// 8th up to the body ([`FrameHeader::body_offset`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Total frame size (header included).
    pub size: u32,
    /// Data offset in 4-byte words (>= 2).
    pub doff: u8,
    /// Frame type (0 AMQP, 1 SASL, others kept).
    pub frame_type: u8,
    /// Channel (type-specific; ignored for SASL).
    pub channel: u16,
}

impl FrameHeader {
    /// Offset of the body within the frame.
    pub fn body_offset(&self) -> usize {
        usize::from(self.doff) * 4
    }
}

/// Total size of the frame starting at `buf[0]`, once its 4-byte size is visible. Errors when
/// the size field is below the 8-byte header.
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    let Some(size) = buf.get(..4) else {
        return Ok(None);
    };
    let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]);
    if (size as usize) < HEADER_LEN {
        return Err(DecodeError::new(
            0,
            ErrorKind::MalformedFrame("size less than 8"),
        ));
    }
    Ok(Some(size as usize))
}

/// Parse and check the header of `raw` (exactly one frame) at absolute `offset`.
pub fn parse_header(raw: &Bytes, offset: u64) -> Result<FrameHeader, DecodeError> {
    parse_header_of(raw, offset, raw.len() as u64)
}

/// Parse and check the header of `raw`, the first bytes of a frame of `expected` bytes (all
/// of it when `expected` is `raw.len()`), at absolute `offset`: the size field must say
/// `expected`, and the data offset must fall inside `raw`.
pub fn parse_header_of(
    raw: &Bytes,
    offset: u64,
    expected: u64,
) -> Result<FrameHeader, DecodeError> {
    let err = |at: u64, why| DecodeError::new(offset + at, ErrorKind::MalformedFrame(why));
    let Some(h) = raw.get(..HEADER_LEN) else {
        return Err(DecodeError::new(
            offset,
            ErrorKind::Truncated {
                needed: HEADER_LEN as u64,
                available: raw.len() as u64,
            },
        ));
    };
    let size = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let doff = h[4];
    let frame_type = h[5];
    let channel = u16::from_be_bytes([h[6], h[7]]);
    if (size as usize) < HEADER_LEN {
        return Err(err(0, "size less than 8"));
    }
    if u64::from(size) != expected {
        return Err(err(0, "size field does not match the frame's length"));
    }
    if doff < 2 {
        return Err(err(4, "doff less than 2"));
    }
    let body = usize::from(doff) * 4;
    if body > raw.len() {
        return Err(err(4, "doff points beyond the frame"));
    }
    Ok(FrameHeader {
        size,
        doff,
        frame_type,
        channel,
    })
}
