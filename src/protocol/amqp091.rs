//! AMQP 0-9-1 behind the [`Protocol`] interface: its codec in `codec/amqp091/`,
//! its tracker (`state/amqp091/`) names this type in the layer above.

use bytes::Bytes;

use super::{Protocol, ProtocolFrame, ProtocolMessage};
use crate::codec::resync::{Plausible, plausible_amqp091};
use crate::codec::{DecodeError, Limits, ProtocolHeader, amqp091, head};

/// AMQP 0-9-1.
#[derive(Debug)]
pub struct Amqp091;

impl Protocol for Amqp091 {
    type Frame = amqp091::Frame;
    type Message = amqp091::Message;
    type Assembler = amqp091::ContentAssembler;
    type MaskState = amqp091::mask::MaskState;

    const HEADER: ProtocolHeader = ProtocolHeader::Amqp091;
    const FRAME_HEADER_LEN: usize = 7;
    const PROTO_NAMES: &'static [&'static str] = &["amqp-0-9-1"];
    const NAME: &'static str = "amqp091";
    const TITLE: &'static str = "AMQP 0-9-1";
    const ANSWERS_WITH_HEADER: bool = false;

    #[inline]
    fn frame_masked(state: &mut Self::MaskState, frame: &amqp091::Frame, was_masked: bool) {
        state.frame_masked(frame, was_masked)
    }
    fn mask_message(
        state: &mut Self::MaskState,
        message: &mut amqp091::Message,
        searched: &crate::codec::masking::Searched,
    ) {
        state.message(message, searched)
    }
    fn undecoded_secret(
        unit: &[u8],
        stream: &super::UndecodedStream,
        complete: bool,
    ) -> Option<std::ops::Range<usize>> {
        amqp091::mask::undecoded_secret(unit, stream.client, complete)
    }
    fn any_answer_refuses(asked: ProtocolHeader) -> bool {
        // A 0-9-1 (0-9, 0-8) server accepts with connection.start (0-9-1 §4.2.2).
        matches!(
            asked,
            ProtocolHeader::Amqp091 | ProtocolHeader::Amqp09 | ProtocolHeader::Amqp08
        )
    }
    fn framed_after(header: ProtocolHeader) -> bool {
        header == ProtocolHeader::Amqp091
    }
    #[inline]
    fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        amqp091::frame_size(buf)
    }
    #[inline]
    fn frame_channel(head: &[u8]) -> super::FrameChannel {
        // type (1 byte), channel (2), size (4): a heartbeat (type 8) carries no state.
        match head {
            [8, ..] => super::FrameChannel::Stateless,
            [_, hi, lo, ..] => super::FrameChannel::On(u16::from_be_bytes([*hi, *lo])),
            _ => super::FrameChannel::Unknown,
        }
    }
    #[inline]
    fn decode_frame(raw: Bytes, offset: u64) -> Result<amqp091::Frame, DecodeError> {
        amqp091::decode_frame(raw, offset)
    }
    #[inline]
    fn decode_frame_ref(raw: &Bytes, offset: u64) -> Result<amqp091::Frame, DecodeError> {
        amqp091::decode_frame_ref(raw, offset)
    }
    fn decode_head(head: Bytes, size: u64, offset: u64) -> Result<amqp091::Frame, DecodeError> {
        head::amqp091(head, size, offset)
    }
    #[inline]
    fn plausible(buf: &[u8]) -> Plausible {
        plausible_amqp091(buf)
    }
    fn assembler(limits: Limits) -> amqp091::ContentAssembler {
        amqp091::ContentAssembler::with_limits(limits.body, limits.assembling)
    }
    #[inline]
    fn assemble(
        assembler: &mut amqp091::ContentAssembler,
        frame: &amqp091::Frame,
    ) -> Option<Result<amqp091::Message, DecodeError>> {
        assembler.push(frame)
    }
    fn mask_from(head: &[u8], _header: Option<ProtocolHeader>) -> Option<usize> {
        crate::codec::credential::amqp091_mask_from(head)
    }
    fn proto_name(_: &amqp091::Frame) -> &'static str {
        "amqp-0-9-1"
    }
    fn frame_names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = amqp091::METHODS.iter().map(|m| m.name).collect();
        names.extend(["content-header", "content-body", "heartbeat"]);
        names
    }
    #[cfg(test)]
    fn example_frame() -> Vec<u8> {
        let mut v = Vec::new();
        amqp091::encode_frame(0, &amqp091::FrameKind::Heartbeat, &mut v);
        v
    }
}

