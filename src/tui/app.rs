//! The UI state: the [`App`], a router over the shared model (`model.rs`) and the
//! components (`components`), and the one [`AppEvent`] enum that changes it.
//!
//! [`App::handle`] is the only mutator: it routes each event (`routing`: user actions in
//! `keys.rs`, pipeline events in `pipeline.rs`, the pager's answers in `paging.rs` and
//! `search.rs`) to the components, which own the panes' and overlays' state and handle their
//! own keys, and to the shared [`Model`](super::model::Model). App itself keeps only the
//! focus, the bottom pane, zoom, the overlay open, the status message, quit and the effects
//! asked for. Rendering (`views`) reads `&App` and never mutates or does I/O. No terminal,
//! no clock, no channel here: time arrives as [`AppEvent::Tick`] and in event timestamps, so
//! the same events always give the same screen (tests rely on it).

use std::path::PathBuf;

use crossterm::event::{KeyEvent, MouseEvent};

use crate::capture::SourceEvent;
use crate::event::Snapshot;
use crate::event::{ConnId, Event, Timestamp};

use super::filter::Filter;
use super::input;
use super::views;

pub use super::model::{Conn, Row, RowKind, ViolationRow};

/// Knobs of the UI.
#[derive(Clone, Debug)]
pub struct TuiOptions {
    /// Frames kept in memory per connection; older ones are dropped from view (captures on
    /// disk remain complete).
    pub max_frames_per_conn: usize,
    /// Frame bytes kept in memory per connection; older frames are dropped from view beyond
    /// this as beyond `max_frames_per_conn`. A kept frame is the pipeline's own (shared,
    /// decoded once), counted at its full length; its bytes may share a read buffer with its
    /// neighbours, which the count does not see.
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
    /// Follow (tail) the frame list from the start.
    pub follow: bool,
    /// What the title bar says (e.g. `proxy :5673 -> 127.0.0.1:5672` or `replay x.jsonl`).
    pub title: String,
    /// Live traffic: ages grow with the wall clock (replay: ages end at the last event).
    pub live: bool,
    /// The filter the frame list starts with (`--filter`).
    pub filter: Filter,
    /// A replay of a file: the kept rows are a window of the whole capture, which the pager
    /// (`replay::pager`, given to `run_paged`) can bring back around any frame (see [`App::paging`]). Off live (a
    /// spooled live view pages its spool instead, see `spool`) and for stdin, where the rows
    /// are a ring of the latest.
    pub whole_capture: bool,
    /// The captures being written of what the view shows (`--jsonl`, `--pcap`), by name: the
    /// frame list names them where it drops older frames from view, and says none is written
    /// when there is none.
    pub captures: Vec<String>,
    /// The spool the live view writes what it is shown to (`spool.rs`), by name, when there
    /// is one: the frames dropped from memory are paged back from it (`live_window.rs`, with
    /// the ring's pager given to `run_paged`).
    pub spool: Option<String>,
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
            follow: true,
            title: "amqpeek".into(),
            live: true,
            filter: Filter::default(),
            whole_capture: false,
            captures: Vec::new(),
            spool: None,
        }
    }
}

/// Everything that can change the UI.
#[derive(Clone, Debug)]
pub enum AppEvent {
    /// An event from the pipeline (Connect, Header, Frame, Violation, Gap, Close, State,
    /// Diagnosis; Data is used only to size connections and give malformed frames their bytes).
    Pipeline(Event),
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
    /// What an [`Effect`] came to (shown in the status line).
    Notice(String),
    /// Bytes of the capture file read so far by the first pass, and the file's size.
    Progress(u64, u64),
    /// The rows around a frame, brought back from the capture file (whole-capture mode).
    Window(Box<super::window::Window>),
    /// Rows of the capture a search of the pager has scanned so far.
    Scanned(u64),
    /// The timeline's followed frames of the whole capture, brought back by the pager.
    Followed(Box<crate::browse::follow::Followed>),
    /// How an export of the whole capture, written by the pager, went.
    Exported(Box<crate::browse::export::Exported>),
    /// The spool ring removed its oldest part (`spool.rs`): it holds the rows from this one on.
    SpoolFrom {
        /// The number of the first row it still holds.
        first_frame: u64,
    },
    /// The statistics of everything the pipeline has seen so far (`crate::stats`), published
    /// by its statistics sink a few times a second.
    Stats(std::sync::Arc<crate::stats::StatsReport>),
}

