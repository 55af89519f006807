//! The tracker's state as JSON for the TUI: `connection`, `sessions` and `links`, keys
//! kebab-case as the spec spells its fields (plus `credit_history`), stable.

use serde_json::{Value as J, json};

use crate::event::Dir;

use super::ConnectionTracker;
use super::connection::Peer;
use super::link::{rcv_mode_name, role_name, snd_mode_name};

fn dirs<T: serde::Serialize>(f: impl Fn(Dir) -> T) -> J {
    json!({ "c2s": f(Dir::C2S), "s2c": f(Dir::S2C) })
}

fn peer_json(p: &Peer, state: &str) -> J {
    let o = p.open.as_ref();
    json!({
        "state": state,
        "container-id": o.map(|o| o.container_id.clone()),
        "hostname": o.and_then(|o| o.hostname.clone()),
        "max-frame-size": o.map(|o| o.max_frame_size),
        "channel-max": o.map(|o| o.channel_max),
        "idle-time-out": o.and_then(|o| o.idle_time_out),
        "offered-capabilities": o.map(|o| o.offered.clone()),
        "desired-capabilities": o.map(|o| o.desired.clone()),
    })
}

/// The snapshot of `t`.
pub fn snapshot(t: &ConnectionTracker) -> J {
    let limit = |d: Dir| {
        t.peer(d.flip())
            .open
            .as_ref()
            .map(|o| (o.max_frame_size, o.channel_max, o.idle_time_out))
    };
    let sasl = if t.sasl.used {
        json!({
            "mechanisms": t.sasl.mechanisms,
            "mechanism": t.sasl.mechanism,
            "outcome": t.sasl.outcome_name,
        })
    } else {
        J::Null
    };
    let connection = json!({
        "state": crate::state::ProtocolTracker::state_name(t),
        "client": peer_json(t.peer(Dir::C2S), t.client_state().name()),
        "server": peer_json(t.peer(Dir::S2C), t.server_state().name()),
        // Limits that apply to frames sent in each direction (announced by the receiving peer).
        "max-frame-size": dirs(|d| limit(d).map(|l| l.0)),
        "channel-max": dirs(|d| limit(d).map(|l| l.1)),
        "idle-time-out": dirs(|d| limit(d).and_then(|l| l.2)),
        "sasl": sasl,
    });

    let mut sessions: Vec<(u64, J)> = t
        .sessions
        .iter()
        .map(|(id, s)| {
            let side = |d: Dir| {
                let x = &s.side[d.index()];
                json!({
                    "next-outgoing-id": x.next_outgoing_id,
                    "next-incoming-id": x.next_incoming_id,
                    "incoming-window": x.incoming_window,
                    "outgoing-window": x.outgoing_window,
                    "handle-max": x.handle_max,
                    "remote-incoming-window": match (x.limit.cur, x.next_outgoing_id) {
                        (Some(g), Some(n)) => Some(g.remaining(n)),
                        _ => None,
                    },
                    "unsettled": s.deliveries[d.index()].len(),
                    "ended": s.ended[d.index()],
                })
            };
            (
                *id,
                json!({
                    "channel": dirs(|d| s.channel[d.index()]),
                    "state": s.state_name(),
                    "initiator": s.initiator.map(|d| d.as_str()),
                    "known": s.known,
                    "c2s": side(Dir::C2S),
                    "s2c": side(Dir::S2C),
                    "links": t.links.values().filter(|l| l.session == *id).count(),
                }),
            )
        })
        .collect();
    sessions.sort_by_key(|(id, _)| *id);

    let mut links: Vec<(u64, J)> = t
        .links
        .iter()
        .map(|(id, l)| {
            let s = t.sessions.get(&l.session);
            let unsettled = s.map_or(0, |s| {
                s.deliveries[l.sender.index()]
                    .values()
                    .filter(|x| x.link == *id)
                    .count()
            });
            let sa = l.sender_attach();
            let ra = l.receiver_attach();
            let client_role = if l.sender == Dir::C2S {
                crate::codec::amqp10::Role::Sender
            } else {
                crate::codec::amqp10::Role::Receiver
            };
            (
                *id,
                json!({
                    "name": l.name,
                    "role": role_name(client_role),
                    "sender": l.sender.as_str(),
                    "state": l.state_name(),
                    "channel": s.map(|s| dirs(|d| s.channel[d.index()])),
                    "handle": dirs(|d| l.handle[d.index()]),
                    "source-address": sa.and_then(|a| a.source_address.clone()).or_else(|| ra.and_then(|a| a.source_address.clone())),
                    "target-address": ra.and_then(|a| a.target_address.clone()).or_else(|| sa.and_then(|a| a.target_address.clone())),
                    "dynamic": sa.is_some_and(|a| a.source_dynamic) || ra.is_some_and(|a| a.target_dynamic),
                    "anonymous": l.is_anonymous(),
                    "snd-settle-mode": snd_mode_name(l.snd_settle_mode()),
                    "rcv-settle-mode": l.rcv_settle_mode().map(rcv_mode_name),
                    "delivery-count": l.delivery_count,
                    "link-credit": l.link_credit(),
                    "available": l.available,
                    "drain": l.drain,
                    "deliveries": l.deliveries,
                    "unsettled": unsettled,
                    "known": l.known,
                    "credit_history": l.credit_history.iter().map(|(_, c)| *c).collect::<Vec<_>>(),
                }),
            )
        })
        .collect();
    links.sort_by_key(|(id, _)| *id);

    json!({
        "connection": connection,
        "sessions": sessions.into_iter().map(|(_, j)| j).collect::<Vec<_>>(),
        "links": links.into_iter().map(|(_, j)| j).collect::<Vec<_>>(),
    })
}
