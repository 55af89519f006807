//! Typed views of the nine performatives, for the state trackers: spec-named fields, `Option`
//! where the field may be absent, the spec's defaults applied where it gives one, multiple
//! fields normalised to `Vec`.
//!
//! Built from a composite already checked against its table, so construction cannot fail.

use bytes::Bytes;

use super::amqp_error::AmqpError;
use super::composite::Composite;
use super::delivery_state::DeliveryState;
use super::fields::{FieldList, Map};
use super::terminus::{AnyTarget, Source};
use super::value::{Str, Symbol};

/// `role`: false = sender, true = receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// false.
    Sender,
    /// true.
    Receiver,
}

impl From<bool> for Role {
    fn from(b: bool) -> Self {
        if b { Role::Receiver } else { Role::Sender }
    }
}

/// `sender-settle-mode` (ubyte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderSettleMode {
    /// 0.
    Unsettled,
    /// 1.
    Settled,
    /// 2 (the default).
    Mixed,
    /// A value the spec does not define.
    Other(u8),
}

impl From<u8> for SenderSettleMode {
    fn from(v: u8) -> Self {
        match v {
            0 => SenderSettleMode::Unsettled,
            1 => SenderSettleMode::Settled,
            2 => SenderSettleMode::Mixed,
            x => SenderSettleMode::Other(x),
        }
    }
}

/// `receiver-settle-mode` (ubyte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverSettleMode {
    /// 0 (the default).
    First,
    /// 1.
    Second,
    /// A value the spec does not define.
    Other(u8),
}

impl From<u8> for ReceiverSettleMode {
    fn from(v: u8) -> Self {
        match v {
            0 => ReceiverSettleMode::First,
            1 => ReceiverSettleMode::Second,
            x => ReceiverSettleMode::Other(x),
        }
    }
}

/// `open` (0x10).
#[derive(Clone, Debug, PartialEq)]
pub struct Open {
    /// Mandatory.
    pub container_id: Str,
    /// Virtual host name.
    pub hostname: Option<Str>,
    /// Default 4294967295.
    pub max_frame_size: u32,
    /// Default 65535.
    pub channel_max: u16,
    /// Milliseconds.
    pub idle_time_out: Option<u32>,
    /// Normalised.
    pub outgoing_locales: Vec<Symbol>,
    /// Normalised.
    pub incoming_locales: Vec<Symbol>,
    /// Normalised.
    pub offered_capabilities: Vec<Symbol>,
    /// Normalised.
    pub desired_capabilities: Vec<Symbol>,
    /// Connection properties.
    pub properties: Option<Map>,
}

/// `begin` (0x11).
#[derive(Clone, Debug, PartialEq)]
pub struct Begin {
    /// Set when answering a begin.
    pub remote_channel: Option<u16>,
    /// Mandatory.
    pub next_outgoing_id: u32,
    /// Mandatory.
    pub incoming_window: u32,
    /// Mandatory.
    pub outgoing_window: u32,
    /// Default 4294967295.
    pub handle_max: u32,
    /// Normalised.
    pub offered_capabilities: Vec<Symbol>,
    /// Normalised.
    pub desired_capabilities: Vec<Symbol>,
    /// Session properties.
    pub properties: Option<Map>,
}

/// `attach` (0x12).
#[derive(Clone, Debug, PartialEq)]
pub struct Attach {
    /// Link name (mandatory).
    pub name: Str,
    /// Mandatory.
    pub handle: u32,
    /// Mandatory.
    pub role: Role,
    /// Default mixed.
    pub snd_settle_mode: SenderSettleMode,
    /// Default first.
    pub rcv_settle_mode: ReceiverSettleMode,
    /// The source terminus, when it is a `source`.
    pub source: Option<Source>,
    /// The target terminus.
    pub target: Option<AnyTarget>,
    /// Unsettled delivery-tag -> state map.
    pub unsettled: Option<Map>,
    /// Default false.
    pub incomplete_unsettled: bool,
    /// Sender's initial delivery-count.
    pub initial_delivery_count: Option<u32>,
    /// Largest message accepted.
    pub max_message_size: Option<u64>,
    /// Normalised.
    pub offered_capabilities: Vec<Symbol>,
    /// Normalised.
    pub desired_capabilities: Vec<Symbol>,
    /// Link properties.
    pub properties: Option<Map>,
}

