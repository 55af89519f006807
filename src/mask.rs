//! Credential masking of one direction's decoded items, before anything is shown or written.
//!
//! What is masked (replaced by `*` of the same length; the relayed bytes are never touched):
//! - the credentials a well-formed frame carries ([`AnyFrame::secret_ranges`]: SASL PLAIN
//!   passwords and other SASL responses, 0-9-1 `start-ok` / `secure-ok` / `update-secret`
//!   secrets, a single-transfer `$cbs` put-token's token);
//! - the password of every `amqp://user:password@` or `amqps://` URL in a frame's bytes, and in
//!   every completed message (client properties, addresses, bodies);
//! - failing closed, the whole payload of a frame that could carry a credential but did not
//!   decode ([`protocol_credential::mask_from`]), of every transfer of a put-token split over several,
//!   of the incomplete frame a stream ends in, and everything after the point where framing
//!   was lost at such a frame.
//!
//! The masked frame is decoded again, so its fields, summary and message show the mask. A
//! frame whose masked bytes no longer decode (a credential of a type the spec does not allow)
//! becomes a malformed frame, masked whole. Every masked byte range is reported by absolute
//! offset so the relayed-bytes view (`Data` events, the pcapng) masks the same bytes.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::codec::amqp10::cbs;
use crate::codec::{DecodeError, ErrorKind, ProtocolHeader, amqp10, amqp091, credential};
use crate::protocol::credential as protocol_credential;
use crate::protocol::{AnyFrame, AnyMessage, Item, StreamDecoder};

/// The byte used to mask credentials, at the same length as the secret.
pub const MASK_BYTE: u8 = b'*';

/// A 0-9-1 channel's masked method and content header frames, as decoded again.
type Masked091 = (
    u16,
    Option<Arc<amqp091::Method>>,
    Option<Arc<amqp091::ContentHeader>>,
);

/// Masking state of one direction of one connection.
#[derive(Debug, Default)]
pub struct Masker {
    /// Between an `AMQP 3 1 0 0` header and the next one.
    sasl: bool,
    /// The framing last seen (from headers and frames).
    proto: Option<ProtocolHeader>,
    split: cbs::SplitPutTokens,
    /// 0-9-1 method and content header frames masked, per channel, for the message they start.
    masked_091: Vec<Masked091>,
    /// Everything from this offset on is masked (framing was lost at a credential frame).
    lost_from: Option<u64>,
}

impl Masker {
    /// A masker for a direction that starts in `proto`'s framing (`None`: a header first).
    pub fn new(proto: Option<ProtocolHeader>) -> Self {
        Masker {
            proto,
            ..Masker::default()
        }
    }

    /// Mask `items` (the decoder's output for one chunk, in stream order) in place, and append
    /// the absolute byte range of every masked run to `masked`.
    pub fn items(
        &mut self,
        decoder: &StreamDecoder,
        items: &mut [Item],
        masked: &mut Vec<Range<u64>>,
    ) {
        for item in items.iter_mut() {
            match item {
                Item::Header { header, .. } => {
                    self.sasl = *header == ProtocolHeader::Amqp10Sasl;
                    self.proto = Some(*header);
                }
                Item::Frame { .. } => {
                    if let Some(malformed) = self.frame(item, masked) {
                        *item = malformed;
                    }
                }
                Item::Malformed { offset, raw, .. } => {
                    let proto = self.proto.or(decoder.framing());
                    let from = protocol_credential::mask_from(raw, proto, self.sasl);
                    let ranges: Vec<Range<usize>> = from
                        .map(|f| f..raw.len())
                        .into_iter()
                        .chain(credential::url_passwords(raw))
                        .collect();
                    *raw = apply(raw, &ranges, *offset, masked);
                }
                Item::Undecodable { .. } => {
                    if let Some((at, head)) = decoder.lost_framing() {
                        let proto = self.proto.or(decoder.framing());
                        if let Some(from) = protocol_credential::mask_from(head, proto, self.sasl) {
                            self.lost_from.get_or_insert(at + from as u64);
                        }
                    }
                }
            }
        }
    }

    /// Mask one decoded frame; returns the item to replace it with when the masked bytes no
    /// longer decode.
    fn frame(&mut self, item: &mut Item, masked: &mut Vec<Range<u64>>) -> Option<Item> {
        let Item::Frame {
            offset,
            raw,
            frame,
            message,
        } = item
        else {
            return None;
        };
        let mut ranges = frame.secret_ranges();
        let urls = credential::url_passwords(raw);
        // The bytes just searched for URLs: a message wholly inside them holds none either.
        let searched = (urls.is_empty()).then(|| raw.as_ptr_range());
        ranges.extend(urls);
        self.proto = Some(frame.protocol().header());
        // The payload a single-transfer put-token was looked for in (by `secret_ranges`).
        let mut token_searched = None;
        if let AnyFrame::Amqp10(f) = &*frame {
            ranges.extend(self.split.transfer(f));
            token_searched = f
                .transfer()
                .filter(|t| !t.more && !t.aborted)
                .map(|_| f.payload().as_ptr_range());
        }
        if !ranges.is_empty() {
            let bytes = apply(raw, &ranges, *offset, masked);
            match crate::protocol::stream::redecode(frame, bytes.clone(), *offset) {
                Some(f) => *frame = f,
                None => {
                    // Fail closed: the whole payload goes (header kept).
                    let keep = frame.protocol().frame_header_len();
                    let all = keep.min(raw.len())..raw.len();
                    let raw = apply(&bytes, std::slice::from_ref(&all), *offset, masked);
                    let error = DecodeError::new(
                        *offset,
                        ErrorKind::MalformedFrame(
                            "a credential field of a type the spec does not allow",
                        ),
                    );
                    return Some(Item::Malformed {
                        offset: *offset,
                        raw,
                        error,
                    });
                }
            }
            *raw = bytes;
        }
        self.note_091(frame, !ranges.is_empty());
        if let Some(Ok(m)) = message {
            let searched = Searched {
                urls: searched,
                token: token_searched.filter(|_| ranges.is_empty()),
            };
            self.message(m, searched);
        }
        None
    }

