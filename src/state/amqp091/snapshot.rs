//! The AMQP 0-9-1 tracker's state as typed data ([`Amqp091Snapshot`]): the connection (the
//! handshake's state, negotiated limits, products, blocked) and every channel (state, confirm
//! mode, prefetch, consumers, unacked deliveries, the content in progress each way).
//!
//! `uncertain: true` marks what missed bytes (a capture gap, a skim) may have changed: the
//! channel's counts (unacked deliveries, pending confirms) are then only what was seen since,
//! and its content state per direction may be unknown.

use serde::Serialize;

use crate::state::snapshot::PerDir;

use super::content::ContentState;

/// Everything the AMQP 0-9-1 tracker knows of one connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Amqp091Snapshot {
    /// The connection.
    pub connection: ConnectionSnapshot,
    /// Channels by number.
    pub channels: Vec<ChannelSnapshot>,
}

/// The connection: handshake state, what was negotiated and announced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnectionSnapshot {
    /// Its state (`OPEN` ...).
    pub state: &'static str,
    /// Negotiated frame-max (0: no limit).
    pub frame_max: Option<u32>,
    /// Negotiated channel-max (0: no limit).
    pub channel_max: Option<u16>,
    /// Negotiated heartbeat in seconds (0: none).
    pub heartbeat: Option<u16>,
    /// The mechanism the client chose.
    pub mechanism: Option<String>,
    /// The virtual host opened.
    pub vhost: Option<String>,
    /// server-properties `product`.
    pub server_product: Option<String>,
    /// server-properties `version`.
    pub server_version: Option<String>,
    /// server-properties `platform`.
    pub server_platform: Option<String>,
    /// client-properties `product`.
    pub client_product: Option<String>,
    /// client-properties `version`.
    pub client_version: Option<String>,
    /// The server has the connection blocked.
    pub blocked: bool,
    /// Why, when blocked.
    pub blocked_reason: Option<String>,
    /// Bytes were missed at some point.
    pub uncertain: bool,
}

/// A channel's content in progress in one direction (§4.2.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum PendingContent {
    /// No content in progress.
    #[default]
    None,
    /// A content-bearing method was seen; its header comes next.
    AwaitingHeader {
        /// The method (`basic.publish` ...).
        method: &'static str,
    },
    /// The header was seen; body bytes follow.
    AwaitingBody {
        /// The header's body-size.
        size: u64,
        /// Body bytes still to come.
        remaining: u64,
    },
    /// Bytes were missed: not known until the next method.
    Unknown,
}

impl From<ContentState> for PendingContent {
    fn from(c: ContentState) -> Self {
        match c {
            ContentState::Idle { .. } => PendingContent::None,
            ContentState::AwaitingHeader { method, .. } => {
                PendingContent::AwaitingHeader { method }
            }
            ContentState::AwaitingBody { size, remaining } => {
                PendingContent::AwaitingBody { size, remaining }
            }
            ContentState::Unknown => PendingContent::Unknown,
        }
    }
}

/// One channel.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ChannelSnapshot {
    /// Channel number.
    pub channel: u16,
    /// Its state (`OPEN` ...).
    pub state: &'static str,
    /// confirm.select was sent.
    pub confirm_mode: bool,
    /// The next publish sequence number, in confirm mode.
    pub next_publish_seq: Option<u64>,
    /// Published in confirm mode, not yet confirmed (as seen).
    pub pending_confirms: usize,
    /// Consumer tags.
    pub consumers: Vec<String>,
    /// Delivered with ack required, not yet acknowledged (as seen).
    pub unacked_deliveries: usize,
    /// The last delivery tag the server used.
    pub last_delivery_tag: u64,
    /// basic.qos prefetch-count last asked for.
    pub prefetch: Option<u16>,
    /// The client may publish (it did not confirm channel.flow active=false).
    pub flow_active: bool,
    /// tx.select was sent.
    pub tx_mode: bool,
    /// The content in progress, per direction.
    pub pending_content: PerDir<PendingContent>,
    /// Bytes were missed since the channel was opened: counts only as seen since.
    pub uncertain: bool,
}

impl crate::state::snapshot::ProtocolSnapshot for Amqp091Snapshot {
    fn approx_bytes(&self) -> usize {
        512 + self.channels.len() * 256
    }
    fn open_scopes(&self) -> [i64; 4] {
        let open = || self.channels.iter().filter(|c| c.state == "OPEN");
        [
            0,
            0,
            open().count() as i64,
            open().map(|c| c.consumers.len()).sum::<usize>() as i64,
        ]
    }
}
