//! The state layer's half of the protocol table (`crate::protocol::registered_protocols`):
//! each registered protocol's connection tracker and frame-context tracker, named by the
//! [`Tracked`] implementation in its own folder (`src/state/<protocol>/`).

use super::ProtocolTracker;
use super::context::ContextTracker;
use crate::protocol::{AnyFrame, Protocol, ProtocolId};

/// What the state layer keeps of one protocol: implemented beside its tracker, for the unit
/// type that implements [`Protocol`].
pub trait Tracked: Protocol {
    /// What it tells of each frame of one connection ([`crate::base::FrameContext`]): which
    /// flow (link, channel) a frame belongs to, and which frames start and settle which
    /// deliveries.
    type Context: ContextTracker<Frame = Self::Frame> + Default + std::fmt::Debug;

    /// A new connection tracker of its rules.
    fn tracker() -> Box<dyn ProtocolTracker>;
}

/// Generates, from the protocol table: [`tracker`] and [`Contexts`].
macro_rules! trackers {
    ($($(#[$doc:meta])* $variant:ident($field:ident) => $imp:ty),+ $(,)?) => {
        /// A new connection tracker of `id`'s rules.
        pub fn tracker(id: ProtocolId) -> Box<dyn ProtocolTracker> {
            match id { $(ProtocolId::$variant => <$imp as Tracked>::tracker()),+ }
        }

        /// Each registered protocol's frame context tracker, for one connection.
        #[derive(Debug, Default)]
        pub struct Contexts {
            $($(#[$doc])* $field: <$imp as Tracked>::Context),+
        }

        impl Contexts {
            /// Take `frame`, seen at `at`, with its protocol; fill in what is known of it.
            #[inline]
            pub fn frame(
                &mut self,
                at: super::context::At,
                frame: &AnyFrame,
                cx: &mut crate::base::FrameContext,
            ) {
                match frame {
                    $(AnyFrame::$variant(f) => ContextTracker::frame(&mut self.$field, at, f, cx)),+
                }
                cx.waiting = u32::try_from(self.open()).unwrap_or(u32::MAX);
            }

            /// Bytes of `dir` were lost or passed over (see [`ContextTracker::gap`]).
            pub fn gap(&mut self, dir: crate::base::Dir) {
                $(ContextTracker::gap(&mut self.$field, dir);)+
            }

            /// Deliveries waiting for their settlement now.
            pub fn open(&self) -> usize {
                0 $(+ ContextTracker::open(&self.$field))+
            }
        }
    };
}

crate::protocol::registered_protocols!(trackers);
