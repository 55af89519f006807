//! The `error` composite (`amqp:error:list`) as a typed view: condition, description, info.

use super::composite::lookup_descriptor;
use super::fields::{FieldList, Map};
use super::tables;
use super::value::{Described, Str, Symbol};

/// An AMQP error (carried by detach, end, close and rejected).
#[derive(Clone, Debug, PartialEq)]
pub struct AmqpError {
    /// The error condition, e.g. `amqp:not-found`.
    pub condition: Symbol,
    /// Human-readable description.
    pub description: Option<Str>,
    /// Extra information.
    pub info: Option<Map>,
}

impl AmqpError {
    /// The typed view of a described `error`; `None` when it is something else.
    pub fn from_described(d: &Described) -> Option<Self> {
        if !std::ptr::eq(lookup_descriptor(&d.descriptor)?, &tables::ERROR) {
            return None;
        }
        let f = FieldList::of(d);
        Some(AmqpError {
            condition: f.symbol(0).unwrap_or_default(),
            description: f.string(1),
            info: f.map(2),
        })
    }
}
