//! Search with the filter across the whole capture of a file replay: `>` / `<` select the next
//! / previous row the frame list's filter matches; when it is not in the window of rows in
//! memory, the app asks the pager ([`Find`]) to scan the capture for it (re-running the
//! pipeline, judging each row as the app would) and to bring back the window around it, the
//! filter staying on. The pager judges a row of its re-run against the filter as the app judges
//! the row it makes of the same events (`Row::matches`): `browse::window::row_matches`, the
//! row built from its event by the same constructors, with the violations that belong to it.

use crate::tui::app::{App, Pane};
use crate::tui::window::{Find, percent};

impl App {
    /// `>` / `<`: the next / previous row the filter matches, in the list or (a file replay)
    /// anywhere in the capture.
    pub(in crate::tui) fn next_match(&mut self, forward: bool) {
        if self.filter.applied().is_empty() {
            self.message = Some("no filter to search with: / sets one".into());
            return;
        }
        if let Some(i) = self.frames.neighbour(forward) {
            let h = self.page(Pane::Frames);
            self.frames.select(i, h);
            self.detail.reset();
            self.focus = Pane::Frames;
            return;
        }
        let at = self.frames.selected().map(|(_, s)| s);
        // The capture goes on beyond the window (in this direction) only when its end row
        // of the connection choice is not kept.
        let beyond = self.model.pages()
            && self.scope_ends().is_some_and(|(first, last)| {
                let (c, s) = if forward { last } else { first };
                self.row(c, s).is_none()
            });
        match at {
            Some(s) if beyond && forward => self.find(s + 1, true, false),
            Some(s) if beyond && s > 0 => self.find(s - 1, false, false),
            None if beyond => self.find(if forward { 0 } else { u64::MAX }, forward, false),
            Some(s) => {
                let word = if forward { "after" } else { "before" };
                self.message = Some(format!("no match {word} #{}", s + 1));
            }
            None => self.message = Some("no frame matches the filter".into()),
        }
    }

    /// Ask the pager for the window around the first row matching the filter at or after
    /// row `from` (`forward`), or the last at or before it; with `violations`, a row with a
    /// violation.
    pub(in crate::tui) fn find(&mut self, from: u64, forward: bool, violations: bool) {
        let conn = self.selected_conn().unwrap_or(0);
        let find = Find {
            forward,
            violations,
        };
        self.ask(conn, from, 0, Some(find));
    }

    /// How far the search asked last has scanned: `rows` of the capture's.
    pub(in crate::tui) fn scanned(&mut self, rows: u64) {
        if self
            .model
            .paging
            .loading
            .as_ref()
            .is_none_or(|r| r.find.is_none())
        {
            return;
        }
        self.model.paging.scanned = rows;
        let pct = percent(rows, self.model.numbering.next());
        self.message = Some(format!("searching ({pct}%)"));
    }
}
