//! Which channels the frames a skim passed over were on, so the state trackers forget only
//! what those frames could have changed: up to [`MAX_LISTED`] distinct channel numbers, else
//! "many". Frames that carry no tracked state (heartbeats, empty frames) are not counted.

/// Most distinct channels listed; a skim over more is "many" (the whole connection unknown).
pub const MAX_LISTED: usize = 64;

/// What one frame's header says about the state it may carry (see
/// [`super::Protocol::frame_channel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameChannel {
    /// A frame that changes no tracked state (a heartbeat, an empty frame).
    Stateless,
    /// A frame on this channel (0 for connection-level frames, SASL's included).
    On(u16),
    /// The header is too short to tell.
    Unknown,
}

/// The channels of the frames one skim (or a run of them) passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkimChannels {
    /// Distinct channel numbers, ascending; at most [`MAX_LISTED`].
    listed: Vec<u16>,
    /// More than [`MAX_LISTED`] channels, or a frame whose channel could not be told.
    many: bool,
}

impl SkimChannels {
    /// No channel yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every channel (the frames' channels are not known).
    pub fn many() -> Self {
        SkimChannels {
            listed: Vec::new(),
            many: true,
        }
    }

    /// Count a frame whose header says `what`.
    #[inline]
    pub fn note(&mut self, what: FrameChannel) {
        match what {
            FrameChannel::Stateless => {}
            FrameChannel::On(ch) => self.add(ch),
            FrameChannel::Unknown => self.set_many(),
        }
    }

    /// Count a frame on channel `ch`.
    #[inline]
    pub fn add(&mut self, ch: u16) {
        // Runs of frames on one channel are the common case: no search for them.
        if self.many || self.listed.last() == Some(&ch) {
            return;
        }
        if let Err(at) = self.listed.binary_search(&ch) {
            if self.listed.len() >= MAX_LISTED {
                self.set_many();
            } else {
                self.listed.insert(at, ch);
            }
        }
    }

    /// Add every channel of `other`.
    pub fn merge(&mut self, other: &SkimChannels) {
        if other.many {
            self.set_many();
        }
        for &ch in &other.listed {
            self.add(ch);
        }
    }

    fn set_many(&mut self) {
        self.many = true;
        self.listed = Vec::new();
    }

    /// True when the channels are too many to list (or not known): treat every one as hit.
    pub fn is_many(&self) -> bool {
        self.many
    }

    /// True when no frame that carries state was passed over.
    pub fn is_empty(&self) -> bool {
        !self.many && self.listed.is_empty()
    }

    /// The channels hit, ascending (empty when [`SkimChannels::is_many`]).
    pub fn listed(&self) -> &[u16] {
        &self.listed
    }

    /// Whether a frame on `ch` may have been passed over.
    pub fn contains(&self, ch: u16) -> bool {
        self.many || self.listed.binary_search(&ch).is_ok()
    }

    /// `on channels 1, 2`, `on channel 0`, `on many channels`, or empty when none was hit.
    pub fn describe(&self) -> String {
        match self.listed.as_slice() {
            _ if self.many => "on many channels".into(),
            [] => String::new(),
            [one] => format!("on channel {one}"),
            all => {
                let list: Vec<String> = all.iter().map(u16::to_string).collect();
                format!("on channels {}", list.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_listed_once_in_order_until_too_many() {
        let mut c = SkimChannels::new();
        c.note(FrameChannel::Stateless);
        assert!(c.is_empty());
        for ch in [5, 1, 5, 2] {
            c.add(ch);
        }
        assert_eq!(c.listed(), &[1, 2, 5]);
        assert_eq!(c.describe(), "on channels 1, 2, 5");
        assert!(c.contains(2) && !c.contains(3));
        for ch in 100..100 + MAX_LISTED as u16 {
            c.add(ch);
        }
        assert!(c.is_many() && c.contains(3) && c.listed().is_empty());
        assert_eq!(c.describe(), "on many channels");
        let mut d = SkimChannels::new();
        d.note(FrameChannel::Unknown);
        assert!(d.is_many());
        let mut e = SkimChannels::new();
        e.add(7);
        e.merge(&d);
        assert!(e.is_many());
    }
}
