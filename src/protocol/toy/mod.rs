//! A toy protocol, compiled into tests only: a third protocol added as this one folder and one
//! line of the protocol table, to show that the pipeline, the trackers, the rules, the JSONL
//! writer and the filter ask nothing of a protocol beyond its trait implementations.
//!
//! The toy's "specification": a stream starts with the 8-byte header `AMQPTOY1`; each frame
//! is a big-endian u32 payload length, a big-endian u16 channel and the payload. "A frame
//! MUST NOT carry more than 16 payload bytes." (the one rule, [`rules::TOY_FRAME_TOO_LONG`]).
//! A payload that starts with `secret:` carries a credential in the rest of it (masked by the
//! toy's masking hook, [`Protocol::mask_frame`]).

pub mod codec;
pub mod filter;
pub mod rules;
pub mod tracker;

#[cfg(test)]
mod tests;

use bytes::Bytes;

use super::{Protocol, ProtocolFrame, ProtocolMessage};
use crate::codec::resync::Plausible;
use crate::codec::{DecodeError, Limits, NamedHeader, ProtocolHeader};
use codec::{HEADER_LEN, ToyFrame};

/// The toy protocol.
#[derive(Debug)]
pub struct Toy;

/// The toy carries no messages: its frames are all there is. Never constructed.
#[derive(Clone, Debug, PartialEq)]
pub enum ToyMessage {}

impl Protocol for Toy {
    type Frame = ToyFrame;
    type Message = ToyMessage;
    type Assembler = ();
    type MaskState = ();

    const HEADER: ProtocolHeader = ProtocolHeader::Named(NamedHeader {
        version: *b"TOY1",
        proto: "toy",
        title: "the toy protocol",
    });
    const FRAME_HEADER_LEN: usize = HEADER_LEN;
    const PROTO_NAMES: &'static [&'static str] = &["toy"];
    const NAME: &'static str = "toy";
    const TITLE: &'static str = "the toy protocol";

    fn framed_after(header: ProtocolHeader) -> bool {
        header == Self::HEADER
    }
    fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        codec::frame_size(buf)
    }
    fn frame_channel(head: &[u8]) -> super::FrameChannel {
        match head {
            [_, _, _, _, hi, lo, ..] => super::FrameChannel::On(u16::from_be_bytes([*hi, *lo])),
            _ => super::FrameChannel::Unknown,
        }
    }
    fn decode_frame(raw: Bytes, offset: u64) -> Result<ToyFrame, DecodeError> {
        codec::decode_frame(raw, offset)
    }
    fn decode_head(head: Bytes, size: u64, offset: u64) -> Result<ToyFrame, DecodeError> {
        let mut frame = codec::decode_frame(head.clone(), offset).or_else(|_| {
            let cut = head.len().min(HEADER_LEN);
            codec::decode_header_only(head.slice(..cut), offset)
        })?;
        frame.streamed = size.saturating_sub(head.len() as u64);
        Ok(frame)
    }
    fn plausible(buf: &[u8]) -> Plausible {
        match codec::frame_size(buf) {
            Ok(Some(n)) if n <= buf.len() => Plausible::Frame(n),
            Ok(_) => Plausible::NeedMore,
            Err(_) => Plausible::No,
        }
    }
    fn assembler(_: Limits) {}
    fn assemble(_: &mut (), _: &ToyFrame) -> Option<Result<ToyMessage, DecodeError>> {
        None
    }
    fn mask_from(_: &[u8], _: Option<ProtocolHeader>) -> Option<usize> {
        None
    }
    fn mask_frame(
        _: &mut (),
        frame: &ToyFrame,
        ranges: &mut Vec<std::ops::Range<usize>>,
    ) -> Option<std::ops::Range<*const u8>> {
        ranges.extend(codec::secret(frame));
        None
    }
    fn undecoded_secret(
        unit: &[u8],
        _: &super::UndecodedStream,
        _: bool,
    ) -> Option<std::ops::Range<usize>> {
        codec::undecoded_secret(unit)
    }
    fn proto_name(_: &ToyFrame) -> &'static str {
        "toy"
    }
    fn frame_names() -> Vec<&'static str> {
        vec![codec::FRAME_NAME]
    }
    fn example_frame() -> Vec<u8> {
        codec::encode_frame(3, b"hi")
    }
}

impl ProtocolFrame for ToyFrame {
    fn channel(&self) -> u16 {
        self.channel
    }
    fn name(&self) -> &'static str {
        codec::FRAME_NAME
    }
    fn summary(&self) -> String {
        let mut s = String::new();
        self.summary_into(&mut s);
        s
    }
    fn summary_into(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "toy-frame ch={} length={}", self.channel, self.length);
    }
    fn fields_json(&self) -> serde_json::Value {
        serde_json::json!({
            "channel": self.channel,
            "length": self.length,
            "payload": crate::base::escape::Escaped(&String::from_utf8_lossy(&self.payload)).to_string(),
        })
    }
    fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
        o.begin_object();
        o.key("channel");
        o.u64(self.channel.into());
        o.key("length");
        o.u64(self.length.into());
        o.key("payload");
        o.str(&String::from_utf8_lossy(&self.payload));
        o.end_object();
    }
    fn streamed(&self) -> u64 {
        self.streamed
    }
    fn secret_ranges(&self) -> Vec<std::ops::Range<usize>> {
        Vec::new()
    }
    fn field_spans(&self) -> Option<crate::codec::spans::FieldSpans> {
        let end = HEADER_LEN + self.payload.len();
        Some(vec![
            ("length", 0..4),
            ("channel", 4..HEADER_LEN),
            ("payload", HEADER_LEN..end),
        ])
    }
}

impl ProtocolMessage for ToyMessage {
    fn to_json(&self, _: usize) -> serde_json::Value {
        match *self {}
    }
    fn write_json_entries<O: crate::json::JsonOut + ?Sized>(&self, _: &mut O, _: usize) {
        match *self {}
    }
}
