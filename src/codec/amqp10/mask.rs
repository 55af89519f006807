//! Masking an AMQP 1.0 direction: the `$cbs` put-tokens split over several transfers, and the
//! URL passwords and put-token tokens of completed messages.

use std::ops::Range;

use super::{Frame, Message, cbs};
use crate::codec::masking::{Searched, fill};

/// What masking keeps of one AMQP 1.0 direction between its frames.
#[derive(Debug, Default)]
pub struct MaskState {
    split: cbs::SplitPutTokens,
}

impl MaskState {
    /// Append the credential ranges of `f` that only the transfers before it tell (a
    /// put-token split over several); returns the payload a single-transfer put-token was
    /// looked for in (by the frame's own secret ranges).
    pub fn frame(&mut self, f: &Frame, ranges: &mut Vec<Range<usize>>) -> Option<Range<*const u8>> {
        if let Some(r) = self.split.transfer(f) {
            ranges.push(r);
        }
        f.transfer()
            .filter(|t| !t.more && !t.aborted)
            .map(|_| f.payload().as_ptr_range())
    }

    /// Mask URL passwords and a put-token's token in the payload of `m`, decoding its
    /// sections again from the masked payload.
    #[inline]
    pub fn message(&mut self, m: &mut Message, searched: &Searched) {
        // A message of one transfer, whose frame was searched already: nothing to search.
        let token_searched = searched.token == Some(m.payload.as_ptr_range());
        if token_searched && searched.holds(&m.payload) {
            return;
        }
        Self::search(m, searched, token_searched);
    }

    /// [`MaskState::message`] of a message not searched whole yet.
    #[inline(never)]
    fn search(m: &mut Message, searched: &Searched, token_searched: bool) {
        let mut ranges = searched.urls(&m.payload);
        if !token_searched {
            ranges.extend(cbs::put_token_in_payload(&m.payload, 0));
        }
        if ranges.is_empty() {
            return;
        }
        let payload = fill(&m.payload, &ranges);
        let complete = payload.len() as u64 == m.size;
        let shown = m.body_shown();
        if let Ok((sections, _)) = Message::decode_kept(&payload, 0, complete, shown) {
            m.set_sections(sections);
        } else {
            m.set_sections(Vec::new());
        }
        m.payload = payload;
    }
}

/// `transfer` descriptor code (as the small-ulong byte it is on the wire).
const TRANSFER: u8 = super::views::code::TRANSFER as u8;
/// Bytes of a frame header.
const FRAME_HEADER: usize = 8;

/// The part of the undecoded unit `frame` (a frame's first bytes) to mask because it may hold
/// a credential: its body, for a SASL frame (any frame in the SASL layer, `sasl`), a transfer
/// on a connection with a `$cbs` link (`cbs`), or a frame too short or too odd to tell.
pub fn undecoded_secret(frame: &[u8], sasl: bool, cbs: bool) -> Option<Range<usize>> {
    if frame.len() <= FRAME_HEADER {
        return None;
    }
    let body = (usize::from(frame[4]) * 4).clamp(FRAME_HEADER, frame.len());
    let masked = match frame[5] {
        1 => true,
        0 if sasl => true,
        0 if cbs => match frame.get(body..body + 3) {
            // A described list with a small-ulong descriptor: the performative is known.
            Some([0x00, 0x53, code]) => *code == TRANSFER,
            _ => true,
        },
        0 => false,
        _ => true,
    };
    masked.then_some(body..frame.len())
}
