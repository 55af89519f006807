//! What the user's actions do to the UI state: focus, cursors and scrolling, zoom, the filter
//! line, the detail tree's expansion, and jumps (Enter on a state item, a violation or a
//! diagnosis, `n`/`N`).

use crate::tui::app::{App, Effect, ExportScope, ListState, Overlay, Pane};
use crate::tui::components::export_line::ExportLine;
use crate::tui::components::full_text::FullTextView;
use crate::tui::components::messages_view::MessageView;
use crate::tui::components::timeline_view::TimelineView;
use crate::tui::components::{Ctx, Outcome};
use crate::tui::filter::Filter;
use crate::tui::input::Action;
use crate::tui::views;

impl App {
    pub(in crate::tui) fn clamp_all(&mut self) {
        let h = self.page(Pane::Connections);
        self.conn_list.clamp(&self.model, h);
        let h = self.page(Pane::Frames);
        self.frames.clamp(h);
        let h = self.page(Pane::Violations);
        self.violations.clamp(h);
        let h = self.page(Pane::Detail);
        let row = self
            .selected_entry()
            .and_then(|(c, s)| self.model.row(c, s));
        self.detail.clamp(row, h);
        let h = self.page(Pane::State);
        let snapshot = self
            .model
            .snapshot_at(self.state_conn_id(), self.selected_entry());
        self.state.clamp(snapshot, h);
        let h = self.page(Pane::Health);
        self.health.clamp(h);
    }

    /// Focus pane `p` (a bottom pane is then the one the bottom area shows).
    pub(super) fn focus_on(&mut self, p: Pane) {
        self.focus = p;
        if matches!(
            p,
            Pane::Detail | Pane::State | Pane::Violations | Pane::Health
        ) {
            self.bottom = p;
        }
        self.clamp_all();
    }

    /// Rows the list of pane `p` has.
    pub(super) fn list_len(&self, p: Pane) -> usize {
        match p {
            Pane::Connections => self.model.conns.len() + 1,
            Pane::Frames => self.frames.view().len(),
            Pane::Detail => self.detail.len(self.selected_row()),
            Pane::State => {
                crate::tui::components::state_pane::StatePane::len(self.state_snapshot())
            }
            Pane::Violations => self.violations.rows().len(),
            Pane::Health => self.health.len(),
        }
    }

    /// The cursor of pane `p`'s list.
    pub(super) fn list_of(&self, p: Pane) -> ListState {
        match p {
            Pane::Connections => self.conn_list.list(),
            Pane::Frames => self.frames.list(),
            Pane::Detail => self.detail.list(),
            Pane::State => self.state.list(),
            Pane::Violations => self.violations.list(),
            Pane::Health => self.health.list(),
        }
    }

    /// Move the cursor of pane `p` by `delta` rows; the panes that show what it selects
    /// follow.
    pub(super) fn move_in(&mut self, p: Pane, delta: isize) {
        let h = self.page(p);
        match p {
            Pane::Frames => self.move_frames_by(delta, h),
            Pane::Connections => {
                if self.conn_list.move_by(delta, &self.model, h) {
                    self.conn_chosen();
                }
            }
            Pane::Detail => {
                let row = self
                    .selected_entry()
                    .and_then(|(c, s)| self.model.row(c, s));
                self.detail.move_by(delta, row, h);
            }
            Pane::State => {
                let snapshot = self
                    .model
                    .snapshot_at(self.state_conn_id(), self.selected_entry());
                self.state.move_by(delta, snapshot, h);
            }
            Pane::Violations => self.violations.move_by(delta, h),
            Pane::Health => {
                self.health.move_by(delta, h);
            }
        }
    }

    /// The frame cursor moved by `delta` in a pane of `h` rows: past the window's edge, the
    /// capture is asked for more; moving up stops following; another frame resets the detail.
    pub(super) fn move_frames_by(&mut self, delta: isize, h: usize) {
        let before = self.frames.list().selected;
        self.frames.move_by(delta, h);
        if self.frames.list().selected == before {
            self.past_edge(delta, before);
        }
        if delta < 0 {
            self.frames.set_follow(false);
        }
        if self.frames.list().selected != before {
            self.detail.reset();
        }
    }

    /// Another connection was chosen: the state pane starts over, the frame list shows its
    /// frames.
    pub(super) fn conn_chosen(&mut self) {
        self.state.reset();
        self.rebuild_view();
        self.fill_scope();
    }

