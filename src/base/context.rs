//! What the state layer knows of one frame, published once with the frame's event
//! (`FrameEvent::context` in the protocol layer): the flow it belongs to (an AMQP 1.0 link with its
//! name and the direction its transfers go, an AMQP 0-9-1 channel), the delivery it starts or
//! continues, which deliveries it settles (with the outcome and how long they waited), and how
//! many deliveries wait on the connection after it.
//!
//! Every consumer (statistics, the filter's `link:` term, the TUI's rows and timeline, the
//! pager, exports) reads this and keeps no tracker of its own, so they cannot disagree. Pure
//! data: it is computed in `crate::state` (each protocol's `context.rs`).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Dir;
use super::escape::Quoted;

/// A flow of one connection: the unit rates are given for, and what the timeline follows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlowKey {
    /// An AMQP 1.0 link, by its name (or, when its attach was not seen, by the sender's channel
    /// and handle), and the direction its transfers go.
    Link {
        /// The name the attach gave it, if seen (shared: a key is cloned per frame).
        name: Option<Arc<str>>,
        /// Sender's channel and handle, when the name is unknown (else 0, 0).
        unnamed: (u16, u32),
        /// The direction its transfers go (the sender's).
        sender: Dir,
    },
    /// A channel (AMQP 0-9-1), by number.
    Channel(u16),
}

/// Hashed as one word of the fixed-size parts, then a link's name: two writes to the hasher
/// instead of the six a derived `Hash` makes (variant, the name's `Option` and its
/// terminator, channel, handle, direction). The diagnoses and trackers look a link up by its
/// key on every transfer and disposition.
impl Hash for FlowKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            FlowKey::Link {
                name,
                unnamed: (channel, handle),
                sender,
            } => {
                let word = u64::from(*channel) << 40
                    | u64::from(*handle) << 8
                    | (sender.index() as u64) << 1
                    | u64::from(name.is_some());
                state.write_u64(word);
                if let Some(n) = name {
                    state.write(n.as_bytes());
                }
            }
            FlowKey::Channel(n) => state.write_u64(1 << 63 | u64::from(*n)),
        }
    }
}

impl FlowKey {
    /// In words: `link "orders" c2s`, `link ch 0 handle 3 s2c`, `channel 1`. The name is a
    /// wire string: it is quoted and escaped here (`super::escape`), like every wire string in
    /// a text output.
    pub fn label(&self) -> String {
        match self {
            FlowKey::Link {
                name: Some(n),
                sender,
                ..
            } => format!("link {} {}", Quoted(n), sender.as_str()),
            FlowKey::Link {
                name: None,
                unnamed: (ch, h),
                sender,
            } => format!("link ch {ch} handle {h} {}", sender.as_str()),
            FlowKey::Channel(n) => format!("channel {n}"),
        }
    }

    /// The link's name, when this is an AMQP 1.0 link whose attach was seen.
    pub fn link_name(&self) -> Option<&str> {
        match self {
            FlowKey::Link { name: Some(n), .. } => Some(n),
            _ => None,
        }
    }
}

/// What settled a delivery, named by what started it and what ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SettleKind {
    /// AMQP 1.0: a transfer, settled by a disposition.
    TransferDisposition,
    /// AMQP 0-9-1: a publish on a channel in confirm mode, confirmed (basic.ack or basic.nack
    /// from the broker).
    PublishConfirm,
    /// AMQP 0-9-1: a delivery (basic.deliver, basic.get-ok), acknowledged by the client
    /// (basic.ack, basic.nack or basic.reject).
    DeliverAck,
}

impl SettleKind {
    /// Every kind, in report order.
    pub const ALL: [SettleKind; 3] = [
        SettleKind::TransferDisposition,
        SettleKind::PublishConfirm,
        SettleKind::DeliverAck,
    ];

