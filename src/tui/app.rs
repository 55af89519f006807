//! All state of the terminal UI and the one [`AppEvent`] enum that changes it.
//!
//! [`App::handle`] is the only mutator; rendering (`views`) reads `&App` and never mutates or
//! does I/O. No terminal, no clock, no channel here: time arrives as [`AppEvent::Tick`] and in
//! event timestamps, so the same events always give the same screen (tests rely on it).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::ops::Range;

use bytes::Bytes;
use crossterm::event::{KeyEvent, MouseEvent};

use crate::codec::{AnyFrame, amqp10, amqp091};
use crate::event::{CloseInfo, ConnId, Dir, Event, EventKind, FrameEvent, Timestamp, Violation};
use crate::state::ConnTracker;

use super::filter::{Filter, FrameFacts};
use super::input::{self, Action};
use super::views;

/// Knobs of the UI.
#[derive(Clone, Debug)]
pub struct TuiOptions {
    /// Frames kept in memory per connection; older ones are dropped from view (captures on
    /// disk remain complete).
    pub max_frames_per_conn: usize,
    /// Frame bytes kept in memory per connection (for the hex view); older frames are dropped
    /// from view beyond this as beyond `max_frames_per_conn`.
    pub max_bytes_per_conn: usize,
    /// Closed connections kept (with their frames); older ones are forgotten.
    pub max_closed_conns: usize,
    /// Violations kept in memory in total.
    pub max_violations: usize,
    /// Message bodies are cut at this many bytes in the detail view.
    pub max_body: usize,
    /// Frames larger than this are kept only in part (hex shows the first bytes; fields are
    /// decoded once on arrival).
    pub max_raw_per_frame: usize,
    /// Samples of link credit kept per link for the sparkline.
    pub credit_history: usize,
    /// Follow (tail) the frame list from the start.
    pub follow: bool,
    /// What the title bar says (e.g. `proxy :5673 -> 127.0.0.1:5672` or `replay x.jsonl`).
    pub title: String,
    /// Live traffic: ages grow with the wall clock (replay: ages end at the last event).
    pub live: bool,
    /// Track each connection's protocol state in the UI from the frames it receives (a
    /// second `ConnTracker`, off the relay path), unless the feed sends `AppEvent::State`.
    pub track_state: bool,
}

impl Default for TuiOptions {
    fn default() -> Self {
        TuiOptions {
            max_frames_per_conn: 10_000,
            max_bytes_per_conn: 32 * 1024 * 1024,
            max_violations: 50_000,
            max_closed_conns: 1000,
            max_body: 4096,
            max_raw_per_frame: 64 * 1024,
            credit_history: 64,
            follow: true,
            title: "amqpeek".into(),
            live: true,
            track_state: true,
        }
    }
}

/// Everything that can change the UI.
#[derive(Clone, Debug)]
pub enum AppEvent {
    /// An event from the pipeline (Connect, Header, Frame, Violation, Gap, Close; Data is used
    /// only to size connections and give malformed frames their bytes).
    Pipeline(Event),
    /// A connection's tracked state: `ConnTracker::state_name()` and `snapshot()`.
    State {
        /// Connection.
        conn: ConnId,
        /// When (the timestamp of the event after which the snapshot was taken).
        ts: Timestamp,
        /// State name for the connection list.
        name: String,
        /// Snapshot (sessions, links, channels...).
        snapshot: serde_json::Value,
    },
    /// The feeder has dropped this many events in total because the UI was behind.
    Dropped(u64),
    /// No more events will come (replay finished, or the proxy stopped).
    FeedEnded,
    /// Wall-clock time, for ages of live connections.
    Tick(Timestamp),
    /// A key press.
    Key(KeyEvent),
    /// A mouse event.
    Mouse(MouseEvent),
    /// The terminal has a new size.
    Resize(u16, u16),
}

/// The panes; `Tab` cycles in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pane {
    /// Connection list.
    Connections,
    /// Frame list.
    Frames,
    /// The selected frame: field tree and hex.
    #[default]
    Detail,
    /// Sessions / links / channels of the selected connection.
    State,
    /// All violations.
    Violations,
}

impl Pane {
    /// All panes in focus order.
    pub const ALL: [Pane; 5] = [
        Pane::Connections,
        Pane::Frames,
        Pane::Detail,
        Pane::State,
        Pane::Violations,
    ];
    fn next(self) -> Pane {
        let i = Pane::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Pane::ALL[(i + 1) % Pane::ALL.len()]
    }
    fn prev(self) -> Pane {
        let i = Pane::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Pane::ALL[(i + Pane::ALL.len() - 1) % Pane::ALL.len()]
    }
}

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

/// Which codec to re-decode a row's bytes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// AMQP 1.0 / SASL.
    Amqp10,
    /// AMQP 0-9-1.
    Amqp091,
    /// Not a frame.
    None,
}

/// One row of the frame list (kept per connection, bounded).
#[derive(Clone, Debug)]
pub struct Row {
    /// Global arrival number (orders rows across connections).
    pub seq: u64,
    /// Connection.
    pub conn: ConnId,
    /// When.
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
    /// The bytes (credentials masked; at most `max_raw_per_frame`).
    pub raw: Bytes,
    /// The frame's full length (may exceed `raw.len()`).
    pub len: usize,
    /// Codec to re-decode `raw` with for the detail view.
    pub decode_as: Proto,
    /// Fields decoded on arrival (rows that are not frames, or frames too big to keep whole).
    pub fields: Option<serde_json::Value>,
    /// The message this frame completes, as JSON.
    pub message: Option<serde_json::Value>,
    /// Per-field byte spans within `raw` (`source.address` -> 40..52), when the codec gives them.
    pub spans: Option<Vec<(String, Range<usize>)>>,
    /// Violations attached to this row.
    pub violations: Vec<Violation>,
}

