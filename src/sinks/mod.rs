//! Sinks: where events go.

pub mod pcapng;
