//! `amqpeek decode --tree`: a frame's parts and fields, one per line, indented by depth, each
//! with its byte range in the input (as `tshark -V` shows a packet's fields). Values are shown
//! as JSON escaped as the JSONL is (`amqpeek::json::to_string`).

use std::fmt::Write as _;

use amqpeek::base::escape::Escaped;
use amqpeek::codec::amqp091::FrameKind;
use amqpeek::codec::spans::PAYLOAD_SPAN;
use amqpeek::protocol::AnyFrame;

/// The tree lines of `frame` (`raw` its bytes, `offset` where they start in the input), each
/// line ending in `\n`, indented two spaces per depth under the frame's summary line.
pub fn lines(offset: u64, raw: &[u8], frame: &AnyFrame) -> String {
    let mut out = String::new();
    let at = |r: std::ops::Range<usize>| {
        format!("[{}..{})", offset + r.start as u64, offset + r.end as u64)
    };
    let values = frame.fields_json();
    let value = |name: &str| match values.get(name) {
        Some(v) => amqpeek::json::to_string(v),
        None => "null".to_owned(),
    };
    match frame {
        AnyFrame::Amqp10(_) => {
            // The frame header is 4 * doff bytes (8 without extended header).
            let doff = raw.get(4).map_or(2, |&d| usize::from(d).max(2));
            let head = (4 * doff).min(raw.len());
            let _ = writeln!(out, "  frame header {}", at(0..head));
            let spans = frame.field_spans().unwrap_or_default();
            let body_end = spans
                .iter()
                .find(|(n, _)| *n == PAYLOAD_SPAN)
                .map_or(raw.len(), |(_, s)| s.start);
            if !spans.is_empty() {
                let _ = writeln!(out, "  {} {}", frame.name(), at(head..body_end));
            }
            for (name, span) in spans {
                if name == PAYLOAD_SPAN {
                    let _ = writeln!(out, "  payload ({} bytes) {}", span.len(), at(span));
                } else {
                    let _ = writeln!(out, "    {name} = {} {}", value(name), at(span));
                }
            }
        }
        AnyFrame::Amqp091(f) => {
            // The spec's order: a method's arguments as its class defines them, a content
            // header's properties in property-flag order.
            let order: Vec<&str> = match &f.kind {
                FrameKind::Method(m) => m.def.args.iter().map(|a| a.name).collect(),
                FrameKind::Header(h) => h.properties.iter().map(|(a, _)| a.name).collect(),
                FrameKind::Body(_) | FrameKind::Heartbeat => Vec::new(),
            };
            amqp091(&mut out, raw, &values, &order, &at)
        }
    }
    out
}

/// An AMQP 0-9-1 frame: type, channel and size, the payload, the frame-end octet. The codec
/// keeps no spans for a method's arguments: they are listed with their values in `order` (the
/// spec's), without ranges; fields of `values` not in `order` (a content header's class and
/// body size) come first.
fn amqp091(
    out: &mut String,
    raw: &[u8],
    values: &serde_json::Value,
    order: &[&str],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) {
    if raw.len() < 8 {
        return;
    }
    let end = raw.len() - 1;
    let _ = writeln!(out, "  frame header {}", at(0..7));
    let _ = writeln!(out, "    type = {} {}", raw[0], at(0..1));
    let _ = writeln!(
        out,
        "    channel = {} {}",
        u16::from_be_bytes([raw[1], raw[2]]),
        at(1..3)
    );
    let size = u32::from_be_bytes([raw[3], raw[4], raw[5], raw[6]]);
    let _ = writeln!(out, "    size = {size} {}", at(3..7));
    let _ = writeln!(out, "  payload ({} bytes) {}", end - 7, at(7..end));
    if let Some(fields) = values.as_object() {
        let rest = fields.iter().filter(|(n, _)| !order.contains(&n.as_str()));
        let ordered = order.iter().filter_map(|n| fields.get_key_value(*n));
        for (name, v) in rest.chain(ordered) {
            let _ = writeln!(
                out,
                "    {} = {} (no byte range: not kept for 0-9-1)",
                Escaped(name),
                amqpeek::json::to_string(v)
            );
        }
    }
    let _ = writeln!(
        out,
        "  frame-end = 0x{:02x} {}",
        raw[end],
        at(end..raw.len())
    );
}
