//! The violations pane's component: every violation the pipeline reported, within a bound
//! (the oldest dropped and counted), and the pane's cursor. Enter selects the frame the
//! selected violation was found in.

use std::collections::VecDeque;

use super::super::app::ListState;
use super::super::model::{Model, ViolationRow};
use super::{Ctx, Outcome, step};
use crate::tui::input::Action;

/// The violations and the cursor over them.
#[derive(Clone, Debug, Default)]
pub struct Violations {
    rows: VecDeque<ViolationRow>,
    evicted: u64,
    list: ListState,
    /// Columns the pane is scrolled sideways.
    shift: usize,
}

impl Violations {
    /// Columns the pane is scrolled sideways (Left/Right).
    pub fn shift(&self) -> usize {
        self.shift
    }

    /// Scroll the pane `to` columns sideways.
    pub fn set_shift(&mut self, to: usize) {
        self.shift = to;
    }

    /// Every violation kept, oldest first.
    pub fn rows(&self) -> &VecDeque<ViolationRow> {
        &self.rows
    }

    /// Violations dropped to stay within the bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The pane's cursor.
    pub fn list(&self) -> ListState {
        self.list
    }

    /// The violation under the cursor.
    pub fn selected(&self) -> Option<&ViolationRow> {
        self.rows.get(self.list.selected)
    }

    /// Keep `v`, dropping the oldest beyond `max`; the cursor stays on its violation.
    pub fn push(&mut self, v: ViolationRow, max: usize) {
        self.rows.push_back(v);
        while self.rows.len() > max.max(1) {
            self.rows.pop_front();
            self.evicted += 1;
            self.list.selected = self.list.selected.saturating_sub(1);
            self.list.offset = self.list.offset.saturating_sub(1);
        }
    }

    /// Keep the cursor within the list and its `page` rows.
    pub fn clamp(&mut self, page: usize) {
        self.list.clamp(self.rows.len(), page);
    }

    /// Move the cursor by `delta` rows of a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, page: usize) {
        self.list.move_by(delta, self.rows.len(), page);
    }

    /// A key while the pane has the focus.
    pub fn handle_key(&mut self, a: Action, ctx: &Ctx) -> Outcome {
        if let Some(d) = step(a, ctx.page) {
            self.move_by(d, ctx.page);
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
        let seq = v.seq.or_else(|| {
            model.conns.get(&v.conn).and_then(|c| {
                c.rows
                    .iter()
                    .rev()
                    .find(|r| r.dir == Some(v.violation.dir) && r.offset == v.violation.offset)
                    .map(|r| r.seq)
            })
        });
        if let Some(seq) = seq.filter(|s| model.pages() && *s >= model.reachable_from()) {
            // Kept or not: the whole capture is reachable.
            return Outcome::Reach(v.conn, seq);
        }
        match seq.filter(|s| model.row(v.conn, *s).is_some()) {
            Some(seq) => Outcome::Select(v.conn, seq),
            None => Outcome::Message(format!(
                "the frame at {} offset {} is no longer in memory",
                v.violation.dir.as_str(),
                v.violation.offset
            )),
        }
    }
}
