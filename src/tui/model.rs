//! The UI's data model: what it keeps of each connection (its frame-list rows, counters and the
//! tracker's latest state) and of each violation, built from pipeline events only.
//!
//! Frames arrive decoded and shared ([`FrameEvent`] in an `Arc`): a row keeps the frame itself,
//! and its field tree, message and field spans come from it when shown. Nothing here decodes
//! bytes or tracks protocol state; the state is the pipeline's [`Snapshot`].

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::codec::ProtocolHeader;
use crate::codec::spans::FieldSpans;
use crate::event::{CloseInfo, ConnId, Dir, FrameEvent, Timestamp, Violation};
use crate::state::Snapshot;

use super::filter::{Filter, FrameFacts, LinkNames};

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
            proto: super::filter::frame_proto(&f.frame),
            summary: f.frame.summary(),
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
fn snapshot_bytes(s: &Snapshot) -> usize {
    use crate::state::snapshot::Detail;
    match &s.detail {
        Detail::None => 64,
        Detail::Amqp10(a) => {
            512 + a.sessions.len() * 256
                + a.links
                    .iter()
                    .map(|l| 512 + l.credit_history.len() * 8)
                    .sum::<usize>()
        }
        Detail::Amqp091(c) => 512 + c.channels.len() * 256,
    }
}

/// One connection as the UI knows it.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    /// Number.
    pub id: ConnId,
    /// Client address.
    pub client: Option<SocketAddr>,
    /// Upstream address.
    pub upstream: Option<SocketAddr>,
    /// Protocol (from the first header).
    pub proto: String,
    /// Tracker state name (`-` until the pipeline publishes a state).
    pub state: String,
    /// The tracker's latest state, as the pipeline published it.
    pub snapshot: Arc<Snapshot>,
    /// When that state was published.
    pub snapshot_ts: Timestamp,
    /// First event.
    pub first_ts: Timestamp,
    /// Latest event.
    pub last_ts: Timestamp,
    /// Close, once closed.
    pub closed: Option<CloseInfo>,
    /// Bytes each way (index by `Dir::index`).
    pub bytes: [u64; 2],
    /// Frames each way.
    pub frames: [u64; 2],
    /// Violations.
    pub violations: u64,
    /// Rows kept (oldest first).
    pub rows: VecDeque<Row>,
    /// Rows dropped from view to stay within the bound.
    pub evicted: u64,
    /// The number of its first row, once it has one (of the whole capture in a file replay).
    pub first_seq: Option<u64>,
    /// The number of its latest row.
    pub last_seq: u64,
    /// Rows it has had in all (kept or not).
    pub total_rows: u64,
    /// The state as of just before its first kept row (from the rows dropped, or the window's
    /// start in a file replay), for the state pane of the rows before the first kept state.
    pub base_state: Option<Arc<Snapshot>>,
    /// Bytes held by `rows` (see [`Row::held_bytes`]).
    pub raw_bytes: usize,
    /// Link names from the attaches seen.
    link_names: LinkNames,
    /// Malformed rows still waiting for their bytes from `Data` events.
    pub(super) pending_raw: Vec<u64>,
}

impl Conn {
    /// A connection first heard of at `ts`.
    pub fn new(id: ConnId, ts: Timestamp) -> Conn {
        Conn {
            id,
            state: "-".into(),
            first_ts: ts,
            ..Default::default()
        }
    }

    /// The row with sequence number `seq`, if still kept.
    pub fn row(&self, seq: u64) -> Option<&Row> {
        let i = self.rows.binary_search_by_key(&seq, |r| r.seq).ok()?;
        self.rows.get(i)
    }

    /// The row with sequence number `seq`, to change.
    pub fn row_mut(&mut self, seq: u64) -> Option<&mut Row> {
        let i = self.rows.binary_search_by_key(&seq, |r| r.seq).ok()?;
        self.rows.get_mut(i)
    }

    /// The link an AMQP 1.0 frame belongs to, from the attach that named its handle (an
    /// attach names it, a detach with closed=true forgets it).
    pub fn link_of(&mut self, f: &FrameEvent) -> Option<String> {
        self.link_names.of(f)
    }

    /// Take the tracker state published at `ts`, unless a later one is already shown (a state
    /// kept aside while the feed was full can arrive after a newer one).
    pub fn set_state(&mut self, ts: Timestamp, snapshot: Arc<Snapshot>) {
        if ts < self.snapshot_ts {
            return;
        }
        self.snapshot_ts = ts;
        self.state = snapshot.name.clone();
        self.attach_state(snapshot.clone());
        self.snapshot = snapshot;
    }

    /// Keep `snapshot` as the state just after the latest kept row (before the first, when
    /// none is kept yet).
    pub fn attach_state(&mut self, snapshot: Arc<Snapshot>) {
        let Some(row) = self.rows.back_mut() else {
            self.base_state = Some(snapshot);
            return;
        };
        // Counted with the row's bytes: the per-connection bound covers the states kept.
        let before = row.state.as_deref().map_or(0, snapshot_bytes);
        self.raw_bytes = self.raw_bytes.saturating_sub(before) + snapshot_bytes(&snapshot);
        row.state = Some(snapshot);
    }

    /// The state as of just after the row `seq`: the one published after the latest row at or
    /// before it that has one, else the state before the first kept row (when known).
    pub fn state_after(&self, seq: u64) -> Option<&Arc<Snapshot>> {
        let end = self.rows.partition_point(|r| r.seq <= seq);
        self.rows
            .range(..end)
            .rev()
            .find_map(|r| r.state.as_ref())
            .or(self.base_state.as_ref())
    }

    /// Forget every kept row (a file replay's window is about to be replaced).
    pub(super) fn clear_rows(&mut self) {
        self.rows.clear();
        self.raw_bytes = 0;
        self.pending_raw.clear();
        self.base_state = None;
        self.link_names = LinkNames::default();
    }
}

/// A violation in the violations pane.
#[derive(Clone, Debug)]
pub struct ViolationRow {
    /// The connection the violation was found on.
    pub conn: ConnId,
    /// When the offending frame was captured or relayed.
    pub ts: Timestamp,
    /// The violation.
    pub violation: Violation,
    /// The frame-list row it belongs to, if any.
    pub seq: Option<u64>,
}
