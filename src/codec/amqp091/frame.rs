//! AMQP 0-9-1 framing: the 7-byte header (type, channel, size), the payload, and the 0xCE
//! frame-end octet; decoding one delimited frame into a [`Frame`] and encoding one back.
//!
//! Never panics on input. A wrong frame-end or unknown frame type is a typed error; the frame
//! stays delimited by its size so the stream decoder can skip it.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};

use super::auth;
use super::content::ContentHeader;
use super::generated::{
    FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_HEARTBEAT, FRAME_METHOD, MethodKind,
};
use super::method::{Method, Value};
use crate::codec::{DecodeError, ErrorKind};

/// Bytes before the payload: type (1), channel (2), size (4).
pub const FRAME_HEADER_LEN: usize = 7;
/// Header plus the frame-end octet.
pub const FRAME_OVERHEAD: usize = FRAME_HEADER_LEN + 1;
/// The frame-end octet.
pub const FRAME_END_OCTET: u8 = FRAME_END as u8;

/// What a frame carries.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameKind {
    /// Type 1: a method (shared, so a message assembled from it costs no copy).
    Method(Arc<Method>),
    /// Type 2: a content header (shared likewise).
    Header(Arc<ContentHeader>),
    /// Type 3: (part of) a content body, zero-copy.
    Body(Bytes),
    /// Type 8: a heartbeat.
    Heartbeat,
}

impl FrameKind {
    /// The frame type octet for this kind.
    pub fn frame_type(&self) -> u8 {
        (match self {
            FrameKind::Method(_) => FRAME_METHOD,
            FrameKind::Header(_) => FRAME_HEADER,
            FrameKind::Body(_) => FRAME_BODY,
            FrameKind::Heartbeat => FRAME_HEARTBEAT,
        }) as u8
    }
}

/// One decoded AMQP 0-9-1 frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The channel from the frame header.
    pub channel: u16,
    /// Absolute offset of the frame's first byte in its direction's stream.
    pub offset: u64,
    /// What it carries.
    pub kind: FrameKind,
    /// Credential byte ranges within the raw frame (computed while decoding).
    pub secrets: Vec<Range<usize>>,
    /// Bytes of the frame that were streamed past, not held: a frame larger than the
    /// inspection budget is decoded from its head, and a body frame's `Body` then holds only
    /// the head of its payload (0 for a whole frame; the frame-end octet is not checked then).
    pub streamed: u64,
}

impl Frame {
    /// A frame (at offset 0, no secrets recorded) for encoding.
    pub fn new(channel: u16, kind: FrameKind) -> Frame {
        Frame {
            channel,
            offset: 0,
            kind,
            secrets: Vec::new(),
            streamed: 0,
        }
    }

    /// The frame's channel.
    #[inline]
    pub fn channel(&self) -> u16 {
        self.channel
    }

    /// `class.method` in the spec's spelling (`basic.publish`), or `content-header`,
    /// `content-body`, `heartbeat`.
    #[inline]
    pub fn name(&self) -> &'static str {
        match &self.kind {
            FrameKind::Method(m) => m.def.name,
            FrameKind::Header(_) => "content-header",
            FrameKind::Body(_) => "content-body",
            FrameKind::Heartbeat => "heartbeat",
        }
    }

    /// The method, if this is a method frame.
    #[inline]
    pub fn method(&self) -> Option<&Method> {
        match &self.kind {
            FrameKind::Method(m) => Some(m.as_ref()),
            _ => None,
        }
    }

    /// The method kind, if this is a method frame.
    #[inline]
    pub fn method_kind(&self) -> Option<MethodKind> {
        self.method().map(Method::kind)
    }

    /// The content header, if this is one.
    #[inline]
    pub fn content_header(&self) -> Option<&ContentHeader> {
        match &self.kind {
            FrameKind::Header(h) => Some(h.as_ref()),
            _ => None,
        }
    }

    /// The body bytes, if this is a body frame.
    #[inline]
    pub fn body(&self) -> Option<&Bytes> {
        match &self.kind {
            FrameKind::Body(b) => Some(b),
            _ => None,
        }
    }

    /// The body frame's full payload length (`body()` may hold only its head: the streamed
    /// bytes count, less the frame-end octet among them).
    #[inline]
    pub fn body_len(&self) -> Option<u64> {
        self.body()
            .map(|b| b.len() as u64 + self.streamed.saturating_sub(1))
    }

    /// The frame's full size, given the bytes of it held (`held`).
    pub fn size(&self, held: usize) -> u64 {
        held as u64 + self.streamed
    }

    /// Byte ranges (within the raw frame) holding credentials, to be masked: the password
    /// in connection.start-ok's response (the whole response for mechanisms other than PLAIN
    /// and AMQPLAIN), connection.secure-ok's response, connection.update-secret's new-secret.
    #[inline]
    pub fn secret_ranges(&self) -> Vec<Range<usize>> {
        // Almost every frame has none: no clone to make.
        if self.secrets.is_empty() {
            return Vec::new();
        }
        self.secrets.clone()
    }

    /// Append the encoded frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_frame(self.channel, &self.kind, out);
    }

    /// The encoded frame.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

