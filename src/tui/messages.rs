//! The message view (`b`): the messages of one link, channel, consumer or queue of a
//! connection, in the order they completed, each with its properties, annotations,
//! application properties and body, as the frames that carried them were decoded and masked
//! by the pipeline.
//!
//! Nothing is kept of its own: the messages are the frame-list rows that complete one (a row's
//! `message`, rendered once with its body cut at `--max-body`), found among the rows kept in
//! memory each time the view is drawn, so the view is bounded as the rows are and a live view
//! grows as messages come. Which rows belong to a message is what the frames' context says
//! (an AMQP 1.0 delivery's transfers share the frame that started it) or, in AMQP 0-9-1, the
//! content frames a channel carries after the method that starts a message (the spec forbids
//! anything else between them in one direction). Every wire string is escaped where the view
//! draws it (`views::messages`).

use crate::event::{ConnId, Dir, Timestamp};

use super::app::{App, Overlay, Pane};
use super::input::Action;
use super::line::TextLine;
use super::model::{Row, RowKind};
use super::views;

/// Whose messages the view shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// An AMQP 1.0 link, by name: its transfers' messages, both directions.
    Link {
        /// The link's name.
        name: String,
    },
    /// A channel: AMQP 0-9-1's publishes and deliveries on it (AMQP 1.0: a session's
    /// messages, for links whose attach was not seen).
    Channel {
        /// The channel number.
        channel: u16,
    },
    /// An AMQP 0-9-1 consumer, by its tag: the deliveries made to it.
    Consumer {
        /// The consumer tag.
        tag: String,
    },
    /// AMQP 0-9-1 messages published to or delivered from `exchange` with `key` (the default
    /// exchange, `""`, routes to the queue the key names).
    Route {
        /// The exchange name.
        exchange: String,
        /// The routing key.
        key: String,
    },
}

impl Scope {
    /// In words, for the view's title (wire names quoted and escaped).
    pub fn title(&self) -> String {
        use crate::event::escape::Quoted;
        match self {
            Scope::Link { name } => format!("link {}", Quoted(name)),
            Scope::Channel { channel } => format!("channel {channel}"),
            Scope::Consumer { tag } => format!("consumer {}", Quoted(tag)),
            Scope::Route { exchange, key } if exchange.is_empty() => {
                format!("queue {} (default exchange)", Quoted(key))
            }
            Scope::Route { exchange, key } => {
                format!("exchange {} key {}", Quoted(exchange), Quoted(key))
            }
        }
    }

    /// Whether the message row `r` is one of the scope's.
    fn owns(&self, r: &Row) -> bool {
        match self {
            Scope::Link { name } => r.link.as_deref() == Some(name.as_str()),
            Scope::Channel { channel } => r.channel == Some(*channel),
            Scope::Consumer { tag } => argument(r, "consumer-tag") == Some(tag.as_str()),
            Scope::Route { exchange, key } => {
                argument(r, "exchange") == Some(exchange.as_str())
                    && argument(r, "routing-key") == Some(key.as_str())
            }
        }
    }
}

/// A string argument of an AMQP 0-9-1 message's method (`consumer-tag`, `exchange`,
/// `routing-key`), as the row's message gives it.
fn argument<'a>(r: &'a Row, name: &str) -> Option<&'a str> {
    r.message.as_ref()?.get("arguments")?.get(name)?.as_str()
}

/// A string field of a row's decoded frame (a 0-9-1 method's argument).
fn field(r: &Row, name: &str) -> Option<String> {
    r.fields_json().get(name)?.as_str().map(String::from)
}

/// The scopes the message view offers for row `r`, the first the one it opens with: the
/// link (AMQP 1.0), else the channel, then (AMQP 0-9-1) the consumer and the route of its
/// message or method.
pub fn scopes_of(r: &Row) -> Vec<Scope> {
    let mut out = Vec::new();
    if r.kind != RowKind::Frame {
        return out;
    }
    if let Some(name) = &r.link {
        out.push(Scope::Link { name: name.clone() });
        return out;
    }
    if let Some(channel) = r.channel.filter(|c| *c != 0 || r.message.is_some()) {
        out.push(Scope::Channel { channel });
    }
    let get = |name: &str| {
        argument(r, name)
            .map(String::from)
            .or_else(|| field(r, name))
    };
    if let Some(tag) = get("consumer-tag").filter(|t| !t.is_empty()) {
        out.push(Scope::Consumer { tag });
    }
    if let (Some(exchange), Some(key)) = (get("exchange"), get("routing-key")) {
        out.push(Scope::Route { exchange, key });
    }
    out
}

/// One message of the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The row that completes it (the one whose `message` it is).
    pub seq: u64,
    /// Which way it went.
    pub dir: Option<Dir>,
    /// When it completed.
    pub ts: Timestamp,
}

