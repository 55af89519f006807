//! AMQP 1.0 (SASL included) behind the [`Protocol`] interface: its codec in `codec/amqp10/`,
//! its tracker (`state/amqp10/`) names this type in the layer above.

use bytes::Bytes;

use super::{Protocol, ProtocolFrame, ProtocolMessage};
use crate::codec::resync::{Plausible, plausible_amqp10};
use crate::codec::{DecodeError, Limits, ProtocolHeader, amqp10, head};

/// AMQP 1.0.
#[derive(Debug)]
pub struct Amqp10;

impl Protocol for Amqp10 {
    type Frame = amqp10::Frame;
    type Message = amqp10::Message;
    type Assembler = amqp10::MessageAssembler;
    type MaskState = amqp10::mask::MaskState;

    const HEADER: ProtocolHeader = ProtocolHeader::Amqp10;
    const FRAME_HEADER_LEN: usize = 8;
    const PROTO_NAMES: &'static [&'static str] = &["amqp-1.0", "amqp-sasl"];
    const NAME: &'static str = "amqp10";
    const TITLE: &'static str = "AMQP 1.0";
    const TLS_UPGRADE: Option<ProtocolHeader> = Some(ProtocolHeader::Amqp10Tls);

    #[inline]
    fn frame_secrets(
        frame: &amqp10::Frame,
        message: Option<&amqp10::Message>,
    ) -> Vec<std::ops::Range<usize>> {
        frame.secret_ranges_knowing(message)
    }
    #[inline]
    fn mask_frame(
        state: &mut Self::MaskState,
        frame: &amqp10::Frame,
        ranges: &mut Vec<std::ops::Range<usize>>,
    ) -> Option<std::ops::Range<*const u8>> {
        state.frame(frame, ranges)
    }
    fn mask_message(
        state: &mut Self::MaskState,
        message: &mut amqp10::Message,
        searched: &crate::codec::masking::Searched,
    ) {
        state.message(message, searched)
    }
    fn undecoded_secret(
        unit: &[u8],
        stream: &super::UndecodedStream,
        _complete: bool,
    ) -> Option<std::ops::Range<usize>> {
        let sasl = stream.header == Some(ProtocolHeader::Amqp10Sasl);
        amqp10::mask::undecoded_secret(unit, sasl, stream.cbs)
    }
    fn framed_after(header: ProtocolHeader) -> bool {
        matches!(header, ProtocolHeader::Amqp10 | ProtocolHeader::Amqp10Sasl)
    }
    fn framing_of(proto_name: &str) -> Option<ProtocolHeader> {
        match proto_name {
            "amqp-sasl" => Some(ProtocolHeader::Amqp10Sasl),
            "amqp-1.0" => Some(ProtocolHeader::Amqp10),
            _ => None,
        }
    }
    #[inline]
    fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        amqp10::frame_size(buf)
    }
    #[inline]
    fn frame_channel(head: &[u8]) -> super::FrameChannel {
        // size (4 bytes), doff (1), type (1), channel (2). SASL frames (type 1) belong to the
        // connection; a frame of the header alone is empty (a heartbeat).
        match head {
            [0, 0, 0, 8, 2, 0, _, _, ..] => super::FrameChannel::Stateless,
            [_, _, _, _, _, 1, _, _, ..] => super::FrameChannel::On(0),
            [_, _, _, _, _, _, hi, lo, ..] => {
                super::FrameChannel::On(u16::from_be_bytes([*hi, *lo]))
            }
            _ => super::FrameChannel::Unknown,
        }
    }
    #[inline]
    fn decode_frame(raw: Bytes, offset: u64) -> Result<amqp10::Frame, DecodeError> {
        amqp10::decode_frame(raw, offset)
    }
    fn decode_head(head: Bytes, size: u64, offset: u64) -> Result<amqp10::Frame, DecodeError> {
        head::amqp10(head, size, offset)
    }
    #[inline]
    fn plausible(buf: &[u8]) -> Plausible {
        plausible_amqp10(buf)
    }
    fn assembler(limits: Limits) -> amqp10::MessageAssembler {
        amqp10::MessageAssembler::with_limits(limits.body, limits.assembling)
    }
    fn assembler_after_gap(limits: Limits) -> amqp10::MessageAssembler {
        Self::assembler(limits).after_gap()
    }
    #[inline]
    fn assemble(
        assembler: &mut amqp10::MessageAssembler,
        frame: &amqp10::Frame,
    ) -> Option<Result<amqp10::Message, DecodeError>> {
        assembler.push(frame)
    }
    fn mask_from(head: &[u8], header: Option<ProtocolHeader>) -> Option<usize> {
        // In the SASL layer every frame is a SASL frame, whatever its type byte says: all but
        // its frame header is masked.
        if header == Some(ProtocolHeader::Amqp10Sasl) {
            return Some(Self::FRAME_HEADER_LEN.min(head.len()));
        }
        crate::codec::credential::amqp10_mask_from(head)
    }
    fn proto_name(frame: &amqp10::Frame) -> &'static str {
        if frame.name().starts_with("sasl-") {
            "amqp-sasl"
        } else {
            "amqp-1.0"
        }
    }
    fn frame_names() -> Vec<&'static str> {
        let mut names = amqp10::Performative::NAMES.to_vec();
        names.extend(amqp10::SaslFrame::NAMES);
        names.extend(["empty", "unknown"]);
        names
    }
    #[cfg(test)]
    fn example_frame() -> Vec<u8> {
        amqp10::encode_frame(0, 0, None, &[]).unwrap()
    }
}

