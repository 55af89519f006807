//! Link termini: what an attach's `target` holds (a target or a transaction coordinator), and
//! the lifetime policies of dynamic nodes. The views of `source`, `target` and `coordinator`
//! are generated (`views.rs`), with the spec's defaults.

use super::composite::lookup_descriptor;
use super::value::Value;
use super::views::code;
pub use super::views::{Coordinator, Source, Target};

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

impl AnyTarget {
    /// The typed view of an attach's `target` value.
    pub fn from_value(v: &Value) -> Self {
        if let Some(d) = v.as_described() {
            if let Some(t) = Target::from_described(d) {
                return AnyTarget::Target(t);
            }
            if let Some(c) = Coordinator::from_described(d) {
                return AnyTarget::Coordinator(c);
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
            code::DELETE_ON_CLOSE => Some(LifetimePolicy::DeleteOnClose),
            code::DELETE_ON_NO_LINKS => Some(LifetimePolicy::DeleteOnNoLinks),
            code::DELETE_ON_NO_MESSAGES => Some(LifetimePolicy::DeleteOnNoMessages),
            code::DELETE_ON_NO_LINKS_OR_MESSAGES => Some(LifetimePolicy::DeleteOnNoLinksOrMessages),
            _ => None,
        }
    }
}
