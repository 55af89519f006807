//! Marks (`m`): frames, or whole connections, set aside for an export (the bug-report
//! workflow); `M` lists only them. A mark names a row by (connection, arrival number), so it
//! stays on its row whatever the list shows; marks of rows dropped from memory are kept until
//! unmarked (they export nothing).

use super::app::{App, Pane};
use super::model::Row;
use crate::event::ConnId;

impl App {
    /// Whether the row `seq` of `conn` is marked (by itself or with its connection).
    pub fn is_marked(&self, conn: ConnId, seq: u64) -> bool {
        self.marked_conns.contains(&conn) || self.marks.contains(&(conn, seq))
    }

    /// Whether the frame list shows `row` (the filter, and the marks when only they show);
    /// the connection choice aside.
    pub fn shows(&self, row: &Row) -> bool {
        row.matches(&self.filter) && (!self.marked_only || self.is_marked(row.conn, row.seq))
    }

    /// `m`: mark or unmark the selected connection (connection list) or frame (elsewhere).
    pub(super) fn toggle_mark(&mut self) {
        if self.focus == Pane::Connections {
            let Some(c) = self.selected_conn() else {
                self.message = Some("select a connection to mark it (not \"all\")".into());
                return;
            };
            let on = self.marked_conns.insert(c);
            if !on {
                self.marked_conns.remove(&c);
            }
            self.message = Some(format!(
                "connection {c} {}",
                if on { "marked" } else { "unmarked" }
            ));
        } else {
            let Some(&(c, s)) = self.view.get(self.frame_list.selected) else {
                return;
            };
            let on = self.marks.insert((c, s));
            if !on {
                self.marks.remove(&(c, s));
            }
            self.message = Some(format!(
                "{} marked frame(s){}",
                self.marks.len(),
                if on { "" } else { " (unmarked one)" }
            ));
        }
        if self.marked_only {
            self.rebuild_view();
        }
    }

    /// `M`: list only the marked frames, or everything again.
    pub(super) fn toggle_marked_only(&mut self) {
        self.marked_only = !self.marked_only;
        self.follow = false;
        self.rebuild_view();
        if self.marked_only && self.view.is_empty() {
            self.message = Some("nothing marked yet: m marks a frame or a connection".into());
        }
    }
}
