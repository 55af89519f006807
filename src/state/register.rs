//! The state layer's half of the protocol table (`crate::protocol::registered_protocols`):
//! each registered protocol's connection tracker and frame-context tracker, named by the
//! [`Tracked`] implementation in its own folder (`src/state/<protocol>/`).

use super::ProtocolTracker;
use super::context::ContextTracker;
use super::diagnose::Diagnosing;
use super::snapshot::ProtocolSnapshot;
use crate::protocol::{AnyFrame, Protocol, ProtocolId};

/// What the state layer keeps of one protocol: implemented beside its tracker, for the unit
/// type that implements [`Protocol`].
pub trait Tracked: Protocol {
    /// What it tells of each frame of one connection ([`crate::base::FrameContext`]): which
    /// flow (link, channel) a frame belongs to, and which frames start and settle which
    /// deliveries.
    type Context: ContextTracker<Frame = Self::Frame> + Default + std::fmt::Debug;
    /// What its tracker's [`ProtocolTracker::snapshot`] holds.
    type Snapshot: super::snapshot::ProtocolSnapshot
        + Clone
        + std::fmt::Debug
        + PartialEq
        + serde::Serialize;
    /// Its rules, in the order docs/rules.md lists them.
    const RULES: &'static [&'static crate::base::Rule];

    /// A new connection tracker of its rules.
    fn tracker() -> Box<dyn ProtocolTracker>;

    /// A new diagnoser of one connection (`None`: it has no diagnoses).
    fn diagnoser() -> Option<Box<dyn Diagnosing>> {
        None
    }
}

/// Generates, from the protocol table: [`tracker`], [`diagnoser`], [`protocol_rules`], `documented_rules`
/// [`Detail`] and [`Contexts`].
macro_rules! trackers {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($field:ident) => $imp:ty),+ $(,)?) => {
        /// A new connection tracker of `id`'s rules.
        pub fn tracker(id: ProtocolId) -> Box<dyn ProtocolTracker> {
            match id { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Tracked>::tracker()),+ }
        }

        /// A new diagnoser of one connection of `id` (see [`Tracked::diagnoser`]).
        pub fn diagnoser(id: ProtocolId) -> Option<Box<dyn Diagnosing>> {
            match id { $($(#[cfg($cfg)])? ProtocolId::$variant => <$imp as Tracked>::diagnoser()),+ }
        }

        /// Every registered protocol's rules, in registration order.
        pub fn protocol_rules() -> impl Iterator<Item = &'static crate::base::Rule> {
            let lists: &[&[&'static crate::base::Rule]] =
                &[$($(#[cfg($cfg)])? <$imp as Tracked>::RULES),+];
            lists.iter().flat_map(|l| l.iter().copied())
        }

        /// The rules of the protocols the product ships (a table line without a `cfg`),
        /// which docs/rules.md lists.
        #[cfg(test)]
        pub fn documented_rules() -> impl Iterator<Item = &'static crate::base::Rule> {
            let lists: &[&[&'static crate::base::Rule]] =
                &[$($(#[cfg(all(not(test), $cfg))])? <$imp as Tracked>::RULES),+];
            lists.iter().flat_map(|l| l.iter().copied())
        }

        /// The protocol part of a [`Snapshot`](super::Snapshot).
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
        #[serde(untagged)]
        pub enum Detail {
            /// No protocol recognised yet.
            #[default]
            None,
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $variant(Box<<$imp as Tracked>::Snapshot>)),+
        }

        impl Detail {
            /// See [`ProtocolSnapshot::approx_bytes`] (64 for no protocol yet).
            pub fn approx_bytes(&self) -> usize {
                match self {
                    Detail::None => 64,
                    $($(#[cfg($cfg)])? Detail::$variant(s) => s.approx_bytes()),+
                }
            }
            /// See [`ProtocolSnapshot::open_scopes`].
            pub fn open_scopes(&self) -> [i64; 4] {
                match self {
                    Detail::None => [0; 4],
                    $($(#[cfg($cfg)])? Detail::$variant(s) => s.open_scopes()),+
                }
            }
            /// See [`ProtocolSnapshot::names`].
            pub fn names(&self) -> Vec<String> {
                match self {
                    Detail::None => Vec::new(),
                    $($(#[cfg($cfg)])? Detail::$variant(s) => s.names()),+
                }
            }
        }

        /// Each registered protocol's frame context tracker, for one connection.
        #[derive(Debug, Default)]
        pub struct Contexts {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $field: <$imp as Tracked>::Context),+
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
                    $($(#[cfg($cfg)])? AnyFrame::$variant(f) => ContextTracker::frame(&mut self.$field, at, f, cx)),+
                }
                cx.waiting = u32::try_from(self.open()).unwrap_or(u32::MAX);
            }

            /// Bytes of `dir` were lost or passed over (see [`ContextTracker::gap`]).
            pub fn gap(&mut self, dir: crate::base::Dir) {
                $($(#[cfg($cfg)])? ContextTracker::gap(&mut self.$field, dir);)+
            }

            /// Deliveries waiting for their settlement now.
            pub fn open(&self) -> usize {
                let mut n = 0;
                $($(#[cfg($cfg)])? { n += ContextTracker::open(&self.$field); })+
                n
            }
        }
    };
}

crate::protocol::registered_protocols!(trackers);
