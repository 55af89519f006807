//! A list's cursor, which the components of the list panes and the timeline embed: the
//! selected row, the first row shown, and how many columns the pane is scrolled sideways. The
//! component knows how many rows it lists and passes that in; the cursor keeps itself within
//! them and its pane.

use super::step;
use crate::tui::input::Action;

/// A list's selected row and scroll position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListState {
    /// Selected index.
    pub selected: usize,
    /// First visible index.
    pub offset: usize,
}

impl ListState {
    /// Keep the selection within `len` rows and shown in a pane of `height` rows.
    pub(in crate::tui) fn clamp(&mut self, len: usize, height: usize) {
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

    /// Move the selection by `delta` rows of `len`, in a pane of `height` rows.
    pub(in crate::tui) fn move_by(&mut self, delta: isize, len: usize, height: usize) {
        let s = self.selected as isize + delta;
        self.selected = s.clamp(0, len.saturating_sub(1) as isize) as usize;
        self.clamp(len, height);
    }
}

/// A list pane's cursor ([`ListState`]) and sideways scroll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    list: ListState,
    /// Columns the pane is scrolled sideways.
    shift: usize,
}

impl Cursor {
    /// The selected row and the first row shown.
    pub fn list(&self) -> ListState {
        self.list
    }

    /// The selected row.
    pub fn selected(&self) -> usize {
        self.list.selected
    }

    /// Columns the pane is scrolled sideways (Left/Right).
    pub fn shift(&self) -> usize {
        self.shift
    }

    /// Scroll the pane `to` columns sideways.
    pub fn set_shift(&mut self, to: usize) {
        self.shift = to;
    }

    /// Keep the cursor within `len` rows and a `page`-row pane.
    pub fn clamp(&mut self, len: usize, page: usize) {
        self.list.clamp(len, page);
    }

    /// Move the cursor by `delta` of `len` rows in a `page`-row pane; whether it moved.
    pub fn move_by(&mut self, delta: isize, len: usize, page: usize) -> bool {
        let before = self.list.selected;
        self.list.move_by(delta, len, page);
        self.list.selected != before
    }

    /// A moving key (see [`step`]) over `len` rows in a `page`-row pane: `None` when `a` is
    /// not one, else whether the cursor moved.
    pub fn step(&mut self, a: Action, len: usize, page: usize) -> Option<bool> {
        step(a, page).map(|d| self.move_by(d, len, page))
    }

    /// Put the cursor on row `i` (kept within the rows at the next [`Cursor::clamp`]).
    pub fn select(&mut self, i: usize) {
        self.list.selected = i;
    }

    /// Put the cursor on row `i` of `len`, scrolled to the middle of a `page`-row pane.
    pub fn centre(&mut self, i: usize, len: usize, page: usize) {
        self.list.selected = i;
        self.list.offset = i.saturating_sub(page / 2);
        self.list.clamp(len, page);
    }

    /// Back to the first row, at the top (the sideways scroll stays).
    pub fn to_top(&mut self) {
        self.list = ListState::default();
    }

    /// The first row was removed: the cursor stays on its row.
    pub fn first_removed(&mut self) {
        self.list.selected = self.list.selected.saturating_sub(1);
        self.list.offset = self.list.offset.saturating_sub(1);
    }
}
