//! amqpeek: a man-in-the-middle AMQP relay that decodes every frame in both directions, tracks
//! protocol state, flags spec violations, and writes captures that replay offline.
//!
//! One pipeline, live and offline:
//!
//! ```text
//! Source (proxy | pcap/pcapng | JSONL) -> decode -> track state -> sinks (tui | text | jsonl | pcap | check)
//! ```
//!
//! [`codec`] and [`state`] are sans-IO: no tokio, no clock; time is passed in.

#![warn(missing_docs, unreachable_pub)]

pub mod base;
pub mod browse;
pub mod bundle;
pub mod capture;
pub mod codec;
pub mod driver;
pub mod event;
pub mod files;
pub mod filter;
pub mod hash;
pub mod json;
pub mod mask;
pub mod metrics;
pub mod pipeline;
pub mod protocol;
pub mod proxy;
pub mod replay;
pub mod ring;
pub mod sinks;
pub mod state;
pub mod stats;
pub mod tui;
pub mod verdict;

pub use event::{Chunk, ConnId, Dir, Event, EventKind, Timestamp};
