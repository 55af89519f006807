//! The statistics overlay's component (`S`): how far the report the pipeline's statistics
//! sink published last is scrolled, down and sideways. The lines are the report's own
//! (`StatsReport::lines`, as `amqpeek stats` prints them), so the overlay and the command
//! cannot disagree.

use super::{Outcome, scrolled};
use crate::tui::input::Action;
use crate::tui::model::Model;

/// The statistics overlay's scroll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsView {
    scroll: usize,
    column: u16,
}

impl StatsView {
    /// Lines scrolled past.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// Columns scrolled past (the tables are wider than a small terminal).
    pub fn column(&self) -> u16 {
        self.column
    }

    /// Lines the overlay shows on a screen of `size` (the screen but the status line, less
    /// the overlay's borders).
    pub fn page(size: (u16, u16)) -> usize {
        (size.1 as usize).saturating_sub(3).max(1)
    }

    /// The statistics' lines now (none before the first report).
    pub fn lines(model: &Model) -> Vec<String> {
        model.stats.as_ref().map_or_else(Vec::new, |r| r.lines())
    }

    /// A key while the statistics are open: scrolling, or Esc and `S`, which close them.
    pub fn handle_key(&mut self, a: Action, model: &Model) -> Outcome {
        let lines = Self::lines(model);
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let inside = model.size.0.saturating_sub(2) as usize;
        let last_column = widest.saturating_sub(inside).min(u16::MAX as usize) as u16;
        let page = Self::page(model.size);
        let last = lines.len().saturating_sub(page);
        let (scroll, column) = match a {
            Action::Collapse => (Some(self.scroll), self.column.saturating_sub(8)),
            Action::Expand => (Some(self.scroll), (self.column + 8).min(last_column)),
            a => (scrolled(a, self.scroll, page, last), self.column),
        };
        let Some(scroll) = scroll else {
            return match a {
                Action::Escape | Action::Stats => Outcome::Close,
                _ => Outcome::Ignored,
            };
        };
        self.scroll = scroll.min(last);
        self.column = column;
        Outcome::Consumed
    }
}