impl Row {
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
        }
    }

    fn matches(&self, filter: &Filter) -> bool {
        if filter.is_empty() {
            return true;
        }
        let rules: Vec<String> = self.violations.iter().map(|v| v.rule.clone()).collect();
        filter.matches(&self.facts(&rules))
    }

    /// The fields of the frame as JSON (decoded again from `raw` when not kept).
    pub fn fields_json(&self) -> serde_json::Value {
        if let Some(f) = &self.fields {
            return f.clone();
        }
        let decoded = match self.decode_as {
            Proto::Amqp10 => amqp10::decode_frame(self.raw.clone(), self.offset)
                .map(|f| AnyFrame::Amqp10(f).fields_json()),
            Proto::Amqp091 => amqp091::decode_frame(self.raw.clone(), self.offset)
                .map(|f| AnyFrame::Amqp091(f).fields_json()),
            Proto::None => return serde_json::Value::Null,
        };
        match decoded {
            Ok(v) => v,
            Err(e) => serde_json::json!({ "decode-error": e.to_string() }),
        }
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
    /// Tracker state name.
    pub state: String,
    /// Tracker snapshot.
    pub snapshot: serde_json::Value,
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
    /// Bytes of `raw` kept in `rows`.
    pub raw_bytes: usize,
    /// Link credit samples per link key, oldest first.
    pub credit: BTreeMap<String, VecDeque<u64>>,
    link_names: HashMap<(Dir, u16, u64), String>,
    /// Malformed rows still waiting for their bytes from `Data` events.
    pending_raw: Vec<u64>,
}

impl Conn {
    /// The row with sequence number `seq`, if still kept.
    pub fn row(&self, seq: u64) -> Option<&Row> {
        let i = self.rows.binary_search_by_key(&seq, |r| r.seq).ok()?;
        self.rows.get(i)
    }
    fn row_mut(&mut self, seq: u64) -> Option<&mut Row> {
        let i = self.rows.binary_search_by_key(&seq, |r| r.seq).ok()?;
        self.rows.get_mut(i)
    }
}

/// A violation in the violations pane.
#[derive(Clone, Debug)]
pub struct ViolationRow {
    /// Connection.
    pub conn: ConnId,
    /// When.
    pub ts: Timestamp,
    /// The violation.
    pub violation: Violation,
    /// The frame-list row it belongs to, if any.
    pub seq: Option<u64>,
}

/// A list's cursor and scroll position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListState {
    /// Selected index.
    pub selected: usize,
    /// First visible index.
    pub offset: usize,
}

impl ListState {
    fn clamp(&mut self, len: usize, height: usize) {
        if len == 0 {
            *self = ListState::default();
            return;
        }
        self.selected = self.selected.min(len - 1);
        let h = height.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + h {
            self.offset = self.selected + 1 - h;
        }
        self.offset = self.offset.min(len.saturating_sub(h));
    }
    fn move_by(&mut self, delta: isize, len: usize, height: usize) {
        let s = self.selected as isize + delta;
        self.selected = s.clamp(0, len.saturating_sub(1) as isize) as usize;
        self.clamp(len, height);
    }
}

/// Overlays above the panes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlay {
    /// None.
    None,
    /// The key help.
    Help,
    /// Typing a filter.
    FilterInput {
        /// What has been typed.
        text: String,
        /// Parse error of `text`, shown live.
        error: Option<String>,
    },
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    /// Options.
    pub opts: TuiOptions,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// Latest known time (wall clock when live, else the latest event's).
    pub now: Timestamp,
    /// Connections by number.
    pub conns: BTreeMap<ConnId, Conn>,
    /// Focused pane.
    pub focus: Pane,
    /// Which of Detail / State / Violations the bottom area shows.
    pub bottom: Pane,
    /// Focused pane fills the screen.
    pub zoom: bool,
    /// Overlay.
    pub overlay: Overlay,
    /// Connection list cursor (0 = all connections).
    pub conn_list: ListState,
    /// The frame list: (conn, seq) of the rows passing the connection choice and the filter.
    pub view: VecDeque<(ConnId, u64)>,
    view_dangling: usize,
    /// Frame list cursor.
    pub frame_list: ListState,
    /// Frame list tails new frames.
    pub follow: bool,
    /// The applied filter.
    pub filter: Filter,
    /// Detail tree cursor.
    pub detail_list: ListState,
    /// Detail tree nodes whose default expansion was toggled (by path).
    pub toggled: HashSet<String>,
    /// Hex dump scroll (lines).
    pub hex_scroll: usize,
    /// State pane cursor.
    pub state_list: ListState,
    /// All violations (bounded).
    pub violations: VecDeque<ViolationRow>,
    /// Violations dropped to stay within the bound.
    pub violations_evicted: u64,
    /// Violations pane cursor.
    pub violation_list: ListState,
    /// Events the feeder dropped.
    pub dropped: u64,
    /// The feed has ended.
    pub feed_ended: bool,
    /// One-line message for the status bar (jump results, errors).
    pub message: Option<String>,
    /// The user asked to quit.
    pub quit: bool,
    next_seq: u64,
    trackers: HashMap<ConnId, Tracked>,
    conn_ids: Vec<ConnId>,
    /// Closed connections forgotten to stay within `max_closed_conns`.
    pub conns_forgotten: u64,
}

/// The UI's own state tracker of a connection (when the feed sends no state).
#[derive(Debug, Default)]
struct Tracked {
    tracker: ConnTracker,
    /// The feed sends this connection's state: do not track it here.
    external: bool,
    /// Frames were tracked since the state was last published.
    dirty: bool,
    /// When the state was last published.
    last: Option<Timestamp>,
    /// The state name last published.
    name: String,
}

