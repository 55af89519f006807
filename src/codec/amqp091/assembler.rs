//! Content assembly: a content-carrying method (basic.publish, basic.deliver, basic.get-ok,
//! basic.return), its content header and body frames, joined per channel into a [`Message`],
//! checking that the body frames add up exactly to the declared body size.
//!
//! Memory is bounded: a message keeps at most the first `--max-body` bytes of its body (the
//! rest is counted, and the message marked truncated), and all channels together at most the
//! assembling limit; past it a message keeps nothing more of its body.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use serde_json::Value as Json;

use super::content::ContentHeader;
use super::frame::{Frame, FrameKind};
use super::method::Method;
use super::render::{write_method_fields, write_properties};
use crate::codec::{DecodeError, ErrorKind};
use crate::json::{JsonOut, to_value};

/// A complete message: the method that carries it, its content header and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The channel it travelled on.
    pub channel: u16,
    /// Absolute offset of the carrying method frame.
    pub offset: u64,
    /// basic.publish / deliver / get-ok / return (shared with its frame).
    pub method: Arc<Method>,
    /// The content header (properties, body size; shared with its frame).
    pub header: Arc<ContentHeader>,
    /// The body as far as it was kept (the first `--max-body` bytes of it; the content
    /// header's `body_size` is its full size): zero-copy for single-frame bodies, one copy when
    /// assembled from several.
    pub body: Bytes,
}

impl Message {
    /// Method, properties and body as JSON; bodies longer than `max_body` bytes are truncated
    /// and their full size stated. Text bodies (valid UTF-8) appear as `"body"`, others as
    /// `"body-base64"`.
    pub fn to_json(&self, max_body: usize) -> Json {
        to_value(|o| {
            o.begin_object();
            self.write_json_entries(o, max_body);
            o.end_object();
        })
    }

    /// The entries of [`Message::to_json`], written into an object open in `o`.
    pub fn write_json_entries<O: JsonOut + ?Sized>(&self, o: &mut O, max_body: usize) {
        o.key("arguments");
        write_method_fields(o, &self.method);
        let cut = self.body.len().min(max_body);
        let shown = self.body.get(..cut).unwrap_or(&self.body[..]);
        let size = self.header.body_size.max(self.body.len() as u64);
        let text = match std::str::from_utf8(shown) {
            Ok(s) => Some(s),
            // A multi-byte char cut by truncation still counts as text.
            Err(e) if e.error_len().is_none() && (cut as u64) < size => {
                std::str::from_utf8(shown.get(..e.valid_up_to()).unwrap_or_default()).ok()
            }
            Err(_) => None,
        };
        match text {
            Some(s) => o.entry_str("body", s),
            None => {
                o.key("body-base64");
                o.base64(shown);
            }
        }
        o.entry_u64("body-size", size);
        o.entry_u64("channel", self.channel.into());
        o.entry_str("class", self.header.class_name());
        o.entry_str("method", self.method.def.name);
        o.key("properties");
        write_properties(o, &self.header);
        o.key("truncated");
        o.bool((cut as u64) < size);
    }
}

/// Where one channel's content stands.
#[derive(Debug)]
enum Pending {
    /// A content method arrived; its header is next.
    Header { method: Arc<Method>, offset: u64 },
    /// Header seen; body frames are being collected.
    Body {
        method: Arc<Method>,
        offset: u64,
        header: Arc<ContentHeader>,
        parts: Parts,
        /// Body bytes received (kept or not).
        received: u64,
        /// Body bytes kept.
        kept: usize,
    },
}

/// Hashes a channel number as itself (channels are small dense integers; no DoS concern since
/// there are at most 65536 of them).
#[derive(Debug, Default)]
struct ChannelHasher(u64);

impl Hasher for ChannelHasher {
    fn finish(&self) -> u64 {
        // Spread the bits so hashbrown's top-7-bit tags differ between channels.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.0 = n.into();
    }
}

type ChannelMap<V> = HashMap<u16, V, BuildHasherDefault<ChannelHasher>>;

/// Body frames collected so far: no allocation for the common single-frame body.
#[derive(Debug)]
enum Parts {
    None,
    One(Bytes),
    Many(BytesMut),
}

impl Parts {
    fn push(&mut self, b: Bytes) {
        *self = match std::mem::replace(self, Parts::None) {
            Parts::None => Parts::One(b),
            Parts::One(first) => {
                let mut m = BytesMut::with_capacity(first.len() + b.len());
                m.extend_from_slice(&first);
                m.extend_from_slice(&b);
                Parts::Many(m)
            }
            Parts::Many(mut m) => {
                m.extend_from_slice(&b);
                Parts::Many(m)
            }
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Parts::None => Bytes::new(),
            Parts::One(b) => b,
            Parts::Many(m) => m.freeze(),
        }
    }
}

/// Assembles method + content header + body frames into messages, per channel, for one
/// direction of one connection.
#[derive(Debug)]
pub struct ContentAssembler {
    channels: ChannelMap<Pending>,
    buffered: usize,
    /// Body bytes kept of each message.
    max_body: usize,
    /// Body bytes kept of all messages under way together.
    max_buffered: usize,
}

impl Default for ContentAssembler {
    fn default() -> Self {
        let l = crate::codec::Limits::default();
        Self::with_limits(l.body, l.assembling)
    }
}

