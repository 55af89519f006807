//! The statistics overlay's keys (`S`): scrolling the report the pipeline's statistics sink
//! published last; the lines are the report's own (`StatsReport::lines`, as `amqpeek stats`
//! prints them), so the pane and the command cannot disagree.

use super::app::{App, Overlay};
use super::input::Action;

impl App {
    /// Lines the statistics overlay shows at the current size (the screen but the status
    /// line, less the overlay's borders).
    pub fn stats_page(&self) -> usize {
        (self.model.size.1 as usize).saturating_sub(3).max(1)
    }

    /// The statistics' lines now (none before the first report).
    pub fn stats_lines(&self) -> Vec<String> {
        self.model
            .stats
            .as_ref()
            .map_or_else(Vec::new, |r| r.lines())
    }

    /// A key while the statistics are open; false when it is not theirs.
    pub(super) fn stats_key(&mut self, a: Action) -> bool {
        let Overlay::Stats { scroll, column } = self.overlay else {
            return false;
        };
        let lines = self.stats_lines();
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let inside = self.model.size.0.saturating_sub(2) as usize;
        let last_column = widest.saturating_sub(inside).min(u16::MAX as usize) as u16;
        let page = self.stats_page();
        let last = lines.len().saturating_sub(page);
        let (scroll, column) = match a {
            Action::Collapse => (Some(scroll), column.saturating_sub(8)),
            Action::Expand => (Some(scroll), (column + 8).min(last_column)),
            a => (Self::scrolled(a, scroll, page, last), column),
        };
        let Some(scroll) = scroll else {
            if matches!(a, Action::Escape | Action::Stats | Action::Quit) {
                self.overlay = Overlay::None;
                return a != Action::Quit;
            }
            return false;
        };
        self.overlay = Overlay::Stats {
            scroll: scroll.min(last),
            column,
        };
        true
    }

    /// Where `a` scrolls the statistics to from line `scroll` (`None`: `a` does not scroll).
    pub(super) fn scrolled(a: Action, scroll: usize, page: usize, last: usize) -> Option<usize> {
        Some(match a {
            Action::Up => scroll.saturating_sub(1),
            Action::Down => scroll + 1,
            Action::PageUp => scroll.saturating_sub(page.max(2) - 1),
            Action::PageDown => scroll + page.max(2) - 1,
            Action::Home => 0,
            Action::End => last,
            _ => return None,
        })
    }
}
