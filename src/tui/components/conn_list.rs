//! The connection list's component: its cursor, on "all connections" (row 0) or on one of
//! them, which chooses whose frames the frame list shows and whose state the state pane does,
//! and how far the list is scrolled sideways.

use super::super::model::Model;
use super::Outcome;
use super::cursor::Cursor;
use crate::event::ConnId;
use crate::tui::input::Action;

/// The connection list's cursor (0: all connections) and sideways scroll.
#[derive(Clone, Debug, Default)]
pub struct ConnList {
    cursor: Cursor,
}

impl ConnList {
    /// The cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// The cursor, to scroll the pane sideways.
    pub(in crate::tui) fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    /// The connection chosen (`None`: all).
    pub fn selected_conn(&self, model: &Model) -> Option<ConnId> {
        match self.cursor.selected() {
            0 => None,
            i => model.conn_ids().get(i - 1).copied(),
        }
    }

    /// Rows listed: "all", then each connection.
    pub fn len(model: &Model) -> usize {
        model.conns.len() + 1
    }

    /// Put the cursor on row `i` (0: all connections).
    pub fn select(&mut self, i: usize) {
        self.cursor.select(i);
    }

    /// Choose connection `conn` (when listed), keeping the cursor within a `page`-row pane.
    pub fn choose(&mut self, model: &Model, conn: ConnId, page: usize) {
        if let Ok(pos) = model.conn_ids().binary_search(&conn) {
            self.cursor.select(pos + 1);
            self.clamp(model, page);
        }
    }

    /// Keep the cursor within the list and its `page` rows.
    pub fn clamp(&mut self, model: &Model, page: usize) {
        self.cursor.clamp(Self::len(model), page);
    }

    /// Move the cursor by `delta` rows of a `page`-row pane; whether it moved.
    pub fn move_by(&mut self, delta: isize, model: &Model, page: usize) -> bool {
        self.cursor.move_by(delta, Self::len(model), page)
    }

    /// A key while the list has the focus: a move that chooses another connection is
    /// [`Outcome::Moved`].
    pub fn handle_key(&mut self, a: Action, model: &Model, page: usize) -> Outcome {
        match self.cursor.step(a, Self::len(model), page) {
            Some(true) => Outcome::Moved,
            Some(_) => Outcome::Consumed,
            None => Outcome::Ignored,
        }
    }
}