/// The view's state: what it shows and where its cursors are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageView {
    /// The connection.
    pub conn: ConnId,
    /// The scopes offered (Tab cycles), never empty.
    pub scopes: Vec<Scope>,
    /// Which of them is shown.
    pub scope: usize,
    /// The selected message, by its row (`None`: the latest, following new ones).
    pub selected: Option<u64>,
    /// Lines of the selected message scrolled past.
    pub scroll: usize,
    /// The search being typed, while it is.
    pub typing: Option<TextLine>,
    /// The search applied (`n`/`N` find its next / previous match).
    pub query: String,
}

impl MessageView {
    /// The scope shown.
    pub fn shown(&self) -> &Scope {
        &self.scopes[self.scope.min(self.scopes.len() - 1)]
    }
}

/// The messages of `view`'s scope among the rows kept, in order.
pub fn entries(app: &App, view: &MessageView) -> Vec<Entry> {
    let Some(c) = app.model.conns.get(&view.conn) else {
        return Vec::new();
    };
    let scope = view.shown();
    c.rows
        .iter()
        .filter(|r| r.message.is_some() && r.kind == RowKind::Frame && scope.owns(r))
        .map(|r| Entry {
            seq: r.seq,
            dir: r.dir,
            ts: r.ts,
        })
        .collect()
}

/// The index of the selected message among `entries` (the latest when it is not there).
pub fn selected_index(view: &MessageView, entries: &[Entry]) -> usize {
    view.selected
        .and_then(|s| entries.iter().position(|e| e.seq == s))
        .unwrap_or(entries.len().saturating_sub(1))
}

/// The rows of the message completed by row `seq` of `conn`, in order: an AMQP 1.0
/// delivery's transfers (those whose context names the same first frame), an AMQP 0-9-1
/// message's method, content header and body frames (the content frames of its channel
/// and direction back to the method that starts it). Rows no longer kept are not among them.
pub fn frames_of(app: &App, conn: ConnId, seq: u64) -> Vec<u64> {
    let Some(c) = app.model.conns.get(&conn) else {
        return Vec::new();
    };
    let end = c.rows.partition_point(|r| r.seq <= seq);
    let Some(last) = end.checked_sub(1).and_then(|i| c.rows.get(i)) else {
        return Vec::new();
    };
    let delivery = last.frame.as_ref().and_then(|f| f.context.delivery);
    if let Some(d) = delivery.filter(|_| last.link.is_some() || last.proto == "amqp-1.0") {
        return c
            .rows
            .range(..end)
            .filter(|r| {
                r.frame
                    .as_ref()
                    .and_then(|f| f.context.delivery)
                    .is_some_and(|x| x.start == d.start)
            })
            .map(|r| r.seq)
            .collect();
    }
    let mut out = Vec::new();
    for r in c.rows.range(..end).rev() {
        if r.dir != last.dir || r.channel != last.channel || r.kind != RowKind::Frame {
            continue;
        }
        out.push(r.seq);
        let starts = r.frame.as_ref().is_some_and(|f| f.context.starts_message());
        let content = matches!(r.name.as_str(), "content-header" | "content-body");
        if starts || !content {
            break;
        }
    }
    out.reverse();
    out
}

impl App {
    /// `b`: the messages of the selected frame's link or channel (or say there are none).
    pub(super) fn open_messages(&mut self) {
        let Some(row) = self.selected_row() else {
            self.message = Some("select a frame of a link or a channel to see its messages".into());
            return;
        };
        let scopes = scopes_of(row);
        if scopes.is_empty() {
            self.message = Some("select a frame of a link or a channel to see its messages".into());
            return;
        }
        let (conn, at) = (row.conn, row.seq);
        let mut view = MessageView {
            conn,
            scopes,
            scope: 0,
            selected: None,
            scroll: 0,
            typing: None,
            query: String::new(),
        };
        // The message the selected frame is part of: the first to complete at or after it.
        view.selected = entries(self, &view)
            .iter()
            .find(|e| e.seq >= at)
            .map(|e| e.seq);
        self.overlay = Overlay::Messages(Box::new(view));
    }