    /// `transfer->disposition`, `publish->confirm`, `deliver->ack`.
    pub fn as_str(self) -> &'static str {
        match self {
            SettleKind::TransferDisposition => "transfer->disposition",
            SettleKind::PublishConfirm => "publish->confirm",
            SettleKind::DeliverAck => "deliver->ack",
        }
    }

    /// Why a delivery of this kind awaits no settlement: `pre-settled` (a transfer settled by
    /// its sender), `no confirm` (a publish outside confirm mode), `no-ack` (a delivery to a
    /// no-ack consumer or get).
    pub fn not_awaited(self) -> &'static str {
        match self {
            SettleKind::TransferDisposition => "pre-settled",
            SettleKind::PublishConfirm => "no confirm",
            SettleKind::DeliverAck => "no-ack",
        }
    }

    /// What settled it, in one word (the timeline's column): `disposition`, `confirm`, `ack`.
    pub fn by(self) -> &'static str {
        match self {
            SettleKind::TransferDisposition => "disposition",
            SettleKind::PublishConfirm => "confirm",
            SettleKind::DeliverAck => "ack",
        }
    }
}

/// A frame of one connection, by where it is: its direction and its offset in that
/// direction's stream (the same in every source and every consumer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameRef {
    /// Which way it went.
    pub dir: Dir,
    /// Its offset in that direction's stream.
    pub offset: u64,
}

/// A delivery settled by the frame that carries this context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// The frame that started the delivery (a transfer, a publish, a deliver or get-ok).
    pub start: FrameRef,
    /// How long it waited, in µs (the settling frame's time less the starting frame's).
    pub after_us: i64,
    /// What kind of settlement.
    pub kind: SettleKind,
    /// The delivery's flow (for a disposition: the link the delivery was sent on).
    pub flow: FlowKey,
    /// The outcome as the settling frame states it: `accepted`, `rejected`, `released`,
    /// `modified` (AMQP 1.0 delivery states; `settled` when it states none), `ack`, `nack`,
    /// `reject` (AMQP 0-9-1).
    pub outcome: &'static str,
}

/// How a delivery that a frame starts or continues stands as to its settlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Awaits {
    /// It waits for its settlement (a disposition, a confirm, an ack).
    Settlement,
    /// Its sender settled it already (a pre-settled transfer, a publish outside confirm mode,
    /// a delivery to a no-ack consumer): nothing to wait for. Said once per delivery, on the
    /// frame where it became known.
    NotAwaited,
    /// It cannot be followed to its settlement: the connection has too many deliveries waiting
    /// already, its numbering is unknown after a gap, or its first transfer lacks a
    /// delivery-id.
    Untimed,
}

/// The delivery a frame starts or continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The frame that started it (this frame, when `starts`).
    pub start: FrameRef,
    /// This frame starts it (a message begins here).
    pub starts: bool,
    /// What kind of settlement it would have.
    pub kind: SettleKind,
    /// How it stands, when this frame tells (else `None`: a continuation that changes nothing).
    pub awaits: Option<Awaits>,
}

/// What the state layer knows of one frame (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameContext {
    /// The link or channel the frame belongs to (`None`: a connection- or session-level frame).
    pub flow: Option<FlowKey>,
    /// The delivery it starts or continues.
    pub delivery: Option<Delivery>,
    /// The deliveries it settles.
    pub settles: Vec<Settlement>,
    /// Deliveries waiting for their settlement on the connection after this frame.
    pub waiting: u32,
}

impl FrameContext {
    /// The name of the AMQP 1.0 link the frame belongs to, when its attach was seen.
    pub fn link_name(&self) -> Option<&str> {
        self.flow.as_ref().and_then(FlowKey::link_name)
    }

    /// The frame starts a message (a delivery).
    pub fn starts_message(&self) -> bool {
        self.delivery.is_some_and(|d| d.starts)
    }

    /// The frame starts a delivery that awaits no settlement (or cannot be followed to one),
    /// and settles nothing: of the frames of a flood, those that leave nothing waiting.
    #[inline(always)]
    pub fn starts_unawaited(&self) -> bool {
        self.delivery
            .is_some_and(|d| d.starts && d.awaits != Some(Awaits::Settlement))
            && self.settles.is_empty()
    }
}