impl ProtocolFrame for amqp091::Frame {
    fn channel(&self) -> u16 {
        amqp091::Frame::channel(self)
    }
    fn name(&self) -> &'static str {
        amqp091::Frame::name(self)
    }
    fn summary(&self) -> String {
        amqp091::Frame::summary(self)
    }
    fn summary_into(&self, out: &mut String) {
        amqp091::Frame::summary_into(self, out)
    }
    fn fields_json(&self) -> serde_json::Value {
        amqp091::Frame::fields_json(self)
    }
    fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
        amqp091::Frame::write_fields_json(self, o)
    }
    fn streamed(&self) -> u64 {
        self.streamed
    }
    #[inline]
    fn secret_ranges(&self) -> Vec<std::ops::Range<usize>> {
        amqp091::Frame::secret_ranges(self)
    }
    fn redelivered(&self) -> bool {
        self.method().and_then(|m| m.redelivered()) == Some(true)
    }
    /// Type, channel and size, the payload and the frame-end octet with their ranges; the
    /// codec keeps no spans for a method's arguments: they are listed with their values in
    /// the spec's order (a method's arguments as its class defines them, a content header's
    /// properties in property-flag order), without ranges.
    fn tree_into(
        &self,
        raw: &[u8],
        at: &dyn Fn(std::ops::Range<usize>) -> String,
        out: &mut String,
    ) {
        let order: Vec<&str> = match &self.kind {
            amqp091::FrameKind::Method(m) => m.def.args.iter().map(|a| a.name).collect(),
            amqp091::FrameKind::Header(h) => h.properties.iter().map(|(a, _)| a.name).collect(),
            amqp091::FrameKind::Body(_) | amqp091::FrameKind::Heartbeat => Vec::new(),
        };
        tree(out, raw, &ProtocolFrame::fields_json(self), &order, at)
    }
}

impl ProtocolMessage for amqp091::Message {
    fn to_json(&self, max_body: usize) -> serde_json::Value {
        amqp091::Message::to_json(self, max_body)
    }
    fn write_json_entries<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O, max_body: usize) {
        amqp091::Message::write_json_entries(self, o, max_body)
    }
}

/// The `decode --tree` lines of a 0-9-1 frame (see its [`ProtocolFrame::tree_into`]): fields
/// of `values` not in `order` (a content header's class and body size) come first.
fn tree(
    out: &mut String,
    raw: &[u8],
    values: &serde_json::Value,
    order: &[&str],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) {
    use std::fmt::Write as _;
    if raw.len() < 8 {
        return;
    }
    let end = raw.len() - 1;
    let _ = writeln!(out, "  frame header {}", at(0..7));
    let _ = writeln!(out, "    type = {} {}", raw[0], at(0..1));
    let _ = writeln!(
        out,
        "    channel = {} {}",
        u16::from_be_bytes([raw[1], raw[2]]),
        at(1..3)
    );
    let size = u32::from_be_bytes([raw[3], raw[4], raw[5], raw[6]]);
    let _ = writeln!(out, "    size = {size} {}", at(3..7));
    let _ = writeln!(out, "  payload ({} bytes) {}", end - 7, at(7..end));
    if let Some(fields) = values.as_object() {
        let rest = fields.iter().filter(|(n, _)| !order.contains(&n.as_str()));
        let ordered = order.iter().filter_map(|n| fields.get_key_value(*n));
        for (name, v) in rest.chain(ordered) {
            let _ = writeln!(
                out,
                "    {} = {} (no byte range: not kept for 0-9-1)",
                crate::base::escape::Escaped(name),
                crate::json::to_string(v)
            );
        }
    }
    let _ = writeln!(
        out,
        "  frame-end = 0x{:02x} {}",
        raw[end],
        at(end..raw.len())
    );
}