impl App {
    /// An empty UI of the given terminal size.
    pub fn new(opts: TuiOptions, size: (u16, u16)) -> App {
        let follow = opts.follow;
        App {
            opts,
            size,
            now: Timestamp(0),
            conns: BTreeMap::new(),
            focus: Pane::Frames,
            bottom: Pane::Detail,
            zoom: false,
            overlay: Overlay::None,
            conn_list: ListState::default(),
            view: VecDeque::new(),
            view_dangling: 0,
            frame_list: ListState::default(),
            follow,
            filter: Filter::default(),
            detail_list: ListState::default(),
            toggled: HashSet::new(),
            hex_scroll: 0,
            state_list: ListState::default(),
            violations: VecDeque::new(),
            violations_evicted: 0,
            violation_list: ListState::default(),
            dropped: 0,
            feed_ended: false,
            message: None,
            quit: false,
            next_seq: 0,
            trackers: HashMap::new(),
            conn_ids: Vec::new(),
            conns_forgotten: 0,
        }
    }

    /// The connection chosen in the connection list (`None` = all).
    pub fn selected_conn(&self) -> Option<ConnId> {
        match self.conn_list.selected {
            0 => None,
            i => self.conn_ids.get(i - 1).copied(),
        }
    }

    /// Connection numbers in list order.
    pub fn conn_ids(&self) -> &[ConnId] {
        &self.conn_ids
    }

    /// Forget the oldest closed connections once there are more than `max_closed_conns`
    /// (a tenth more, so the list is compacted rarely).
    fn forget_closed(&mut self) {
        let max = self.opts.max_closed_conns.max(1);
        let closed: Vec<ConnId> = self
            .conn_ids
            .iter()
            .filter(|id| self.conns.get(id).is_some_and(|c| c.closed.is_some()))
            .copied()
            .collect();
        if closed.len() <= max + max / 10 {
            return;
        }
        let sel = self.selected_conn();
        let gone: HashSet<ConnId> = closed[..closed.len() - max].iter().copied().collect();
        for id in &gone {
            self.conns.remove(id);
            self.trackers.remove(id);
        }
        self.conns_forgotten += gone.len() as u64;
        self.conn_ids.retain(|id| !gone.contains(id));
        self.conn_list.selected = match sel {
            Some(s) if !gone.contains(&s) => self.conn_ids.binary_search(&s).map_or(0, |p| p + 1),
            _ => 0,
        };
        self.rebuild_view();
        self.clamp_all();
    }

    /// Resolve a frame-list entry.
    pub fn row(&self, conn: ConnId, seq: u64) -> Option<&Row> {
        self.conns.get(&conn)?.row(seq)
    }

    /// The selected frame-list row.
    pub fn selected_row(&self) -> Option<&Row> {
        let (c, s) = *self.view.get(self.frame_list.selected)?;
        self.row(c, s)
    }

    /// Rows in scope of the connection choice (before the filter).
    pub fn rows_in_scope(&self) -> usize {
        match self.selected_conn() {
            Some(c) => self.conns.get(&c).map_or(0, |c| c.rows.len()),
            None => self.conns.values().map(|c| c.rows.len()).sum(),
        }
    }

    /// Rows dropped from view for the connection choice.
    pub fn evicted_in_scope(&self) -> u64 {
        match self.selected_conn() {
            Some(c) => self.conns.get(&c).map_or(0, |c| c.evicted),
            None => self.conns.values().map(|c| c.evicted).sum(),
        }
    }

    /// The number of rows each list pane shows at the current size.
    pub fn page(&self, pane: Pane) -> usize {
        let areas = views::layout(self, self.size);
        views::list_height(areas.rect(pane), pane)
    }

    /// Apply one event.
    pub fn handle(&mut self, ev: AppEvent) {
        let conns_before = self.conns.len();
        self.apply(ev);
        if self.conns.len() != conns_before {
            // The connection list grew: the panes below it may have shrunk.
            self.clamp_all();
        }
    }

    fn apply(&mut self, ev: AppEvent) {
        match ev {
            AppEvent::Pipeline(e) => self.pipeline(e),
            AppEvent::State {
                conn,
                ts,
                name,
                snapshot,
            } => {
                self.trackers.entry(conn).or_default().external = true;
                self.state(conn, ts, name, snapshot)
            }
            AppEvent::Dropped(n) => self.dropped = self.dropped.max(n),
            AppEvent::FeedEnded => {
                self.feed_ended = true;
                self.publish_dirty_states();
            }
            AppEvent::Tick(ts) => {
                self.now = self.now.max(ts);
                self.publish_dirty_states();
            }
            AppEvent::Resize(w, h) => {
                self.size = (w, h);
                self.clamp_all();
            }
            AppEvent::Key(k) => {
                let filtering = matches!(self.overlay, Overlay::FilterInput { .. });
                if let Some(a) = input::key_action(k, filtering) {
                    self.act(a);
                }
            }
            AppEvent::Mouse(m) => {
                if let Some(a) = input::mouse_action(m) {
                    self.act(a);
                }
            }
        }
    }

    // ----- pipeline ------------------------------------------------------------------------

    fn conn_mut(&mut self, id: ConnId, ts: Timestamp) -> &mut Conn {
        if !self.conns.contains_key(&id) {
            let at = self.conn_ids.partition_point(|x| *x < id);
            self.conn_ids.insert(at, id);
        }
        let c = self.conns.entry(id).or_insert_with(|| Conn {
            id,
            state: "-".into(),
            first_ts: ts,
            ..Default::default()
        });
        c.last_ts = c.last_ts.max(ts);
        c
    }

