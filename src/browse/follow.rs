//! What the timeline (`L`) follows, and what the TUI and the pager of a file replay say to each
//! other about it: the app asks for the followed frames of the whole capture around the
//! selected one ([`FollowRequest`]); the pager re-runs the pipeline over the file and answers
//! with at most a window's worth of them ([`Followed`]), each a [`Step`]: what the timeline shows
//! of a frame (its place, name and summary, not its bytes) and how its delivery was settled.
//! Pure data: the pager (`crate::replay::pager`) produces it, the UI consumes it.

use crate::event::FlowKey;
use crate::event::{ConnId, Dir, Timestamp};

use super::row::{Row, RowKind};

/// What is followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The AMQP 1.0 link of this name on this connection.
    Link {
        /// The connection the link is on.
        conn: ConnId,
        /// Link name.
        name: String,
    },
    /// The channel (AMQP 1.0: session) of this number on this connection.
    Channel {
        /// The connection the channel is on.
        conn: ConnId,
        /// The channel number (AMQP 1.0: as the client numbers its session).
        channel: u16,
    },
}

impl Follow {
    /// What the selected row belongs to: its link, else its channel.
    pub fn of(row: &Row) -> Option<Follow> {
        if row.kind != RowKind::Frame {
            return None;
        }
        match (&row.link, row.channel) {
            (Some(name), _) => Some(Follow::Link {
                conn: row.conn,
                name: name.clone(),
            }),
            (None, Some(channel)) => Some(Follow::Channel {
                conn: row.conn,
                channel,
            }),
            _ => None,
        }
    }

    /// The connection.
    pub fn conn(&self) -> ConnId {
        match self {
            Follow::Link { conn, .. } | Follow::Channel { conn, .. } => *conn,
        }
    }

    /// In words, for the view's title.
    pub fn title(&self) -> String {
        match self {
            Follow::Link { conn, name } => {
                format!("link {} of conn {conn}", crate::base::escape::Quoted(name))
            }
            Follow::Channel { conn, channel } => format!("channel {channel} of conn {conn}"),
        }
    }

    /// Whether a frame of the followed connection is one of its own: of a link, a frame of
    /// that link (`link`, as the attaches before it name it); of a channel, a frame on it but
    /// 0-9-1's content frames. (A link's dispositions are found by what they settle.)
    pub fn owns(&self, link: Option<&str>, channel: u16, name: &str) -> bool {
        match self {
            Follow::Link { name: n, .. } => link == Some(n.as_str()),
            Follow::Channel { channel: c, .. } => {
                *c == channel && !matches!(name, "content-header" | "content-body")
            }
        }
    }

    /// Whether the deliveries of `flow` (a frame's context) are the followed
    /// link's or channel's.
    pub fn is_flow(&self, flow: &FlowKey) -> bool {
        match (self, flow) {
            (Follow::Link { name, .. }, FlowKey::Link { name: Some(n), .. }) => {
                n.as_ref() == name.as_str()
            }
            (Follow::Channel { channel, .. }, FlowKey::Channel(c)) => c == channel,
            _ => false,
        }
    }
}

/// The followed frames of the whole capture asked of the pager (whole-capture mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowRequest {
    /// Which request (the app applies the answer to its latest only).
    pub id: u64,
    /// What is followed.
    pub follow: Follow,
    /// The selected frame's row number: at most half the bound of the frames brought back
    /// are before it, the rest from it on.
    pub around: u64,
}

/// How a delivery was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// This many µs after it started, by this (`disposition`, `confirm`, `ack`).
    After(i64, &'static str),
    /// It awaits none, for this reason (`pre-settled`, `no confirm`, `no-ack`).
    NotAwaited(&'static str),
}

/// One followed frame, as the timeline shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its row number.
    pub seq: u64,
    /// When it was captured.
    pub ts: Timestamp,
    /// Which way it went.
    pub dir: Option<Dir>,
    /// Its channel.
    pub channel: Option<u16>,
    /// The frame's name (`transfer`, `basic.publish`).
    pub name: String,
    /// The frame list's summary of it.
    pub summary: String,
    /// How the delivery it starts was settled, when it starts one and that was seen.
    pub settlement: Option<Settlement>,
}

impl Step {
    /// The step of a row in memory, with how its delivery was settled.
    pub fn of_row(r: &Row, settlement: Option<Settlement>) -> Step {
        Step {
            seq: r.seq,
            ts: r.ts,
            dir: r.dir,
            channel: r.channel,
            name: r.name.clone(),
            summary: r.summary.clone(),
            settlement,
        }
    }
}

/// The pager's answer to a [`FollowRequest`]: the followed frames around the one asked, in
/// capture order, each delivery's settlement found over the whole capture.
#[derive(Clone, Debug)]
pub struct Followed {
    /// What was asked.
    pub request: FollowRequest,
    /// The frames.
    pub steps: Vec<Step>,
    /// Followed frames were left out (the bound): (before the first step, after the last).
    pub cut: (bool, bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Dir;

    /// A link owns its frames by name and the deliveries of its flow in either direction; a
    /// channel its frames but 0-9-1's content, and its channel's deliveries.
    #[test]
    fn a_follow_owns_its_frames_and_its_flows_deliveries() {
        let link = Follow::Link {
            conn: 1,
            name: "orders".into(),
        };
        assert!(link.owns(Some("orders"), 0, "transfer"));
        assert!(!link.owns(Some("other"), 0, "transfer"));
        assert!(
            !link.owns(None, 0, "disposition"),
            "found by what it settles"
        );
        let flow = |name: Option<&str>, sender| FlowKey::Link {
            name: name.map(Into::into),
            unnamed: (0, 0),
            sender,
        };
        assert!(link.is_flow(&flow(Some("orders"), Dir::C2S)));
        assert!(link.is_flow(&flow(Some("orders"), Dir::S2C)));
        assert!(!link.is_flow(&flow(Some("order"), Dir::C2S)));
        assert!(!link.is_flow(&flow(None, Dir::C2S)));
        assert!(!link.is_flow(&FlowKey::Channel(0)));
        let channel = Follow::Channel {
            conn: 1,
            channel: 2,
        };
        assert!(channel.owns(None, 2, "basic.publish"));
        assert!(!channel.owns(None, 2, "content-body"));
        assert!(!channel.owns(None, 3, "basic.ack"));
        assert!(channel.is_flow(&FlowKey::Channel(2)));
        assert!(!channel.is_flow(&FlowKey::Channel(3)));
    }
}