/// Something the UI asks its owner to do outside it (the app itself does no I/O): the event
/// loop performs it and answers with an [`AppEvent::Notice`].
#[derive(Clone, Debug)]
pub enum Effect {
    /// Write the capture `events` (rebuilt from the rows in memory, see `export.rs`) to
    /// `path`, masked.
    Export {
        /// Where.
        path: PathBuf,
        /// JSONL (else pcapng).
        jsonl: bool,
        /// The capture, as source events replayed through a masking pipeline.
        events: Vec<SourceEvent>,
        /// What is exported, in words (`3 marked frames of 1 connection`).
        what: String,
    },
    /// Write the frames of the whole capture (the file, or the spool ring) the request's
    /// filter passes (a view that pages, `routing/export.rs`): the pager re-runs it, masked,
    /// into the file and answers with an [`AppEvent::Exported`].
    ExportSource(crate::browse::export::ExportRequest),
    /// Bring back the rows around `target` (whole-capture mode): the pager re-runs the
    /// pipeline over the file and answers with an [`AppEvent::Window`].
    LoadWindow(super::window::WindowRequest),
    /// Bring back the followed frames of the whole capture (whole-capture mode, `L`): the
    /// pager re-runs the pipeline over the file and answers with an [`AppEvent::Followed`].
    Follow(crate::browse::follow::FollowRequest),
    /// The timeline was closed before its followed frames came: stop reading them.
    StopFollow,
    /// Put `text` on the terminal's clipboard (OSC 52).
    Clipboard {
        /// The text.
        text: String,
        /// What it is, in words (`frame as hex`).
        what: String,
    },
}

/// What an export writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExportScope {
    /// The marked frames and connections.
    #[default]
    Marked,
    /// The frames the list shows (connection choice, filter, marked-only).
    Shown,
    /// The whole selected connection (or the selected frame's).
    Connection,
}

impl ExportScope {
    /// The next scope (Tab in the export line).
    pub fn next(self) -> ExportScope {
        match self {
            ExportScope::Marked => ExportScope::Shown,
            ExportScope::Shown => ExportScope::Connection,
            ExportScope::Connection => ExportScope::Marked,
        }
    }

    /// In words.
    pub fn name(self) -> &'static str {
        match self {
            ExportScope::Marked => "marked",
            ExportScope::Shown => "shown",
            ExportScope::Connection => "connection",
        }
    }
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
    /// The diagnoses: why flows are stuck (`H`).
    Health,
}

impl Pane {
    /// All panes in focus order.
    pub const ALL: [Pane; 6] = [
        Pane::Connections,
        Pane::Frames,
        Pane::Detail,
        Pane::State,
        Pane::Violations,
        Pane::Health,
    ];
    pub(super) fn next(self) -> Pane {
        let i = Pane::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Pane::ALL[(i + 1) % Pane::ALL.len()]
    }
    pub(super) fn prev(self) -> Pane {
        let i = Pane::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Pane::ALL[(i + Pane::ALL.len() - 1) % Pane::ALL.len()]
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
    FilterInput(super::components::filter_line::FilterInput),
    /// Following a link or channel over time (`L`).
    Timeline(super::components::timeline_view::TimelineView),
    /// The statistics (`S`).
    Stats(super::components::stats_view::StatsView),
    /// The whole text of the focused pane's selection (`w`), escaped.
    FullText(super::components::full_text::FullTextView),
    /// Typing the path of an export (Tab changes what is exported).
    Export(super::components::export_line::ExportLine),
    /// The messages of a link, channel, consumer or queue (`b`).
    Messages(Box<super::messages::MessageView>),
}

impl Overlay {
    /// Whether keys are text for the overlay's line.
    pub fn is_typing(&self) -> bool {
        match self {
            Overlay::FilterInput(_) | Overlay::Export(_) => true,
            Overlay::Messages(v) => v.typing().is_some(),
            _ => false,
        }
    }
}

/// What the frame list's time column shows (`t` cycles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeMode {
    /// The time of day (UTC).
    #[default]
    Absolute,
    /// Seconds since the first frame of the connection shown (of all, for all connections).
    Relative,
    /// Seconds since the row above.
    Delta,
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    /// The connections, their rows and the session's counters, shared by the panes.
    pub(super) model: super::model::Model,
    /// Focused pane.
    pub(super) focus: Pane,
    /// Which of Detail / State / Violations / Health the bottom area shows.
    pub(super) bottom: Pane,
    /// Focused pane fills the screen.
    pub(super) zoom: bool,
    /// Overlay.
    pub(super) overlay: Overlay,
    /// The connection list.
    pub(super) conn_list: super::components::conn_list::ConnList,
    /// The frame list.
    pub(super) frames: super::components::frame_list::FrameList,
    /// The filter applied, and those applied before.
    pub(super) filter: super::components::filter_line::FilterLine,
    /// The detail pane: the selected frame's field tree and hex dump.
    pub(super) detail: super::components::detail::Detail,
    /// The state pane.
    pub(super) state: super::components::state_pane::StatePane,
    /// The violations pane.
    pub(super) violations: super::components::violations::Violations,
    /// The diagnoses and the Health pane's cursor.
    pub(super) health: super::health::Health,
    /// One-line message for the status bar (jump results, errors).
    pub(super) message: Option<String>,
    /// The user asked to quit.
    pub(super) quit: bool,
    /// What the owner of the app is asked to do (drained by the event loop).
    pub(super) effects: Vec<Effect>,
}

