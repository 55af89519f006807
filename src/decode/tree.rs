//! `amqpeek decode --tree`: a frame's parts and fields, one per line, indented by depth, each
//! with its byte range in the input (as `tshark -V` shows a packet's fields). Values are shown
//! as JSON escaped as the JSONL is (`amqpeek::json::to_string`). What the lines are is the
//! frame's protocol's ([`amqpeek::protocol::ProtocolFrame::tree_into`]).

use amqpeek::protocol::AnyFrame;

/// The tree lines of `frame` (`raw` its bytes, `offset` where they start in the input), each
/// line ending in `\n`, indented two spaces per depth under the frame's summary line.
pub fn lines(offset: u64, raw: &[u8], frame: &AnyFrame) -> String {
    let mut out = String::new();
    let at = |r: std::ops::Range<usize>| {
        format!("[{}..{})", offset + r.start as u64, offset + r.end as u64)
    };
    frame.tree_into(raw, &at, &mut out);
    out
}