    /// Track the connection's state here when the feed does not send it.
    fn track(&mut self, e: &Event) {
        if !self.opts.track_state {
            return;
        }
        let t = self.trackers.entry(e.conn).or_default();
        if t.external {
            return;
        }
        // The inspector has reported these violations already.
        let mut ignored = Vec::new();
        let closing = match &e.kind {
            EventKind::Header {
                dir,
                offset,
                header,
                ..
            } => {
                t.tracker.header(*dir, *offset, *header, e.ts, &mut ignored);
                false
            }
            EventKind::Frame(f) => {
                t.tracker.frame(f, e.ts, &mut ignored);
                false
            }
            EventKind::Close(_) => {
                t.tracker.close(e.ts, &mut ignored);
                true
            }
            _ => return,
        };
        t.dirty = true;
        let name = t.tracker.state_name();
        let due = t
            .last
            .is_none_or(|l| e.ts.0.saturating_sub(l.0) >= super::STATE_INTERVAL_US);
        if closing || due || name != t.name {
            self.publish_state(e.conn, e.ts);
        }
    }

    fn publish_state(&mut self, conn: ConnId, ts: Timestamp) {
        let Some(t) = self.trackers.get_mut(&conn) else {
            return;
        };
        t.dirty = false;
        t.last = Some(ts);
        t.name = t.tracker.state_name();
        let (name, snapshot) = (t.name.clone(), t.tracker.snapshot());
        self.state(conn, ts, name, snapshot);
    }

    fn publish_dirty_states(&mut self) {
        let dirty: Vec<ConnId> = self
            .trackers
            .iter()
            .filter(|(_, t)| t.dirty && !t.external)
            .map(|(c, _)| *c)
            .collect();
        for c in dirty {
            let ts = self.conns.get(&c).map_or(self.now, |c| c.last_ts);
            self.publish_state(c, ts);
        }
    }

    fn pipeline(&mut self, e: Event) {
        self.track(&e);
        self.now = self.now.max(e.ts);
        let (conn, ts) = (e.conn, e.ts);
        let before = self.conns.len();
        self.conn_mut(conn, ts);
        if self.conns.len() != before && self.conn_list.selected > 0 {
            // A new connection sorts last (numbers grow), but keep the cursor on its conn.
            let sel = self.conn_list.selected;
            let n = self.conns.len();
            if sel >= n {
                self.conn_list.selected = n.min(sel);
            }
        }
        match e.kind {
            EventKind::Connect { client, upstream } => {
                let c = self.conn_mut(conn, ts);
                c.client = Some(client);
                c.upstream = Some(upstream);
            }
            EventKind::Header {
                dir,
                offset,
                header,
                raw,
            } => {
                let c = self.conn_mut(conn, ts);
                if c.proto.is_empty() || header.proto_name() != "amqp-sasl" {
                    c.proto = header.proto_name().to_string();
                }
                let row = Row {
                    seq: 0,
                    conn,
                    ts,
                    dir: Some(dir),
                    offset,
                    kind: RowKind::Header,
                    channel: None,
                    name: "header".into(),
                    proto: header.proto_name(),
                    summary: format!("{} protocol header", header.proto_name()),
                    link: None,
                    len: raw.len(),
                    raw: Bytes::copy_from_slice(&raw),
                    decode_as: Proto::None,
                    fields: Some(serde_json::json!({
                        "protocol": header.proto_name(),
                        "bytes": hex::encode(&raw),
                    })),
                    message: None,
                    spans: None,
                    violations: Vec::new(),
                };
                self.push_row(row);
            }
            EventKind::Frame(f) => {
                let row = self.frame_row(conn, ts, &f);
                let c = self.conn_mut(conn, ts);
                c.frames[f.dir.index()] += 1;
                self.push_row(row);
            }
            EventKind::Violation(v) => self.violation(conn, ts, v),
            EventKind::Data { dir, offset, bytes } => self.data(conn, ts, dir, offset, bytes),
            // Shown through the `Data` events that carry the same bytes, and the violations.
            EventKind::Undecoded { .. } => {}
            EventKind::Gap {
                dir,
                offset,
                len,
                reason,
            } => {
                let row = Row {
                    seq: 0,
                    conn,
                    ts,
                    dir: Some(dir),
                    offset,
                    kind: RowKind::Gap,
                    channel: None,
                    name: "gap".into(),
                    proto: "",
                    summary: if len > 0 {
                        format!("{len} bytes not seen: {reason}")
                    } else {
                        format!("bytes not seen: {reason}")
                    },
                    link: None,
                    raw: Bytes::new(),
                    len: 0,
                    decode_as: Proto::None,
                    fields: Some(serde_json::json!({"len": len, "reason": reason})),
                    message: None,
                    spans: None,
                    violations: Vec::new(),
                };
                self.push_row(row);
            }
            EventKind::Close(info) => {
                let c = self.conn_mut(conn, ts);
                c.bytes = [
                    c.bytes[0].max(info.bytes_c2s),
                    c.bytes[1].max(info.bytes_s2c),
                ];
                let row = Row {
                    seq: 0,
                    conn,
                    ts,
                    dir: None,
                    offset: 0,
                    kind: RowKind::Close,
                    channel: None,
                    name: "close".into(),
                    proto: "",
                    summary: format!(
                        "connection closed: {} ({} bytes ->, {} bytes <-)",
                        info.reason, info.bytes_c2s, info.bytes_s2c
                    ),
                    link: None,
                    raw: Bytes::new(),
                    len: 0,
                    decode_as: Proto::None,
                    fields: Some(serde_json::json!({
                        "reason": info.reason,
                        "bytes_c2s": info.bytes_c2s,
                        "bytes_s2c": info.bytes_s2c,
                    })),
                    message: None,
                    spans: None,
                    violations: Vec::new(),
                };
                c.closed = Some(info);
                self.push_row(row);
                self.forget_closed();
            }
        }
    }

