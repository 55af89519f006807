//! One row of the frame list, as the TUI shows it and as the filter judges it: built by the
//! same constructors from the same pipeline events wherever rows are made, by the app as the
//! events arrive and by the pager as it judges the rows of a re-run against the filter.
//!
//! A row keeps its decoded frame shared (`Arc`) with the pipeline; its field tree, message and
//! field spans come from that frame when shown. Nothing here decodes bytes or tracks state.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::codec::ProtocolHeader;
use crate::codec::spans::FieldSpans;
use crate::event::{CloseInfo, ConnId, Dir, FrameEvent, Timestamp, Violation};
use crate::filter::{Filter, FrameFacts};
use crate::state::Snapshot;

/// What kind of row of the frame list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// A protocol header.
    Header,
    /// A decoded frame.
    Frame,
    /// Bytes that could not be decoded (a `codec.*` violation with no frame).
    Malformed,
    /// Bytes the inspector did not see.
    Gap,
    /// The connection closed.
    Close,
}

/// One row of the frame list (kept per connection, bounded).
#[derive(Clone, Debug)]
pub struct Row {
    /// Global arrival number (orders rows across connections).
    pub seq: u64,
    /// The connection the row belongs to (its number, from 1).
    pub conn: ConnId,
    /// When the row's bytes were captured or relayed.
    pub ts: Timestamp,
    /// Direction (none for close).
    pub dir: Option<Dir>,
    /// Byte offset in that direction's stream.
    pub offset: u64,
    /// Kind.
    pub kind: RowKind,
    /// Channel (frames only).
    pub channel: Option<u16>,
    /// Frame name as in JSONL, or `header` / `malformed` / `gap` / `close`.
    pub name: String,
    /// Protocol name (`amqp-1.0`, `amqp-sasl`, `amqp-0-9-1`, or empty).
    pub proto: &'static str,
    /// One-line summary.
    pub summary: String,
    /// AMQP 1.0 link name the frame belongs to, when known.
    pub link: Option<String>,
    /// The bytes the hex view shows (credentials masked; at most `max_raw_per_frame`).
    pub raw: Bytes,
    /// The frame's full length (may exceed `raw.len()`).
    pub len: usize,
    /// The decoded frame, shared with the pipeline (frames only).
    pub frame: Option<Arc<FrameEvent>>,
    /// What the detail view shows of a row that is not a frame.
    pub fields: Option<serde_json::Value>,
    /// The message this frame completes, as JSON.
    pub message: Option<serde_json::Value>,
    /// Violations attached to this row.
    pub violations: Vec<Violation>,
    /// The connection's state just after this row, when the pipeline published one then (a
    /// replay into the TUI publishes it after every frame that changed it).
    pub state: Option<Arc<Snapshot>>,
    /// The frame's field spans, found once when first shown.
    spans: OnceLock<Option<FieldSpans>>,
}

impl Row {
    /// A row of `kind` with nothing but its place.
    pub fn bare(conn: ConnId, ts: Timestamp, dir: Option<Dir>, offset: u64, kind: RowKind) -> Row {
        Row {
            seq: 0,
            conn,
            ts,
            dir,
            offset,
            kind,
            channel: None,
            name: String::new(),
            proto: "",
            summary: String::new(),
            link: None,
            raw: Bytes::new(),
            len: 0,
            frame: None,
            fields: None,
            message: None,
            violations: Vec::new(),
            state: None,
            spans: OnceLock::new(),
        }
    }

    /// The row of a protocol header.
    pub fn header(
        conn: ConnId,
        ts: Timestamp,
        dir: Dir,
        offset: u64,
        header: ProtocolHeader,
        raw: &Bytes,
    ) -> Row {
        Row {
            name: "header".into(),
            proto: header.proto_name(),
            summary: format!("{} protocol header", header.proto_name()),
            len: raw.len(),
            raw: raw.clone(),
            fields: Some(serde_json::json!({
                "protocol": header.proto_name(),
                "bytes": hex::encode(raw),
            })),
            ..Row::bare(conn, ts, Some(dir), offset, RowKind::Header)
        }
    }

    /// The row of a decoded frame: it keeps the shared frame; the hex view the first
    /// `max_raw` bytes; the message is rendered with bodies cut at `max_body`.
    pub fn frame(
        conn: ConnId,
        ts: Timestamp,
        f: &Arc<FrameEvent>,
        link: Option<String>,
        max_raw: usize,
        max_body: usize,
    ) -> Row {
        let keep = f.raw.len().min(max_raw);
        Row {
            raw: f.raw.slice(..keep),
            message: f.message.as_ref().map(|m| match m {
                Ok(m) => m.to_json(max_body),
                Err(e) => serde_json::json!({ "decode-error": e.to_string() }),
            }),
            ..Row::frame_listed(conn, ts, f, link)
        }
    }

