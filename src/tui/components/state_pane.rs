//! The state pane's component: its cursor over the lines of the connection's sessions, links
//! and channels. Enter on a line that names a link or channel filters the frame list to it.

use super::super::views::state_items::state_items;
use super::Outcome;
use super::cursor::Cursor;
use crate::event::Snapshot;
use crate::tui::input::Action;

/// The state pane's cursor.
#[derive(Clone, Debug, Default)]
pub struct StatePane {
    cursor: Cursor,
}

impl StatePane {
    /// The cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// The cursor, to scroll the pane sideways.
    pub(in crate::tui) fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    /// Lines the pane shows of `snapshot`.
    pub fn len(snapshot: Option<&Snapshot>) -> usize {
        snapshot.map_or(0, |s| state_items(s).len())
    }

    /// Another connection is shown: back to its first line.
    pub fn reset(&mut self) {
        self.cursor.to_top();
    }

    /// Keep the cursor within the lines of `snapshot` and the pane's `page` rows.
    pub fn clamp(&mut self, snapshot: Option<&Snapshot>, page: usize) {
        self.cursor.clamp(Self::len(snapshot), page);
    }

    /// Move the cursor by `delta` lines of `snapshot` in a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, snapshot: Option<&Snapshot>, page: usize) {
        self.cursor.move_by(delta, Self::len(snapshot), page);
    }

    /// A key while the pane has the focus, `snapshot` the state it shows.
    pub fn handle_key(&mut self, a: Action, snapshot: Option<&Snapshot>, page: usize) -> Outcome {
        if self.cursor.step(a, Self::len(snapshot), page).is_some() {
            return Outcome::Moved;
        }
        match a {
            Action::Enter => {
                let item = snapshot.and_then(|s| {
                    state_items(s)
                        .get(self.cursor.selected())
                        .and_then(|i| i.filter.clone())
                });
                item.map_or(Outcome::Consumed, Outcome::Filter)
            }
            _ => Outcome::Ignored,
        }
    }
}
