//! The context a protocol's state layer publishes with each frame
//! ([`FrameContext`](crate::base::FrameContext)): which flow (an AMQP 1.0 link, an AMQP 0-9-1
//! channel) the frame belongs to, which delivery it starts or continues, and which deliveries
//! it settles, with how long they waited.
//!
//! One [`ContextTracker`] per connection and protocol, fed that connection's frames in order by
//! the pipeline's inspector, once per frame; every consumer reads the result from the event.
//! Pure: time is the frame's timestamp, never a clock. Bounded: at most [`MAX_OPEN`] deliveries
//! wait for their settlement per connection (later ones are [`Awaits::Untimed`]), and every map
//! is keyed by what the peers have open (handles, channels, unsettled deliveries).

use crate::base::{Dir, FrameContext, FrameRef, Timestamp};

pub use crate::base::{Awaits, Delivery, FlowKey, SettleKind, Settlement};

/// Deliveries waiting for their settlement, per connection, at most; a delivery beyond them is
/// [`Awaits::Untimed`].
pub const MAX_OPEN: usize = 1 << 17;

/// Where and when a frame was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// Where it is.
    pub at: FrameRef,
    /// When (µs since the epoch).
    pub ts: i64,
}

impl At {
    /// The frame of `dir` at `offset`, seen at `ts`.
    pub fn new(dir: Dir, offset: u64, ts: Timestamp) -> At {
        At {
            at: FrameRef { dir, offset },
            ts: ts.0,
        }
    }

    /// Which way it went.
    pub fn dir(&self) -> Dir {
        self.at.dir
    }
}

/// One protocol's context for one connection (see the module doc).
pub trait ContextTracker: Default + std::fmt::Debug + Send {
    /// The protocol's frame.
    type Frame;
    /// Take `frame`, seen at `at`, and fill in what is known of it.
    fn frame(&mut self, at: At, frame: &Self::Frame, cx: &mut FrameContext);
    /// Bytes of `dir` were lost or passed over: forget every delivery waiting for its
    /// settlement (the gap may hold it, or frames that renumber what follows) and whatever
    /// numbering the gap could have moved on.
    fn gap(&mut self, dir: Dir);
    /// Deliveries waiting for their settlement now.
    fn open(&self) -> usize;
}
