//! Content assembly: a content-carrying method (basic.publish, basic.deliver, basic.get-ok,
//! basic.return), its content header and body frames, joined per channel into a [`Message`],
//! checking that the body frames add up exactly to the declared body size.
//!
//! Memory is bounded: one message may buffer at most [`MAX_MESSAGE`] bytes and all channels
//! together [`MAX_BUFFERED`]; beyond that the message is reported (typed error) and dropped.

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

/// Largest single message body assembled (larger ones are reported and skipped).
pub const MAX_MESSAGE: u64 = 64 * 1024 * 1024;
/// Largest total of body bytes buffered across all channels of one direction.
pub const MAX_BUFFERED: usize = 256 * 1024 * 1024;

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
    /// The body: zero-copy for single-frame bodies, one copy when assembled from several.
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
        let text = match std::str::from_utf8(shown) {
            Ok(s) => Some(s),
            // A multi-byte char cut by truncation still counts as text.
            Err(e) if e.error_len().is_none() && cut < self.body.len() => {
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
        o.entry_u64("body-size", self.body.len() as u64);
        o.entry_u64("channel", self.channel.into());
        o.entry_str("class", self.header.class_name());
        o.entry_str("method", self.method.def.name);
        o.key("properties");
        write_properties(o, &self.header);
        o.key("truncated");
        o.bool(cut < self.body.len());
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
        received: u64,
    },
    /// An oversized body being counted off (already reported) without buffering.
    Skip { remaining: u64 },
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
    fn push(&mut self, b: &Bytes) {
        *self = match std::mem::replace(self, Parts::None) {
            Parts::None => Parts::One(b.clone()),
            Parts::One(first) => {
                let mut m = BytesMut::with_capacity(first.len() + b.len());
                m.extend_from_slice(&first);
                m.extend_from_slice(b);
                Parts::Many(m)
            }
            Parts::Many(mut m) => {
                m.extend_from_slice(b);
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
    max_message: u64,
}

impl Default for ContentAssembler {
    fn default() -> Self {
        Self::with_limit(MAX_MESSAGE)
    }
}

fn err(frame: &Frame, kind: ErrorKind) -> Option<Result<Message, DecodeError>> {
    Some(Err(DecodeError::new(frame.offset, kind).within("content")))
}

impl ContentAssembler {
    /// An assembler that refuses messages with bodies over `max_message` bytes.
    pub fn with_limit(max_message: u64) -> Self {
        ContentAssembler {
            channels: ChannelMap::default(),
            buffered: 0,
            max_message,
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
        if let Some(Pending::Body { received, .. }) = &p {
            self.buffered = self.buffered.saturating_sub(*received as usize);
        }
        p
    }

    /// Feed a frame; returns a message when this frame completes one, or an error when the
    /// frame breaks the content sequence (the message in progress is dropped).
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        let ch = frame.channel;
        match &frame.kind {
            FrameKind::Heartbeat => None,
            FrameKind::Method(m) => {
                let was = self.drop_pending(ch);
                if m.def.content {
                    self.channels.insert(
                        ch,
                        Pending::Header {
                            method: m.clone(),
                            offset: frame.offset,
                        },
                    );
                }
                match was {
                    Some(Pending::Header { .. }) | Some(Pending::Body { .. }) => err(
                        frame,
                        ErrorKind::MalformedFrame(
                            "method frame before the previous message's content was complete",
                        ),
                    ),
                    _ => None,
                }
            }
            FrameKind::Header(h) => match self.drop_pending(ch) {
                Some(Pending::Header { method, offset }) => {
                    if h.class_id != method.def.class_id {
                        return err(
                            frame,
                            ErrorKind::MalformedFrame(
                                "content header class differs from the method's",
                            ),
                        );
                    }
                    if h.body_size == 0 {
                        return Some(Ok(Message {
                            channel: ch,
                            offset,
                            method,
                            header: h.clone(),
                            body: Bytes::new(),
                        }));
                    }
                    if h.body_size > self.max_message {
                        self.channels.insert(
                            ch,
                            Pending::Skip {
                                remaining: h.body_size,
                            },
                        );
                        return err(
                            frame,
                            ErrorKind::FrameTooLarge {
                                size: h.body_size,
                                max: self.max_message,
                            },
                        );
                    }
                    self.channels.insert(
                        ch,
                        Pending::Body {
                            method,
                            offset,
                            header: h.clone(),
                            parts: Parts::None,
                            received: 0,
                        },
                    );
                    None
                }
                _ => err(
                    frame,
                    ErrorKind::MalformedFrame("content header without a content method before it"),
                ),
            },
            FrameKind::Body(b) => {
                let len = b.len() as u64;
                match self.channels.get_mut(&ch) {
                    Some(Pending::Skip { remaining }) => {
                        if len > *remaining {
                            self.channels.remove(&ch);
                            return err(
                                frame,
                                ErrorKind::MalformedFrame(
                                    "content body frames exceed the declared body size",
                                ),
                            );
                        }
                        *remaining -= len;
                        if *remaining == 0 {
                            self.channels.remove(&ch);
                        }
                        None
                    }
                    Some(Pending::Body {
                        header,
                        parts,
                        received,
                        ..
                    }) => {
                        let total = received.saturating_add(len);
                        if total > header.body_size {
                            self.drop_pending(ch);
                            return err(
                                frame,
                                ErrorKind::MalformedFrame(
                                    "content body frames exceed the declared body size",
                                ),
                            );
                        }
                        if self.buffered.saturating_add(b.len()) > MAX_BUFFERED {
                            self.drop_pending(ch);
                            return err(
                                frame,
                                ErrorKind::FrameTooLarge {
                                    size: total,
                                    max: MAX_BUFFERED as u64,
                                },
                            );
                        }
                        parts.push(b);
                        *received = total;
                        self.buffered += b.len();
                        if total < header.body_size {
                            return None;
                        }
                        match self.drop_pending(ch) {
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
                    _ => {
                        self.drop_pending(ch);
                        err(
                            frame,
                            ErrorKind::MalformedFrame(
                                "content body without a content header before it",
                            ),
                        )
                    }
                }
            }
        }
    }
}
