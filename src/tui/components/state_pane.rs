//! The state pane's component: its cursor over the lines of the connection's sessions, links
//! and channels. Enter on a line that names a link or channel filters the frame list to it.

use super::super::app::ListState;
use super::super::views::state_items::state_items;
use super::{Outcome, step};
use crate::event::Snapshot;
use crate::tui::input::Action;

/// The state pane's cursor.
#[derive(Clone, Debug, Default)]
pub struct StatePane {
    list: ListState,
    /// Columns the pane is scrolled sideways.
    shift: usize,
}

impl StatePane {
    /// Columns the pane is scrolled sideways (Left/Right).
    pub fn shift(&self) -> usize {
        self.shift
    }

    /// Scroll the pane `to` columns sideways.
    pub fn set_shift(&mut self, to: usize) {
        self.shift = to;
    }

    /// The cursor.
    pub fn list(&self) -> ListState {
        self.list
    }

    /// Lines the pane shows of `snapshot`.
    pub fn len(snapshot: Option<&Snapshot>) -> usize {
        snapshot.map_or(0, |s| state_items(s).len())
    }

    /// Another connection is shown: back to its first line.
    pub fn reset(&mut self) {
        self.list = ListState::default();
    }

    /// Keep the cursor within the lines of `snapshot` and the pane's `page` rows.
    pub fn clamp(&mut self, snapshot: Option<&Snapshot>, page: usize) {
        self.list.clamp(Self::len(snapshot), page);
    }

    /// Move the cursor by `delta` lines of `snapshot` in a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, snapshot: Option<&Snapshot>, page: usize) {
        self.list.move_by(delta, Self::len(snapshot), page);
    }

    /// A key while the pane has the focus, `snapshot` the state it shows.
    pub fn handle_key(&mut self, a: Action, snapshot: Option<&Snapshot>, page: usize) -> Outcome {
        if let Some(d) = step(a, page) {
            self.move_by(d, snapshot, page);
            return Outcome::Moved;
        }
        match a {
            Action::Enter => {
                let item = snapshot.and_then(|s| {
                    state_items(s)
                        .get(self.list.selected)
                        .and_then(|i| i.filter.clone())
                });
                item.map_or(Outcome::Consumed, Outcome::Filter)
            }
            _ => Outcome::Ignored,
        }
    }
}