/// Total size of the frame starting at `buf[0]` (7-byte header + payload + frame-end), once
/// the header is visible. Never fails: absurd sizes are for the caller to cap.
#[inline]
pub fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    match buf.get(3..7) {
        Some(&[a, b, c, d]) => {
            let size = u32::from_be_bytes([a, b, c, d]) as usize;
            Ok(Some(size.saturating_add(FRAME_OVERHEAD)))
        }
        _ => Ok(None),
    }
}

/// Decode one complete frame (`raw` is exactly one frame), found at absolute `offset`.
pub fn decode_frame(raw: Bytes, offset: u64) -> Result<Frame, DecodeError> {
    let (frame_type, channel, end) = delimit(&raw, offset)?;
    if u16::from(frame_type) != FRAME_BODY {
        return decode_unit(&raw, frame_type, channel, end, offset);
    }
    // The payload, without a refcount bump: cut the frame's own handle down to it.
    let mut body = raw;
    body.truncate(end);
    body.advance(FRAME_HEADER_LEN);
    Ok(body_frame(channel, offset, body))
}

/// [`decode_frame`] of a frame whose bytes `raw` the caller keeps: only a body frame takes a
/// handle of them (its payload), the others are read from `raw` as it is.
pub fn decode_frame_ref(raw: &Bytes, offset: u64) -> Result<Frame, DecodeError> {
    let (frame_type, channel, end) = delimit(raw, offset)?;
    if u16::from(frame_type) != FRAME_BODY {
        return decode_unit(raw, frame_type, channel, end, offset);
    }
    Ok(body_frame(
        channel,
        offset,
        raw.slice(FRAME_HEADER_LEN..end),
    ))
}

/// A body frame of payload `body`.
#[inline]
fn body_frame(channel: u16, offset: u64, body: Bytes) -> Frame {
    Frame {
        channel,
        offset,
        kind: FrameKind::Body(body),
        secrets: Vec::new(),
        streamed: 0,
    }
}

/// The frame type, the channel and where the payload ends (the frame-end octet's index) of
/// the frame `raw` at `offset`, checked to be exactly one frame.
#[inline]
fn delimit(raw: &[u8], offset: u64) -> Result<(u8, u16, usize), DecodeError> {
    // A frame exactly as long as its header says, ending in the frame-end octet: one test.
    if let Some(&[t, c0, c1, s0, s1, s2, s3]) = raw.first_chunk::<FRAME_HEADER_LEN>() {
        let end_at = FRAME_HEADER_LEN as u64 + u64::from(u32::from_be_bytes([s0, s1, s2, s3]));
        if raw.len() as u64 == end_at + 1 && raw.last() == Some(&FRAME_END_OCTET) {
            return Ok((t, u16::from_be_bytes([c0, c1]), end_at as usize));
        }
    }
    Err(misdelimited(raw, offset))
}

/// Why the frame `raw` at `offset` is not exactly one frame ([`delimit`] refused it).
#[cold]
#[inline(never)]
fn misdelimited(raw: &[u8], offset: u64) -> DecodeError {
    let size = match raw.get(..FRAME_HEADER_LEN) {
        Some(&[_, _, _, s0, s1, s2, s3]) => u32::from_be_bytes([s0, s1, s2, s3]),
        _ => {
            let kind = ErrorKind::Truncated {
                needed: FRAME_HEADER_LEN as u64,
                available: raw.len() as u64,
            };
            return DecodeError::new(offset, kind).within("header");
        }
    };
    let end_at = FRAME_HEADER_LEN as u64 + u64::from(size);
    let available = raw.len() as u64;
    if available < end_at + 1 {
        let kind = ErrorKind::Truncated {
            needed: u64::from(size),
            available: available.saturating_sub(FRAME_HEADER_LEN as u64),
        };
        return DecodeError::new(offset + FRAME_HEADER_LEN as u64, kind).within("payload");
    }
    if available > end_at + 1 {
        return DecodeError::new(
            offset + end_at + 1,
            ErrorKind::TrailingBytes(available - end_at - 1),
        );
    }
    DecodeError::new(
        offset + end_at,
        ErrorKind::MalformedFrame("frame-end octet is not 0xCE"),
    )
    .within("frame-end")
}