impl App {
    /// An empty UI of the given terminal size.
    pub fn new(opts: TuiOptions, size: (u16, u16)) -> App {
        let follow = opts.follow;
        let filter = opts.filter.clone();
        App {
            model: super::model::Model::new(opts, size),
            focus: Pane::Frames,
            bottom: Pane::Detail,
            zoom: false,
            overlay: Overlay::None,
            conn_list: Default::default(),
            frames: super::components::frame_list::FrameList::new(follow),
            filter: super::components::filter_line::FilterLine::new(filter),
            detail: Default::default(),
            state: Default::default(),
            violations: Default::default(),
            health: Default::default(),
            message: None,
            quit: false,
            effects: Vec::new(),
        }
    }

    /// The connection chosen in the connection list (`None` = all).
    pub fn selected_conn(&self) -> Option<ConnId> {
        self.conn_list.selected_conn(&self.model)
    }

    /// Connection numbers in list order.
    pub fn conn_ids(&self) -> &[ConnId] {
        self.model.conn_ids()
    }

    /// The shared data: connections and their rows, options, size, clock.
    pub fn model(&self) -> &super::model::Model {
        &self.model
    }

    /// Resolve a frame-list entry.
    pub fn row(&self, conn: ConnId, seq: u64) -> Option<&Row> {
        self.model.row(conn, seq)
    }

    /// The selected frame-list row.
    pub fn selected_row(&self) -> Option<&Row> {
        let (c, s) = self.selected_entry()?;
        self.row(c, s)
    }

    /// The (connection, row number) of the selected frame-list row.
    pub fn selected_entry(&self) -> Option<(ConnId, u64)> {
        self.frames.selected()
    }

    /// Rows in scope of the connection choice (before the filter).
    pub fn rows_in_scope(&self) -> usize {
        self.model.rows_in(self.selected_conn())
    }

    /// Decoded frames of the connection choice, whole (kept in memory or not): the number
    /// `check` and `stats` give.
    pub fn frames_in_scope(&self) -> u64 {
        self.model.frames_in(self.selected_conn())
    }

    /// Rows dropped from view for the connection choice.
    pub fn evicted_in_scope(&self) -> u64 {
        self.model.evicted_in(self.selected_conn())
    }

    /// The number of rows each list pane shows at the current size.
    pub fn page(&self, pane: Pane) -> usize {
        let areas = views::layout(self, self.model.size);
        if pane == Pane::Health {
            // The selected diagnosis takes the rest of the pane.
            return views::health::list_rows(areas.rect(pane), self.health.len());
        }
        views::list_height(areas.rect(pane), pane)
    }

    /// Apply one event.
    pub fn handle(&mut self, ev: AppEvent) {
        let conns_before = self.model.conns.len();
        // A key or the mouse may open or close what takes screen rows (the filter line and its
        // completion candidates, an overlay, zoom); a resize changes them all.
        let relayout = matches!(
            ev,
            AppEvent::Key(_) | AppEvent::Mouse(_) | AppEvent::Resize(..)
        );
        self.apply(ev);
        if relayout || self.model.conns.len() != conns_before {
            // The panes may have shrunk (or the connection list grown above them): each
            // cursor is brought back into its pane's rows.
            self.clamp_all();
        }
    }

