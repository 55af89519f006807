//! The message view's component (`b`): whose messages it shows (a connection's link,
//! channel, consumer or queue, `messages.rs` finds them), which message is selected, how far
//! its text is scrolled, and the search typed in it. It moves through the messages, cycles the
//! scopes (Tab), searches their text (`/`, then `n`/`N`), and Enter selects the frames of the
//! selected message in the frame list.

use tui_input::InputRequest;

use super::super::messages::{Entry, Scope, entries_in, frames_of, scopes_of, selected_index};
use super::super::model::{Model, Row};
use super::super::views;
use super::Outcome;
use crate::event::ConnId;
use crate::tui::input::Action;
use crate::tui::line::TextLine;

/// What the view shows and where its cursors are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageView {
    conn: ConnId,
    /// The scopes offered (Tab cycles), never empty.
    scopes: Vec<Scope>,
    /// Which of them is shown.
    scope: usize,
    /// The selected message, by its row (`None`: the latest, following new ones).
    selected: Option<u64>,
    scroll: usize,
    typing: Option<TextLine>,
    query: String,
}

impl MessageView {
    /// The messages of the link or channel of `row`, the one it is part of selected (the
    /// first to complete at or after it); what to say when it has none.
    pub fn open(row: Option<&Row>, model: &Model) -> Result<MessageView, String> {
        const NONE: &str = "select a frame of a link or a channel to see its messages";
        let row = row.ok_or(NONE)?;
        let scopes = scopes_of(row);
        if scopes.is_empty() {
            return Err(NONE.into());
        }
        let mut view = MessageView {
            conn: row.conn,
            scopes,
            scope: 0,
            selected: None,
            scroll: 0,
            typing: None,
            query: String::new(),
        };
        view.selected = entries_in(model, &view)
            .iter()
            .find(|e| e.seq >= row.seq)
            .map(|e| e.seq);
        Ok(view)
    }

    /// The connection.
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// The scopes offered.
    pub fn scopes(&self) -> &[Scope] {
        &self.scopes
    }

    /// The scope shown.
    pub fn shown(&self) -> &Scope {
        &self.scopes[self.scope.min(self.scopes.len() - 1)]
    }

    /// The selected message, by its row (`None`: the latest, following new ones).
    pub fn selected(&self) -> Option<u64> {
        self.selected
    }

    /// Lines of the selected message scrolled past.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// The search being typed, while it is.
    pub fn typing(&self) -> Option<&TextLine> {
        self.typing.as_ref()
    }

    /// The search applied (`n`/`N` find its next / previous match).
    pub fn query(&self) -> &str {
        &self.query
    }

    /// A key while the view is open; [`Outcome::Ignored`] for the keys it leaves to the panes.
    pub fn handle_key(&mut self, a: Action, model: &Model) -> Outcome {
        if self.typing.is_some() {
            return self.typing_key(a, model);
        }
        let list = entries_in(model, self);
        let at = selected_index(self, &list);
        let page = views::messages::detail_page(model.size).max(2) - 1;
        match a {
            Action::Up => self.select(&list, at.saturating_sub(1)),
            Action::Down => self.select(&list, (at + 1).min(list.len().saturating_sub(1))),
            Action::Home => self.select(&list, 0),
            Action::End | Action::Follow => self.pick(None),
            Action::PageDown | Action::HexDown => self.scroll += page,
            Action::PageUp | Action::HexUp => self.scroll = self.scroll.saturating_sub(page),
            Action::Scroll { down: true, .. } => self.scroll += 3,
            Action::Scroll { down: false, .. } => self.scroll = self.scroll.saturating_sub(3),
            Action::FocusNext | Action::TextTab => {
                self.scope = (self.scope + 1) % self.scopes.len();
                self.pick(None);
            }
            Action::FocusPrev => {
                self.scope = (self.scope + self.scopes.len() - 1) % self.scopes.len();
                self.pick(None);
            }
            Action::OpenFilter => self.typing = Some(TextLine::new(self.query.clone())),
            Action::NextViolation | Action::PrevViolation => {
                let forward = a == Action::NextViolation;
                return Outcome::Message(self.find(model, &list, at, forward).1);
            }
            Action::Enter => {
                return match list.get(at) {
                    Some(e) => jump(model, self.conn, e.seq, at + 1),
                    None => Outcome::Close,
                };
            }
            Action::Escape | Action::Messages => return Outcome::Close,
            Action::Help => return Outcome::Ignored,
            _ => {}
        }
        Outcome::Consumed
    }