    fn frame_row(&mut self, conn: ConnId, ts: Timestamp, f: &FrameEvent) -> Row {
        let (proto, decode_as) = match &f.frame {
            AnyFrame::Amqp10(_) if f.frame.name().starts_with("sasl") => {
                ("amqp-sasl", Proto::Amqp10)
            }
            AnyFrame::Amqp10(_) => ("amqp-1.0", Proto::Amqp10),
            AnyFrame::Amqp091(_) => ("amqp-0-9-1", Proto::Amqp091),
        };
        let name = f.frame.name();
        let channel = f.frame.channel();
        // Link names: remember attach name per (dir, channel, handle); look it up for the
        // frames that carry a handle.
        let mut link = None;
        if decode_as == Proto::Amqp10
            && matches!(
                name,
                "attach" | "flow" | "transfer" | "detach" | "disposition"
            )
        {
            let fields = f.frame.fields_json();
            let handle = fields.get("handle").and_then(|h| h.as_u64());
            let c = self.conn_mut(conn, ts);
            if name == "attach" {
                if let (Some(h), Some(n)) = (handle, fields.get("name").and_then(|n| n.as_str())) {
                    c.link_names.insert((f.dir, channel, h), n.to_string());
                    link = Some(n.to_string());
                }
            } else if let Some(h) = handle {
                link = c.link_names.get(&(f.dir, channel, h)).cloned();
                if name == "detach" && fields.get("closed").and_then(|v| v.as_bool()) == Some(true)
                {
                    c.link_names.remove(&(f.dir, channel, h));
                }
            }
        }
        let keep = f.raw.len().min(self.opts.max_raw_per_frame);
        let fields = (f.raw.len() > keep).then(|| f.frame.fields_json());
        let message = f.message.as_ref().map(|m| match m {
            Ok(m) => m.to_json(self.opts.max_body),
            Err(e) => serde_json::json!({ "decode-error": e.to_string() }),
        });
        Row {
            seq: 0,
            conn,
            ts,
            dir: Some(f.dir),
            offset: f.offset,
            kind: RowKind::Frame,
            channel: Some(channel),
            name: name.to_string(),
            proto,
            summary: f.frame.summary(),
            link,
            raw: Bytes::copy_from_slice(&f.raw[..keep]),
            len: f.raw.len(),
            decode_as,
            fields,
            message,
            spans: frame_spans(&f.frame),
            violations: Vec::new(),
        }
    }

    fn push_row(&mut self, mut row: Row) {
        row.seq = self.next_seq;
        self.next_seq += 1;
        let conn = row.conn;
        let seq = row.seq;
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let visible = in_scope && row.matches(&self.filter);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.raw_bytes += row.raw.len();
        c.rows.push_back(row);
        if visible {
            self.view.push_back((conn, seq));
        }
        self.evict(conn);
        if self.follow {
            self.frame_list.selected = self.view.len().saturating_sub(1);
        }
        let h = self.page(Pane::Frames);
        self.frame_list.clamp(self.view.len(), h);
    }

    /// Drop `conn`'s oldest rows beyond the frame and byte bounds, and their list entries.
    fn evict(&mut self, conn: ConnId) {
        let max = self.opts.max_frames_per_conn.max(1);
        let max_bytes = self.opts.max_bytes_per_conn;
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        while c.rows.len() > max || (c.raw_bytes > max_bytes && c.rows.len() > 1) {
            let Some(old) = c.rows.pop_front() else { break };
            c.raw_bytes = c.raw_bytes.saturating_sub(old.raw.len());
            c.evicted += 1;
            if !in_scope {
                continue;
            }
            if self.view.front() == Some(&(conn, old.seq)) {
                // The usual case: the oldest listed row goes; the cursor stays on its row.
                self.view.pop_front();
                self.frame_list.selected = self.frame_list.selected.saturating_sub(1);
                self.frame_list.offset = self.frame_list.offset.saturating_sub(1);
            } else if old.matches(&self.filter) {
                self.view_dangling += 1;
            }
        }
        if self.view_dangling > 256 || self.view_dangling * 8 > self.view.len() {
            self.compact_view();
        }
    }

    /// Drop view entries whose rows were evicted, keeping the cursor on its row.
    fn compact_view(&mut self) {
        let sel = self.view.get(self.frame_list.selected).copied();
        let conns = &self.conns;
        self.view
            .retain(|(c, s)| conns.get(c).is_some_and(|c| c.row(*s).is_some()));
        self.view_dangling = 0;
        self.frame_list.selected = match sel {
            Some((_, s)) => self.view.partition_point(|(_, x)| *x < s),
            None => 0,
        };
        if self.follow {
            self.frame_list.selected = self.view.len().saturating_sub(1);
        }
        let h = self.page(Pane::Frames);
        self.frame_list.clamp(self.view.len(), h);
    }

