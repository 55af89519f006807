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

use super::app::App;
use super::model::{Model, Row, RowKind};

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
    pub(super) fn owns(&self, r: &Row) -> bool {
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

pub use super::components::messages_view::MessageView;

/// The messages of `view`'s scope among the rows kept, in order.
pub fn entries(app: &App, view: &MessageView) -> Vec<Entry> {
    entries_in(app.model(), view)
}

/// The messages of `view`'s scope among the rows `model` keeps (see [`entries`]).
pub fn entries_in(model: &Model, view: &MessageView) -> Vec<Entry> {
    let Some(c) = model.conns.get(&view.conn()) else {
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
    view.selected()
        .and_then(|s| entries.iter().position(|e| e.seq == s))
        .unwrap_or(entries.len().saturating_sub(1))
}

/// The rows of the message completed by row `seq` of `conn`, in order: an AMQP 1.0
/// delivery's transfers (those whose context names the same first frame), an AMQP 0-9-1
/// message's method, content header and body frames (the content frames of its channel
/// and direction back to the method that starts it). Rows no longer kept are not among them.
pub fn frames_of(model: &Model, conn: ConnId, seq: u64) -> Vec<u64> {
    let Some(c) = model.conns.get(&conn) else {
        return Vec::new();
    };
    let end = c.rows.partition_point(|r| r.seq <= seq);
    let Some(last) = end.checked_sub(1).and_then(|i| c.rows.get(i)) else {
        return Vec::new();
    };
    let delivery = last.frame.as_ref().and_then(|f| f.context.delivery);
    // A message whose last frame carries its delivery (AMQP 1.0's last transfer) is the
    // frames of that delivery; one whose last frame carries none (an AMQP 0-9-1 content
    // frame) is gathered back to the method that starts it.
    if let Some(d) = delivery {
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
