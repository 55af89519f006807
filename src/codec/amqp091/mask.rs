//! Masking an AMQP 0-9-1 direction: a completed message holds copies of its method and
//! content header frames, so the masked ones are remembered per channel until it completes.

use std::ops::Range;
use std::sync::Arc;

use super::{ContentHeader, Frame, FrameKind, Message, Method};
use crate::codec::masking::{Searched, fill};

/// A channel's masked method and content header frames, as decoded again.
type Masked = (u16, Option<Arc<Method>>, Option<Arc<ContentHeader>>);

/// The most channels whose masked frames are remembered at once.
const MAX_CHANNELS: usize = 2048;

/// What masking keeps of one AMQP 0-9-1 direction between its frames.
#[derive(Debug, Default)]
pub struct MaskState {
    /// Method and content header frames masked, per channel, for the message they start.
    masked: Vec<Masked>,
}

impl MaskState {
    /// Remember the masked (or forget the stale) method / content header of `f`'s channel,
    /// which the message they start holds a copy of.
    #[inline]
    pub fn frame_masked(&mut self, f: &Frame, was_masked: bool) {
        // Nothing masked and nothing remembered: nothing to remember or forget.
        if !was_masked && self.masked.is_empty() {
            return;
        }
        self.remember(f, was_masked);
    }

    /// [`MaskState::frame_masked`] when there is something to remember or forget.
    #[inline(never)]
    fn remember(&mut self, f: &Frame, was_masked: bool) {
        let ch = f.channel;
        let at = self.masked.iter().position(|e| e.0 == ch);
        match (&f.kind, at) {
            (FrameKind::Method(m), _) if was_masked => {
                self.masked.retain(|e| e.0 != ch);
                self.masked.push((ch, Some(m.clone()), None));
            }
            (FrameKind::Method(_), Some(i)) => {
                self.masked.swap_remove(i);
            }
            (FrameKind::Header(h), Some(i)) if was_masked => self.masked[i].2 = Some(h.clone()),
            (FrameKind::Header(h), None) if was_masked => {
                self.masked.push((ch, None, Some(h.clone())))
            }
            _ => {}
        }
        // Bounded: one entry per channel with a masked frame in a message under way.
        if self.masked.len() > MAX_CHANNELS {
            self.masked.remove(0);
        }
    }

    /// Give `m` the masked copies of its method and content header, and mask URL passwords
    /// in its body.
    #[inline]
    pub fn message(&mut self, m: &mut Message, searched: &Searched) {
        if !self.masked.is_empty()
            && let Some(i) = self.masked.iter().position(|e| e.0 == m.channel)
        {
            let (_, method, header) = self.masked.swap_remove(i);
            if let Some(method) = method {
                m.method = method;
            }
            if let Some(header) = header {
                m.header = header;
            }
        }
        let ranges = searched.urls(&m.body);
        if !ranges.is_empty() {
            m.body = fill(&m.body, &ranges);
        }
    }
}

/// `connection` class id.
const CONNECTION_CLASS: u16 = 10;
/// Connection methods that carry a credential: start-ok, secure-ok, update-secret.
const CREDENTIAL_METHODS: [u16; 3] = [11, 21, 70];
/// Bytes of a frame header: type, channel, size.
const FRAME_HEADER: usize = 7;

/// The part of the undecoded unit `frame` (a frame's first bytes) to mask because it may hold
/// a credential: from the method ids of a client's credential method (or of a frame too short
/// or too odd to tell) on, a frame-end kept when `complete`. A server sends no credential.
pub fn undecoded_secret(frame: &[u8], client: bool, complete: bool) -> Option<Range<usize>> {
    if !client {
        return None;
    }
    Some(undecoded_payload(frame)?..frame.len() - usize::from(complete))
}

/// Where a frame that may carry a credential starts to be masked.
fn undecoded_payload(frame: &[u8]) -> Option<usize> {
    if frame.len() <= FRAME_HEADER {
        return None; // type, channel, size: nothing secret
    }
    match frame[0] {
        // Content header, body, heartbeat: never a credential.
        2 | 3 | 8 => None,
        1 => match (frame.get(7..9), frame.get(9..11)) {
            (Some(c), Some(m)) => {
                let class = u16::from_be_bytes([c[0], c[1]]);
                let method = u16::from_be_bytes([m[0], m[1]]);
                (class == CONNECTION_CLASS && CREDENTIAL_METHODS.contains(&method)).then_some(11)
            }
            _ => Some(FRAME_HEADER), // which method is not known yet
        },
        _ => Some(FRAME_HEADER), // no frame type of 0-9-1: whatever it is, fail closed
    }
}
