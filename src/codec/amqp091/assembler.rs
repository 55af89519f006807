//! Content assembly: a content-carrying method (basic.publish, basic.deliver, basic.get-ok,
//! basic.return), its content header and body frames, joined per channel into a [`Message`],
//! checking that the body frames add up exactly to the declared body size.
//!
//! Memory is bounded: a message keeps at most the first `--max-body` bytes of its body (the
//! rest is counted, and the message marked truncated), and all channels together at most the
//! assembling limit; past it a message keeps nothing more of its body.

use std::collections::HashMap;
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

/// One channel's message under way: its content method, then (once its content header
/// arrived) its body as collected so far.
#[derive(Debug)]
struct Pending {
    /// The content method.
    method: Arc<Method>,
    /// Absolute offset of the method frame.
    offset: u64,
    /// The body, once the header arrived; until then the header is next.
    body: Option<Body>,
}

/// A message's body being collected.
#[derive(Debug)]
struct Body {
    header: Arc<ContentHeader>,
    parts: Parts,
    /// Body bytes received (kept or not).
    received: u64,
    /// Body bytes kept.
    kept: usize,
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

/// Channels with a message under way that are looked up by a scan rather than hashed: most
/// connections carry their messages on one or two channels.
const FEW_CHANNELS: usize = 4;

/// The messages under way, by channel: the first few channels found by a scan of a short
/// list, any more in a map. A channel is in one or the other, never both.
#[derive(Debug, Default)]
struct Slots {
    few: Vec<(u16, Pending)>,
    more: ChannelMap<Pending>,
}

impl Slots {
    /// True when no channel has a message under way.
    #[inline]
    fn is_empty(&self) -> bool {
        self.few.is_empty() && self.more.is_empty()
    }

    /// Where `channel` sits in the short list.
    #[inline]
    fn index(&self, channel: u16) -> Option<usize> {
        self.few.iter().position(|(c, _)| *c == channel)
    }

    /// True when `channel` has a message under way.
    fn contains(&self, channel: u16) -> bool {
        self.index(channel).is_some() || self.more.contains_key(&channel)
    }

    /// `channel`'s message under way.
    #[inline]
    fn get_mut(&mut self, channel: u16) -> Option<&mut Pending> {
        match self.index(channel) {
            Some(i) => self.few.get_mut(i).map(|(_, p)| p),
            None if self.more.is_empty() => None,
            None => self.more.get_mut(&channel),
        }
    }

    /// Puts a message of content method `method` (at `offset`) under way on `channel`; what
    /// was there is returned. The message is made where it goes, not moved there.
    #[inline]
    fn start(&mut self, channel: u16, method: &Arc<Method>, offset: u64) -> Option<Pending> {
        let started = || Pending {
            method: method.clone(),
            offset,
            body: None,
        };
        if let Some(slot) = self.get_mut(channel) {
            return Some(std::mem::replace(slot, started()));
        }
        if self.few.len() < FEW_CHANNELS {
            self.few.push((channel, started()));
        } else {
            self.more.insert(channel, started());
        }
        None
    }

    /// Takes `channel`'s message under way out.
    #[inline]
    fn remove(&mut self, channel: u16) -> Option<Pending> {
        match self.index(channel) {
            // The last one (most often the only one) is taken off the end, nothing moved into
            // its place.
            Some(i) if i + 1 == self.few.len() => self.few.pop().map(|(_, p)| p),
            Some(i) => Some(self.few.swap_remove(i).1),
            None if self.more.is_empty() => None,
            None => self.more.remove(&channel),
        }
    }
}

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
    channels: Slots,
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
            channels: Slots::default(),
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
        self.channels.contains(channel)
    }

    fn drop_pending(&mut self, channel: u16) -> Option<Pending> {
        let p = self.channels.remove(channel);
        self.released(p)
    }

    /// `p` left the map: its body bytes are no longer held.
    fn released(&mut self, p: Option<Pending>) -> Option<Pending> {
        if let Some(Pending { body: Some(b), .. }) = &p {
            self.buffered = self.buffered.saturating_sub(b.kept);
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
        // One lookup a method: a content method's message replaces what the channel had
        // under way.
        let was = if m.def.content {
            self.channels.start(ch, m, frame.offset)
        } else if self.channels.is_empty() {
            None
        } else {
            self.channels.remove(ch)
        };
        self.released(was)?;
        err(
            frame,
            ErrorKind::MalformedFrame(
                "method frame before the previous message's content was complete",
            ),
        )
    }

    /// A content header: it completes a message of no body, or starts its body.
    fn header(
        &mut self,
        frame: &Frame,
        h: &Arc<ContentHeader>,
    ) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        // The method's entry takes the body in place (one lookup), or goes.
        let Some(slot) = self.channels.get_mut(ch).filter(|p| p.body.is_none()) else {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content header without a content method before it"),
            );
        };
        if h.class_id != slot.method.def.class_id {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content header class differs from the method's"),
            );
        }
        if h.body_size == 0 {
            let p = self.drop_pending(ch)?;
            return Some(Ok(Message {
                channel: ch,
                offset: p.offset,
                method: p.method,
                header: h.clone(),
                body: Bytes::new(),
            }));
        }
        slot.body = Some(Body {
            header: h.clone(),
            parts: Parts::None,
            received: 0,
            kept: 0,
        });
        None
    }

    /// A content body frame: its start kept (within the limits), the message complete at the
    /// declared body size.
    fn body(&mut self, frame: &Frame, b: &Bytes) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        let len = frame.body_len().unwrap_or(b.len() as u64);
        let room = self.max_buffered.saturating_sub(self.buffered);
        // The message is worked on where it lies, and taken out when complete.
        let Some(Pending {
            body: Some(body), ..
        }) = self.channels.get_mut(ch)
        else {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content body without a content header before it"),
            );
        };
        let total = body.received.saturating_add(len);
        if total > body.header.body_size {
            self.drop_pending(ch);
            return err(
                frame,
                ErrorKind::MalformedFrame("content body frames exceed the declared body size"),
            );
        }
        // Only while nothing of the body was left out: what is kept is its start.
        if body.received == body.kept as u64 {
            let take = b
                .len()
                .min(self.max_body.saturating_sub(body.kept))
                .min(room);
            if take > 0 {
                // Copied when only part of the payload is kept: a slice would pin all of the
                // frame's buffer.
                let piece = if take == b.len() {
                    b.clone()
                } else {
                    Bytes::copy_from_slice(&b[..take])
                };
                body.parts.push(piece);
                body.kept += take;
                self.buffered += take;
            }
        }
        body.received = total;
        if total < body.header.body_size {
            return None;
        }
        let p = self.drop_pending(ch)?;
        let body = p.body?;
        Some(Ok(Message {
            channel: ch,
            offset: p.offset,
            method: p.method,
            header: body.header,
            body: body.parts.into_bytes(),
        }))
    }
}
