//! Protocol state tracking: per-connection trackers that watch both directions at once, the way
//! each peer is required to, and report every place where a peer breaks the spec.
//!
//! Sans-IO: trackers are fed events (with their timestamps) and return violations. No tokio, no
//! clock.

pub mod rules;

pub use rules::{CATALOG, Rule};
