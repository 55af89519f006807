//! The AMQP 1.0 rules of the violation catalog. Each rule's doc comment quotes the spec sentence
//! it enforces; ids are stable.

use crate::state::rules::Rule;

/// Every AMQP 1.0 rule, in the order the README lists them.
pub const RULES: &[&Rule] = &[];
