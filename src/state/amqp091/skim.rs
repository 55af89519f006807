//! What a skim (frames passed over undecoded, framing exact) hides of an AMQP 0-9-1
//! connection: only the channels it passed over. Their unacked deliveries, unconfirmed
//! publishes, consumers, prefetch and content state become unknown, and a frame on one of them
//! that the tracker never saw opened is learned, not reported (its channel.open may have been
//! passed over). Channel 0 passed over makes the connection's own state unknown (a
//! connection.close, and from the server connection.blocked/unblocked, may have been among
//! them); the other channels stay known. Heartbeats carry no state: passing over them hides
//! nothing but the time they came, which the skim's time stands for.

use crate::base::{Dir, Timestamp};
use crate::protocol::SkimChannels;
use crate::state::ProtocolTracker;

use super::ConnectionTracker;
use super::connection::ConnState;

impl ConnectionTracker {
    /// Frames from `dir` on `channels` were passed over at `ts` (see
    /// [`ProtocolTracker::skimmed`]).
    pub(crate) fn skim(&mut self, dir: Dir, ts: Timestamp, channels: &SkimChannels) {
        if channels.is_many() {
            self.gap(dir);
        }
        for &ch in channels.listed() {
            if ch == 0 {
                self.connection_unknown(dir);
                continue;
            }
            self.skimmed_channels.insert(ch);
            if let Some(c) = self.channels.get_mut(&ch) {
                c.forget();
            }
        }
        // The peer sent frames just now: heartbeats are measured from the skim.
        self.live[dir.index()].last = Some(ts);
    }

    /// Connection methods of `dir` may have been passed over: the connection's state is no
    /// longer known; its channels' are.
    pub(super) fn connection_unknown(&mut self, dir: Dir) {
        self.uncertain = true;
        if dir == Dir::S2C {
            self.blocked_unknown = true;
        }
        if matches!(
            self.conn.state,
            ConnState::AwaitingStart
                | ConnState::AwaitingStartOk
                | ConnState::AwaitingTune
                | ConnState::AwaitingSecureOk
                | ConnState::AwaitingTuneOk
                | ConnState::AwaitingOpen
                | ConnState::AwaitingOpenOk
                // Open too: a connection.close may be among the missed bytes, and its close-ok
                // must not then look out of order.
                | ConnState::Open
        ) {
            self.conn.state = ConnState::Unknown;
        }
        self.conn_changed();
    }
}
