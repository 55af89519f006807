//! What a tracker knows of one connection at one moment, as plain typed data: the state name
//! for the connection list and, per protocol, the connection, its sessions and links (AMQP 1.0)
//! or its channels (AMQP 0-9-1). The pipeline publishes it as an
//! [`EventKind::State`](crate::event::EventKind::State) event; the TUI renders it.
//!
//! A snapshot is a copy: it holds no reference into the tracker and is cheap to share (`Arc`).
//! Every part that may have been touched by missed bytes (a capture gap, a skim) says so
//! (`known: false` in AMQP 1.0, `uncertain: true` in AMQP 0-9-1): its counts are then only
//! what was seen since, not the peers' real state. JSON (`Serialize`) keeps the keys the spec
//! spells (kebab-case).

use serde::Serialize;

use crate::base::Dir;

pub use super::amqp10::snapshot::{
    Amqp10Snapshot, ConnectionSnapshot as Amqp10Connection, LinkSnapshot, PeerSnapshot,
    SaslSnapshot, SessionSideSnapshot, SessionSnapshot,
};
pub use super::amqp091::snapshot::{
    Amqp091Snapshot, ChannelSnapshot, ConnectionSnapshot as Amqp091Connection, PendingContent,
};

/// A tracked connection's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// The state name the connection list shows (`OPENED`, `SASL`, `-` before anything).
    pub name: String,
    /// What the protocol's tracker knows.
    #[serde(flatten)]
    pub detail: Detail,
}

pub use super::register::Detail;

/// What every protocol's snapshot tells besides its own tables (the part of a [`Detail`]
/// the layers above read without knowing the protocol).
pub trait ProtocolSnapshot {
    /// About what it holds, in bytes (its tables and histories).
    fn approx_bytes(&self) -> usize;
    /// What the peers have open: sessions mapped, links attached, channels open, consumers.
    fn open_scopes(&self) -> [i64; 4];
    /// The names it knows of what messages go to and come from (link names and addresses),
    /// for completion.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One value per direction, serialised as `{"c2s": .., "s2c": ..}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerDir<T> {
    /// What the client sends (or announced for what it sends).
    pub c2s: T,
    /// What the server sends.
    pub s2c: T,
}

impl<T> PerDir<T> {
    /// Both values from `f(dir)`.
    pub fn from_fn(mut f: impl FnMut(Dir) -> T) -> Self {
        PerDir {
            c2s: f(Dir::C2S),
            s2c: f(Dir::S2C),
        }
    }

    /// The value for `dir`.
    pub fn get(&self, dir: Dir) -> &T {
        match dir {
            Dir::C2S => &self.c2s,
            Dir::S2C => &self.s2c,
        }
    }
}
