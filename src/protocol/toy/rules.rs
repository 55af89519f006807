//! The toy's one rule.

use crate::base::{Rule, Severity};

/// A frame whose payload is longer than the toy allows.
///
/// Toy §1: "A frame MUST NOT carry more than 16 payload bytes."
pub static TOY_FRAME_TOO_LONG: Rule = Rule {
    id: "toy.frame-too-long",
    severity: Severity::Error,
    spec: "Toy §1",
    text: "a frame carries more than 16 payload bytes",
};

/// The largest payload the rule allows.
pub const MAX_ALLOWED: u32 = 16;

/// Every rule of the toy.
pub const RULES: &[&Rule] = &[&TOY_FRAME_TOO_LONG];
