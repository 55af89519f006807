//! Delivery states and outcomes as typed views: received, accepted, rejected, released,
//! modified, and the transactional ones (declared, transactional-state).

use bytes::Bytes;

use super::amqp_error::AmqpError;
use super::composite::lookup_descriptor;
use super::fields::{FieldList, Map};
use super::value::{Described, Value};

/// A delivery state (transfer/disposition `state`, source `default-outcome`).
#[derive(Clone, Debug, PartialEq)]
pub enum DeliveryState {
    /// `received` (0x23): partial progress.
    Received {
        /// Section where the receiver stopped.
        section_number: u32,
        /// Offset within it.
        section_offset: u64,
    },
    /// `accepted` (0x24).
    Accepted,
    /// `rejected` (0x25).
    Rejected {
        /// Why.
        error: Option<AmqpError>,
    },
    /// `released` (0x26).
    Released,
    /// `modified` (0x27).
    Modified {
        /// Count the failed delivery.
        delivery_failed: Option<bool>,
        /// Don't redeliver to this link.
        undeliverable_here: Option<bool>,
        /// Annotations to merge.
        message_annotations: Option<Map>,
    },
    /// `declared` (0x33): a transaction was declared.
    Declared {
        /// The transaction id.
        txn_id: Bytes,
    },
    /// `transactional-state` (0x34).
    Transactional {
        /// The transaction id.
        txn_id: Bytes,
        /// The provisional outcome.
        outcome: Option<Box<DeliveryState>>,
    },
    /// A described value the spec does not define as a delivery state (kept as is).
    Other(Box<Described>),
}

impl DeliveryState {
    /// The typed view of a (checked) described value.
    pub fn from_described(d: &Described) -> Self {
        let f = FieldList::of(d);
        match lookup_descriptor(&d.descriptor).map(|def| def.code) {
            Some(0x23) => DeliveryState::Received {
                section_number: f.uint(0).unwrap_or_default(),
                section_offset: f.ulong(1).unwrap_or_default(),
            },
            Some(0x24) => DeliveryState::Accepted,
            Some(0x25) => DeliveryState::Rejected {
                error: f.described(0).and_then(AmqpError::from_described),
            },
            Some(0x26) => DeliveryState::Released,
            Some(0x27) => DeliveryState::Modified {
                delivery_failed: f.bool(0),
                undeliverable_here: f.bool(1),
                message_annotations: f.map(2),
            },
            Some(0x33) => DeliveryState::Declared {
                txn_id: f.binary(0).unwrap_or_default(),
            },
            Some(0x34) => DeliveryState::Transactional {
                txn_id: f.binary(0).unwrap_or_default(),
                outcome: f
                    .described(1)
                    .map(|d| Box::new(DeliveryState::from_described(d))),
            },
            _ => DeliveryState::Other(Box::new(d.clone())),
        }
    }

    /// The typed view of a field value, if it is described.
    pub fn from_value(v: &Value) -> Option<Self> {
        v.as_described().map(Self::from_described)
    }

    /// The spec name (`accepted` ...), or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            DeliveryState::Received { .. } => "received",
            DeliveryState::Accepted => "accepted",
            DeliveryState::Rejected { .. } => "rejected",
            DeliveryState::Released => "released",
            DeliveryState::Modified { .. } => "modified",
            DeliveryState::Declared { .. } => "declared",
            DeliveryState::Transactional { .. } => "transactional-state",
            DeliveryState::Other(_) => "unknown",
        }
    }

    /// True for the terminal outcomes (accepted, rejected, released, modified, declared).
    pub fn is_outcome(&self) -> bool {
        matches!(
            self,
            DeliveryState::Accepted
                | DeliveryState::Rejected { .. }
                | DeliveryState::Released
                | DeliveryState::Modified { .. }
                | DeliveryState::Declared { .. }
        )
    }
}