    /// A key while the message view is open; `false` for the keys it leaves to the panes.
    pub(super) fn messages_key(&mut self, a: Action) -> bool {
        let Overlay::Messages(view) = &self.overlay else {
            return false;
        };
        let mut view = view.clone();
        if view.typing.is_some() && a != Action::Quit {
            self.messages_typing(&mut view, a);
            self.overlay = Overlay::Messages(view);
            return true;
        }
        let list = entries(self, &view);
        let at = selected_index(&view, &list);
        let page = views::messages::detail_page(self.model.size);
        let select = |view: &mut MessageView, i: usize| {
            view.selected = list.get(i).map(|e| e.seq);
            view.scroll = 0;
        };
        match a {
            Action::Up => select(&mut view, at.saturating_sub(1)),
            Action::Down => select(&mut view, (at + 1).min(list.len().saturating_sub(1))),
            Action::Home => select(&mut view, 0),
            Action::End | Action::Follow => {
                view.selected = None;
                view.scroll = 0;
            }
            Action::PageDown | Action::HexDown => view.scroll += page.max(2) - 1,
            Action::PageUp | Action::HexUp => {
                view.scroll = view.scroll.saturating_sub(page.max(2) - 1)
            }
            Action::Scroll { down, .. } => {
                view.scroll = if down {
                    view.scroll + 3
                } else {
                    view.scroll.saturating_sub(3)
                }
            }
            Action::FocusNext | Action::TextTab => {
                view.scope = (view.scope + 1) % view.scopes.len();
                view.selected = None;
                view.scroll = 0;
            }
            Action::FocusPrev => {
                view.scope = (view.scope + view.scopes.len() - 1) % view.scopes.len();
                view.selected = None;
                view.scroll = 0;
            }
            Action::OpenFilter => view.typing = Some(TextLine::new(view.query.clone())),
            Action::NextViolation | Action::PrevViolation => {
                let forward = a == Action::NextViolation;
                self.find_message(&mut view, &list, at, forward);
            }
            Action::Enter => {
                self.overlay = Overlay::None;
                if let Some(e) = list.get(at) {
                    self.jump_to_message(view.conn, e.seq, at + 1);
                }
                return true;
            }
            Action::Escape | Action::Messages | Action::Quit => {
                self.overlay = Overlay::None;
                return a != Action::Quit;
            }
            Action::Help => return false,
            _ => {}
        }
        self.overlay = Overlay::Messages(view);
        true
    }

    /// A key while the view's search line is open: editing, Enter searches, Esc cancels.
    fn messages_typing(&mut self, view: &mut MessageView, a: Action) {
        let Some(text) = view.typing.as_mut() else {
            return;
        };
        use tui_input::InputRequest;
        match a {
            Action::FilterChar(c) => text.edit(InputRequest::InsertChar(c)),
            Action::FilterBackspace => text.edit(InputRequest::DeletePrevChar),
            Action::Edit(req) => text.edit(req),
            Action::FilterCancel => view.typing = None,
            Action::FilterSubmit => {
                view.query = text.as_str().to_string();
                view.typing = None;
                let list = entries(self, view);
                let at = selected_index(view, &list);
                // From the selected message on, itself included, then from the first.
                if !self.find_message(view, &list, at.wrapping_sub(1), true) && at > 0 {
                    self.find_message(view, &list, usize::MAX, true);
                }
            }
            _ => {}
        }
    }

    /// Select the next (previous) message after (before) index `at` (`usize::MAX`: from the
    /// first) whose text holds the search, ASCII case folded, and scroll to its first line
    /// that does; `false` when none does.
    fn find_message(
        &mut self,
        view: &mut MessageView,
        list: &[Entry],
        at: usize,
        forward: bool,
    ) -> bool {
        let query = view.query.to_ascii_lowercase();
        if query.is_empty() {
            self.message = Some("no search: / types one".into());
            return false;
        }
        let order: Box<dyn Iterator<Item = usize>> = if forward {
            Box::new(at.wrapping_add(1)..list.len())
        } else {
            Box::new((0..at.min(list.len())).rev())
        };
        let width = views::messages::text_width(self.model.size);
        for i in order {
            let Some(row) = self.row(view.conn, list[i].seq) else {
                continue;
            };
            // The lines as built, unwrapped (a match across a wrap is found too); wrapped only
            // for the message found, to scroll to it.
            let holds = |l: &views::messages::MsgLine| l.text.to_ascii_lowercase().contains(&query);
            if views::messages::message_lines(row).iter().any(holds) {
                let lines = views::messages::wrapped_lines(row, width);
                view.selected = Some(list[i].seq);
                view.scroll = lines.iter().position(holds).unwrap_or(0).saturating_sub(1);
                self.message = Some(format!("message {} of {}", i + 1, list.len()));
                return true;
            }
        }
        let which = match (forward, at) {
            (true, usize::MAX) => "no message",
            (true, _) => "no later message",
            (false, _) => "no earlier message",
        };
        self.message = Some(format!(
            "{which} holds {}",
            crate::event::escape::Quoted(&view.query)
        ));
        false
    }

    /// Enter on a message: select its first frame in the frame list and say which rows
    /// carried it.
    fn jump_to_message(&mut self, conn: ConnId, seq: u64, nth: usize) {
        let frames = frames_of(self, conn, seq);
        let Some(&first) = frames.first() else {
            self.reach(conn, seq);
            return;
        };
        self.reach(conn, first);
        self.focus = Pane::Frames;
        let names: Vec<String> = frames
            .iter()
            .filter_map(|s| self.row(conn, *s))
            .map(|r| r.name.clone())
            .collect();
        self.message = Some(format!(
            "message {nth}: {} frame(s) from the selected one: {}",
            frames.len(),
            names.join(", ")
        ));
    }
}
