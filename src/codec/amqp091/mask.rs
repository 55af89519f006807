//! Masking an AMQP 0-9-1 direction: a completed message holds copies of its method and
//! content header frames, so the masked ones are remembered per channel until it completes.

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
    pub fn frame_masked(&mut self, f: &Frame, was_masked: bool) {
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
    pub fn message(&mut self, m: &mut Message, searched: &Searched) {
        if let Some(i) = self.masked.iter().position(|e| e.0 == m.channel) {
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
