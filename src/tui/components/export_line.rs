//! The export line's component (`e`): the path an export is to be written to (`.jsonl` or
//! `.json`: JSON Lines, else pcapng) and what it takes (the marked frames, the frames shown,
//! or the whole connection; Tab cycles). Enter asks for it ([`Outcome::Export`]), Esc
//! cancels.

use tui_input::InputRequest;

use super::super::app::ExportScope;
use super::Outcome;
use crate::tui::input::Action;
use crate::tui::line::TextLine;

/// The path typed and what is exported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportLine {
    text: TextLine,
    scope: ExportScope,
}

impl ExportLine {
    /// The line as it opens: a pcapng file in the working directory, of `scope`.
    pub fn new(scope: ExportScope) -> ExportLine {
        ExportLine {
            text: TextLine::new("amqpeek-export.pcapng"),
            scope,
        }
    }

    /// The path typed.
    pub fn text(&self) -> &TextLine {
        &self.text
    }

    /// What is exported.
    pub fn scope(&self) -> ExportScope {
        self.scope
    }

    /// A key while the line is open.
    pub fn handle_key(&mut self, a: Action) -> Outcome {
        match a {
            Action::FilterChar(ch) => self.text.edit(InputRequest::InsertChar(ch)),
            Action::FilterBackspace => self.text.edit(InputRequest::DeletePrevChar),
            Action::Edit(req) => self.text.edit(req),
            Action::TextTab => self.scope = self.scope.next(),
            Action::FilterCancel => return Outcome::Close,
            Action::FilterSubmit => {
                let path = self.text.as_str().trim();
                if !path.is_empty() {
                    return Outcome::Export {
                        path: path.to_string(),
                        scope: self.scope,
                    };
                }
            }
            _ => return Outcome::Ignored,
        }
        Outcome::Consumed
    }
}