/// `flow` (0x13).
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    /// Absent before the peer's begin is seen.
    pub next_incoming_id: Option<u32>,
    /// Mandatory.
    pub incoming_window: u32,
    /// Mandatory.
    pub next_outgoing_id: u32,
    /// Mandatory.
    pub outgoing_window: u32,
    /// Present for link flow.
    pub handle: Option<u32>,
    /// Link delivery-count.
    pub delivery_count: Option<u32>,
    /// Link credit.
    pub link_credit: Option<u32>,
    /// Messages available at the sender.
    pub available: Option<u32>,
    /// Default false.
    pub drain: bool,
    /// Default false.
    pub echo: bool,
    /// Link state properties.
    pub properties: Option<Map>,
}

/// `transfer` (0x14). The payload is on the frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    /// Mandatory.
    pub handle: u32,
    /// Required on a delivery's first transfer.
    pub delivery_id: Option<u32>,
    /// Required on a delivery's first transfer.
    pub delivery_tag: Option<Bytes>,
    /// Required on a delivery's first transfer.
    pub message_format: Option<u32>,
    /// Absent means false on the first transfer.
    pub settled: Option<bool>,
    /// Default false.
    pub more: bool,
    /// Overrides the link's mode for this delivery.
    pub rcv_settle_mode: Option<ReceiverSettleMode>,
    /// Delivery state.
    pub state: Option<DeliveryState>,
    /// Default false.
    pub resume: bool,
    /// Default false.
    pub aborted: bool,
    /// Default false.
    pub batchable: bool,
}

/// `disposition` (0x15).
#[derive(Clone, Debug, PartialEq)]
pub struct Disposition {
    /// Mandatory.
    pub role: Role,
    /// Mandatory.
    pub first: u32,
    /// Absent means `first`.
    pub last: Option<u32>,
    /// Default false.
    pub settled: bool,
    /// The delivery state.
    pub state: Option<DeliveryState>,
    /// Default false.
    pub batchable: bool,
}

/// `detach` (0x16).
#[derive(Clone, Debug, PartialEq)]
pub struct Detach {
    /// Mandatory.
    pub handle: u32,
    /// Default false.
    pub closed: bool,
    /// Why.
    pub error: Option<AmqpError>,
}

/// `end` (0x17).
#[derive(Clone, Debug, PartialEq)]
pub struct End {
    /// Why.
    pub error: Option<AmqpError>,
}

/// `close` (0x18).
#[derive(Clone, Debug, PartialEq)]
pub struct Close {
    /// Why.
    pub error: Option<AmqpError>,
}

/// One of the nine performatives.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Performative {
    Open(Box<Open>),
    Begin(Box<Begin>),
    Attach(Box<Attach>),
    Flow(Box<Flow>),
    Transfer(Box<Transfer>),
    Disposition(Box<Disposition>),
    Detach(Box<Detach>),
    End(End),
    Close(Close),
}

fn error_at(f: &FieldList<'_>, i: usize) -> Option<AmqpError> {
    f.described(i).and_then(AmqpError::from_described)
}