    /// The row of a decoded frame as the list and the filter see it (no bytes for the hex
    /// view, no message rendered): what a search of the capture judges.
    pub fn frame_listed(
        conn: ConnId,
        ts: Timestamp,
        f: &Arc<FrameEvent>,
        link: Option<String>,
    ) -> Row {
        Row {
            channel: Some(f.frame.channel()),
            name: f.frame.name().to_string(),
            proto: crate::filter::frame_proto(&f.frame),
            summary: f.summary_with_message(),
            link,
            len: f.size() as usize,
            frame: Some(f.clone()),
            ..Row::bare(conn, ts, Some(f.dir), f.offset, RowKind::Frame)
        }
    }

    /// The row of bytes the inspector did not see.
    pub fn gap(conn: ConnId, ts: Timestamp, dir: Dir, offset: u64, len: u64, reason: &str) -> Row {
        Row {
            name: "gap".into(),
            summary: if len > 0 {
                format!("{len} bytes not seen: {reason}")
            } else {
                format!("bytes not seen: {reason}")
            },
            fields: Some(serde_json::json!({"len": len, "reason": reason})),
            ..Row::bare(conn, ts, Some(dir), offset, RowKind::Gap)
        }
    }

    /// The row of the connection's end.
    pub fn close(conn: ConnId, ts: Timestamp, info: &CloseInfo) -> Row {
        Row {
            name: "close".into(),
            summary: format!(
                "connection closed: {} ({} bytes ->, {} bytes <-)",
                info.reason, info.bytes_c2s, info.bytes_s2c
            ),
            fields: Some(serde_json::json!({
                "reason": info.reason,
                "bytes_c2s": info.bytes_c2s,
                "bytes_s2c": info.bytes_s2c,
            })),
            ..Row::bare(conn, ts, None, 0, RowKind::Close)
        }
    }

    /// The row of bytes that could not be decoded (`v` a `codec.*` violation); its bytes come
    /// later, from the `Data` events.
    pub fn malformed(conn: ConnId, ts: Timestamp, v: &Violation) -> Row {
        Row {
            name: "malformed".into(),
            summary: v.message.clone(),
            fields: Some(serde_json::json!({
                "rule": v.rule,
                "spec": v.spec,
                "message": v.message,
            })),
            violations: vec![v.clone()],
            ..Row::bare(conn, ts, Some(v.dir), v.offset, RowKind::Malformed)
        }
    }

    /// The facts the filter looks at.
    pub fn facts<'a>(&'a self, rules: &'a [String]) -> FrameFacts<'a> {
        FrameFacts {
            conn: self.conn,
            dir: self.dir,
            channel: self.channel,
            name: &self.name,
            summary: &self.summary,
            link: self.link.as_deref(),
            proto: self.proto,
            rules,
            frame: self.frame.as_ref().map(|f| &f.frame),
        }
    }

    /// Whether the row passes `filter`.
    pub fn matches(&self, filter: &Filter) -> bool {
        if filter.is_empty() {
            return true;
        }
        let rules: Vec<String> = self
            .violations
            .iter()
            .map(|v| v.rule.id.to_string())
            .collect();
        filter.matches(&self.facts(&rules))
    }

    /// The fields the detail tree shows: the decoded frame's, else what the row was built with.
    pub fn fields_json(&self) -> serde_json::Value {
        match (&self.frame, &self.fields) {
            (Some(f), _) => f.frame.fields_json(),
            (None, Some(v)) => v.clone(),
            (None, None) => serde_json::Value::Null,
        }
    }

    /// Per-field byte spans within `raw` (`source.address` -> 40..52), when the codec gives
    /// them for the frame: asked of the codec once, when the row is first shown in detail.
    pub fn spans(&self) -> Option<&[(&'static str, Range<usize>)]> {
        self.spans
            .get_or_init(|| self.frame.as_ref()?.frame.field_spans())
            .as_deref()
    }

    /// The bytes this row holds in memory (the whole frame for a frame row: it is shared).
    pub fn held_bytes(&self) -> usize {
        self.frame.as_ref().map_or(self.raw.len(), |f| f.raw.len())
            + self.state.as_deref().map_or(0, snapshot_bytes)
    }
}

/// About what a snapshot holds, in bytes (its tables and credit histories), for the bound
/// on what a connection's rows may hold.
pub fn snapshot_bytes(s: &Snapshot) -> usize {
    s.detail.approx_bytes()
}
