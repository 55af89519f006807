//! Delivery states and outcomes: received, accepted, rejected, released, modified, and the
//! transactional ones (declared, transactional-state). The views of those with fields are
//! generated (`views.rs`).

use super::composite::lookup_descriptor;
use super::fields::FieldList;
use super::value::{Described, Value};
use super::views::code;
pub use super::views::{Declared, Modified, Received, Rejected, TransactionalState};

/// A delivery state (transfer/disposition `state`, source `default-outcome`).
#[derive(Clone, Debug, PartialEq)]
pub enum DeliveryState {
    /// `received`: partial progress.
    Received(Received),
    /// `accepted`.
    Accepted,
    /// `rejected`, with why.
    Rejected(Rejected),
    /// `released`.
    Released,
    /// `modified`.
    Modified(Modified),
    /// `declared`: a transaction was declared.
    Declared(Declared),
    /// `transactional-state`: a transaction's provisional outcome.
    Transactional(Box<TransactionalState>),
    /// A described value the spec does not define as a delivery state (kept as is).
    Other(Box<Described>),
}

impl DeliveryState {
    /// The typed view of a (checked) described value.
    pub fn from_described(d: &Described) -> Self {
        let f = &FieldList::of(d);
        match lookup_descriptor(&d.descriptor).map(|def| def.code) {
            Some(code::RECEIVED) => DeliveryState::Received(Received::from_fields(f)),
            Some(code::ACCEPTED) => DeliveryState::Accepted,
            Some(code::REJECTED) => DeliveryState::Rejected(Rejected::from_fields(f)),
            Some(code::RELEASED) => DeliveryState::Released,
            Some(code::MODIFIED) => DeliveryState::Modified(Modified::from_fields(f)),
            Some(code::DECLARED) => DeliveryState::Declared(Declared::from_fields(f)),
            Some(code::TRANSACTIONAL_STATE) => {
                DeliveryState::Transactional(Box::new(TransactionalState::from_fields(f)))
            }
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
            DeliveryState::Received(_) => "received",
            DeliveryState::Accepted => "accepted",
            DeliveryState::Rejected(_) => "rejected",
            DeliveryState::Released => "released",
            DeliveryState::Modified(_) => "modified",
            DeliveryState::Declared(_) => "declared",
            DeliveryState::Transactional(_) => "transactional-state",
            DeliveryState::Other(_) => "unknown",
        }
    }

    /// True for the terminal outcomes (accepted, rejected, released, modified, declared).
    pub fn is_outcome(&self) -> bool {
        matches!(
            self,
            DeliveryState::Accepted
                | DeliveryState::Rejected(_)
                | DeliveryState::Released
                | DeliveryState::Modified(_)
                | DeliveryState::Declared(_)
        )
    }
}
