//! The AMQP 1.0 tracker's state as typed data ([`Amqp10Snapshot`]): the connection (each peer's
//! open, the limits that apply to each direction, SASL), every session with both endpoints'
//! windows, every link with its flow-control state (§2.6.7) and link-credit history.
//!
//! `known: false` marks a session or link whose history was partly missed (a gap or a skim in
//! either direction): its counts (unsettled, deliveries, credit) are then only what was seen
//! since. Sessions and links come in the order they were first seen.

use serde::Serialize;

use crate::base::Dir;
use crate::hash::HashMap;
use crate::state::snapshot::PerDir;

use super::ConnectionTracker;
use super::connection::Peer;
use super::link::{Link, rcv_mode_name, role_name, snd_mode_name};
use super::session::Session;

/// Everything the AMQP 1.0 tracker knows of one connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Amqp10Snapshot {
    /// The connection.
    pub connection: ConnectionSnapshot,
    /// Sessions, oldest first.
    pub sessions: Vec<SessionSnapshot>,
    /// Links, oldest first.
    pub links: Vec<LinkSnapshot>,
}

/// One peer's side of the connection: its spec state and what its open announced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PeerSnapshot {
    /// Its endpoint's spec state (`OPENED` ...).
    pub state: &'static str,
    /// container-id of its open.
    pub container_id: Option<String>,
    /// hostname of its open.
    pub hostname: Option<String>,
    /// max-frame-size of its open (frames it accepts).
    pub max_frame_size: Option<u32>,
    /// channel-max of its open.
    pub channel_max: Option<u16>,
    /// idle-time-out of its open (ms).
    pub idle_time_out: Option<u32>,
    /// offered-capabilities of its open.
    pub offered_capabilities: Option<Vec<String>>,
    /// desired-capabilities of its open.
    pub desired_capabilities: Option<Vec<String>>,
    /// Bytes it sent were missed: what it announced may be unknown.
    pub known: bool,
}

/// The SASL layer, when used.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SaslSnapshot {
    /// Mechanisms the server offered.
    pub mechanisms: Vec<String>,
    /// The mechanism the client chose.
    pub mechanism: Option<String>,
    /// The outcome's name (`ok`, `auth` ...).
    pub outcome: Option<&'static str>,
}

/// The connection: both peers, the limits that apply to each direction, SASL.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnectionSnapshot {
    /// The name the connection list shows.
    pub state: String,
    /// The client's side.
    pub client: PeerSnapshot,
    /// The server's side.
    pub server: PeerSnapshot,
    /// max-frame-size for frames sent in each direction (announced by the receiving peer).
    pub max_frame_size: PerDir<Option<u32>>,
    /// channel-max for each direction (announced by the receiving peer).
    pub channel_max: PerDir<Option<u16>>,
    /// idle-time-out the receiving peer asked of each direction (ms).
    pub idle_time_out: PerDir<Option<u32>>,
    /// The SASL layer, when used.
    pub sasl: Option<SaslSnapshot>,
}

/// One endpoint of a session: what it announced in begin/flow and what it has unsettled.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SessionSideSnapshot {
    /// The transfer-id its next transfer gets.
    pub next_outgoing_id: Option<u32>,
    /// Its next-incoming-id (flow).
    pub next_incoming_id: Option<u32>,
    /// Its incoming-window.
    pub incoming_window: Option<u32>,
    /// Its outgoing-window.
    pub outgoing_window: Option<u32>,
    /// Its handle-max.
    pub handle_max: Option<u32>,
    /// How many more transfers the partner's window lets it send (§2.5.6).
    pub remote_incoming_window: Option<i64>,
    /// Deliveries it sent unsettled that neither end has settled yet (as seen).
    pub unsettled: usize,
    /// It has sent its end.
    pub ended: bool,
}

/// One session, both endpoints.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SessionSnapshot {
    /// The channel each peer sends the session's frames on.
    pub channel: PerDir<Option<u16>>,
    /// The session state (§2.5.5) from the client's side.
    pub state: &'static str,
    /// The peer whose begin came first.
    pub initiator: Option<Dir>,
    /// False when part of its history was missed: windows and counts are only as seen since.
    pub known: bool,
    /// The client's endpoint.
    pub c2s: SessionSideSnapshot,
    /// The server's endpoint.
    pub s2c: SessionSideSnapshot,
    /// Links attached on it.
    pub links: usize,
}

