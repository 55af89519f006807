//! The toy's framing: u32 payload length, u16 channel, payload (all big-endian).

use bytes::Bytes;

use crate::codec::{DecodeError, ErrorKind};

/// Bytes of a frame header: length (4) and channel (2).
pub const HEADER_LEN: usize = 6;
/// The largest payload the decoder takes (beyond it the framing is taken as lost).
pub const MAX_PAYLOAD: u32 = 1 << 20;
/// The name of its only kind of frame.
pub const FRAME_NAME: &str = "toy-frame";

/// A decoded toy frame.
#[derive(Clone, Debug, PartialEq)]
pub struct ToyFrame {
    /// Its channel.
    pub channel: u16,
    /// The payload length its header gives.
    pub length: u32,
    /// The payload (what of it was held).
    pub payload: Bytes,
    /// Where it starts in its direction's stream.
    pub offset: u64,
    /// Bytes streamed past after its head.
    pub streamed: u64,
}

/// The size of the frame `buf` starts with (see `Protocol::frame_size`).
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    let Some(len) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
    if len > MAX_PAYLOAD {
        return Err(DecodeError::new(
            0,
            ErrorKind::FrameTooLarge {
                size: len.into(),
                max: MAX_PAYLOAD.into(),
            },
        ));
    }
    Ok(Some(HEADER_LEN + len as usize))
}

/// Decode the whole frame `raw`, found at `offset`.
pub fn decode_frame(raw: Bytes, offset: u64) -> Result<ToyFrame, DecodeError> {
    let mut frame = decode_header_only(raw.clone(), offset)?;
    let want = HEADER_LEN + frame.length as usize;
    if raw.len() != want {
        return Err(DecodeError::new(
            offset,
            ErrorKind::Truncated {
                needed: want as u64,
                available: raw.len() as u64,
            },
        ));
    }
    frame.payload = raw.slice(HEADER_LEN..);
    Ok(frame)
}

/// The frame whose header `raw` starts with, its payload left empty.
pub fn decode_header_only(raw: Bytes, offset: u64) -> Result<ToyFrame, DecodeError> {
    let [a, b, c, d, hi, lo, ..] = raw[..] else {
        return Err(DecodeError::new(
            offset,
            ErrorKind::Truncated {
                needed: HEADER_LEN as u64,
                available: raw.len() as u64,
            },
        ));
    };
    Ok(ToyFrame {
        channel: u16::from_be_bytes([hi, lo]),
        length: u32::from_be_bytes([a, b, c, d]),
        payload: Bytes::new(),
        offset,
        streamed: 0,
    })
}

/// What marks a payload whose rest is a credential.
pub const SECRET_PREFIX: &[u8] = b"secret:";

/// The byte range within the raw frame of the credential `frame` carries, if any.
pub fn secret(frame: &ToyFrame) -> Option<std::ops::Range<usize>> {
    let start = HEADER_LEN + SECRET_PREFIX.len();
    frame
        .payload
        .starts_with(SECRET_PREFIX)
        .then(|| start..HEADER_LEN + frame.payload.len())
}

/// Where the undecoded unit `unit` (a frame's first bytes) may hold a credential: after the
/// prefix when its payload starts with it, past the frame header while too few bytes are
/// there to tell.
pub fn undecoded_secret(unit: &[u8]) -> Option<std::ops::Range<usize>> {
    let payload = unit.get(HEADER_LEN..)?;
    let n = payload.len().min(SECRET_PREFIX.len());
    (payload[..n] == SECRET_PREFIX[..n]).then(|| HEADER_LEN + n..unit.len())
}

/// One frame on `channel` carrying `payload`, as the wire carries it.
pub fn encode_frame(channel: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + payload.len());
    v.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    v.extend_from_slice(&channel.to_be_bytes());
    v.extend_from_slice(payload);
    v
}