/// A frame other than a body frame (method, content header, heartbeat), its payload read
/// from `raw[FRAME_HEADER_LEN..end]` where it lies.
fn decode_unit(
    raw: &Bytes,
    frame_type: u8,
    channel: u16,
    end: usize,
    offset: u64,
) -> Result<Frame, DecodeError> {
    let mut secrets = Vec::new();
    let kind = match u16::from(frame_type) {
        FRAME_METHOD => {
            let m = Method::decode_shared(raw, FRAME_HEADER_LEN, end, offset)?;
            if matches!(
                m.def.kind,
                MethodKind::ConnectionStartOk
                    | MethodKind::ConnectionSecureOk
                    | MethodKind::ConnectionUpdateSecret
            ) {
                secrets = method_secrets(&m, raw.as_ptr() as usize);
            }
            FrameKind::Method(m)
        }
        FRAME_HEADER => FrameKind::Header(ContentHeader::decode_shared(
            raw,
            FRAME_HEADER_LEN,
            end,
            offset,
        )?),
        FRAME_HEARTBEAT => {
            let left = end - FRAME_HEADER_LEN;
            if left > 0 {
                return Err(DecodeError::new(
                    offset + FRAME_HEADER_LEN as u64,
                    ErrorKind::TrailingBytes(left as u64),
                )
                .within("heartbeat"));
            }
            FrameKind::Heartbeat
        }
        other => {
            return Err(DecodeError::new(
                offset,
                ErrorKind::Unknown {
                    what: "frame type",
                    id: other.into(),
                },
            )
            .within("type"));
        }
    };
    Ok(Frame {
        channel,
        offset,
        kind,
        secrets,
        streamed: 0,
    })
}

/// Secret ranges (relative to the frame start) of a credential-carrying method.
fn method_secrets(m: &Method, base: usize) -> Vec<Range<usize>> {
    let (field, mechanism) = match m.def.kind {
        MethodKind::ConnectionStartOk => ("response", m.mechanism().map(|b| &b[..])),
        MethodKind::ConnectionSecureOk => ("response", None),
        _ => ("new-secret", None),
    };
    let Some(Value::LongStr(value)) = m.arg(field) else {
        return Vec::new();
    };
    let inner = match mechanism {
        Some(mech) => auth::decode_response(mech, value).1,
        None => 0..value.len(),
    };
    if inner.is_empty() {
        return Vec::new();
    }
    // The value is a zero-copy slice of the raw frame starting at address `base`; locate it.
    let Some(start) = (value.as_ptr() as usize).checked_sub(base) else {
        return Vec::new();
    };
    std::iter::once(start + inner.start..start + inner.end).collect()
}

/// Append a frame of `kind` on `channel` to `out`.
pub fn encode_frame(channel: u16, kind: &FrameKind, out: &mut Vec<u8>) {
    out.put_u8(kind.frame_type());
    out.put_u16(channel);
    let at = out.len();
    out.put_u32(0);
    match kind {
        FrameKind::Method(m) => m.encode(out),
        FrameKind::Header(h) => h.encode(out),
        FrameKind::Body(b) => out.extend_from_slice(b),
        FrameKind::Heartbeat => {}
    }
    let len = out.len().saturating_sub(at + 4);
    let len = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&len);
    }
    out.put_u8(FRAME_END_OCTET);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks of one frame made one at a time, each with its error.
    fn delimit_one_check_at_a_time(
        raw: &[u8],
        offset: u64,
    ) -> Result<(u8, u16, usize), DecodeError> {
        let Some(&[t, c0, c1, s0, s1, s2, s3]) = raw.get(..FRAME_HEADER_LEN) else {
            return Err(misdelimited(raw, offset));
        };
        let end_at = FRAME_HEADER_LEN as u64 + u64::from(u32::from_be_bytes([s0, s1, s2, s3]));
        let available = raw.len() as u64;
        if available != end_at + 1 || raw.get(end_at as usize) != Some(&FRAME_END_OCTET) {
            return Err(misdelimited(raw, offset));
        }
        Ok((t, u16::from_be_bytes([c0, c1]), end_at as usize))
    }

    #[test]
    fn frames_delimited_at_once_are_those_delimited_check_by_check() {
        let (mut ok, mut refused) = (0, 0);
        for len in 0..24usize {
            for size in [0u32, 1, 2, 5, 8, 13, 16, 17, u32::MAX] {
                for end in [FRAME_END_OCTET, 0, 0xCF] {
                    let mut raw: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
                    if let Some(s) = raw.get_mut(3..7) {
                        s.copy_from_slice(&size.to_be_bytes());
                    }
                    if let Some(last) = raw.last_mut() {
                        *last = end;
                    }
                    let got = delimit(&raw, 100);
                    assert_eq!(got, delimit_one_check_at_a_time(&raw, 100), "{raw:?}");
                    match got {
                        Ok(_) => ok += 1,
                        Err(e) => {
                            refused += 1;
                            // The error words what is wrong, as it always has.
                            let want = match raw.len() {
                                n if n < FRAME_HEADER_LEN => "header",
                                n if (n as u64) < FRAME_HEADER_LEN as u64 + u64::from(size) + 1 => {
                                    "payload"
                                }
                                n if (n as u64) > FRAME_HEADER_LEN as u64 + u64::from(size) + 1 => {
                                    ""
                                }
                                _ => "frame-end",
                            };
                            assert!(format!("{e:?}").contains(want), "{e:?} {raw:?}");
                        }
                    }
                }
            }
        }
        assert!(ok >= 6 && refused > 100, "{ok} {refused}");
    }
}
