//! What a skim (frames passed over undecoded, framing exact) hides of an AMQP 1.0 connection:
//! only the sessions on the channels it passed over, and their links (deliveries, credit,
//! windows). Frames later seen on those channels, from either peer, are judged as after a
//! gap; a begin answering a channel passed over makes its session so too. A skim over
//! channel 0 (open, close, SASL) or over too many channels is a gap of the whole direction.
//!
//! Since a hostile peer may send close on any channel, the connection-level verdicts at the
//! end of the TCP connection (closed without close, idle at the end) are not made for a peer
//! whose frames were skimmed.

use std::collections::BTreeSet;

use crate::base::{Dir, Timestamp};
use crate::codec::amqp10::Performative;
use crate::protocol::SkimChannels;
use crate::state::ProtocolTracker;

use super::ConnectionTracker;

/// The channels whose frames, per sending peer ([`Dir::index`]), are judged as after a gap.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blind {
    channels: [BTreeSet<u16>; 2],
    /// Frames of this peer were skimmed: one may have been a close.
    pub(crate) skimmed: [bool; 2],
}

impl Blind {
    /// Whether a frame from `d` on `ch` carrying `perf` is to be judged as after a gap; a
    /// begin answering a channel passed over makes its own channel one too.
    #[inline]
    pub(crate) fn frame(&mut self, d: Dir, ch: u16, perf: &Performative) -> bool {
        // No skim passed over a channel (the rule): nothing to look up.
        if self.channels.iter().all(BTreeSet::is_empty) {
            return false;
        }
        if self.channels[d.index()].contains(&ch) {
            return true;
        }
        if let Performative::Begin(b) = perf
            && let Some(rc) = b.remote_channel
            && self.channels[d.flip().index()].contains(&rc)
        {
            self.channels[d.index()].insert(ch);
            return true;
        }
        false
    }
}

impl ConnectionTracker {
    /// Frames from `d` on `channels` were passed over at `ts` (see
    /// [`ProtocolTracker::skimmed`]).
    pub(crate) fn skim(&mut self, d: Dir, ts: Timestamp, channels: &SkimChannels) {
        let offset = self.peers[d.index()].last_frame.map_or(0, |(_, o)| o);
        if channels.is_many() || channels.contains(0) {
            self.gap(d);
        } else if !channels.is_empty() {
            self.forget_channels(d, channels);
        }
        // The peer sent frames just now: its silence is measured from the skim.
        self.peers[d.index()].last_frame = Some((ts, offset));
    }

    /// Forget the sessions on `channels` of `d` (none of them 0) and their links.
    fn forget_channels(&mut self, d: Dir, channels: &SkimChannels) {
        self.blind.skimmed[d.index()] = true;
        self.unclosed_forget(d);
        // An attach or detach by name may have been passed over, on any session.
        self.names.forget();
        for &ch in channels.listed() {
            self.blind.channels[d.index()].insert(ch);
            let Some(sid) = self.channels[d.index()].get(&ch).copied() else {
                continue;
            };
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.forget();
                if let Some(theirs) = s.channel[d.flip().index()] {
                    self.blind.channels[d.flip().index()].insert(theirs);
                }
            }
        }
    }
}