    fn apply(&mut self, ev: AppEvent) {
        match ev {
            AppEvent::Pipeline(e) => self.pipeline(e),
            AppEvent::Dropped(n) => self.model.dropped = self.model.dropped.max(n),
            AppEvent::FeedEnded => {
                self.model.feed_ended = true;
                if self.model.opts.whole_capture
                    && self
                        .message
                        .as_deref()
                        .is_some_and(|m| m.starts_with("still reading"))
                {
                    // It no longer holds.
                    self.message = None;
                }
            }
            AppEvent::Tick(ts) => self.model.now = self.model.now.max(ts),
            AppEvent::Resize(w, h) => {
                self.model.size = (w, h);
                self.clamp_all();
            }
            AppEvent::Notice(m) => self.message = Some(m),
            AppEvent::Progress(read, total) => self.model.paging.progress = Some((read, total)),
            AppEvent::Window(w) => self.load_window(*w),
            AppEvent::Scanned(rows) => self.scanned(rows),
            AppEvent::Followed(f) => {
                if let Overlay::Timeline(t) = &mut self.overlay {
                    t.followed(*f, self.model.size);
                }
            }
            AppEvent::Exported(done) => self.exported(*done),
            AppEvent::Stats(report) => self.model.stats = Some(report),
            AppEvent::SpoolFrom { first_frame } => self.model.spool_from(first_frame),
            AppEvent::Key(k) => {
                if let Some(a) = input::key_action(k, self.overlay.is_typing()) {
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

    /// The snapshot the state pane shows (see [`Model::snapshot_at`]).
    ///
    /// [`Model::snapshot_at`]: super::model::Model::snapshot_at
    pub fn state_snapshot(&self) -> Option<&Snapshot> {
        self.model
            .snapshot_at(self.state_conn_id(), self.selected_entry())
    }

    /// The cursor of pane `pane`'s list.
    pub fn cursor_of(&self, pane: Pane) -> &super::components::cursor::Cursor {
        match pane {
            Pane::Connections => self.conn_list.cursor(),
            Pane::Frames => self.frames.cursor(),
            Pane::Detail => self.detail.cursor(),
            Pane::State => self.state.cursor(),
            Pane::Violations => self.violations.cursor(),
            Pane::Health => self.health.cursor(),
        }
    }

    /// Columns `pane` is scrolled sideways (never the frame list: its columns flex to the
    /// width instead).
    pub fn shift(&self, pane: Pane) -> usize {
        self.cursor_of(pane).shift()
    }

    /// The connection the state pane shows.
    pub fn state_conn(&self) -> Option<&Conn> {
        self.model.conns.get(&self.state_conn_id()?)
    }

    /// The number of the connection the state pane shows: the one chosen, else the selected
    /// frame's.
    pub(super) fn state_conn_id(&self) -> Option<ConnId> {
        self.selected_conn()
            .or_else(|| self.selected_row().map(|r| r.conn))
    }

    /// The filter the frame list applies.
    pub fn filter(&self) -> &Filter {
        self.filter.applied()
    }

    /// Apply `filter` (the list is recomputed by [`App::rebuild_view`]).
    pub fn set_filter(&mut self, filter: Filter) {
        self.filter.set(filter);
    }

    /// The focused pane.
    pub fn focus(&self) -> Pane {
        self.focus
    }

    /// Which of Detail / State / Violations / Health the bottom area shows.
    pub fn bottom(&self) -> Pane {
        self.bottom
    }

    /// Whether the focused pane fills the screen.
    pub fn zoom(&self) -> bool {
        self.zoom
    }

    /// The overlay open above the panes.
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// The status line's message (jump results, errors), if any.
    pub fn message(&self) -> &Option<String> {
        &self.message
    }

    /// Whether the user asked to quit.
    pub fn quit(&self) -> bool {
        self.quit
    }

    /// What the owner of the app is asked to do, oldest first.
    pub fn effects(&self) -> &[Effect] {
        &self.effects
    }

    /// Take what the owner of the app is asked to do, to do it.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Take the latest thing the owner of the app is asked to do.
    pub fn pop_effect(&mut self) -> Option<Effect> {
        self.effects.pop()
    }

    /// The Health pane.
    pub fn health(&self) -> &super::health::Health {
        &self.health
    }

    /// Draw the whole screen. Pure: reads `self` only.
    pub fn render(&self, frame: &mut ratatui::Frame) {
        views::render(self, frame)
    }

    /// The frame list.
    pub fn frames(&self) -> &super::components::frame_list::FrameList {
        &self.frames
    }

    /// Mark the row `seq` of `conn` (as `m` on it does).
    pub fn mark(&mut self, conn: ConnId, seq: u64) {
        self.frames.mark(conn, seq);
    }

    /// Forget every mark of a frame.
    pub fn clear_marks(&mut self) {
        self.frames.clear_marks();
    }

    /// The connection list.
    pub fn conn_list(&self) -> &super::components::conn_list::ConnList {
        &self.conn_list
    }

    /// The detail pane.
    pub fn detail(&self) -> &super::components::detail::Detail {
        &self.detail
    }

    /// The state pane.
    pub fn state(&self) -> &super::components::state_pane::StatePane {
        &self.state
    }

    /// The violations pane.
    pub fn violations(&self) -> &super::components::violations::Violations {
        &self.violations
    }
}
