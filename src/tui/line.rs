//! A line of text being typed (the filter and the export path): a cursor, and the editing of
//! a shell's line (Ctrl-A/E, Ctrl-U/K/W, Ctrl-Y, words), by `tui-input`.

use tui_input::{Input, InputRequest};

/// The text typed so far and where the cursor is in it.
#[derive(Clone, Debug, Default)]
pub struct TextLine {
    input: Input,
}

impl TextLine {
    /// `text`, the cursor after it.
    pub fn new(text: impl Into<String>) -> TextLine {
        TextLine {
            input: Input::new(text.into()),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        self.input.value()
    }

    /// Apply one editing request (a character typed, a move, a deletion).
    pub fn edit(&mut self, req: InputRequest) {
        self.input.handle(req);
    }

    /// The text before the cursor.
    pub fn before_cursor(&self) -> &str {
        self.around_cursor().0
    }

    /// Replace the text from byte `start` to the cursor with `word`, the cursor after it (a
    /// completion); `start` past the cursor or inside a character changes nothing.
    pub fn replace_to_cursor(&mut self, start: usize, word: &str) {
        let (before, under, after) = self.around_cursor();
        let Some(kept) = before.get(..start) else {
            return;
        };
        let cursor = kept.chars().count() + word.chars().count();
        let mut text = format!("{kept}{word}");
        text.extend(under);
        text.push_str(after);
        self.input = Input::new(text).with_cursor(cursor);
    }

    /// The text before the cursor, the character under it (`None` at the end), the rest.
    pub fn around_cursor(&self) -> (&str, Option<char>, &str) {
        let s = self.input.value();
        let at = s
            .char_indices()
            .nth(self.input.cursor())
            .map_or(s.len(), |(i, _)| i);
        let (before, after) = s.split_at(at);
        let mut rest = after.chars();
        let under = rest.next();
        (before, under, rest.as_str())
    }
}

impl PartialEq for TextLine {
    fn eq(&self, other: &TextLine) -> bool {
        self.as_str() == other.as_str() && self.input.cursor() == other.input.cursor()
    }
}

impl Eq for TextLine {}

impl PartialEq<str> for TextLine {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl std::fmt::Display for TextLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Tab completion under way in the filter line: what the word can become and which of them
/// the line shows. Any other edit ends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Where the word starts (a byte offset in the line).
    pub start: usize,
    /// The candidates, whole words.
    pub words: Vec<String>,
    /// The one the line shows.
    pub at: usize,
}

impl Completion {
    /// The next candidate (Tab again), from the first after the last.
    pub fn advance(&mut self) -> Option<&str> {
        if self.words.is_empty() {
            return None;
        }
        self.at = (self.at + 1) % self.words.len();
        self.words.get(self.at).map(String::as_str)
    }
}

/// The filters applied, most recent last, for Up and Down in the filter line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    entries: Vec<String>,
}

impl History {
    /// Filters kept.
    pub const MAX: usize = 100;

    /// Remember `filter` (applied): once, as the most recent; nothing for an empty one.
    pub fn push(&mut self, filter: &str) {
        if filter.trim().is_empty() {
            return;
        }
        self.entries.retain(|e| e != filter);
        self.entries.push(filter.to_owned());
        if self.entries.len() > Self::MAX {
            self.entries.remove(0);
        }
    }

    /// The entry `back` steps before the end (1: the most recent), if there is one.
    pub fn back(&self, back: usize) -> Option<&str> {
        let i = self.entries.len().checked_sub(back)?;
        self.entries.get(i).map(String::as_str)
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_and_deletes_around_the_cursor() {
        let mut l = TextLine::new("name:transfer link:x");
        // As a shell's Ctrl-W: the word back to the space before it.
        l.edit(InputRequest::DeletePrevWord);
        assert_eq!(l.as_str(), "name:transfer ");
        l.edit(InputRequest::GoToStart);
        assert_eq!(l.around_cursor(), ("", Some('n'), "ame:transfer "));
        l.edit(InputRequest::InsertChar('!'));
        assert_eq!(l.as_str(), "!name:transfer ");
        l.edit(InputRequest::GoToEnd);
        l.edit(InputRequest::DeleteFromStart);
        assert_eq!(l.as_str(), "");
        assert_eq!(l.around_cursor(), ("", None, ""));
    }

    #[test]
    fn a_completion_replaces_the_word_before_the_cursor_and_keeps_the_rest() {
        let mut l = TextLine::new("name:tr link:x");
        for _ in 0.." link:x".len() {
            l.edit(InputRequest::GoToPrevChar);
        }
        l.replace_to_cursor(0, "name:transfer");
        assert_eq!(l.as_str(), "name:transfer link:x");
        assert_eq!(l.before_cursor(), "name:transfer");
        // Out of range: unchanged.
        l.replace_to_cursor(99, "x");
        assert_eq!(l.as_str(), "name:transfer link:x");
        let mut c = Completion {
            start: 0,
            words: vec!["a".into(), "b".into()],
            at: 0,
        };
        assert_eq!(c.advance(), Some("b"));
        assert_eq!(c.advance(), Some("a"));
    }

    #[test]
    fn history_keeps_each_filter_once_most_recent_last() {
        let mut h = History::default();
        for f in ["a", "b", "a", " "] {
            h.push(f);
        }
        assert_eq!(
            (h.back(1), h.back(2), h.back(3)),
            (Some("a"), Some("b"), None)
        );
        for i in 0..2 * History::MAX {
            h.push(&i.to_string());
        }
        assert_eq!(h.len(), History::MAX);
    }
}
