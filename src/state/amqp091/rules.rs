//! The AMQP 0-9-1 rules of the violation catalog. Each rule's doc comment quotes the spec sentence
//! it enforces; ids are stable.

use crate::state::rules::Rule;

/// Every AMQP 0-9-1 rule, in the order the README lists them.
pub const RULES: &[&Rule] = &[];
