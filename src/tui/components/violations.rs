//! The violations pane's component: every violation the pipeline reported, within a bound
//! (the oldest dropped and counted), and the pane's cursor. Enter selects the frame the
//! selected violation was found in.

use std::collections::VecDeque;

use super::super::model::{Model, ViolationRow};
use super::cursor::Cursor;
use super::{Ctx, Outcome, go_to_frame};
use crate::event::FrameRef;
use crate::tui::input::Action;

/// The violations and the cursor over them.
#[derive(Clone, Debug, Default)]
pub struct Violations {
    rows: VecDeque<ViolationRow>,
    evicted: u64,
    cursor: Cursor,
}

impl Violations {
    /// Every violation kept, oldest first.
    pub fn rows(&self) -> &VecDeque<ViolationRow> {
        &self.rows
    }

    /// Violations dropped to stay within the bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The pane's cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// The pane's cursor, to scroll the pane sideways.
    pub(in crate::tui) fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    /// The violation under the cursor.
    pub fn selected(&self) -> Option<&ViolationRow> {
        self.rows.get(self.cursor.selected())
    }

    /// Keep `v`, dropping the oldest beyond `max`; the cursor stays on its violation.
    pub fn push(&mut self, v: ViolationRow, max: usize) {
        self.rows.push_back(v);
        while self.rows.len() > max.max(1) {
            self.rows.pop_front();
            self.evicted += 1;
            self.cursor.first_removed();
        }
    }

    /// Keep the cursor within the list and its `page` rows.
    pub fn clamp(&mut self, page: usize) {
        self.cursor.clamp(self.rows.len(), page);
    }

    /// Move the cursor by `delta` rows of a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, page: usize) {
        self.cursor.move_by(delta, self.rows.len(), page);
    }

    /// A key while the pane has the focus.
    pub fn handle_key(&mut self, a: Action, ctx: &Ctx) -> Outcome {
        if self.cursor.step(a, self.rows.len(), ctx.page).is_some() {
            return Outcome::Moved;
        }
        match a {
            Action::Enter => self.jump(ctx.model),
            _ => Outcome::Ignored,
        }
    }

    /// The frame of the selected violation (its row, or the latest kept row at its direction
    /// and offset): reached when the capture can bring it back, else selected when kept.
    fn jump(&self, model: &Model) -> Outcome {
        let Some(v) = self.selected() else {
            return Outcome::Consumed;
        };
        let f = FrameRef {
            dir: v.violation.dir,
            offset: v.violation.offset,
        };
        let seq = v.seq.or_else(|| model.kept_row_of(v.conn, f));
        go_to_frame(model, v.conn, seq, f, "the frame")
    }
}
