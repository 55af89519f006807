//! The protocol interface: everything the pipeline needs of one protocol behind one trait, and
//! the table of the protocols amqpeek decodes.
//!
//! A protocol is its codec (`src/codec/<protocol>/`), a file here implementing [`Protocol`]
//! for it by delegating to the codec, its tracker (`src/state/<protocol>/`, which implements
//! `crate::state::Tracked` for the same type), and one line in the `registered_protocols!`
//! table below. This layer expands the table into what decoding dispatches on: [`ProtocolId`]
//! (framing, decoding, resync plausibility, masking, its JSONL names), [`AnyFrame`],
//! [`AnyMessage`], [`Assemblers`] and [`MaskStates`]; the state layer expands the same table into its
//! trackers (`crate::state::Contexts`). Static dispatch: a match over the registered
//! protocols, as cheap as the hand-written ones were.

pub mod amqp091;
pub mod amqp10;
pub mod credential;
mod frame_event;
mod register;
pub mod resync;
pub mod skim_channels;
pub mod stream;
#[cfg(test)]
pub mod toy;
mod undecoded;

pub use frame_event::FrameEvent;
pub use skim_channels::{FrameChannel, SkimChannels};
pub use stream::{Item, Skimmed, StreamDecoder};
pub use undecoded::UndecodedStream;

use bytes::Bytes;

use crate::codec::resync::Plausible;
use crate::codec::{DecodeError, Limits, ProtocolHeader};

/// One protocol, as the pipeline sees it. Implemented by a unit type per protocol; every
/// function is associated (no `self`): the table dispatches to them statically.
pub trait Protocol {
    /// Its decoded frame.
    type Frame: ProtocolFrame + Clone + std::fmt::Debug + PartialEq;
    /// A message its frames assemble.
    type Message: ProtocolMessage + Clone + std::fmt::Debug + PartialEq;
    /// What assembles its messages from its frames, in one direction.
    type Assembler: std::fmt::Debug;
    /// What credential masking keeps of one direction between its frames (`()`: nothing).
    type MaskState: std::fmt::Debug + Default;

