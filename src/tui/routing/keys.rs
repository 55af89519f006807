//! What the user's actions do: each goes to the open overlay's component, or the focused
//! pane's, or is App's own (opening overlays, quitting, copying, exporting); what a component
//! answers ([`Outcome`]) is carried out here. Moves are `moves.rs`'s.

use crate::tui::app::{App, Effect, ExportScope, Overlay, Pane};
use crate::tui::components::export_line::ExportLine;
use crate::tui::components::full_text::FullTextView;
use crate::tui::components::messages_view::MessageView;
use crate::tui::components::timeline_view::TimelineView;
use crate::tui::components::{Ctx, Outcome};
use crate::tui::filter::Filter;
use crate::tui::input::Action;

impl App {
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
        if let Overlay::Timeline(t) = &self.overlay
            && t.reading()
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
        let id = self.model.paging.next_id();
        let (view, effect) = TimelineView::open(follow, Some(seq), &self.model, id);
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
}