    fn violation(&mut self, conn: ConnId, ts: Timestamp, v: Violation) {
        let c = self.conn_mut(conn, ts);
        c.violations += 1;
        // Attach to the most recent row of the same direction and offset.
        let seq = c
            .rows
            .iter()
            .rev()
            .take(64)
            .find(|r| r.dir == Some(v.dir) && r.offset == v.offset && r.kind != RowKind::Close)
            .map(|r| r.seq);
        let seq = match seq {
            Some(s) => {
                let filter = self.filter.clone();
                let in_scope = self.selected_conn().is_none_or(|x| x == conn);
                let c = self.conn_mut(conn, ts);
                if let Some(r) = c.row_mut(s) {
                    let was = r.matches(&filter);
                    r.violations.push(v.clone());
                    let now = r.matches(&filter);
                    if in_scope && was != now {
                        self.rebuild_view();
                    }
                }
                Some(s)
            }
            None if v.rule.starts_with("codec.") => {
                let row = Row {
                    seq: 0,
                    conn,
                    ts,
                    dir: Some(v.dir),
                    offset: v.offset,
                    kind: RowKind::Malformed,
                    channel: None,
                    name: "malformed".into(),
                    proto: "",
                    summary: v.message.clone(),
                    link: None,
                    raw: Bytes::new(),
                    len: 0,
                    decode_as: Proto::None,
                    fields: Some(serde_json::json!({
                        "rule": v.rule,
                        "spec": v.spec,
                        "message": v.message,
                    })),
                    message: None,
                    spans: None,
                    violations: vec![v.clone()],
                };
                let s = self.next_seq;
                self.push_row(row);
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.pending_raw.push(s);
                }
                Some(s)
            }
            None => None,
        };
        self.violations.push_back(ViolationRow {
            conn,
            ts,
            violation: v,
            seq,
        });
        while self.violations.len() > self.opts.max_violations.max(1) {
            self.violations.pop_front();
            self.violations_evicted += 1;
            self.violation_list.selected = self.violation_list.selected.saturating_sub(1);
            self.violation_list.offset = self.violation_list.offset.saturating_sub(1);
        }
    }

    fn data(&mut self, conn: ConnId, ts: Timestamp, dir: Dir, offset: u64, bytes: Bytes) {
        let max_raw = self.opts.max_raw_per_frame;
        let c = self.conn_mut(conn, ts);
        let end = offset.saturating_add(bytes.len() as u64);
        c.bytes[dir.index()] = c.bytes[dir.index()].max(end);
        if c.pending_raw.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut c.pending_raw);
        let mut keep = Vec::new();
        for s in pending {
            let Some(r) = c.row(s) else { continue };
            if r.dir != Some(dir) {
                keep.push(s);
                continue;
            }
            if r.offset < offset || r.offset >= end {
                if r.offset >= end {
                    keep.push(s);
                }
                continue;
            }
            // The bytes run to the next row of this direction, or the end of the data.
            // Rows after it in arrival order; only the next few can be its neighbour.
            let at = c.rows.partition_point(|x| x.seq <= s);
            let next = c
                .rows
                .range(at..)
                .take(64)
                .filter(|x| x.dir == Some(dir) && x.offset > r.offset)
                .map(|x| x.offset)
                .min()
                .unwrap_or(end)
                .min(end);
            let from = (r.offset - offset) as usize;
            let to = ((next - offset) as usize)
                .min(from + max_raw)
                .min(bytes.len());
            let slice = Bytes::copy_from_slice(&bytes[from..to]);
            let len = (next - r.offset) as usize;
            c.raw_bytes += slice.len();
            if let Some(r) = c.row_mut(s) {
                r.raw = slice;
                r.len = len;
            }
        }
        c.pending_raw = keep;
        self.evict(conn);
        let h = self.page(Pane::Frames);
        self.frame_list.clamp(self.view.len(), h);
    }

    fn state(&mut self, conn: ConnId, ts: Timestamp, name: String, snapshot: serde_json::Value) {
        let hist = self.opts.credit_history.max(1);
        let c = self.conn_mut(conn, ts);
        c.state = name;
        for (key, credit) in views::links::credit_samples(&snapshot) {
            let h = c.credit.entry(key).or_default();
            h.push_back(credit);
            while h.len() > hist {
                h.pop_front();
            }
        }
        c.snapshot = snapshot;
    }

    /// Recompute the frame list from the connection choice and the filter, keeping the
    /// cursor on the same row when it is still listed.
    pub fn rebuild_view(&mut self) {
        let sel = self.view.get(self.frame_list.selected).copied();
        let scope = self.selected_conn();
        let mut view = Vec::new();
        for c in self.conns.values() {
            if scope.is_some_and(|s| s != c.id) {
                continue;
            }
            for r in &c.rows {
                if r.matches(&self.filter) {
                    view.push((c.id, r.seq));
                }
            }
        }
        if scope.is_none() {
            view.sort_unstable_by_key(|(_, s)| *s);
        }
        self.view = view.into();
        self.view_dangling = 0;
        self.frame_list.selected = if self.follow {
            self.view.len().saturating_sub(1)
        } else {
            match sel {
                Some((_, s)) => self
                    .view
                    .partition_point(|(_, x)| *x < s)
                    .min(self.view.len().saturating_sub(1)),
                None => 0,
            }
        };
        let h = self.page(Pane::Frames);
        self.frame_list.clamp(self.view.len(), h);
    }

    // ----- user actions --------------------------------------------------------------------

    fn clamp_all(&mut self) {
        let n = self.conns.len() + 1;
        let h = self.page(Pane::Connections);
        self.conn_list.clamp(n, h);
        let h = self.page(Pane::Frames);
        self.frame_list.clamp(self.view.len(), h);
        let h = self.page(Pane::Violations);
        self.violation_list.clamp(self.violations.len(), h);
        let n = self.detail_len();
        let h = self.page(Pane::Detail);
        self.detail_list.clamp(n, h);
        let n = self.state_len();
        let h = self.page(Pane::State);
        self.state_list.clamp(n, h);
    }

    fn detail_len(&self) -> usize {
        self.selected_row()
            .map_or(0, |r| views::detail::tree_nodes(r, &self.toggled).len())
    }

    fn state_len(&self) -> usize {
        self.state_snapshot()
            .map_or(0, |s| views::links::state_items(s).len())
    }

    /// The snapshot the state pane shows (selected connection, or the selected frame's).
    pub fn state_snapshot(&self) -> Option<&serde_json::Value> {
        let id = self
            .selected_conn()
            .or_else(|| self.selected_row().map(|r| r.conn))?;
        self.conns.get(&id).map(|c| &c.snapshot)
    }

    /// The connection the state pane shows.
    pub fn state_conn(&self) -> Option<&Conn> {
        let id = self
            .selected_conn()
            .or_else(|| self.selected_row().map(|r| r.conn))?;
        self.conns.get(&id)
    }

    fn focus(&mut self, p: Pane) {
        self.focus = p;
        if matches!(p, Pane::Detail | Pane::State | Pane::Violations) {
            self.bottom = p;
        }
        self.clamp_all();
    }

    fn list_len(&self, p: Pane) -> usize {
        match p {
            Pane::Connections => self.conns.len() + 1,
            Pane::Frames => self.view.len(),
            Pane::Detail => self.detail_len(),
            Pane::State => self.state_len(),
            Pane::Violations => self.violations.len(),
        }
    }

    fn list_mut(&mut self, p: Pane) -> &mut ListState {
        match p {
            Pane::Connections => &mut self.conn_list,
            Pane::Frames => &mut self.frame_list,
            Pane::Detail => &mut self.detail_list,
            Pane::State => &mut self.state_list,
            Pane::Violations => &mut self.violation_list,
        }
    }

    fn move_in(&mut self, p: Pane, delta: isize) {
        let len = self.list_len(p);
        let h = self.page(p);
        let before = self.frame_list.selected;
        let before_conn = self.conn_list.selected;
        self.list_mut(p).move_by(delta, len, h);
        match p {
            Pane::Frames => {
                if delta < 0 {
                    self.follow = false;
                }
                if self.frame_list.selected != before {
                    self.detail_list = ListState::default();
                    self.hex_scroll = 0;
                }
            }
            Pane::Connections if self.conn_list.selected != before_conn => {
                self.state_list = ListState::default();
                self.rebuild_view();
            }
            _ => {}
        }
    }

    /// Perform one user action.
    pub fn act(&mut self, a: Action) {
        if !matches!(a, Action::FilterChar(_) | Action::FilterBackspace) {
            self.message = None;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::Help => {
                self.overlay = if self.overlay == Overlay::Help {
                    Overlay::None
                } else {
                    Overlay::Help
                }
            }
            Action::Escape => {
                if self.overlay != Overlay::None {
                    self.overlay = Overlay::None;
                } else if self.zoom {
                    self.zoom = false;
                    self.clamp_all();
                } else if !self.filter.is_empty() {
                    self.filter = Filter::default();
                    self.rebuild_view();
                    self.message = Some("filter cleared".into());
                }
            }
            Action::OpenFilter => {
                self.overlay = Overlay::FilterInput {
                    text: self.filter.source.clone(),
                    error: None,
                }
            }
            Action::FilterChar(ch) => {
                if let Overlay::FilterInput { text, error } = &mut self.overlay {
                    text.push(ch);
                    *error = Filter::parse(text).err().map(|e| e.to_string());
                }
            }
            Action::FilterBackspace => {
                if let Overlay::FilterInput { text, error } = &mut self.overlay {
                    text.pop();
                    *error = Filter::parse(text).err().map(|e| e.to_string());
                }
            }
            Action::FilterSubmit => {
                if let Overlay::FilterInput { text, .. } = &self.overlay {
                    match Filter::parse(text) {
                        Ok(f) => {
                            self.filter = f;
                            self.overlay = Overlay::None;
                            self.rebuild_view();
                        }
                        Err(e) => {
                            let text = text.clone();
                            self.overlay = Overlay::FilterInput {
                                text,
                                error: Some(e.to_string()),
                            };
                        }
                    }
                }
            }
            Action::FilterCancel => self.overlay = Overlay::None,
            Action::Zoom => {
                self.zoom = !self.zoom;
                self.clamp_all();
            }
            Action::FocusNext => self.focus(self.focus.next()),
            Action::FocusPrev => self.focus(self.focus.prev()),
            Action::FocusPane(p) => self.focus(p),
            Action::Up => self.move_in(self.focus, -1),
            Action::Down => self.move_in(self.focus, 1),
            Action::PageUp => {
                let h = self.page(self.focus).max(2) as isize - 1;
                self.move_in(self.focus, -h)
            }
            Action::PageDown => {
                let h = self.page(self.focus).max(2) as isize - 1;
                self.move_in(self.focus, h)
            }
            Action::Home => self.move_in(self.focus, isize::MIN / 2),
            Action::End => {
                self.move_in(self.focus, isize::MAX / 2);
                if self.focus == Pane::Frames {
                    self.follow = true;
                }
            }
            Action::Follow => {
                self.follow = true;
                self.frame_list.selected = self.view.len().saturating_sub(1);
                let h = self.page(Pane::Frames);
                self.frame_list.clamp(self.view.len(), h);
            }
            Action::Enter => self.enter(),
            Action::Collapse | Action::Expand => {
                if self.focus == Pane::Detail {
                    self.toggle_node(Some(matches!(a, Action::Expand)));
                }
            }
            Action::ToggleNode => {
                if self.focus == Pane::Detail {
                    self.toggle_node(None);
                }
            }
            Action::AllConnections => {
                self.conn_list.selected = 0;
                self.rebuild_view();
            }
            Action::NextViolation | Action::PrevViolation => {
                let fwd = a == Action::NextViolation;
                self.jump_violation_frame(fwd)
            }
            Action::HexUp => self.hex_scroll = self.hex_scroll.saturating_sub(4),
            Action::HexDown => self.hex_scroll = self.hex_scroll.saturating_add(4),
            Action::Scroll { x, y, down } => {
                if let Some(p) = self.pane_at(x, y) {
                    self.move_in(p, if down { 3 } else { -3 });
                }
            }
            Action::Click { x, y } => self.click(x, y),
        }
    }

    fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        let areas = views::layout(self, self.size);
        Pane::ALL.into_iter().find(|p| {
            let r = areas.rect(*p);
            r.width > 0 && x >= r.x && x < r.right() && y >= r.y && y < r.bottom()
        })
    }

    fn click(&mut self, x: u16, y: u16) {
        if self.overlay != Overlay::None {
            self.overlay = Overlay::None;
            return;
        }
        let Some(p) = self.pane_at(x, y) else { return };
        self.focus(p);
        let areas = views::layout(self, self.size);
        let Some(first) = views::first_row_y(areas.rect(p), p) else {
            return;
        };
        if y < first {
            return;
        }
        let offset = match p {
            Pane::Connections => self.conn_list.offset,
            Pane::Frames => self.frame_list.offset,
            Pane::Detail => self.detail_list.offset,
            Pane::State => self.state_list.offset,
            Pane::Violations => self.violation_list.offset,
        };
        let target = offset + (y - first) as usize;
        if target >= self.list_len(p) {
            return;
        }
        let cur = match p {
            Pane::Connections => self.conn_list.selected,
            Pane::Frames => self.frame_list.selected,
            Pane::Detail => self.detail_list.selected,
            Pane::State => self.state_list.selected,
            Pane::Violations => self.violation_list.selected,
        };
        self.move_in(p, target as isize - cur as isize);
        if p == Pane::Frames && target + 1 < self.view.len() {
            self.follow = false;
        }
    }

    fn toggle_node(&mut self, want_open: Option<bool>) {
        let Some(row) = self.selected_row() else {
            return;
        };
        let nodes = views::detail::tree_nodes(row, &self.toggled);
        let Some(n) = nodes.get(self.detail_list.selected) else {
            return;
        };
        if !n.container {
            return;
        }
        let open = n.expanded;
        if want_open.is_none_or(|w| w != open) {
            let path = n.path.clone();
            if !self.toggled.remove(&path) {
                self.toggled.insert(path);
            }
        }
        let len = self.detail_len();
        let h = self.page(Pane::Detail);
        self.detail_list.clamp(len, h);
    }

    fn enter(&mut self) {
        match self.focus {
            Pane::Connections => self.focus(Pane::Frames),
            Pane::Frames => self.focus(Pane::Detail),
            Pane::Detail => self.toggle_node(None),
            Pane::Violations => self.jump_to_violation(),
            Pane::State => {
                let item = self.state_snapshot().and_then(|s| {
                    views::links::state_items(s)
                        .get(self.state_list.selected)
                        .and_then(|i| i.filter.clone())
                });
                if let Some(f) = item {
                    match Filter::parse(&f) {
                        Ok(filter) => {
                            self.filter = filter;
                            self.follow = false;
                            self.rebuild_view();
                            self.message = Some(format!("filter: {f}"));
                            self.focus(Pane::Frames);
                        }
                        Err(e) => self.message = Some(e.to_string()),
                    }
                }
            }
        }
    }

    /// Select the frame of the selected violation (matching conn + dir + offset).
    fn jump_to_violation(&mut self) {
        let Some(v) = self.violations.get(self.violation_list.selected).cloned() else {
            return;
        };
        let seq = v.seq.or_else(|| {
            self.conns.get(&v.conn).and_then(|c| {
                c.rows
                    .iter()
                    .rev()
                    .find(|r| r.dir == Some(v.violation.dir) && r.offset == v.violation.offset)
                    .map(|r| r.seq)
            })
        });
        let Some(seq) = seq.filter(|s| self.row(v.conn, *s).is_some()) else {
            self.message = Some(format!(
                "the frame at {} offset {} is no longer in memory",
                v.violation.dir.as_str(),
                v.violation.offset
            ));
            return;
        };
        // Show the frame's connection, clearing a filter that hides it.
        if let Ok(pos) = self.conn_ids.binary_search(&v.conn)
            && self.selected_conn().is_some_and(|c| c != v.conn)
        {
            self.conn_list.selected = pos + 1;
            let h = self.page(Pane::Connections);
            self.conn_list.clamp(self.conns.len() + 1, h);
        }
        self.follow = false;
        self.rebuild_view();
        if !self.view.contains(&(v.conn, seq)) {
            self.filter = Filter::default();
            self.rebuild_view();
            self.message = Some("filter cleared to show the frame".into());
        }
        if let Some(i) = self.view.iter().position(|e| *e == (v.conn, seq)) {
            self.frame_list.selected = i;
            // Centre the frame.
            let h = self.page(Pane::Frames);
            self.frame_list.offset = i.saturating_sub(h / 2);
            self.frame_list.clamp(self.view.len(), h);
            self.detail_list = ListState::default();
            self.hex_scroll = 0;
            self.focus(Pane::Frames);
        }
    }

    /// `n` / `N`: the next / previous frame in the list with a violation.
    fn jump_violation_frame(&mut self, forward: bool) {
        let cur = self.frame_list.selected;
        let has = |app: &App, i: usize| {
            app.view
                .get(i)
                .and_then(|(c, s)| app.row(*c, *s))
                .is_some_and(|r| !r.violations.is_empty())
        };
        let found = if forward {
            (cur + 1..self.view.len()).find(|i| has(self, *i))
        } else {
            (0..cur).rev().find(|i| has(self, *i))
        };
        match found {
            Some(i) => {
                self.follow = false;
                self.frame_list.selected = i;
                let h = self.page(Pane::Frames);
                self.frame_list.clamp(self.view.len(), h);
                self.detail_list = ListState::default();
                self.focus(Pane::Frames);
            }
            None => {
                self.message = Some(if forward {
                    "no later frame with a violation".into()
                } else {
                    "no earlier frame with a violation".into()
                })
            }
        }
    }
}

/// Per-field byte spans of a frame, within its raw bytes: AMQP 1.0 performative and SASL fields
/// by their spec names (in spec order), and `$payload` for a transfer's message bytes. AMQP
/// 0-9-1 frames have none yet (the hex dump then highlights nothing).
pub fn frame_spans(frame: &AnyFrame) -> Option<Vec<(String, Range<usize>)>> {
    match frame {
        AnyFrame::Amqp10(f) => {
            let c = f.composite()?;
            let spans = c.spans(&f.raw);
            let mut out: Vec<(String, Range<usize>)> = c
                .def
                .fields
                .iter()
                .zip(spans)
                .map(|(fd, span)| (fd.name.to_string(), span))
                .collect();
            if !f.payload().is_empty() {
                out.push((
                    super::views::detail::PAYLOAD_SPAN.to_string(),
                    f.payload_start..f.raw.len(),
                ));
            }
            Some(out)
        }
        AnyFrame::Amqp091(_) => None,
    }
}
