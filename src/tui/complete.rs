//! Tab in the filter line: the word before the cursor completed from the filter language's
//! keys and values (`crate::filter::complete`) and the link and queue names the session has
//! shown, cycling through the candidates on each Tab while the status line lists them.
//!
//! The names seen come from what the model already holds: the links of each connection's
//! latest state (their names and addresses), the rows' link names, and the `queue` of the
//! 0-9-1 methods kept.

use std::collections::BTreeSet;

use super::app::{App, Overlay};
use super::filter::Filter;
use super::line::Completion;

/// At most this many names are gathered for one completion.
const MAX_SEEN: usize = 10_000;

impl App {
    /// The link and queue names of the connections kept, each once.
    pub fn names_seen(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for c in self.model.conns.values() {
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

    /// Tab in the filter line: the next candidate for the word before the cursor.
    pub(super) fn complete_filter(&mut self) {
        let seen = self.names_seen();
        let Overlay::FilterInput {
            text,
            error,
            completion,
            ..
        } = &mut self.overlay
        else {
            return;
        };
        let next = match completion {
            Some(c) => {
                let start = c.start;
                c.advance().map(|w| (start, w.to_owned()))
            }
            None => {
                let found = crate::filter::complete::candidates(
                    text.before_cursor(),
                    seen.iter().map(String::as_str),
                );
                let first = found.words.first().cloned();
                if found.words.len() != 1 {
                    *completion = Some(Completion {
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
            text.replace_to_cursor(start, &word);
            *error = Filter::parse(text.as_str()).err().map(|e| e.to_string());
        }
    }
}