    /// The header its framing is reported as ([`crate::protocol::StreamDecoder::framing`], a
    /// resynchronisation's protocol).
    const HEADER: ProtocolHeader;
    /// Bytes of its frame header (before the part that may hold a credential).
    const FRAME_HEADER_LEN: usize;
    /// The JSONL `"proto"` values of its frames.
    const PROTO_NAMES: &'static [&'static str];
    /// The name `decode --protocol` takes (`amqp10`).
    const NAME: &'static str;
    /// What it is called in text (`AMQP 0-9-1`).
    const TITLE: &'static str;
    /// Whether a server that accepts the client's header answers with the same header (AMQP
    /// 1.0 §2.2) rather than straight with frames (AMQP 0-9-1 §4.2.2: any header it sends is
    /// a refusal).
    const ANSWERS_WITH_HEADER: bool = true;
    /// The header that asks for its TLS upgrade (AMQP 1.0 §5.2: `AMQP 2 1 0 0`), after which
    /// a TLS handshake follows; `None` when it has none.
    const TLS_UPGRADE: Option<ProtocolHeader> = None;

    /// Whether a stream that starts with (or switches to) `header` is framed in this protocol.
    fn framed_after(header: ProtocolHeader) -> bool;
    /// Whether a server that accepts the client's `asked` (the first header it sends) answers
    /// with frames, so that any header it answers with is a refusal: the headers of this
    /// protocol when it does not [answer with a header](Protocol::ANSWERS_WITH_HEADER), and
    /// those of the versions of its family that are not decoded (0-9, 0-8 for 0-9-1).
    fn any_answer_refuses(asked: ProtocolHeader) -> bool {
        !Self::ANSWERS_WITH_HEADER && Self::framed_after(asked)
    }
    /// The header a stream of frames whose JSONL `"proto"` is `proto_name` resumes after
    /// (`None`: not one of [`Protocol::PROTO_NAMES`]).
    fn framing_of(proto_name: &str) -> Option<ProtocolHeader> {
        Self::PROTO_NAMES
            .contains(&proto_name)
            .then_some(Self::HEADER)
    }
    /// The size of the frame `buf` starts with, from its head: `Ok(None)` while too few bytes
    /// are there to tell, an error when the framing is lost.
    fn frame_size(buf: &[u8]) -> Result<Option<usize>, DecodeError>;
    /// What the frame `head` starts (its first bytes, as many as are there) may change: its
    /// channel, nothing (a heartbeat), or not known when the header is cut short. What a
    /// skim passed over is forgotten by channel from this.
    fn frame_channel(head: &[u8]) -> skim_channels::FrameChannel;
    /// Decode the whole frame `raw` found at absolute `offset`.
    fn decode_frame(raw: Bytes, offset: u64) -> Result<Self::Frame, DecodeError>;
    /// [`Protocol::decode_frame`] of a frame whose bytes `raw` the caller keeps: a protocol
    /// whose frames need not hold a handle of them decodes from the borrowed one, sparing the
    /// refcount an owned handle takes and lets go.
    #[inline]
    fn decode_frame_ref(raw: &Bytes, offset: u64) -> Result<Self::Frame, DecodeError> {
        Self::decode_frame(raw.clone(), offset)
    }
    /// Decode a frame of `size` bytes at `offset` from its first bytes, `head`.
    fn decode_head(head: Bytes, size: u64, offset: u64) -> Result<Self::Frame, DecodeError>;
    /// Whether `buf` plausibly starts with one of its frames (for resynchronising after lost
    /// bytes).
    fn plausible(buf: &[u8]) -> Plausible;
    /// A message assembler holding at most what `limits` allow.
    fn assembler(limits: Limits) -> Self::Assembler;
    /// A message assembler for a stream that resumes after bytes passed over (a skim): frames
    /// that continue a message whose start was not seen must not make a message.
    fn assembler_after_gap(limits: Limits) -> Self::Assembler {
        Self::assembler(limits)
    }
    /// Feed `frame` to `assembler`: the message it completes, if any.
    fn assemble(
        assembler: &mut Self::Assembler,
        frame: &Self::Frame,
    ) -> Option<Result<Self::Message, DecodeError>>;
    /// Where a credential may start in `head`, the first bytes of a unit of this framing that
    /// could not be decoded (`None`: it cannot hold one), in a direction whose last protocol
    /// header was `header` (AMQP 1.0's SASL layer masks every frame); see
    /// [`crate::codec::credential`].
    fn mask_from(head: &[u8], header: Option<ProtocolHeader>) -> Option<usize>;
    /// Credential byte ranges within the raw `frame`, knowing `message`, the message it
    /// completes (when it decoded): its own [`ProtocolFrame::secret_ranges`] unless the message
    /// tells that a search of the frame would find none.
    #[inline]
    fn frame_secrets(
        frame: &Self::Frame,
        _message: Option<&Self::Message>,
    ) -> Vec<std::ops::Range<usize>> {
        frame.secret_ranges()
    }
    /// Append to `ranges` the credential byte ranges of `frame` beyond its own
    /// [`ProtocolFrame::secret_ranges`] (what only the frames before it tell, or what the
    /// protocol masks besides); returns the bytes of it that were searched for a credential a
    /// message may hold too, so that a message of exactly those bytes is not searched again.
    #[inline]
    fn mask_frame(
        _state: &mut Self::MaskState,
        _frame: &Self::Frame,
        _ranges: &mut Vec<std::ops::Range<usize>>,
    ) -> Option<std::ops::Range<*const u8>> {
        None
    }
    /// `frame`, decoded again after masking when `was_masked`, has been masked: remember what
    /// the message it starts must show of it.
    #[inline]
    fn frame_masked(_state: &mut Self::MaskState, _frame: &Self::Frame, _was_masked: bool) {}
    /// Mask the credentials of the completed `message` (URL passwords, tokens, masked frames
    /// it holds copies of), skipping what `searched` says was already searched.
    #[inline]
    fn mask_message(
        _state: &mut Self::MaskState,
        _message: &mut Self::Message,
        _searched: &crate::codec::masking::Searched,
    ) {
    }
    /// The part of `unit` to mask because it may hold a credential (`None`: it cannot), where
    /// `unit` is the first bytes of a unit of this framing the relay passes on undecoded (a
    /// malformed frame, the start of one that is incomplete or decoded from its head) found in
    /// `stream`; `complete`: `unit` is the whole frame. Fails closed: a unit too short or too
    /// odd to tell is masked past its frame header.
    fn undecoded_secret(
        unit: &[u8],
        stream: &UndecodedStream,
        complete: bool,
    ) -> Option<std::ops::Range<usize>>;
    /// The JSONL `"proto"` of `frame` (one of [`Protocol::PROTO_NAMES`]).
    fn proto_name(frame: &Self::Frame) -> &'static str;
    /// Every name [`ProtocolFrame::name`] can give (what the filter's `name:` is checked
    /// against).
    fn frame_names() -> Vec<&'static str>;
    /// One frame of it, as the wire carries it (for the tests every protocol must pass).
    #[cfg(test)]
    fn example_frame() -> Vec<u8>;
}

