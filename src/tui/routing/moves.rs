//! Moving: focus, the panes' cursors, scrolling (keys, the wheel, clicks, sideways), zoom,
//! and selecting a frame of the frame list from elsewhere (a jump, `n`/`N`). The frame list's
//! moves reach beyond the rows in memory (`paging.rs`); the other panes' are their
//! components'.

use crate::tui::app::{App, Overlay, Pane};
use crate::tui::components::conn_list::ConnList;
use crate::tui::components::state_pane::StatePane;
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
            Pane::Connections => ConnList::len(&self.model),
            Pane::Frames => self.frames.view().len(),
            Pane::Detail => self.detail.len(self.selected_row()),
            Pane::State => StatePane::len(self.state_snapshot()),
            Pane::Violations => self.violations.rows().len(),
            Pane::Health => self.health.len(),
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
        let before = self.frames.cursor().selected();
        if self.frames.move_by(delta, h) {
            self.detail.reset();
        } else {
            self.past_edge(delta, before);
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

    /// To the top of the focused pane (in the frames of a file replay, the capture's first
    /// frame, loading it when it is not in memory).
    pub(super) fn home(&mut self) {
        if !(self.focus == Pane::Frames && self.far_end(false)) {
            self.move_in(self.focus, isize::MIN / 2);
            if self.focus == Pane::Frames {
                self.message = views::frames::older_hint(views::frames::Shown::of(self));
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
        let list = self.cursor_of(p).list();
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
        let cursor = match p {
            Pane::Connections => self.conn_list.cursor_mut(),
            Pane::Frames => return,
            Pane::Detail => self.detail.cursor_mut(),
            Pane::State => self.state.cursor_mut(),
            Pane::Violations => self.violations.cursor_mut(),
            Pane::Health => self.health.cursor_mut(),
        };
        cursor.set_shift(to);
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
        match self.frames.next_with_violation(&self.model, forward) {
            Some(i) => {
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
