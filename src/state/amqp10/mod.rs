//! AMQP 1.0 state tracking: the connection tracker and its rules.
//!
//! PLACEHOLDER: the tracker below tracks nothing yet; it is replaced by the real one.

pub mod rules;

use crate::event::{FrameEvent, Timestamp, Violation};
use crate::state::ProtocolTracker;

/// Tracks one AMQP 1.0 connection from both directions.
#[derive(Debug, Default)]
pub struct ConnectionTracker {}

impl ConnectionTracker {
    /// A tracker that has seen the connection from its start.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ProtocolTracker for ConnectionTracker {
    fn frame(&mut self, frame: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>) {
        let _ = (frame, ts, out);
    }
    fn state_name(&self) -> String {
        "-".into()
    }
    fn snapshot(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}
