//! The UI's data model: what it keeps of each connection (its frame-list rows, counters and the
//! tracker's latest state) and of each violation, built from pipeline events only. The row
//! itself ([`Row`]) is the row model's (`browse::row`), which the pager shares.
//!
//! Frames arrive decoded and shared ([`FrameEvent`] in an `Arc`): a row keeps the frame itself,
//! and its field tree, message and field spans come from it when shown. Nothing here decodes
//! bytes or tracks protocol state; the state is the pipeline's [`Snapshot`].

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::browse::row::snapshot_bytes;
pub use crate::browse::row::{Row, RowKind};
use crate::event::Snapshot;
use crate::event::{CloseInfo, ConnId, FrameEvent, FrameRef, Timestamp, Violation};

/// The state name a tracker gives a connection whose state missed bytes may have changed.
pub const UNKNOWN_STATE: &str = "UNKNOWN";

/// What the live view's inspection skimmed (passed over undecoded while it could not keep up
/// with the relay), from the `gap` rows that report it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skimmed {
    /// Frames not decoded.
    pub frames: u64,
    /// Bytes not decoded.
    pub bytes: u64,
    /// When the latest skim was reported.
    pub last: Timestamp,
}

impl Skimmed {
    /// The prefix of a gap's reason when the inspection skimmed it; the reason goes on
    /// `(N frame(s) not decoded)`.
    pub const REASON: &'static str = "skimmed:";

    /// Count the gap of `len` bytes with `reason` at `ts` when it is a skim; whether it was.
    pub fn count(&mut self, ts: Timestamp, len: u64, reason: &str) -> bool {
        if !reason.starts_with(Self::REASON) {
            return false;
        }
        let frames = reason
            .split_once('(')
            .and_then(|(_, n)| n.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        self.frames = self.frames.saturating_add(frames);
        self.bytes = self.bytes.saturating_add(len);
        self.last = self.last.max(ts);
        true
    }
}

/// What the live view's spool ring holds of the session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpoolState {
    /// The number of the first row the ring still holds: the rows before it are gone.
    pub from: u64,
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

    /// The link an AMQP 1.0 frame belongs to, as its context says (the attach that named its
    /// handle: an attach names it, a detach with closed=true forgets it).
    pub fn link_of(&self, f: &FrameEvent) -> Option<String> {
        f.context.link_name().map(String::from)
    }

    /// Take the tracker state published at `ts`, unless a later one is already shown (a state
    /// kept aside while the feed was full can arrive after a newer one).
    ///
    /// A tracker that lost track of the connection's state to missed bytes names it `UNKNOWN`;
    /// the list then shows the state last known with a `?` (`OPEN?`: open as last seen, and
    /// bytes were missed since), as the state pane marks its values, and `UNKNOWN` only when
    /// no state was known before.
    pub fn set_state(&mut self, ts: Timestamp, snapshot: Arc<Snapshot>) {
        if ts < self.snapshot_ts {
            return;
        }
        self.snapshot_ts = ts;
        self.state = if snapshot.name != UNKNOWN_STATE {
            snapshot.name.clone()
        } else if self.state.ends_with('?') {
            std::mem::take(&mut self.state)
        } else if self.state != "-" && self.state != UNKNOWN_STATE && !self.state.is_empty() {
            format!("{}?", self.state)
        } else {
            snapshot.name.clone()
        };
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
    }
}

