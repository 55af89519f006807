//! What one protocol tells the statistics about its frames: which flow (an AMQP 1.0 link, an
//! AMQP 0-9-1 channel) a frame belongs to, which frames start a message, and which settle one
//! (a disposition, a confirm, an ack), with how long the settlement took.
//!
//! One [`Traffic`] per connection and protocol, fed that connection's frames in order. Pure:
//! time is the frame's timestamp, never a clock. Bounded: at most [`MAX_OPEN`] deliveries wait
//! for their settlement per connection (later ones are counted, not timed), and every map is
//! keyed by what the peers have open (handles, channels, unsettled deliveries).

use crate::event::Dir;

/// Deliveries waiting for their settlement, per connection, at most; a delivery beyond them is
/// counted as not timed.
pub const MAX_OPEN: usize = 1 << 17;

/// Where and when a frame was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// Its number on the connection (the caller's; a settlement names the frame that started
    /// the delivery by it).
    pub seq: u64,
    /// Which way it went.
    pub dir: Dir,
    /// When (µs since the epoch).
    pub ts: i64,
    /// Its size on the wire, in bytes.
    pub size: u64,
}

/// A flow of one connection: the unit rates are given for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowKey {
    /// An AMQP 1.0 link, by its name (or, when its attach was not seen, by the sender's channel
    /// and handle), and the direction its transfers go.
    Link {
        /// The name the attach gave it, if seen (shared: a key is cloned per frame).
        name: Option<std::sync::Arc<str>>,
        /// Sender's channel and handle, when the name is unknown (else 0, 0).
        unnamed: (u16, u32),
        /// The direction its transfers go (the sender's).
        sender: Dir,
    },
    /// A channel (AMQP 0-9-1), by number.
    Channel(u16),
}

impl FlowKey {
    /// In words: `link "orders" c2s`, `link ch 0 handle 3 s2c`, `channel 1`.
    pub fn label(&self) -> String {
        match self {
            FlowKey::Link {
                name: Some(n),
                sender,
                ..
            } => format!("link \"{n}\" {}", sender.as_str()),
            FlowKey::Link {
                name: None,
                unnamed: (ch, h),
                sender,
            } => format!("link ch {ch} handle {h} {}", sender.as_str()),
            FlowKey::Channel(n) => format!("channel {n}"),
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

/// One thing a frame told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The frame belongs to this flow; `message`: it starts a message (a delivery).
    Flow {
        /// The flow.
        flow: FlowKey,
        /// Whether it starts a message.
        message: bool,
    },
    /// A delivery started by frame `start` was settled by this frame, `after_us` later.
    Settled {
        /// The frame that started the delivery.
        start: u64,
        /// How long it took, in µs.
        after_us: i64,
        /// What kind of settlement.
        kind: SettleKind,
        /// The delivery's flow.
        flow: FlowKey,
    },
    /// The delivery this frame starts (or continues) is settled by its sender already
    /// (pre-settled transfer, auto-ack delivery, publish outside confirm mode): nothing to time.
    PreSettled {
        /// The frame that started the delivery.
        start: u64,
        /// What kind of settlement it would have had.
        kind: SettleKind,
    },
    /// A delivery was started that will not be timed: the connection has [`MAX_OPEN`]
    /// deliveries waiting already.
    Untimed,
}

/// One protocol's traffic accounting for one connection (see the module doc).
pub trait Traffic: Default + std::fmt::Debug + Send {
    /// The protocol's frame.
    type Frame;
    /// Account `frame`, seen at `at`; push what it tells to `notes`.
    fn frame(&mut self, at: At, frame: &Self::Frame, notes: &mut Vec<Note>);
    /// Bytes of `dir` were lost or passed over: forget every delivery waiting for its
    /// settlement (the gap may hold it, or frames that renumber what follows) and whatever
    /// numbering the gap could have moved on.
    fn gap(&mut self, dir: Dir);
    /// Deliveries waiting for their settlement now.
    fn open(&self) -> usize;
}