fn err(frame: &Frame, kind: ErrorKind) -> Option<Result<Message, DecodeError>> {
    Some(Err(DecodeError::new(frame.offset, kind).within("content")))
}

impl ContentAssembler {
    /// An assembler that keeps the first `max_body` bytes of each body, and at most
    /// `max_buffered` body bytes of all messages under way.
    pub fn with_limits(max_body: usize, max_buffered: usize) -> Self {
        ContentAssembler {
            channels: ChannelMap::default(),
            buffered: 0,
            max_body,
            max_buffered,
        }
    }

    /// Body bytes currently held across all channels.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// True when `channel` is in the middle of a message.
    pub fn in_progress(&self, channel: u16) -> bool {
        self.channels.contains_key(&channel)
    }

    fn drop_pending(&mut self, channel: u16) -> Option<Pending> {
        let p = self.channels.remove(&channel);
        self.released(p)
    }

    /// `p` left the map: its body bytes are no longer held.
    fn released(&mut self, p: Option<Pending>) -> Option<Pending> {
        if let Some(Pending::Body { kept, .. }) = &p {
            self.buffered = self.buffered.saturating_sub(*kept);
        }
        p
    }

    /// Feed a frame; returns a message when this frame completes one, or an error when the
    /// frame breaks the content sequence (the message in progress is dropped).
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        match &frame.kind {
            FrameKind::Heartbeat => None,
            FrameKind::Method(m) => self.method(frame, m),
            FrameKind::Header(h) => self.header(frame, h),
            FrameKind::Body(b) => self.body(frame, b),
        }
    }

    /// A method frame: it starts a message if it has content, and breaks one under way.
    fn method(&mut self, frame: &Frame, m: &Arc<Method>) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        // One map operation a method: a content method's message replaces what the channel
        // had under way.
        let was = if m.def.content {
            let started = Pending::Header {
                method: m.clone(),
                offset: frame.offset,
            };
            self.channels.insert(ch, started)
        } else if self.channels.is_empty() {
            None
        } else {
            self.channels.remove(&ch)
        };
        match self.released(was) {
            Some(Pending::Header { .. }) | Some(Pending::Body { .. }) => err(
                frame,
                ErrorKind::MalformedFrame(
                    "method frame before the previous message's content was complete",
                ),
            ),
            _ => None,
        }
    }

    /// A content header: it completes a message of no body, or starts its body.
    fn header(
        &mut self,
        frame: &Frame,
        h: &Arc<ContentHeader>,
    ) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        // The method's entry becomes the body's in place (one lookup), or goes.
        let Some(slot @ Pending::Header { .. }) = self.channels.get_mut(&ch) else {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content header without a content method before it"),
            );
        };
        let Pending::Header { method, offset } = slot else {
            unreachable!("matched as a header just above");
        };
        let (method, offset) = (method.clone(), *offset);
        if h.class_id != method.def.class_id {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content header class differs from the method's"),
            );
        }
        if h.body_size == 0 {
            self.drop_pending(ch);
            return Some(Ok(Message {
                channel: ch,
                offset,
                method,
                header: h.clone(),
                body: Bytes::new(),
            }));
        }
        *slot = Pending::Body {
            method,
            offset,
            header: h.clone(),
            parts: Parts::None,
            received: 0,
            kept: 0,
        };
        None
    }

    /// A content body frame: its start kept (within the limits), the message complete at the
    /// declared body size.
    fn body(&mut self, frame: &Frame, b: &Bytes) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        let len = frame.body_len().unwrap_or(b.len() as u64);
        let room = self.max_buffered.saturating_sub(self.buffered);
        // One lookup: the message is worked on in its entry, and taken out of it when complete.
        let mut slot = match self.channels.entry(ch) {
            Entry::Occupied(e) if matches!(e.get(), Pending::Body { .. }) => e,
            other => {
                drop(other);
                self.drop_pending(ch);
                return err(
                    frame,
                    ErrorKind::MalformedFrame("content body without a content header before it"),
                );
            }
        };
        let Pending::Body {
            header,
            parts,
            received,
            kept,
            ..
        } = slot.get_mut()
        else {
            return None; // matched as a body just above
        };
        let total = received.saturating_add(len);
        if total > header.body_size {
            let dropped = slot.remove();
            self.released(Some(dropped));
            return err(
                frame,
                ErrorKind::MalformedFrame("content body frames exceed the declared body size"),
            );
        }
        // Only while nothing of the body was left out: what is kept is its start.
        if *received == *kept as u64 {
            let take = b.len().min(self.max_body.saturating_sub(*kept)).min(room);
            if take > 0 {
                // Copied when only part of the payload is kept: a slice would pin all of the
                // frame's buffer.
                let piece = if take == b.len() {
                    b.clone()
                } else {
                    Bytes::copy_from_slice(&b[..take])
                };
                parts.push(piece);
                *kept += take;
                self.buffered += take;
            }
        }
        *received = total;
        if total < header.body_size {
            return None;
        }
        let complete = slot.remove();
        match self.released(Some(complete)) {
            Some(Pending::Body {
                method,
                offset,
                header,
                parts,
                ..
            }) => Some(Ok(Message {
                channel: ch,
                offset,
                method,
                header,
                body: parts.into_bytes(),
            })),
            _ => None,
        }
    }
}