/// One link, both endpoints, with its flow-control state (§2.6.7).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct LinkSnapshot {
    /// Link name.
    pub name: String,
    /// The client's role (`sender` / `receiver`).
    pub role: &'static str,
    /// The direction deliveries travel in.
    pub sender: Dir,
    /// The link state from the client's side.
    pub state: &'static str,
    /// The channel of its session, per peer.
    pub channel: PerDir<Option<u16>>,
    /// Each peer's handle while attached.
    pub handle: PerDir<Option<u32>>,
    /// Source address (either attach).
    pub source_address: Option<String>,
    /// Target address (either attach).
    pub target_address: Option<String>,
    /// A dynamic terminus was asked for.
    pub dynamic: bool,
    /// It carries messages to the anonymous terminus.
    pub anonymous: bool,
    /// The sender's settle mode.
    pub snd_settle_mode: String,
    /// The receiver's settle mode, once it attached.
    pub rcv_settle_mode: Option<String>,
    /// The sender's delivery-count.
    pub delivery_count: Option<u32>,
    /// link-credit as the sender computes it (may be negative after the receiver lowered it).
    pub link_credit: Option<i64>,
    /// The sender's last `available`.
    pub available: Option<u32>,
    /// The receiver's last drain flag.
    pub drain: bool,
    /// Deliveries started on the link (as seen).
    pub deliveries: u64,
    /// Its unsettled deliveries (as seen).
    pub unsettled: usize,
    /// False when part of its history was missed: counts and credit only as seen since.
    pub known: bool,
    /// link-credit after each flow and transfer, oldest first (at most
    /// [`CREDIT_HISTORY`](super::link::CREDIT_HISTORY)).
    #[serde(rename = "credit_history")]
    pub credit_history: Vec<i64>,
}

fn peer(p: &Peer, state: &'static str) -> PeerSnapshot {
    let o = p.open.as_ref();
    PeerSnapshot {
        state,
        container_id: o.map(|o| o.container_id.clone()),
        hostname: o.and_then(|o| o.hostname.clone()),
        max_frame_size: o.map(|o| o.max_frame_size),
        channel_max: o.map(|o| o.channel_max),
        idle_time_out: o.and_then(|o| o.idle_time_out),
        offered_capabilities: o.map(|o| o.offered.clone()),
        desired_capabilities: o.map(|o| o.desired.clone()),
        known: !p.unknown,
    }
}

fn connection(t: &ConnectionTracker) -> ConnectionSnapshot {
    // The limits for frames sent in `d` are the ones the receiving peer announced.
    let open = |d: Dir| t.peer(d.flip()).open.as_ref();
    ConnectionSnapshot {
        state: crate::state::ProtocolTracker::state_name(t),
        client: peer(t.peer(Dir::C2S), t.client_state().name()),
        server: peer(t.peer(Dir::S2C), t.server_state().name()),
        max_frame_size: PerDir::from_fn(|d| open(d).map(|o| o.max_frame_size)),
        channel_max: PerDir::from_fn(|d| open(d).map(|o| o.channel_max)),
        idle_time_out: PerDir::from_fn(|d| open(d).and_then(|o| o.idle_time_out)),
        sasl: t.sasl.used.then(|| SaslSnapshot {
            mechanisms: t.sasl.mechanisms.clone(),
            mechanism: t.sasl.mechanism.clone(),
            outcome: t.sasl.outcome_name,
        }),
    }
}

fn session_side(s: &Session, d: Dir) -> SessionSideSnapshot {
    let x = &s.side[d.index()];
    SessionSideSnapshot {
        next_outgoing_id: x.next_outgoing_id,
        next_incoming_id: x.next_incoming_id,
        incoming_window: x.incoming_window,
        outgoing_window: x.outgoing_window,
        handle_max: x.handle_max,
        remote_incoming_window: match (x.limit.cur, x.next_outgoing_id) {
            (Some(g), Some(n)) => Some(g.remaining(n)),
            _ => None,
        },
        unsettled: s.deliveries.unsettled[d.index()].len(),
        ended: s.ended[d.index()],
    }
}