    /// Move the frame cursor by `delta` rows.
    pub(in crate::tui) fn move_frames(&mut self, delta: isize) {
        self.move_in(Pane::Frames, delta)
    }

    /// Perform one user action.
    pub fn act(&mut self, a: Action) {
        if !matches!(
            a,
            Action::FilterChar(_)
                | Action::FilterBackspace
                | Action::Edit(_)
                | Action::HistoryPrev
                | Action::HistoryNext
        ) {
            self.message = None;
        }
        if a == Action::Quit {
            return self.quit_now();
        }
        if self.overlay_key(a) {
            return;
        }
        match a {
            Action::Quit => {}
            Action::Help
            | Action::Escape
            | Action::OpenFilter
            | Action::FilterChar(_)
            | Action::FilterBackspace
            | Action::Edit(_)
            | Action::HistoryPrev
            | Action::HistoryNext
            | Action::TextTab
            | Action::FilterSubmit
            | Action::FilterCancel
            | Action::OpenExport => self.act_overlay(a),
            Action::Zoom
            | Action::FocusNext
            | Action::FocusPrev
            | Action::FocusPane(_)
            | Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Home
            | Action::End
            | Action::Follow
            | Action::Scroll { .. }
            | Action::Click { .. } => self.act_move(a),
            Action::Enter => self.enter(),
            Action::FullText => self.open_full_text(),
            Action::Messages => match MessageView::open(self.selected_row(), &self.model) {
                Ok(v) => self.overlay = Overlay::Messages(Box::new(v)),
                Err(m) => self.message = Some(m),
            },
            Action::Collapse | Action::Expand | Action::ToggleNode => self.tree_or_sideways(a),
            Action::AllConnections => {
                self.conn_list.select(0);
                self.rebuild_view();
                self.fill_scope();
            }
            Action::NextViolation | Action::PrevViolation => {
                let fwd = a == Action::NextViolation;
                self.jump_violation_frame(fwd)
            }
            Action::NextMatch | Action::PrevMatch => self.next_match(a == Action::NextMatch),
            Action::HexUp => self.detail.scroll_hex(false),
            Action::HexDown => self.detail.scroll_hex(true),
            Action::Mark if self.focus == Pane::Connections => self.mark_conn(),
            Action::Mark | Action::MarkedOnly | Action::CycleTime => {
                let outcome = self.frames.handle_key(a);
                self.carry_out(outcome);
            }
            Action::CopyHex | Action::CopyJson => self.copy(a == Action::CopyJson),
            Action::Timeline => self.open_timeline(),
            Action::Stats => self.overlay = Overlay::Stats(Default::default()),
        }
    }

    /// Quit: the overlays that scroll or list close first (a timeline stops its reading).
    pub(super) fn quit_now(&mut self) {
        match self.overlay {
            Overlay::Timeline(_) => self.close_overlay(),
            Overlay::Stats(_) | Overlay::FullText(_) | Overlay::Messages(_) => {
                self.overlay = Overlay::None
            }
            _ => {}
        }
        self.quit = true;
    }

    /// Left / Right / Space: in the detail tree, collapse / expand / toggle the node (Left and
    /// Right scroll the pane sideways when that changes nothing); elsewhere Left and Right
    /// scroll the focused pane sideways.
    pub(super) fn tree_or_sideways(&mut self, a: Action) {
        if self.focus == Pane::Detail {
            let h = self.page(Pane::Detail);
            let row = self
                .selected_entry()
                .and_then(|(c, s)| self.model.row(c, s));
            if self.detail.handle_key(a, row, h) != Outcome::Ignored {
                return;
            }
        }
        if a != Action::ToggleNode {
            self.scroll_sideways(a == Action::Expand);
        }
    }

    /// `y` / `Y`: ask for the selected frame to be copied (as hex, or `json`), or say why not.
    pub(super) fn copy(&mut self, json: bool) {
        let max_body = self.model.opts.max_body;
        match crate::tui::clipboard::copy(self.selected_row(), json, max_body) {
            Ok(effect) => self.effects.push(effect),
            Err(m) => self.message = Some(m),
        }
    }

