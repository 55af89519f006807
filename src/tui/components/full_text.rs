//! The full-text overlay's component (`w`): the whole text of the focused pane's selection
//! (what `fulltext.rs` makes of it), its title, and how many wrapped lines it is scrolled.
//! It scrolls a line, a page or a wheel's turn at a time; Esc or `w` closes it.

use super::{Outcome, scrolled};
use crate::tui::input::Action;
use crate::tui::views;

/// The text shown whole and its scroll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FullTextView {
    title: String,
    text: String,
    scroll: usize,
}

impl FullTextView {
    /// `text` (its parts on lines of their own, already escaped) under `title` (`Violation`,
    /// `Frame`, `Field`, `State`, `Diagnosis`, `Connection`), from its top.
    pub fn new(title: String, text: String) -> FullTextView {
        FullTextView {
            title,
            text,
            scroll: 0,
        }
    }

    /// What it is.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Wrapped lines scrolled past.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// A key while the text is shown on a screen of `size`: scrolling, or Esc and `w`, which
    /// close it; the other keys are left to the panes.
    pub fn handle_key(&mut self, a: Action, size: (u16, u16)) -> Outcome {
        let last = views::fulltext::last_scroll(&self.text, size);
        let page = views::fulltext::page(size);
        let to = match a {
            Action::Scroll { down: true, .. } => Some(self.scroll + 3),
            Action::Scroll { down: false, .. } => Some(self.scroll.saturating_sub(3)),
            a => scrolled(a, self.scroll, page, last),
        };
        if let Some(to) = to {
            self.scroll = to.min(last);
            return Outcome::Consumed;
        }
        match a {
            Action::Escape | Action::FullText => Outcome::Close,
            _ => Outcome::Ignored,
        }
    }
}
