//! Credential masking of one direction's decoded items, before anything is shown or written.
//!
//! What is masked (replaced by `*` of the same length; the relayed bytes are never touched):
//! - the credentials a well-formed frame carries ([`crate::protocol::AnyFrame::secrets_knowing`]:
//!   SASL PLAIN passwords and other SASL responses, 0-9-1 `start-ok` / `secure-ok` /
//!   `update-secret` secrets, a single-transfer `$cbs` put-token's token, looked for unless the
//!   message the transfer completes rules one out);
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

use bytes::Bytes;

pub use crate::codec::masking::MASK_BYTE;
use crate::codec::masking::{Searched, fill};
use crate::codec::{DecodeError, ErrorKind, ProtocolHeader, credential};
use crate::protocol::credential as protocol_credential;
use crate::protocol::{FrameEvent, Item, MaskStates, ProtocolId, StreamDecoder};

/// Masking state of one direction of one connection.
#[derive(Debug, Default)]
pub struct Masker {
    /// The last protocol header (AMQP 1.0's SASL one makes every frame a SASL frame).
    header: Option<ProtocolHeader>,
    /// The framing last seen (from headers and frames).
    proto: Option<ProtocolHeader>,
    /// The protocol of the last frame, when no header came after it (`proto` is its header).
    framed: Option<ProtocolId>,
    /// What each protocol's own masking keeps between frames.
    states: MaskStates,
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
                    self.header = Some(*header);
                    self.proto = Some(*header);
                    self.framed = None;
                }
                Item::Frame(_) => {
                    if let Some(malformed) = self.frame(item, masked) {
                        *item = malformed;
                    }
                }
                Item::Malformed { offset, raw, .. } => {
                    let proto = self.proto.or(decoder.framing());
                    let from = protocol_credential::mask_from(raw, proto, self.header);
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
                        if let Some(from) = protocol_credential::mask_from(head, proto, self.header)
                        {
                            self.lost_from.get_or_insert(at + from as u64);
                        }
                    }
                }
            }
        }
    }

    /// Mask one decoded frame; returns the item to replace it with when the masked bytes no
    /// longer decode. The frame is written to only when something in it is masked, and its
    /// message handed to the protocol's masking in place (the event is not shared yet).
    fn frame(&mut self, item: &mut Item, masked: &mut Vec<Range<u64>>) -> Option<Item> {
        let Item::Frame(fe) = item else {
            return None;
        };
        let (raw, frame) = (&fe.raw, &fe.frame);
        let id = frame.protocol();
        if self.framed != Some(id) {
            self.framed = Some(id);
            self.proto = Some(id.header());
        }
        let message = match &fe.message {
            Some(Ok(m)) => Some(m),
            _ => None,
        };
        let mut ranges = frame.secrets_knowing(message);
        let urls = credential::url_passwords(raw);
        // The bytes just searched for URLs: a message wholly inside them holds none either.
        let searched = (urls.is_empty()).then(|| raw.as_ptr_range());
        if !urls.is_empty() {
            ranges.extend(urls);
        }
        // The bytes the protocol's hook looked for a credential of its own in.
        let token_searched = self.states.frame(frame, &mut ranges);
        let was_masked = !ranges.is_empty();
        if was_masked && let Some(malformed) = mask_frame(fe, &ranges, masked) {
            return Some(malformed);
        }
        self.states.frame_masked(&fe.frame, was_masked);
        if let Some(Ok(_)) = &fe.message {
            let searched = Searched {
                urls: searched,
                token: token_searched.filter(|_| !was_masked),
            };
            let states = &mut self.states;
            let mut mask = |fe: &mut FrameEvent| {
                if let Some(Ok(m)) = &mut fe.message {
                    states.message(m, &searched);
                }
            };
            match Arc::get_mut(fe) {
                Some(fe) => mask(fe),
                None => mask(Arc::make_mut(fe)),
            }
        }
        None
    }

    /// The byte ranges to mask of `bytes`, the incomplete frame the stream holds at `offset`
    /// when it ends or is cut (a close, a gap, a TLS upgrade): from where it could hold a
    /// credential, plus URL passwords in it.
    pub fn partial(&self, offset: u64, bytes: &[u8]) -> Vec<Range<u64>> {
        let abs = |r: Range<usize>| offset + r.start as u64..offset + r.end as u64;
        let from =
            protocol_credential::mask_from(bytes, self.proto, self.header).map(|f| f..bytes.len());
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

/// Mask `ranges` of the frame `fe` and decode it again; returns the item to replace it with
/// when the masked bytes no longer decode.
#[inline(never)]
fn mask_frame(
    fe: &mut Arc<FrameEvent>,
    ranges: &[Range<usize>],
    masked: &mut Vec<Range<u64>>,
) -> Option<Item> {
    let (offset, raw, frame) = (fe.offset, &fe.raw, &fe.frame);
    let bytes = apply(raw, ranges, offset, masked);
    match crate::protocol::stream::redecode(frame, bytes.clone(), offset) {
        Some(f) => {
            // Not shared yet: written in place.
            let fe = Arc::make_mut(fe);
            fe.frame = f;
            fe.raw = bytes;
            None
        }
        None => {
            // Fail closed: the whole payload goes (header kept).
            let keep = frame.protocol().frame_header_len();
            let all = keep.min(raw.len())..raw.len();
            let raw = apply(&bytes, std::slice::from_ref(&all), offset, masked);
            let error = Box::new(DecodeError::new(
                offset,
                ErrorKind::MalformedFrame("a credential field of a type the spec does not allow"),
            ));
            Some(Item::Malformed { offset, raw, error })
        }
    }
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
