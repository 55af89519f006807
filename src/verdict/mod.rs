//! The CI verdict, used by `amqpeek check`, `proxy --fail-on` and `replay --fail-on`.
//!
//! A run's violations are coalesced into findings ([`finding`]: one per rule, peer,
//! connection and channel or link, with a count and a bounded sample) by a [`CheckReport`]
//! ([`report`]); a [`Policy`] ([`policy`]: `--fail-on`, `--ignore`, `--severity`, a
//! [`Baseline`] ([`baseline`]), the same from a config file ([`config`])) judges them into a
//! [`Verdict`] ([`judge`]), which renders as text, JSON or JUnit XML ([`render`]).

pub mod baseline;
pub mod config;
pub mod diagnoses;
pub mod finding;
pub mod format;
pub mod glob;
pub mod judge;
pub mod policy;
pub mod render;
pub mod report;

pub use baseline::Baseline;
pub use diagnoses::Diagnoses;
pub use finding::{Finding, Occurrence, Scope};
pub use format::Format;
pub use judge::Verdict;
pub use policy::{Policy, RulePattern, Status};
pub use report::{CheckReport, SharedReport};
