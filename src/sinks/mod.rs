//! Sinks: where the pipeline's [`Event`](crate::event::Event)s go. One sink knows one output
//! (text trace, JSON Lines file, pcapng, ...; the check report is in [`crate::verdict`]), each behind the
//! [`Sink`](crate::pipeline::Sink) trait.
//!
//! Sinks never see unmasked credentials unless `--show-secrets` was given (the
//! [`Inspector`](crate::pipeline::Inspector) masks them) and never touch the relay: they run on
//! the inspection side, where falling behind slows the relay down but never drops an event.

pub mod coalesce;
pub mod filtered;
pub mod jsonl;
pub mod pcapng;
pub mod stats_feed;
pub mod trace;
pub mod ts_text;

pub use filtered::FilteredSink;
pub use jsonl::{JsonOptions, JsonlSink, event_json};
pub use trace::TraceSink;