/// The data every component reads and none owns: the options, the terminal's size, the
/// clock, the connections with their rows, and what the pipeline and the pager have said
/// about the whole session. It changes only as events arrive (`routing/pipeline.rs`, `routing/paging.rs`);
/// the components are given it by reference.
#[derive(Debug)]
pub struct Model {
    /// Options.
    pub opts: super::app::TuiOptions,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// Latest known time (wall clock when live, else the latest event's).
    pub now: Timestamp,
    /// Connections by number.
    pub conns: BTreeMap<ConnId, Conn>,
    /// Connection numbers in list order.
    pub(super) conn_ids: Vec<ConnId>,
    /// Events the feeder dropped.
    pub dropped: u64,
    /// Where the spool ring stands: the first row it still holds.
    pub spool: SpoolState,
    /// What the live view's inspection skimmed, for the status line.
    pub skimmed: Skimmed,
    /// The feed has ended.
    pub feed_ended: bool,
    /// Closed connections forgotten to stay within `max_closed_conns`.
    pub conns_forgotten: u64,
    /// The latest statistics the pipeline published (`S` shows them).
    pub stats: Option<Arc<crate::stats::StatsReport>>,
    /// Whole-capture mode: where the first pass is, and the window asked for.
    pub paging: super::window::Paging,
    /// The number the next row gets.
    pub(super) next_seq: u64,
    /// Numbers the rows of the events as they arrive (as the pager does when it re-runs).
    pub(super) numbering: crate::browse::numbering::Numbering,
    /// A window from the pager is being applied: rows are not counted again.
    pub(super) windowing: bool,
}

impl Model {
    /// An empty model of the given terminal size.
    pub fn new(opts: super::app::TuiOptions, size: (u16, u16)) -> Model {
        Model {
            opts,
            size,
            now: Timestamp(0),
            conns: BTreeMap::new(),
            conn_ids: Vec::new(),
            dropped: 0,
            spool: SpoolState::default(),
            skimmed: Skimmed::default(),
            feed_ended: false,
            conns_forgotten: 0,
            stats: None,
            paging: Default::default(),
            next_seq: 0,
            numbering: Default::default(),
            windowing: false,
        }
    }

    /// Connection numbers in list order.
    pub fn conn_ids(&self) -> &[ConnId] {
        &self.conn_ids
    }

    /// Resolve a frame-list entry.
    pub fn row(&self, conn: ConnId, seq: u64) -> Option<&Row> {
        self.conns.get(&conn)?.row(seq)
    }

    /// The number of the kept row of frame `f` of `conn`: the latest at its direction and
    /// offset.
    pub fn kept_row_of(&self, conn: ConnId, f: FrameRef) -> Option<u64> {
        self.conns
            .get(&conn)?
            .rows
            .iter()
            .rev()
            .find(|r| r.dir == Some(f.dir) && r.offset == f.offset)
            .map(|r| r.seq)
    }

    /// The connections of `scope` (`None`: all).
    fn in_scope(&self, scope: Option<ConnId>) -> impl Iterator<Item = &Conn> {
        self.conns
            .values()
            .filter(move |c| scope.is_none_or(|s| s == c.id))
    }

    /// Rows kept of `scope` (before the filter).
    pub fn rows_in(&self, scope: Option<ConnId>) -> usize {
        self.in_scope(scope).map(|c| c.rows.len()).sum()
    }

    /// Decoded frames of `scope`, whole (kept in memory or not): the number `check` and
    /// `stats` give.
    pub fn frames_in(&self, scope: Option<ConnId>) -> u64 {
        self.in_scope(scope)
            .map(|c| c.frames[0] + c.frames[1])
            .sum()
    }

    /// Rows of `scope` dropped from memory.
    pub fn evicted_in(&self, scope: Option<ConnId>) -> u64 {
        self.in_scope(scope).map(|c| c.evicted).sum()
    }

    /// The state of connection `conn` the state pane shows, `selected` the selected frame: in
    /// a replay, as of just after that frame when it is one of `conn`'s and still kept;
    /// otherwise, and live, the connection's latest.
    pub fn snapshot_at(
        &self,
        conn: Option<ConnId>,
        selected: Option<(ConnId, u64)>,
    ) -> Option<&Snapshot> {
        let conn = self.conns.get(&conn?)?;
        if !self.opts.live
            && let Some((c, seq)) = selected.filter(|(c, _)| *c == conn.id)
            && self.row(c, seq).is_some()
            && let Some(state) = conn.state_after(seq)
        {
            return Some(state.as_ref());
        }
        Some(conn.snapshot.as_ref())
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