fn session(s: &Session) -> SessionSnapshot {
    SessionSnapshot {
        channel: PerDir::from_fn(|d| s.channel[d.index()]),
        state: s.state_name(),
        initiator: s.initiator,
        known: s.known,
        c2s: session_side(s, Dir::C2S),
        s2c: session_side(s, Dir::S2C),
        links: s.links.len(),
    }
}

/// Each link's unsettled deliveries (by link id), in one pass over the session's.
fn unsettled_by_link(s: &Session) -> HashMap<u64, usize> {
    let mut n = HashMap::default();
    for d in s.deliveries.unsettled.iter().flat_map(|m| m.values()) {
        *n.entry(d.link).or_default() += 1;
    }
    n
}

fn link(s: &Session, l: &Link, unsettled: usize) -> LinkSnapshot {
    let (sa, ra) = (l.sender_attach(), l.receiver_attach());
    let client_role = if l.sender == Dir::C2S {
        crate::codec::amqp10::Role::Sender
    } else {
        crate::codec::amqp10::Role::Receiver
    };
    let source = |a: Option<&super::link::AttachInfo>| a.and_then(|a| a.source_address.clone());
    let target = |a: Option<&super::link::AttachInfo>| a.and_then(|a| a.target_address.clone());
    LinkSnapshot {
        name: l.name.clone(),
        role: role_name(client_role),
        sender: l.sender,
        state: l.state_name(),
        channel: PerDir::from_fn(|d| s.channel[d.index()]),
        handle: PerDir::from_fn(|d| l.handle[d.index()]),
        source_address: source(sa).or_else(|| source(ra)),
        target_address: target(ra).or_else(|| target(sa)),
        dynamic: sa.is_some_and(|a| a.source_dynamic) || ra.is_some_and(|a| a.target_dynamic),
        anonymous: l.is_anonymous(),
        snd_settle_mode: snd_mode_name(l.snd_settle_mode()),
        rcv_settle_mode: l.rcv_settle_mode().map(rcv_mode_name),
        delivery_count: l.delivery_count,
        link_credit: l.link_credit(),
        available: l.available,
        drain: l.drain,
        deliveries: l.deliveries,
        unsettled,
        // A link is only as well known as its session (windows and deliveries live there).
        known: l.known && s.known,
        credit_history: l.credit_history.iter().map(|(_, c)| *c).collect(),
    }
}

/// The snapshot of `t`.
pub fn snapshot(t: &ConnectionTracker) -> Amqp10Snapshot {
    let mut sessions: Vec<(u64, SessionSnapshot)> =
        t.sessions.iter().map(|(id, s)| (*id, session(s))).collect();
    sessions.sort_by_key(|(id, _)| *id);
    let mut links: Vec<(u64, LinkSnapshot)> = t
        .sessions
        .values()
        .flat_map(|s| {
            let unsettled = unsettled_by_link(s);
            s.links.iter().map(move |(id, l)| {
                let n = unsettled.get(id).copied().unwrap_or(0);
                (*id, link(s, l, n))
            })
        })
        .collect();
    links.sort_by_key(|(id, _)| *id);
    Amqp10Snapshot {
        connection: connection(t),
        sessions: sessions.into_iter().map(|(_, s)| s).collect(),
        links: links.into_iter().map(|(_, l)| l).collect(),
    }
}

impl crate::state::snapshot::ProtocolSnapshot for Amqp10Snapshot {
    fn approx_bytes(&self) -> usize {
        512 + self.sessions.len() * 256
            + self
                .links
                .iter()
                .map(|l| 512 + l.credit_history.len() * 8)
                .sum::<usize>()
    }
    fn open_scopes(&self) -> [i64; 4] {
        [
            self.sessions.iter().filter(|s| s.state == "MAPPED").count() as i64,
            self.links.iter().filter(|l| l.state == "ATTACHED").count() as i64,
            0,
            0,
        ]
    }
    fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.links {
            out.push(l.name.clone());
            out.extend(l.source_address.iter().cloned());
            out.extend(l.target_address.iter().cloned());
        }
        out
    }
}
