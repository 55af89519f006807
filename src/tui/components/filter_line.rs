//! The filter: the one the frame list applies and the filters applied before it
//! ([`FilterLine`]), and the line a new one is typed in ([`FilterInput`], open while it is
//! typed): its text, the live parse error, Up and Down through the history, and Tab, which
//! completes the word before the cursor from the filter language's keys and values
//! (`crate::filter::complete`) and the link and queue names the session has shown, cycling
//! through the candidates on each Tab while the status line lists them.
//!
//! The names seen come from what the model already holds: the links of each connection's
//! latest state (their names and addresses), the rows' link names, and the `queue` of the
//! 0-9-1 methods kept.

use std::collections::BTreeSet;

use tui_input::InputRequest;

use super::Outcome;
use crate::tui::filter::Filter;
use crate::tui::input::Action;
use crate::tui::line::{Completion, History, TextLine};
use crate::tui::model::Model;

/// At most this many names are gathered for one completion.
const MAX_SEEN: usize = 10_000;

/// The filter applied and the history of those applied before.
#[derive(Clone, Debug, Default)]
pub struct FilterLine {
    applied: Filter,
    history: History,
}

impl FilterLine {
    /// Starting with `filter` applied.
    pub fn new(filter: Filter) -> FilterLine {
        FilterLine {
            applied: filter,
            history: History::default(),
        }
    }

    /// The filter the frame list applies.
    pub fn applied(&self) -> &Filter {
        &self.applied
    }

    /// Apply `filter` (the router recomputes the list).
    pub fn set(&mut self, filter: Filter) {
        self.applied = filter;
    }

    /// Apply none.
    pub fn clear(&mut self) {
        self.applied = Filter::default();
    }

    /// Open the line to type a new filter: it starts empty, and the one applied is the first
    /// Up brings back.
    pub fn open(&mut self) -> FilterInput {
        self.history.push(&self.applied.source);
        FilterInput::default()
    }
}

/// The line a filter is being typed in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterInput {
    text: TextLine,
    error: Option<String>,
    /// Which filter of the history Up brought back (1: the most recent), if any.
    recalled: usize,
    completion: Option<Completion>,
}

impl FilterInput {
    /// What has been typed.
    pub fn text(&self) -> &TextLine {
        &self.text
    }

    /// The parse error of the text, shown live.
    pub fn error(&self) -> Option<&String> {
        self.error.as_ref()
    }

    /// The Tab completion under way, if any (its candidates show in the status line).
    pub fn completion(&self) -> Option<&Completion> {
        self.completion.as_ref()
    }

    /// A key while the line is open: editing, Up/Down, Tab; Enter applies a filter that
    /// parses ([`Outcome::Applied`]: the line closes, the list is recomputed), Esc cancels
    /// ([`Outcome::Close`]).
    pub fn handle_key(&mut self, a: Action, line: &mut FilterLine, model: &Model) -> Outcome {
        match a {
            Action::FilterChar(ch) => self.edit(InputRequest::InsertChar(ch)),
            Action::FilterBackspace => self.edit(InputRequest::DeletePrevChar),
            Action::Edit(req) => self.edit(req),
            Action::HistoryPrev => self.recall(1, &line.history),
            Action::HistoryNext => self.recall(-1, &line.history),
            Action::TextTab => self.complete(&names_seen(model)),
            Action::FilterCancel => return Outcome::Close,
            Action::FilterSubmit => match Filter::parse(self.text.as_str()) {
                Ok(f) => {
                    line.history.push(self.text.as_str());
                    line.applied = f;
                    return Outcome::Applied;
                }
                Err(e) => self.error = Some(e.to_string()),
            },
            _ => return Outcome::Ignored,
        }
        Outcome::Consumed
    }

    /// The text changed: the completion under way ends, the error is re-parsed.
    fn edit(&mut self, req: InputRequest) {
        self.completion = None;
        self.text.edit(req);
        self.reparse();
    }

    fn reparse(&mut self) {
        self.error = Filter::parse(self.text.as_str())
            .err()
            .map(|e| e.to_string());
    }

    /// Up (`step` 1) or Down (-1): an older or newer filter of the history (Down past the
    /// newest gives an empty line).
    fn recall(&mut self, step: isize, history: &History) {
        let to = self.recalled.saturating_add_signed(step).min(history.len());
        if to == self.recalled {
            return;
        }
        self.recalled = to;
        self.completion = None;
        self.text = TextLine::new(history.back(to).unwrap_or(""));
        self.reparse();
    }

    /// Tab: the next candidate for the word before the cursor, `seen` the names offered
    /// beside the language's words.
    fn complete(&mut self, seen: &BTreeSet<String>) {
        let next = match &mut self.completion {
            Some(c) => {
                let start = c.start;
                c.advance().map(|w| (start, w.to_owned()))
            }
            None => {
                let found = crate::filter::complete::candidates(
                    self.text.before_cursor(),
                    seen.iter().map(String::as_str),
                );
                let first = found.words.first().cloned();
                if found.words.len() != 1 {
                    self.completion = Some(Completion {
                        start: found.start,
                        words: found.words,
                        at: 0,
                    });
                }
                first.map(|w| (found.start, w))
            }
        };
        // Nothing fits: the status line says so (an empty completion).
        if let Some((start, word)) = next {
            self.text.replace_to_cursor(start, &word);
            self.reparse();
        }
    }
}

/// The link and queue names of the connections kept, each once.
pub fn names_seen(model: &Model) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for c in model.conns.values() {
        out.extend(c.snapshot.detail.names());
        for r in &c.rows {
            if out.len() >= MAX_SEEN {
                return out;
            }
            out.extend(r.link.iter().cloned());
            if let Some(f) = &r.frame
                && let Some(q) = crate::filter::text_field(&f.frame, "queue")
            {
                out.insert(q);
            }
        }
    }
    out
}