/// What the pipeline, the sinks and the TUI ask of any protocol's decoded frame.
pub trait ProtocolFrame {
    /// Channel number from the frame header.
    fn channel(&self) -> u16;
    /// Frame name as in JSONL `"name"`.
    fn name(&self) -> &'static str;
    /// The codec's one-line summary.
    fn summary(&self) -> String;
    /// The summary, appended to `out`.
    fn summary_into(&self, out: &mut String);
    /// Fields keyed by spec names.
    fn fields_json(&self) -> serde_json::Value;
    /// The fields, written to `o`.
    fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O);
    /// Bytes of the frame streamed past after its head (0 for a frame decoded whole).
    fn streamed(&self) -> u64;
    /// Credential byte ranges within the raw frame.
    fn secret_ranges(&self) -> Vec<std::ops::Range<usize>>;
    /// (field name, byte range within the raw frame) of each field present, for the hex view,
    /// or `None` when the codec gives no spans for this kind of frame.
    fn field_spans(&self) -> Option<crate::codec::spans::FieldSpans> {
        None
    }
    /// The lines `decode --tree` shows of it under its summary line, appended to `out`: its
    /// parts and fields, one per line ending in `\n`, indented two spaces per depth, each with
    /// its byte range as `at` formats a range of `raw` (its bytes). By default its fields
    /// (values as the JSONL shows them), with the ranges [`ProtocolFrame::field_spans`] gives.
    fn tree_into(
        &self,
        raw: &[u8],
        at: &dyn Fn(std::ops::Range<usize>) -> String,
        out: &mut String,
    ) {
        use std::fmt::Write as _;
        let _ = raw;
        let spans = self.field_spans().unwrap_or_default();
        let values = self.fields_json();
        for (name, v) in values.as_object().into_iter().flatten() {
            let range = spans
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| format!(" {}", at(s.clone())))
                .unwrap_or_default();
            let name = crate::base::escape::Escaped(name);
            let _ = writeln!(out, "  {name} = {}{range}", crate::json::to_string(v));
        }
    }
    /// Whether it attaches a link over which later frames of the connection may carry a
    /// credential (AMQP 1.0: an attach naming `$cbs`, after which an undecoded transfer may
    /// hold a token; see [`UndecodedStream::cbs`]). `raw` is its bytes.
    #[inline]
    fn attaches_token_link(&self, raw: &[u8]) -> bool {
        let _ = raw;
        false
    }
    /// Where a violation at this frame is counted: its channel (`None`: the connection as a
    /// whole, e.g. a SASL frame) and the link handle it names, if any.
    fn finding_scope(&self) -> (Option<u16>, Option<u32>) {
        (Some(self.channel()), None)
    }
    /// Whether it delivers a message again (the 0-9-1 `redelivered` flag), for the metrics.
    fn redelivered(&self) -> bool {
        false
    }
}

/// What the sinks ask of any protocol's assembled message.
pub trait ProtocolMessage {
    /// Sections / properties / body as JSON, bodies truncated at `max_body` bytes.
    fn to_json(&self, max_body: usize) -> serde_json::Value;
    /// Its JSONL entries (sections / properties / body, and whatever else the protocol tells
    /// of a message), written into the message object `o` holds open.
    fn write_json_entries<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O, max_body: usize);
    /// What the line of the frame completing the message adds of it (its body in a few words),
    /// when the frame's own summary does not show it already.
    fn line_summary(&self) -> Option<String> {
        None
    }
    /// [`ProtocolMessage::line_summary`], appended to `out` (nothing when there is none).
    fn line_summary_into(&self, out: &mut String) {
        if let Some(s) = self.line_summary() {
            out.push_str(&s);
        }
    }
}

/// The table of the registered protocols, one `Variant(field) => ProtocolImpl` line each,
/// after its doc comment and at most one `#[cfg(...)]` (a protocol compiled in only where the
/// predicate holds: the toy protocol, in tests). Each layer that dispatches over every
/// protocol expands it with its own generator macro: this one with [`register::protocols`]
/// (ids, frames, messages, assemblers), the state layer with its trackers'
/// (`crate::state::register`), the filter with its field terms' (`crate::filter::register`),
/// the state pane with its views'. A protocol is added here once.
macro_rules! registered_protocols {
    ($generate:path) => {
        $generate! {
            /// AMQP 1.0 (including SASL frames).
            Amqp10(amqp10) => $crate::protocol::amqp10::Amqp10,
            /// AMQP 0-9-1.
            Amqp091(amqp091) => $crate::protocol::amqp091::Amqp091,
            /// A toy protocol that proves the table is all a protocol needs.
            #[cfg(test)] Toy(toy) => $crate::protocol::toy::Toy,
        }
    };
}
pub(crate) use registered_protocols;

registered_protocols!(register::protocols);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_protocol_names_itself_the_same_way_everywhere() {
        for &id in ProtocolId::ALL {
            // The header it is reported as frames it again (a resync's protocol, a decoder
            // started as `assuming` it).
            assert_eq!(ProtocolId::framed_after(id.header()), Some(id), "{id:?}");
            let raw = id.example_frame();
            assert_eq!(id.frame_size(&raw).unwrap(), Some(raw.len()), "{id:?}");
            assert!(matches!(id.plausible(&raw), Plausible::Frame(n) if n == raw.len()));
            let frame = id.decode_frame(Bytes::from(raw), 0).unwrap();
            assert_eq!(frame.protocol(), id);
            // What the JSONL writer names its frames, the JSONL reader reads back as it.
            assert_eq!(ProtocolId::of_proto_name(frame.proto_name()), Some(id));
        }
        assert_eq!(
            ProtocolId::of_proto_name("amqp-sasl"),
            Some(ProtocolId::Amqp10)
        );
        assert_eq!(ProtocolId::of_proto_name("amqp-0-10"), None);
        assert_eq!(ProtocolId::framed_after(ProtocolHeader::Amqp10Tls), None);
        // The upgrade header a TLS upgrade too short to sniff is reported as; none frames.
        assert_eq!(ProtocolId::tls_upgrade(), Some(ProtocolHeader::Amqp10Tls));
    }
}