impl ProtocolFrame for amqp10::Frame {
    fn channel(&self) -> u16 {
        amqp10::Frame::channel(self)
    }
    fn name(&self) -> &'static str {
        amqp10::Frame::name(self)
    }
    fn summary(&self) -> String {
        amqp10::Frame::summary(self)
    }
    fn summary_into(&self, out: &mut String) {
        amqp10::Frame::summary_into(self, out)
    }
    fn fields_json(&self) -> serde_json::Value {
        amqp10::Frame::fields_json(self)
    }
    fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
        amqp10::Frame::write_fields_json(self, o)
    }
    fn streamed(&self) -> u64 {
        self.streamed
    }
    #[inline]
    fn secret_ranges(&self) -> Vec<std::ops::Range<usize>> {
        amqp10::Frame::secret_ranges(self)
    }
    #[inline]
    fn attaches_token_link(&self, raw: &[u8]) -> bool {
        ProtocolFrame::name(self) == "attach" && raw.windows(4).any(|w| w == b"$cbs")
    }
    fn field_spans(&self) -> Option<crate::codec::spans::FieldSpans> {
        crate::codec::spans::amqp10(self)
    }
    /// The frame header (4 * doff bytes), the performative and each of its fields with its
    /// range, the payload.
    fn tree_into(
        &self,
        raw: &[u8],
        at: &dyn Fn(std::ops::Range<usize>) -> String,
        out: &mut String,
    ) {
        use crate::codec::spans::PAYLOAD_SPAN;
        use std::fmt::Write as _;
        let values = ProtocolFrame::fields_json(self);
        let value = |name: &str| match values.get(name) {
            Some(v) => crate::json::to_string(v),
            None => "null".to_owned(),
        };
        // The frame header is 4 * doff bytes (8 without extended header).
        let doff = raw.get(4).map_or(2, |&d| usize::from(d).max(2));
        let head = (4 * doff).min(raw.len());
        let _ = writeln!(out, "  frame header {}", at(0..head));
        let spans = self.field_spans().unwrap_or_default();
        let body_end = spans
            .iter()
            .find(|(n, _)| *n == PAYLOAD_SPAN)
            .map_or(raw.len(), |(_, s)| s.start);
        if !spans.is_empty() {
            let _ = writeln!(
                out,
                "  {} {}",
                ProtocolFrame::name(self),
                at(head..body_end)
            );
        }
        for (name, span) in spans {
            if name == PAYLOAD_SPAN {
                let _ = writeln!(out, "  payload ({} bytes) {}", span.len(), at(span));
            } else {
                let _ = writeln!(out, "    {name} = {} {}", value(name), at(span));
            }
        }
    }
    /// SASL frames are the connection's; attach, flow (with a handle), transfer and detach
    /// name their link.
    fn finding_scope(&self) -> (Option<u16>, Option<u32>) {
        use amqp10::Performative as P;
        let handle = match self.performative() {
            Some(P::Attach(a)) => Some(a.handle),
            Some(P::Flow(fl)) => fl.handle,
            Some(P::Transfer(t)) => Some(t.handle),
            Some(P::Detach(d)) => Some(d.handle),
            _ => None,
        };
        ((!self.is_sasl()).then(|| self.channel()), handle)
    }
}

impl ProtocolMessage for amqp10::Message {
    fn to_json(&self, max_body: usize) -> serde_json::Value {
        amqp10::Message::to_json(self, max_body)
    }
    fn line_summary(&self) -> Option<String> {
        Some(self.body_summary())
    }
    fn line_summary_into(&self, out: &mut String) {
        self.body_summary_into(out);
    }
    /// The message's entries, then `"cbs"` for a CBS request or response.
    fn write_json_entries<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O, max_body: usize) {
        amqp10::Message::write_json_entries(self, o, max_body);
        if let Some(cbs) = amqp10::cbs::summary(self) {
            o.key("cbs");
            cbs.write_json(o);
        }
    }
}