    /// A key for the open overlay that scrolls or lists (timeline, statistics, full text,
    /// messages); whether it took it (else the panes do).
    pub(super) fn overlay_key(&mut self, a: Action) -> bool {
        let outcome = match &mut self.overlay {
            Overlay::Timeline(v) => v.handle_key(a, &self.model),
            Overlay::Messages(v) => v.handle_key(a, &self.model),
            Overlay::Stats(v) => v.handle_key(a, &self.model),
            Overlay::FullText(v) => v.handle_key(a, self.model.size),
            _ => return false,
        };
        if outcome == Outcome::Ignored {
            return false;
        }
        self.carry_out(outcome);
        true
    }

    /// Close the overlay; a timeline forgets the followed frames brought back (and stops
    /// their re-run if it is still going).
    pub(in crate::tui) fn close_overlay(&mut self) {
        if matches!(self.overlay, Overlay::Timeline(_))
            && let Some(f) = self.model.paging.following.take()
            && f.steps.is_none()
        {
            self.effects.push(Effect::StopFollow);
        }
        self.overlay = Overlay::None;
    }

    /// `L`: follow the selected frame's link or channel, from it.
    pub(super) fn open_timeline(&mut self) {
        let chosen = self
            .selected_row()
            .and_then(|r| Some((crate::tui::timeline::Follow::of(r)?, r.seq)));
        let Some((follow, seq)) = chosen else {
            self.message = Some("select a frame of a link or a channel to follow".into());
            return;
        };
        let (view, effect) = TimelineView::open(follow, Some(seq), &mut self.model);
        self.effects.extend(effect);
        self.overlay = Overlay::Timeline(view);
    }

    /// `w`: open the full text of the selection (or say there is none).
    pub(in crate::tui) fn open_full_text(&mut self) {
        match crate::tui::fulltext::of_selection(self) {
            Some((title, lines)) => {
                self.overlay = Overlay::FullText(FullTextView::new(title, lines.join("\n")))
            }
            None => self.message = Some("nothing selected to show in full here".into()),
        }
    }