    /// Select message `i` of `list`, from the top of its text.
    fn select(&mut self, list: &[Entry], i: usize) {
        self.pick(list.get(i).map(|e| e.seq));
    }

    fn pick(&mut self, seq: Option<u64>) {
        self.selected = seq;
        self.scroll = 0;
    }

    /// A key while the search line is open: editing, Enter searches, Esc cancels.
    fn typing_key(&mut self, a: Action, model: &Model) -> Outcome {
        let Some(text) = self.typing.as_mut() else {
            return Outcome::Consumed;
        };
        match a {
            Action::FilterChar(c) => text.edit(InputRequest::InsertChar(c)),
            Action::FilterBackspace => text.edit(InputRequest::DeletePrevChar),
            Action::Edit(req) => text.edit(req),
            Action::FilterCancel => self.typing = None,
            Action::FilterSubmit => {
                self.query = text.as_str().to_string();
                self.typing = None;
                let list = entries_in(model, self);
                let at = selected_index(self, &list);
                // From the selected message on, itself included, then from the first.
                let (found, said) = self.find(model, &list, at.wrapping_sub(1), true);
                if !found && at > 0 {
                    return Outcome::Message(self.find(model, &list, usize::MAX, true).1);
                }
                return Outcome::Message(said);
            }
            _ => {}
        }
        Outcome::Consumed
    }

    /// Select the next (previous) message after (before) index `at` (`usize::MAX`: from the
    /// first) whose text holds the search, ASCII case folded, and scroll to its first line
    /// that does: whether one does, and what to say.
    fn find(&mut self, model: &Model, list: &[Entry], at: usize, forward: bool) -> (bool, String) {
        let query = self.query.to_ascii_lowercase();
        if query.is_empty() {
            return (false, "no search: / types one".into());
        }
        let order: Box<dyn Iterator<Item = usize>> = if forward {
            Box::new(at.wrapping_add(1)..list.len())
        } else {
            Box::new((0..at.min(list.len())).rev())
        };
        let width = views::messages::text_width(model.size);
        for i in order {
            let Some(row) = model.row(self.conn, list[i].seq) else {
                continue;
            };
            // The lines as built, unwrapped (a match across a wrap is found too); wrapped only
            // for the message found, to scroll to it.
            let holds = |l: &views::messages::MsgLine| l.text.to_ascii_lowercase().contains(&query);
            if views::messages::message_lines(row).iter().any(holds) {
                let lines = views::messages::wrapped_lines(row, width);
                self.selected = Some(list[i].seq);
                self.scroll = lines.iter().position(holds).unwrap_or(0).saturating_sub(1);
                return (true, format!("message {} of {}", i + 1, list.len()));
            }
        }
        let which = match (forward, at) {
            (true, usize::MAX) => "no message",
            (true, _) => "no later message",
            (false, _) => "no earlier message",
        };
        let query = crate::event::escape::Quoted(&self.query);
        (false, format!("{which} holds {query}"))
    }
}

/// Enter on the `nth` message, completed by row `seq` of `conn`: its first frame selected in
/// the frame list, and which rows carried it said.
fn jump(model: &Model, conn: ConnId, seq: u64, nth: usize) -> Outcome {
    let frames = frames_of(model, conn, seq);
    let Some(&first) = frames.first() else {
        return Outcome::Jump {
            conn,
            seq,
            focus: false,
            message: None,
        };
    };
    let names: Vec<String> = frames
        .iter()
        .filter_map(|s| model.row(conn, *s))
        .map(|r| r.name.clone())
        .collect();
    let message = format!(
        "message {nth}: {} frame(s) from the selected one: {}",
        frames.len(),
        names.join(", ")
    );
    Outcome::Jump {
        conn,
        seq: first,
        focus: true,
        message: Some(message),
    }
}
