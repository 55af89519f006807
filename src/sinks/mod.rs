//! Sinks: where events go; each sink knows one output.

pub mod check;
pub mod pcapng;
