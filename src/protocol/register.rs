//! The macro that turns the table of registered protocols into the types the pipeline
//! dispatches on (see [`super`]).

/// Generates, from `Variant(field) => ProtocolImpl` lines: [`ProtocolId`](super::ProtocolId),
/// [`AnyFrame`](super::AnyFrame), [`AnyMessage`](super::AnyMessage),
/// [`MaskStates`](super::MaskStates) and [`Assemblers`](super::Assemblers). The first protocol listed wins a tie in resync.
macro_rules! protocols {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($field:ident) => $imp:ty),+ $(,)?) => {
        /// One of the protocols amqpeek decodes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ProtocolId {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $variant),+
        }

        impl ProtocolId {
            /// Every registered protocol, in registration order.
            pub const ALL: &'static [ProtocolId] = &[$($(#[cfg($cfg)])? ProtocolId::$variant),+];

            /// The protocol framed after `header`, if amqpeek decodes one.
            pub fn framed_after(header: ProtocolHeader) -> Option<ProtocolId> {
                $($(#[cfg($cfg)])? if <$imp as Protocol>::framed_after(header) {
                    return Some(ProtocolId::$variant);
                })+
                None
            }

            /// The header `buf` starts with, as [`ProtocolHeader::sniff`] classifies it, with
            /// the `AMQP` versions it leaves unknown named when a registered protocol's
            /// [`Protocol::HEADER`] is a [`ProtocolHeader::Named`] with those bytes.
            pub fn sniff_header(buf: &[u8]) -> Option<ProtocolHeader> {
                let header = ProtocolHeader::sniff(buf)?;
                let ProtocolHeader::OtherAmqp(v) = header else {
                    return Some(header);
                };
                $($(#[cfg($cfg)])? if let ProtocolHeader::Named(n) = <$imp as Protocol>::HEADER {
                    if n.version == v {
                        return Some(<$imp as Protocol>::HEADER);
                    }
                })+
                Some(header)
            }

            /// Whether any header a server answers the client's first header `asked` with is a
            /// refusal (see [`Protocol::any_answer_refuses`]).
            pub fn any_answer_refuses(asked: ProtocolHeader) -> bool {
                $($(#[cfg($cfg)])? if <$imp as Protocol>::any_answer_refuses(asked) {
                    return true;
                })+
                false
            }

            /// Whether a stream after `header` (a protocol header, of AMQP or TLS) is not
            /// decoded: no registered protocol is framed after it.
            pub fn not_decoded(header: ProtocolHeader) -> bool {
                header != ProtocolHeader::NotAmqp && ProtocolId::framed_after(header).is_none()
            }

            /// The TLS upgrade header of the first registered protocol that has one (see
            /// [`Protocol::TLS_UPGRADE`]).
            pub fn tls_upgrade() -> Option<ProtocolHeader> {
                $($(#[cfg($cfg)])? if let Some(h) = <$imp as Protocol>::TLS_UPGRADE {
                    return Some(h);
                })+
                None
            }

            /// The protocol whose frames' JSONL `"proto"` is `name`.
            pub fn of_proto_name(name: &str) -> Option<ProtocolId> {
                $($(#[cfg($cfg)])? if <$imp as Protocol>::PROTO_NAMES.contains(&name) {
                    return Some(ProtocolId::$variant);
                })+
                None
            }

            /// The protocol `decode --protocol` names `name`.
            pub fn of_name(name: &str) -> Option<ProtocolId> {
                ProtocolId::ALL.iter().copied().find(|p| p.name() == name)
            }

            /// See [`Protocol::NAME`].
            pub fn name(self) -> &'static str {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::NAME),+ }
            }

            /// See [`Protocol::ANSWERS_WITH_HEADER`].
            pub fn answers_with_header(self) -> bool {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::ANSWERS_WITH_HEADER),+
                }
            }

            /// See [`Protocol::TITLE`].
            pub fn title(self) -> &'static str {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::TITLE),+ }
            }

            /// Its frames' JSONL `"proto"` values ([`Protocol::PROTO_NAMES`]).
            pub fn proto_names(self) -> &'static [&'static str] {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::PROTO_NAMES),+ }
            }

            /// See [`Protocol::example_frame`].
            #[cfg(test)]
            pub fn example_frame(self) -> Vec<u8> {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::example_frame()),+ }
            }

            /// The header a stream of frames whose JSONL `"proto"` is `name` resumes after (see
            /// [`Protocol::framing_of`]).
            pub fn framing_of_proto_name(name: &str) -> Option<ProtocolHeader> {
                $($(#[cfg($cfg)])? if let Some(h) = <$imp as Protocol>::framing_of(name) {
                    return Some(h);
                })+
                None
            }

            /// See [`Protocol::frame_names`].
            pub fn frame_names(self) -> Vec<&'static str> {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::frame_names()),+ }
            }

            /// The header its framing is reported as.
            pub fn header(self) -> ProtocolHeader {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::HEADER),+ }
            }

            /// Bytes of its frame header.
            pub fn frame_header_len(self) -> usize {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::FRAME_HEADER_LEN),+ }
            }

            /// See [`Protocol::frame_size`].
            #[inline]
            pub fn frame_size(self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::frame_size(buf)),+ }
            }

            /// See [`Protocol::frame_channel`].
            #[inline]
            pub fn frame_channel(self, head: &[u8]) -> $crate::protocol::FrameChannel {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::frame_channel(head)),+ }
            }

            /// See [`Protocol::plausible`].
            #[inline]
            pub fn plausible(self, buf: &[u8]) -> Plausible {
                match self { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::plausible(buf)),+ }
            }

            /// See [`Protocol::decode_frame`].
            #[inline]
            pub fn decode_frame(self, raw: Bytes, offset: u64) -> Result<AnyFrame, DecodeError> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => {
                        <$imp as Protocol>::decode_frame(raw, offset).map(AnyFrame::$variant)
                    })+
                }
            }

            /// See [`Protocol::decode_frame_ref`].
            #[inline]
            pub fn decode_frame_ref(self, raw: &Bytes, offset: u64) -> Result<AnyFrame, DecodeError> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => {
                        <$imp as Protocol>::decode_frame_ref(raw, offset).map(AnyFrame::$variant)
                    })+
                }
            }

            /// [`ProtocolId::decode_frame_ref`] written into `slot` (`Ok`: `slot` now holds the
            /// frame; `Err`: it is left as it was, the same error being returned). The frame is
            /// moved into the slot from where its protocol decoded it, as its own frame type: a
            /// copy of that type's size, not of the largest protocol's frame, and not once more
            /// through an `AnyFrame` on the stack.
            #[inline]
            pub fn decode_frame_into(
                self,
                raw: &Bytes,
                offset: u64,
                slot: &mut std::mem::MaybeUninit<AnyFrame>,
            ) -> Result<(), DecodeError> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => {
                        slot.write(AnyFrame::$variant(<$imp as Protocol>::decode_frame_ref(raw, offset)?));
                    })+
                }
                Ok(())
            }

            /// See [`Protocol::decode_head`].
            pub fn decode_head(
                self,
                head: Bytes,
                size: u64,
                offset: u64,
            ) -> Result<AnyFrame, DecodeError> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => {
                        <$imp as Protocol>::decode_head(head, size, offset).map(AnyFrame::$variant)
                    })+
                }
            }

            /// See [`Protocol::undecoded_secret`].
            #[inline]
            pub fn undecoded_secret(
                self,
                unit: &[u8],
                stream: &$crate::protocol::UndecodedStream,
                complete: bool,
            ) -> Option<std::ops::Range<usize>> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => {
                        <$imp as Protocol>::undecoded_secret(unit, stream, complete)
                    })+
                }
            }

            /// See [`Protocol::mask_from`].
            pub fn mask_from(self, head: &[u8], header: Option<ProtocolHeader>) -> Option<usize> {
                match self {
                    $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Protocol>::mask_from(head, header)),+
                }
            }
        }

        /// A decoded frame of any registered protocol.
        // Unboxed on purpose: a box would cost an allocation per decoded frame on the hot path.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq)]
        pub enum AnyFrame {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $variant(<$imp as Protocol>::Frame)),+
        }

        impl AnyFrame {
            /// Its protocol.
            pub fn protocol(&self) -> ProtocolId {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(_) => ProtocolId::$variant),+ }
            }
            /// The JSONL `"proto"` of the frame (`amqp-sasl` for AMQP 1.0 SASL frames,
            /// `amqp-1.0` for other 1.0 frames, `amqp-0-9-1`).
            pub fn proto_name(&self) -> &'static str {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => <$imp as Protocol>::proto_name(f)),+ }
            }
            /// Channel number from the frame header.
            pub fn channel(&self) -> u16 {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::channel(f)),+ }
            }
            /// Frame name as in JSONL `"name"`.
            pub fn name(&self) -> &'static str {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::name(f)),+ }
            }
            /// The codec's one-line summary.
            pub fn summary(&self) -> String {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::summary(f)),+ }
            }
            /// The summary, appended to `out`.
            pub fn summary_into(&self, out: &mut String) {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::summary_into(f, out)),+ }
            }
            /// Fields keyed by spec names.
            pub fn fields_json(&self) -> serde_json::Value {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::fields_json(f)),+ }
            }
            /// The fields, written to `o`.
            pub fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::write_fields_json(f, o)),+ }
            }
            /// Bytes of the frame streamed past after its head (0 for a frame decoded whole).
            pub fn streamed(&self) -> u64 {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::streamed(f)),+ }
            }
            /// Credential byte ranges within the raw frame.
            #[inline]
            pub fn secret_ranges(&self) -> Vec<std::ops::Range<usize>> {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::secret_ranges(f)),+ }
            }
            /// Credential byte ranges within the raw frame, knowing `message`, the message it
            /// completes (see [`Protocol::frame_secrets`]).
            #[inline]
            pub fn secrets_knowing(&self, message: Option<&AnyMessage>) -> Vec<std::ops::Range<usize>> {
                match self {
                    $($(#[cfg($cfg)])? AnyFrame::$variant(f) => {
                        let message = match message {
                            Some(AnyMessage::$variant(m)) => Some(m),
                            #[allow(unreachable_patterns)]
                            _ => None,
                        };
                        <$imp as Protocol>::frame_secrets(f, message)
                    })+
                }
            }
            /// See [`ProtocolFrame::finding_scope`].
            pub fn finding_scope(&self) -> (Option<u16>, Option<u32>) {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::finding_scope(f)),+ }
            }
            /// See [`ProtocolFrame::redelivered`].
            pub fn redelivered(&self) -> bool {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::redelivered(f)),+ }
            }
            /// See [`ProtocolFrame::attaches_token_link`].
            #[inline]
            pub fn attaches_token_link(&self, raw: &[u8]) -> bool {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::attaches_token_link(f, raw)),+ }
            }
            /// See [`ProtocolFrame::tree_into`].
            pub fn tree_into(
                &self,
                raw: &[u8],
                at: &dyn Fn(std::ops::Range<usize>) -> String,
                out: &mut String,
            ) {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::tree_into(f, raw, at, out)),+ }
            }
            /// See [`ProtocolFrame::field_spans`].
            pub fn field_spans(&self) -> Option<crate::codec::spans::FieldSpans> {
                match self { $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ProtocolFrame::field_spans(f)),+ }
            }
        }

        /// A message completed by a frame, of any registered protocol.
        #[derive(Clone, Debug, PartialEq)]
        pub enum AnyMessage {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $variant(<$imp as Protocol>::Message)),+
        }

        impl AnyMessage {
            /// Sections / properties / body as JSON, bodies truncated at `max_body` bytes.
            pub fn to_json(&self, max_body: usize) -> serde_json::Value {
                match self { $($(#[cfg($cfg)])? AnyMessage::$variant(m) => ProtocolMessage::to_json(m, max_body)),+ }
            }
            /// See [`ProtocolMessage::write_json_entries`].
            pub fn write_json_entries<O: crate::json::JsonOut + ?Sized>(
                &self,
                o: &mut O,
                max_body: usize,
            ) {
                match self {
                    $($(#[cfg($cfg)])? AnyMessage::$variant(m) => {
                        ProtocolMessage::write_json_entries(m, o, max_body)
                    })+
                }
            }
            /// See [`ProtocolMessage::line_summary`].
            pub fn line_summary(&self) -> Option<String> {
                match self { $($(#[cfg($cfg)])? AnyMessage::$variant(m) => ProtocolMessage::line_summary(m)),+ }
            }
            /// See [`ProtocolMessage::line_summary_into`].
            pub fn line_summary_into(&self, out: &mut String) {
                match self { $($(#[cfg($cfg)])? AnyMessage::$variant(m) => ProtocolMessage::line_summary_into(m, out)),+ }
            }
        }

        /// One masking state per registered protocol, for one direction (see
        /// [`Protocol::MaskState`]).
        #[derive(Debug, Default)]
        pub struct MaskStates {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $field: <$imp as Protocol>::MaskState),+
        }

        impl MaskStates {
            /// See [`Protocol::mask_frame`].
            #[inline]
            pub fn frame(
                &mut self,
                frame: &AnyFrame,
                ranges: &mut Vec<std::ops::Range<usize>>,
            ) -> Option<std::ops::Range<*const u8>> {
                match frame {
                    $($(#[cfg($cfg)])? AnyFrame::$variant(f) => {
                        <$imp as Protocol>::mask_frame(&mut self.$field, f, ranges)
                    })+
                }
            }

            /// See [`Protocol::frame_masked`].
            #[inline]
            pub fn frame_masked(&mut self, frame: &AnyFrame, was_masked: bool) {
                match frame {
                    $($(#[cfg($cfg)])? AnyFrame::$variant(f) => {
                        <$imp as Protocol>::frame_masked(&mut self.$field, f, was_masked)
                    })+
                }
            }

            /// See [`Protocol::mask_message`].
            #[inline]
            pub fn message(&mut self, m: &mut AnyMessage, searched: &crate::codec::masking::Searched) {
                match m {
                    $($(#[cfg($cfg)])? AnyMessage::$variant(m) => {
                        <$imp as Protocol>::mask_message(&mut self.$field, m, searched)
                    })+
                }
            }
        }

        /// One message assembler per registered protocol, for one direction.
        #[derive(Debug)]
        pub struct Assemblers {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $field: <$imp as Protocol>::Assembler),+
        }

        impl Assemblers {
            /// Assemblers holding at most what `limits` allow.
            pub fn new(limits: Limits) -> Self {
                Assemblers { $($(#[cfg($cfg)])? $field: <$imp as Protocol>::assembler(limits)),+ }
            }

            /// Assemblers for a stream resuming after bytes passed over (see
            /// [`Protocol::assembler_after_gap`]).
            pub fn after_gap(limits: Limits) -> Self {
                Assemblers { $($(#[cfg($cfg)])? $field: <$imp as Protocol>::assembler_after_gap(limits)),+ }
            }

            /// Feed `frame` to its protocol's assembler: the message it completes, if any.
            #[inline]
            pub fn push(&mut self, frame: &AnyFrame) -> Option<Result<AnyMessage, DecodeError>> {
                match frame {
                    $($(#[cfg($cfg)])? AnyFrame::$variant(f) => <$imp as Protocol>::assemble(&mut self.$field, f)
                        .map(|r| r.map(AnyMessage::$variant)),)+
                }
            }
        }
    };
}

pub(crate) use protocols;
