//! Link termini as typed views: source, target, coordinator (a transactional target), and the
//! lifetime policies of dynamic nodes. Defaults applied as the spec gives them.

use super::composite::lookup_descriptor;
use super::delivery_state::DeliveryState;
use super::fields::{FieldList, Map};
use super::value::{Described, Symbol, Value};

/// `source` (0x28).
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The node address (normally a string).
    pub address: Option<Value>,
    /// terminus-durability: 0 none (default), 1 configuration, 2 unsettled-state.
    pub durable: u32,
    /// terminus-expiry-policy, default `session-end`.
    pub expiry_policy: Symbol,
    /// Seconds, default 0.
    pub timeout: u32,
    /// Default false.
    pub dynamic: bool,
    /// Properties of the dynamically created node.
    pub dynamic_node_properties: Option<Map>,
    /// `move` or `copy`.
    pub distribution_mode: Option<Symbol>,
    /// The filter set.
    pub filter: Option<Map>,
    /// Outcome for unsettled deliveries without one.
    pub default_outcome: Option<DeliveryState>,
    /// Supported outcomes (normalised from single or array).
    pub outcomes: Vec<Symbol>,
    /// Capabilities (normalised).
    pub capabilities: Vec<Symbol>,
}

/// `target` (0x29).
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The node address (normally a string).
    pub address: Option<Value>,
    /// terminus-durability, default 0.
    pub durable: u32,
    /// terminus-expiry-policy, default `session-end`.
    pub expiry_policy: Symbol,
    /// Seconds, default 0.
    pub timeout: u32,
    /// Default false.
    pub dynamic: bool,
    /// Properties of the dynamically created node.
    pub dynamic_node_properties: Option<Map>,
    /// Capabilities (normalised).
    pub capabilities: Vec<Symbol>,
}

/// `coordinator` (0x30): the target of a transaction controller's link.
#[derive(Clone, Debug, PartialEq)]
pub struct Coordinator {
    /// txn-capabilities (normalised).
    pub capabilities: Vec<Symbol>,
}

/// What an attach's `target` field holds.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyTarget {
    /// A `target`.
    Target(Target),
    /// A transaction `coordinator`.
    Coordinator(Coordinator),
    /// Some other value (kept as is).
    Other(Value),
}

fn expiry(f: &FieldList<'_>, i: usize) -> Symbol {
    f.symbol(i).unwrap_or_else(|| Symbol::from("session-end"))
}

impl Source {
    /// The typed view of a described `source`; `None` when it is something else.
    pub fn from_described(d: &Described) -> Option<Self> {
        if lookup_descriptor(&d.descriptor)?.code != 0x28 {
            return None;
        }
        let f = FieldList::of(d);
        Some(Source {
            address: f.value(0),
            durable: f.uint(1).unwrap_or(0),
            expiry_policy: expiry(&f, 2),
            timeout: f.uint(3).unwrap_or(0),
            dynamic: f.bool(4).unwrap_or(false),
            dynamic_node_properties: f.map(5),
            distribution_mode: f.symbol(6),
            filter: f.map(7),
            default_outcome: f.get(8).and_then(DeliveryState::from_value),
            outcomes: f.symbols(9),
            capabilities: f.symbols(10),
        })
    }
}

impl Target {
    /// The typed view of a described `target`; `None` when it is something else.
    pub fn from_described(d: &Described) -> Option<Self> {
        if lookup_descriptor(&d.descriptor)?.code != 0x29 {
            return None;
        }
        let f = FieldList::of(d);
        Some(Target {
            address: f.value(0),
            durable: f.uint(1).unwrap_or(0),
            expiry_policy: expiry(&f, 2),
            timeout: f.uint(3).unwrap_or(0),
            dynamic: f.bool(4).unwrap_or(false),
            dynamic_node_properties: f.map(5),
            capabilities: f.symbols(6),
        })
    }
}

impl AnyTarget {
    /// The typed view of an attach's `target` value.
    pub fn from_value(v: &Value) -> Self {
        if let Some(d) = v.as_described() {
            if let Some(t) = Target::from_described(d) {
                return AnyTarget::Target(t);
            }
            if lookup_descriptor(&d.descriptor).map(|x| x.code) == Some(0x30) {
                return AnyTarget::Coordinator(Coordinator {
                    capabilities: FieldList::of(d).symbols(0),
                });
            }
        }
        AnyTarget::Other(v.clone())
    }
    /// The target's address, when it is a `target` with one.
    pub fn address(&self) -> Option<&Value> {
        match self {
            AnyTarget::Target(t) => t.address.as_ref(),
            _ => None,
        }
    }
}

/// The lifetime policies of dynamically created nodes (`lifetime-policy` node property).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifetimePolicy {
    /// `delete-on-close` (0x2b).
    DeleteOnClose,
    /// `delete-on-no-links` (0x2c).
    DeleteOnNoLinks,
    /// `delete-on-no-messages` (0x2d).
    DeleteOnNoMessages,
    /// `delete-on-no-links-or-messages` (0x2e).
    DeleteOnNoLinksOrMessages,
}

impl LifetimePolicy {
    /// The policy a value describes, if it is one.
    pub fn from_value(v: &Value) -> Option<Self> {
        match lookup_descriptor(&v.as_described()?.descriptor)?.code {
            0x2b => Some(LifetimePolicy::DeleteOnClose),
            0x2c => Some(LifetimePolicy::DeleteOnNoLinks),
            0x2d => Some(LifetimePolicy::DeleteOnNoMessages),
            0x2e => Some(LifetimePolicy::DeleteOnNoLinksOrMessages),
            _ => None,
        }
    }
}
