//! Where each field of a decoded frame lies in its bytes, for a hex view that lights the
//! selected field: AMQP 1.0 performative and SASL fields by their spec names (in spec order),
//! and [`PAYLOAD_SPAN`] for a transfer's message bytes. AMQP 0-9-1 frames have none yet.
//!
//! Decoding keeps no per-field positions (most frames are never looked at this closely): they
//! are found on demand by the codec's own reader, for the one frame on screen.

use std::ops::Range;

/// (field name, byte range within the frame's raw bytes) of each field present.
pub type FieldSpans = Vec<(&'static str, Range<usize>)>;

/// The span name of a frame's message bytes (after the performative).
pub const PAYLOAD_SPAN: &str = "$payload";

/// (field name, byte range within the frame's raw bytes) of each field of an AMQP 1.0 frame
/// present, or `None` when it has no performative.
pub fn amqp10(f: &super::amqp10::Frame) -> Option<FieldSpans> {
    let c = f.composite()?;
    let mut out: FieldSpans = c
        .def
        .fields
        .iter()
        .zip(c.spans(&f.raw))
        .map(|(fd, span)| (fd.name, span))
        .collect();
    if !f.payload().is_empty() {
        out.push((PAYLOAD_SPAN, f.payload_start..f.raw.len()));
    }
    Some(out)
}