    /// Remember the masked (or forget the stale) method / content header of a 0-9-1 channel,
    /// which the message they start holds a copy of.
    fn note_091(&mut self, frame: &AnyFrame, was_masked: bool) {
        let AnyFrame::Amqp091(f) = frame else {
            return;
        };
        let ch = f.channel();
        let at = self.masked_091.iter().position(|e| e.0 == ch);
        match (&f.kind, at) {
            (amqp091::FrameKind::Method(m), _) if was_masked => {
                self.masked_091.retain(|e| e.0 != ch);
                self.masked_091.push((ch, Some(m.clone()), None));
            }
            (amqp091::FrameKind::Method(_), Some(i)) => {
                self.masked_091.swap_remove(i);
            }
            (amqp091::FrameKind::Header(h), Some(i)) if was_masked => {
                self.masked_091[i].2 = Some(h.clone())
            }
            (amqp091::FrameKind::Header(h), None) if was_masked => {
                self.masked_091.push((ch, None, Some(h.clone())))
            }
            _ => {}
        }
        // Bounded: one entry per channel with a masked frame in a message under way.
        if self.masked_091.len() > 2048 {
            self.masked_091.remove(0);
        }
    }

    /// Mask a completed message: URL passwords and a put-token's token in its sections or body,
    /// and the masked copies of its 0-9-1 method and content header. What the frame completing
    /// it was already searched for is not searched again (see [`Searched`]).
    fn message(&mut self, m: &mut AnyMessage, searched: Searched) {
        let urls = |b: &Bytes| match &searched.urls {
            Some(s) if s.start <= b.as_ptr() && b.as_ptr_range().end <= s.end => Vec::new(),
            _ => credential::url_passwords(b),
        };
        match m {
            AnyMessage::Amqp10(m) => {
                let mut ranges = urls(&m.payload);
                if searched.token != Some(m.payload.as_ptr_range()) {
                    ranges.extend(cbs::put_token_in_payload(&m.payload, 0));
                }
                if ranges.is_empty() {
                    return;
                }
                let payload = fill(&m.payload, &ranges);
                let complete = payload.len() as u64 == m.size;
                let shown = m.body_shown();
                if let Ok((sections, _)) =
                    amqp10::Message::decode_kept(&payload, 0, complete, shown)
                {
                    m.set_sections(sections);
                } else {
                    m.set_sections(Vec::new());
                }
                m.payload = payload;
            }
            AnyMessage::Amqp091(m) => {
                if let Some(i) = self.masked_091.iter().position(|e| e.0 == m.channel) {
                    let (_, method, header) = self.masked_091.swap_remove(i);
                    if let Some(method) = method {
                        m.method = method;
                    }
                    if let Some(header) = header {
                        m.header = header;
                    }
                }
                let ranges = urls(&m.body);
                if !ranges.is_empty() {
                    m.body = fill(&m.body, &ranges);
                }
            }
            // A protocol whose messages have no masking of their own.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }

    /// The byte ranges to mask of `bytes`, the incomplete frame the stream holds at `offset`
    /// when it ends or is cut (a close, a gap, a TLS upgrade): from where it could hold a
    /// credential, plus URL passwords in it.
    pub fn partial(&self, offset: u64, bytes: &[u8]) -> Vec<Range<u64>> {
        let abs = |r: Range<usize>| offset + r.start as u64..offset + r.end as u64;
        let from =
            protocol_credential::mask_from(bytes, self.proto, self.sasl).map(|f| f..bytes.len());
        from.into_iter()
            .chain(credential::url_passwords(bytes))
            .map(abs)
            .chain(self.lost_from.map(|l| l..u64::MAX))
            .collect()
    }

    /// Everything from this offset on is masked: framing was lost at a frame that could
    /// carry a credential.
    pub fn lost_from(&self) -> Option<u64> {
        self.lost_from
    }
}

/// Memory the frame completing a message was found free of credentials in, so that the message,
/// sliced out of it when it is a message of one frame, is not searched again.
struct Searched {
    /// Bytes with no URL password (the frame's): a payload or body wholly inside them holds
    /// none either, since every password found in a part of some bytes is found in those bytes.
    urls: Option<Range<*const u8>>,
    /// The payload of a single-transfer AMQP 1.0 frame in which no put-token's token was found:
    /// a message payload of exactly those bytes holds none either (the search depends on the
    /// bytes alone).
    token: Option<Range<*const u8>>,
}

/// `raw` (at absolute `offset`) with `ranges` masked; the masked runs are appended to
/// `masked` by absolute offset.
fn apply(raw: &Bytes, ranges: &[Range<usize>], offset: u64, masked: &mut Vec<Range<u64>>) -> Bytes {
    for r in ranges {
        let end = r.end.min(raw.len());
        let start = r.start.min(end);
        if start < end {
            masked.push(offset + start as u64..offset + end as u64);
        }
    }
    fill(raw, ranges)
}

/// `bytes` with `ranges` (clamped to it) filled with [`MASK_BYTE`].
fn fill(bytes: &Bytes, ranges: &[Range<usize>]) -> Bytes {
    let mut out = BytesMut::from(&bytes[..]);
    for r in ranges {
        let end = r.end.min(out.len());
        let start = r.start.min(end);
        out[start..end].fill(MASK_BYTE);
    }
    out.freeze()
}