    /// The actions of the overlays and the text lines (help, filter, export).
    pub(super) fn act_overlay(&mut self, a: Action) {
        let outcome = match &mut self.overlay {
            Overlay::FilterInput(input) => input.handle_key(a, &mut self.filter, &self.model),
            Overlay::Export(line) => line.handle_key(a),
            _ => Outcome::Ignored,
        };
        if outcome != Outcome::Ignored {
            return self.carry_out(outcome);
        }
        match a {
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
                } else if !self.filter.applied().is_empty() {
                    self.filter.clear();
                    self.rebuild_view();
                    self.message = Some("filter cleared".into());
                }
            }
            Action::OpenFilter => self.overlay = Overlay::FilterInput(self.filter.open()),
            Action::FilterCancel => self.overlay = Overlay::None,
            Action::OpenExport => {
                let scope =
                    if self.frames.marks().is_empty() && self.frames.marked_conns().is_empty() {
                        ExportScope::Shown
                    } else {
                        ExportScope::Marked
                    };
                self.overlay = Overlay::Export(ExportLine::new(scope))
            }
            // The other actions are `act`'s own.
            _ => {}
        }
    }

    /// To the top of the focused pane (in the frames of a file replay, the capture's first
    /// frame, loading it when it is not in memory).
    pub(super) fn home(&mut self) {
        if !(self.focus == Pane::Frames && self.far_end(false)) {
            self.move_in(self.focus, isize::MIN / 2);
            if self.focus == Pane::Frames {
                self.message = views::frames::older_hint(self);
            }
        }
    }

    /// Moving: focus, selection, scrolling, zoom and the mouse.
    pub(super) fn act_move(&mut self, a: Action) {
        match a {
            Action::Zoom => {
                self.zoom = !self.zoom;
                self.clamp_all();
            }
            Action::FocusNext => self.focus_on(self.focus.next()),
            Action::FocusPrev => self.focus_on(self.focus.prev()),
            Action::FocusPane(p) => self.focus_on(p),
            Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Home
            | Action::End
                if self.focus != Pane::Frames =>
            {
                let outcome = self.pane_key(a);
                self.carry_out(outcome);
            }
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
            Action::Home => self.home(),
            Action::End if self.focus == Pane::Frames && self.far_end(true) => {}
            Action::End => {
                self.move_in(self.focus, isize::MAX / 2);
                if self.focus == Pane::Frames {
                    self.frames.set_follow(true);
                }
            }
            Action::Follow => {
                let h = self.page(Pane::Frames);
                self.frames.tail(h);
            }
            Action::Scroll { x, y, down } => {
                if let Some(p) = self.pane_at(x, y) {
                    self.move_in(p, if down { 3 } else { -3 });
                }
            }
            Action::Click { x, y } => self.click(x, y),
            // The other actions are `act`'s own.
            _ => {}
        }
    }

    /// Enter in the export line: ask for the capture of what is chosen to be written.
    pub(super) fn submit_export(&mut self, path: String, scope: ExportScope) {
        let (events, frames, conns) = crate::tui::export::capture_of(self, scope);
        self.overlay = Overlay::None;
        if frames == 0 && conns == 0 {
            self.message = Some(format!("nothing to export ({} frames)", scope.name()));
            return;
        }
        let jsonl = path.ends_with(".jsonl") || path.ends_with(".json");
        self.effects.push(Effect::Export {
            path: path.into(),
            jsonl,
            events,
            what: format!(
                "{frames} {} frame(s) of {conns} connection(s)",
                scope.name()
            ),
        });
    }

    pub(super) fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        let areas = views::layout(self, self.model.size);
        Pane::ALL.into_iter().find(|p| {
            let r = areas.rect(*p);
            r.width > 0 && x >= r.x && x < r.right() && y >= r.y && y < r.bottom()
        })
    }

    pub(super) fn click(&mut self, x: u16, y: u16) {
        if self.overlay != Overlay::None {
            self.overlay = Overlay::None;
            return;
        }
        let Some(p) = self.pane_at(x, y) else { return };
        self.focus_on(p);
        let areas = views::layout(self, self.model.size);
        let Some(first) = views::first_row_y(areas.rect(p), p) else {
            return;
        };
        if y < first || (p == Pane::Health && (y - first) as usize >= self.page(p)) {
            // Above the rows, or on the selected diagnosis below the Health pane's list.
            return;
        }
        let list = self.list_of(p);
        let target = list.offset + (y - first) as usize;
        if target >= self.list_len(p) {
            return;
        }
        self.move_in(p, target as isize - list.selected as isize);
        if p == Pane::Frames && target + 1 < self.frames.view().len() {
            self.frames.set_follow(false);
        }
    }

    /// Left/Right: scroll the focused pane sideways, a quarter of its width at a time, no
    /// further than its widest line shown needs.
    pub(super) fn scroll_sideways(&mut self, right: bool) {
        let p = self.focus;
        if p == Pane::Frames {
            return;
        }
        let width = views::text_width(self, p);
        let max = views::max_shift(views::widest(self, p), width);
        let step = (width / 4).max(4);
        let cur = self.shift(p).min(max);
        let to = if right {
            (cur + step).min(max)
        } else {
            cur.saturating_sub(step)
        };
        match p {
            Pane::Connections => self.conn_list.set_shift(to),
            Pane::Frames => {}
            Pane::Detail => self.detail.set_shift(to),
            Pane::State => self.state.set_shift(to),
            Pane::Violations => self.violations.set_shift(to),
            Pane::Health => self.health.set_shift(to),
        }
    }

    /// Enter: in the connection list and the frame list, the next pane; else the focused
    /// component's.
    pub(super) fn enter(&mut self) {
        match self.focus {
            Pane::Connections => self.focus_on(Pane::Frames),
            Pane::Frames => self.focus_on(Pane::Detail),
            _ => {
                let outcome = self.pane_key(Action::Enter);
                self.carry_out(outcome);
            }
        }
    }

    /// A key for the focused pane's component (the frame list's moves are the router's: they
    /// reach beyond the rows in memory). Choosing another connection refills the panes that
    /// show it.
    pub(super) fn pane_key(&mut self, a: Action) -> Outcome {
        let page = self.page(self.focus);
        match self.focus {
            Pane::Frames => Outcome::Ignored,
            Pane::Connections => {
                let outcome = self.conn_list.handle_key(a, &self.model, page);
                if outcome == Outcome::Moved {
                    self.conn_chosen();
                }
                outcome
            }
            Pane::Detail => {
                let row = self
                    .selected_entry()
                    .and_then(|(c, s)| self.model.row(c, s));
                self.detail.handle_key(a, row, page)
            }
            Pane::State => {
                let snapshot = self
                    .model
                    .snapshot_at(self.state_conn_id(), self.selected_entry());
                self.state.handle_key(a, snapshot, page)
            }
            Pane::Violations => {
                let ctx = Ctx {
                    model: &self.model,
                    page,
                };
                self.violations.handle_key(a, &ctx)
            }
            Pane::Health => {
                let ctx = Ctx {
                    model: &self.model,
                    page,
                };
                self.health.handle_key(a, &ctx)
            }
        }
    }

    /// `m` in the connection list: mark or unmark the selected connection.
    pub(super) fn mark_conn(&mut self) {
        let Some(c) = self.selected_conn() else {
            self.message = Some("select a connection to mark it (not \"all\")".into());
            return;
        };
        let on = self.frames.toggle_conn_mark(c);
        self.message = Some(format!(
            "connection {c} {}",
            if on { "marked" } else { "unmarked" }
        ));
        if self.frames.marked_only() {
            self.rebuild_view();
        }
    }

    /// Do what a component's key asks of the others.
    pub(super) fn carry_out(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Ignored | Outcome::Consumed | Outcome::Moved => {}
            Outcome::Message(m) => self.message = Some(m),
            Outcome::Reach(conn, seq) => self.reach(conn, seq),
            Outcome::Select(conn, seq) => self.select_frame(conn, seq),
            Outcome::FullText => self.open_full_text(),
            Outcome::Close => self.close_overlay(),
            Outcome::Export { path, scope } => self.submit_export(path, scope),
            Outcome::Jump {
                conn,
                seq,
                focus,
                message,
            } => {
                self.close_overlay();
                self.reach(conn, seq);
                if focus {
                    self.focus = Pane::Frames;
                }
                if message.is_some() {
                    self.message = message;
                }
            }
            Outcome::Applied => {
                self.overlay = Overlay::None;
                self.rebuild_view();
            }
            Outcome::Rebuild(m) => {
                self.rebuild_view();
                match m {
                    Some(m) => self.message = Some(m),
                    None if self.frames.marked_only() && self.frames.view().is_empty() => {
                        self.message =
                            Some("nothing marked yet: m marks a frame or a connection".into())
                    }
                    None => {}
                }
            }
            Outcome::Filter(f) => match Filter::parse(&f) {
                Ok(filter) => {
                    self.filter.set(filter);
                    self.frames.set_follow(false);
                    self.rebuild_view();
                    self.message = Some(format!("filter: {f}"));
                    self.focus_on(Pane::Frames);
                }
                Err(e) => self.message = Some(e.to_string()),
            },
        }
    }

    /// Select row `seq` of `conn` in the frame list, centred: its connection shown, and a
    /// filter or marked-only view that hides it cleared.
    pub(in crate::tui) fn select_frame(&mut self, conn: crate::event::ConnId, seq: u64) {
        if self.selected_conn().is_some_and(|c| c != conn) {
            let h = self.page(Pane::Connections);
            self.conn_list.choose(&self.model, conn, h);
        }
        self.frames.set_follow(false);
        self.rebuild_view();
        if self.frames.position((conn, seq)).is_none() {
            self.filter.clear();
            self.frames.set_marked_only(false);
            self.rebuild_view();
            self.message = Some("filter cleared to show the frame".into());
        }
        if let Some(i) = self.frames.position((conn, seq)) {
            let h = self.page(Pane::Frames);
            self.frames.select_centred(i, h);
            self.detail.reset();
            self.focus_on(Pane::Frames);
        }
    }

    /// `n` / `N`: the next / previous frame in the list with a violation.
    pub(super) fn jump_violation_frame(&mut self, forward: bool) {
        let cur = self.frames.list().selected;
        let has = |app: &App, i: usize| {
            app.frames
                .view()
                .get(i)
                .and_then(|(c, s)| app.row(*c, *s))
                .is_some_and(|r| !r.violations.is_empty())
        };
        let found = if forward {
            (cur + 1..self.frames.view().len()).find(|i| has(self, *i))
        } else {
            (0..cur).rev().find(|i| has(self, *i))
        };
        match found {
            Some(i) => {
                self.frames.set_follow(false);
                let h = self.page(Pane::Frames);
                self.frames.select(i, h);
                self.detail.reset_cursor();
                self.focus_on(Pane::Frames);
            }
            None if self.far_violation(forward) => {}
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