impl Performative {
    /// The typed view of a checked composite; `None` when it is not a performative.
    pub fn from_composite(c: &Composite) -> Option<Self> {
        let f = FieldList(&c.fields);
        Some(match c.def.code {
            0x10 => Performative::Open(Box::new(Open {
                container_id: f.string(0).unwrap_or_default(),
                hostname: f.string(1),
                max_frame_size: f.uint(2).unwrap_or(u32::MAX),
                channel_max: f.ushort(3).unwrap_or(u16::MAX),
                idle_time_out: f.uint(4),
                outgoing_locales: f.symbols(5),
                incoming_locales: f.symbols(6),
                offered_capabilities: f.symbols(7),
                desired_capabilities: f.symbols(8),
                properties: f.map(9),
            })),
            0x11 => Performative::Begin(Box::new(Begin {
                remote_channel: f.ushort(0),
                next_outgoing_id: f.uint(1).unwrap_or_default(),
                incoming_window: f.uint(2).unwrap_or_default(),
                outgoing_window: f.uint(3).unwrap_or_default(),
                handle_max: f.uint(4).unwrap_or(u32::MAX),
                offered_capabilities: f.symbols(5),
                desired_capabilities: f.symbols(6),
                properties: f.map(7),
            })),
            0x12 => Performative::Attach(Box::new(Attach {
                name: f.string(0).unwrap_or_default(),
                handle: f.uint(1).unwrap_or_default(),
                role: Role::from(f.bool(2).unwrap_or_default()),
                snd_settle_mode: f.ubyte(3).map_or(SenderSettleMode::Mixed, Into::into),
                rcv_settle_mode: f.ubyte(4).map_or(ReceiverSettleMode::First, Into::into),
                source: f.described(5).and_then(Source::from_described),
                target: f.get(6).map(AnyTarget::from_value),
                unsettled: f.map(7),
                incomplete_unsettled: f.bool(8).unwrap_or(false),
                initial_delivery_count: f.uint(9),
                max_message_size: f.ulong(10),
                offered_capabilities: f.symbols(11),
                desired_capabilities: f.symbols(12),
                properties: f.map(13),
            })),
            0x13 => Performative::Flow(Box::new(Flow {
                next_incoming_id: f.uint(0),
                incoming_window: f.uint(1).unwrap_or_default(),
                next_outgoing_id: f.uint(2).unwrap_or_default(),
                outgoing_window: f.uint(3).unwrap_or_default(),
                handle: f.uint(4),
                delivery_count: f.uint(5),
                link_credit: f.uint(6),
                available: f.uint(7),
                drain: f.bool(8).unwrap_or(false),
                echo: f.bool(9).unwrap_or(false),
                properties: f.map(10),
            })),
            0x14 => Performative::Transfer(Box::new(Transfer {
                handle: f.uint(0).unwrap_or_default(),
                delivery_id: f.uint(1),
                delivery_tag: f.binary(2),
                message_format: f.uint(3),
                settled: f.bool(4),
                more: f.bool(5).unwrap_or(false),
                rcv_settle_mode: f.ubyte(6).map(Into::into),
                state: f.described(7).map(DeliveryState::from_described),
                resume: f.bool(8).unwrap_or(false),
                aborted: f.bool(9).unwrap_or(false),
                batchable: f.bool(10).unwrap_or(false),
            })),
            0x15 => Performative::Disposition(Box::new(Disposition {
                role: Role::from(f.bool(0).unwrap_or_default()),
                first: f.uint(1).unwrap_or_default(),
                last: f.uint(2),
                settled: f.bool(3).unwrap_or(false),
                state: f.described(4).map(DeliveryState::from_described),
                batchable: f.bool(5).unwrap_or(false),
            })),
            0x16 => Performative::Detach(Box::new(Detach {
                handle: f.uint(0).unwrap_or_default(),
                closed: f.bool(1).unwrap_or(false),
                error: error_at(&f, 2),
            })),
            0x17 => Performative::End(End {
                error: error_at(&f, 0),
            }),
            0x18 => Performative::Close(Close {
                error: error_at(&f, 0),
            }),
            _ => return None,
        })
    }

    /// The spec name (`open` ... `close`).
    pub fn name(&self) -> &'static str {
        match self {
            Performative::Open(_) => "open",
            Performative::Begin(_) => "begin",
            Performative::Attach(_) => "attach",
            Performative::Flow(_) => "flow",
            Performative::Transfer(_) => "transfer",
            Performative::Disposition(_) => "disposition",
            Performative::Detach(_) => "detach",
            Performative::End(_) => "end",
            Performative::Close(_) => "close",
        }
    }
}
