//! The detail pane's component: the selected frame's field tree (its cursor, and the nodes
//! whose default expansion the user toggled) and how far its hex dump is scrolled. Left and
//! Right collapse and expand a node (the router scrolls the pane sideways when that changes
//! nothing), Space toggles one, Enter toggles one or shows a leaf's whole value.

use std::collections::HashSet;

use super::super::model::Row;
use super::super::views;
use super::Outcome;
use super::cursor::Cursor;
use crate::tui::input::Action;

/// The field tree's cursor and toggles, and the hex dump's scroll.
#[derive(Clone, Debug, Default)]
pub struct Detail {
    cursor: Cursor,
    toggled: HashSet<String>,
    hex_scroll: usize,
}

impl Detail {
    /// The tree's cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// The tree's cursor, to scroll the pane sideways.
    pub(in crate::tui) fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    /// Tree nodes whose default expansion was toggled (by path).
    pub fn toggled(&self) -> &HashSet<String> {
        &self.toggled
    }

    /// Hex dump lines scrolled past.
    pub fn hex_scroll(&self) -> usize {
        self.hex_scroll
    }

    /// Nodes the tree of `row` shows.
    pub fn len(&self, row: Option<&Row>) -> usize {
        row.map_or(0, |r| views::detail::tree_nodes(r, &self.toggled).len())
    }

    /// Another frame is selected: the tree starts at its top.
    pub fn reset_cursor(&mut self) {
        self.cursor.to_top();
    }

    /// Another frame is selected: the tree and the hex dump start at their tops.
    pub fn reset(&mut self) {
        self.cursor.to_top();
        self.hex_scroll = 0;
    }

    /// Scroll the hex dump four lines up or down.
    pub fn scroll_hex(&mut self, down: bool) {
        self.hex_scroll = if down {
            self.hex_scroll.saturating_add(4)
        } else {
            self.hex_scroll.saturating_sub(4)
        };
    }

    /// Keep the cursor within the tree of `row` and its `page` rows.
    pub fn clamp(&mut self, row: Option<&Row>, page: usize) {
        let n = self.len(row);
        self.cursor.clamp(n, page);
    }

    /// Move the cursor by `delta` nodes of the tree of `row` in a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, row: Option<&Row>, page: usize) {
        let n = self.len(row);
        self.cursor.move_by(delta, n, page);
    }

    /// A key while the pane has the focus, `row` the selected frame.
    pub fn handle_key(&mut self, a: Action, row: Option<&Row>, page: usize) -> Outcome {
        if self.cursor.step(a, self.len(row), page).is_some() {
            return Outcome::Moved;
        }
        let changed = match a {
            Action::Collapse => self.toggle_node(row, Some(false), page),
            Action::Expand => self.toggle_node(row, Some(true), page),
            Action::ToggleNode => {
                self.toggle_node(row, None, page);
                true
            }
            // A leaf: its whole value.
            Action::Enter if !self.toggle_node(row, None, page) => return Outcome::FullText,
            Action::Enter => true,
            _ => false,
        };
        if changed {
            Outcome::Consumed
        } else {
            Outcome::Ignored
        }
    }

    /// Open, close or toggle the selected node of the tree of `row`; `false` when that
    /// changes nothing (a leaf, or a node already as wanted).
    fn toggle_node(&mut self, row: Option<&Row>, want_open: Option<bool>, page: usize) -> bool {
        let Some(row) = row else {
            return false;
        };
        let nodes = views::detail::tree_nodes(row, &self.toggled);
        let Some(n) = nodes.get(self.cursor.selected()) else {
            return false;
        };
        if !n.container {
            return false;
        }
        let open = n.expanded;
        let changes = want_open.is_none_or(|w| w != open);
        if changes {
            let path = n.path.clone();
            if !self.toggled.remove(&path) {
                self.toggled.insert(path);
            }
        }
        self.clamp(Some(row), page);
        changes
    }
}
