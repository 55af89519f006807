//! AMQP 0-9-1 frame context: frames to channels, publishes to their confirms, deliveries to
//! their acks (see [`crate::state::context`]).
//!
//! Confirms number a channel's publishes from 1, counting from the first publish after the
//! client's `confirm.select` (RabbitMQ's publisher confirms: "the broker ... starts counting
//! at 1 on the first basic.publish"), pipelined or not; `basic.ack`/`basic.nack` from the
//! broker confirm by that number, `multiple` up to it. Deliveries are acked (`basic.ack`,
//! `basic.nack`, `basic.reject` from the client) by the delivery-tag the broker gave them. A
//! consumer or get with `no-ack` has its deliveries settled on delivery. A gap client to
//! server may hide publishes, after which the numbering is unknown: a channel's publishes are
//! then not timed until it is opened again.

use std::collections::VecDeque;

use crate::hash::HashSet;

use bytes::Bytes;

use crate::base::{Dir, FrameContext, FrameRef};
use crate::codec::amqp091::{Frame, Method, MethodKind};
use crate::state::context::{
    At, Awaits, ContextTracker, Delivery, FlowKey, MAX_OPEN, SettleKind, Settlement,
};
use crate::state::seq_map::SeqMap;

use super::slots::Slots;

/// A publish or delivery waiting for its confirm or ack: the frame that started it, and when.
type Waiting = SeqMap<u64, (FrameRef, i64)>;

/// Consumers and gets of one channel whose deliveries need no ack, and those still waiting
/// for the broker's answer (bounded by what the client asked).
#[derive(Debug, Default)]
struct NoAck {
    /// Consumer tags whose consumer said `no-ack`.
    tags: HashSet<Bytes>,
    /// Consumes awaiting their consume-ok (which names the tag): no-ack.
    consumes: VecDeque<bool>,
    /// Gets awaiting their get-ok or get-empty: no-ack.
    gets: VecDeque<bool>,
}

/// One channel's numbering and what waits on it.
#[derive(Debug, Default)]
struct Channel {
    /// In confirm mode, with the number the next publish gets (`None`: not in confirm mode).
    next_publish: Option<u64>,
    /// The numbering is unknown (publishes may have been lost in a gap).
    unnumbered: bool,
    publishes: Waiting,
    deliveries: Waiting,
    no_ack: NoAck,
}

/// The context of one AMQP 0-9-1 connection's frames.
#[derive(Debug, Default)]
pub struct Amqp091Context {
    channels: Slots<u16, Channel>,
    /// Publishes and deliveries waiting, over every channel.
    waiting: usize,
}

/// Settle what `tag` (and `multiple`: every one up to it; tag 0 with multiple: all) names in
/// `waiting`, as `kind` with `outcome`.
fn settle(
    waiting: &mut Waiting,
    (tag, multiple): (u64, bool),
    at: At,
    (kind, outcome): (SettleKind, &'static str),
    flow: &FlowKey,
    cx: &mut FrameContext,
) -> usize {
    let settled = |(_, (start, ts)): (u64, (FrameRef, i64))| Settlement {
        start,
        after_us: at.ts - ts,
        kind,
        flow: flow.clone(),
        outcome,
    };
    // Straight into the context, which is sized once: no list of the taken entries between.
    let before = cx.settles.len();
    match (multiple, tag) {
        (true, 0) => cx.settles.extend(waiting.drain_range(..).map(settled)),
        (true, _) => cx.settles.extend(waiting.drain_range(..=tag).map(settled)),
        (false, _) => {
            if let Some(v) = waiting.remove(&tag) {
                // One settlement, as a rule the frame's only one: room for it alone.
                cx.settles.reserve_exact(1);
                cx.settles.push(settled((tag, v)));
            }
        }
    }
    cx.settles.len() - before
}

impl Amqp091Context {
    fn method(&mut self, at: At, channel: u16, m: &Method, cx: &mut FrameContext) {
        let flow = FlowKey::Channel(channel);
        let full = self.waiting >= MAX_OPEN;
        let message = matches!(
            (m.kind(), at.dir()),
            (MethodKind::BasicPublish, Dir::C2S)
                | (MethodKind::BasicDeliver | MethodKind::BasicGetOk, Dir::S2C)
        );
        if channel != 0 || message {
            cx.flow = Some(flow.clone());
        }
        let starts = |kind, awaits| {
            Some(Delivery {
                start: at.at,
                starts: true,
                kind,
                awaits: Some(awaits),
            })
        };
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        match (m.kind(), at.dir()) {
            (MethodKind::ChannelOpen, Dir::C2S) => {
                self.waiting -= ch.publishes.len() + ch.deliveries.len();
                *ch = Channel::default();
            }
            (MethodKind::ConfirmSelect, Dir::C2S) if ch.next_publish.is_none() => {
                // Counting starts here: known, whatever a gap hid before.
                ch.next_publish = Some(1);
                ch.unnumbered = false;
            }
            (MethodKind::BasicPublish, Dir::C2S) => {
                let number = ch.next_publish;
                ch.next_publish = number.map(|n| n + 1);
                let kind = SettleKind::PublishConfirm;
                cx.delivery = match number {
                    // A gap may have hidden the confirm.select or publishes before this one.
                    _ if ch.unnumbered || full => starts(kind, Awaits::Untimed),
                    None => starts(kind, Awaits::NotAwaited),
                    Some(n) => {
                        ch.publishes.insert(n, (at.at, at.ts));
                        self.waiting += 1;
                        starts(kind, Awaits::Settlement)
                    }
                };
            }
            (MethodKind::BasicDeliver | MethodKind::BasicGetOk, Dir::S2C) => {
                let no_ack = if m.kind() == MethodKind::BasicGetOk {
                    ch.no_ack.gets.pop_front().unwrap_or(false)
                } else {
                    !ch.no_ack.tags.is_empty()
                        && m.consumer_tag().is_some_and(|t| ch.no_ack.tags.contains(t))
                };
                let kind = SettleKind::DeliverAck;
                cx.delivery = if no_ack {
                    starts(kind, Awaits::NotAwaited)
                } else if full {
                    starts(kind, Awaits::Untimed)
                } else if let Some(tag) = m.delivery_tag() {
                    // A tag given again (a redelivery after recover) replaces the older one.
                    if ch.deliveries.insert(tag, (at.at, at.ts)).is_none() {
                        self.waiting += 1;
                    }
                    starts(kind, Awaits::Settlement)
                } else {
                    starts(kind, Awaits::Untimed)
                };
            }
            (MethodKind::BasicAck | MethodKind::BasicNack, Dir::S2C) => {
                let tags = (m.delivery_tag().unwrap_or(0), m.multiple() == Some(true));
                let how = (SettleKind::PublishConfirm, outcome(m.kind()));
                self.waiting -= settle(&mut ch.publishes, tags, at, how, &flow, cx);
            }
            (MethodKind::BasicAck | MethodKind::BasicNack | MethodKind::BasicReject, Dir::C2S) => {
                let tags = (m.delivery_tag().unwrap_or(0), m.multiple() == Some(true));
                let how = (SettleKind::DeliverAck, outcome(m.kind()));
                self.waiting -= settle(&mut ch.deliveries, tags, at, how, &flow, cx);
            }
            (MethodKind::BasicConsume, Dir::C2S) => consume(&mut ch.no_ack, m),
            (MethodKind::BasicConsumeOk, Dir::S2C) => {
                let asked = ch.no_ack.consumes.pop_front();
                if let (Some(true), Some(tag)) = (asked, m.consumer_tag()) {
                    ch.no_ack.tags.insert(tag.clone());
                }
            }
            (MethodKind::BasicCancel | MethodKind::BasicCancelOk, _) => {
                if let Some(tag) = m.consumer_tag() {
                    ch.no_ack.tags.remove(tag);
                }
            }
            (MethodKind::BasicGet, Dir::C2S) => ch.no_ack.gets.push_back(m.no_ack() == Some(true)),
            (MethodKind::BasicGetEmpty, Dir::S2C) => {
                ch.no_ack.gets.pop_front();
            }
            (MethodKind::ChannelCloseOk, _) => {
                // Whatever was unacked is requeued: nothing waits any more.
                self.waiting -= ch.publishes.len() + ch.deliveries.len();
                self.channels.remove(&channel);
            }
            _ => {}
        }
    }
}

/// The outcome a settling method states: `ack`, `nack`, `reject`.
fn outcome(kind: MethodKind) -> &'static str {
    match kind {
        MethodKind::BasicNack => "nack",
        MethodKind::BasicReject => "reject",
        _ => "ack",
    }
}

/// A `basic.consume`: with `nowait` its tag is in use at once; else the consume-ok names it.
fn consume(no_ack: &mut NoAck, m: &Method) {
    let wants = m.no_ack() == Some(true);
    if m.nowait() != Some(true) {
        no_ack.consumes.push_back(wants);
    } else if wants && let Some(tag) = m.consumer_tag() {
        no_ack.tags.insert(tag.clone());
    }
}

impl ContextTracker for Amqp091Context {
    type Frame = Frame;

    fn frame(&mut self, at: At, frame: &Frame, cx: &mut FrameContext) {
        let channel = frame.channel();
        match frame.method() {
            Some(m) => self.method(at, channel, m, cx),
            None if channel != 0
                && (frame.body().is_some() || frame.content_header().is_some()) =>
            {
                cx.flow = Some(FlowKey::Channel(channel));
            }
            None => {}
        }
    }

    fn gap(&mut self, dir: Dir) {
        for ch in self.channels.values_mut() {
            ch.publishes.clear();
            ch.deliveries.clear();
            if dir == Dir::C2S {
                ch.unnumbered = true;
            }
        }
        self.waiting = 0;
    }

    fn open(&self) -> usize {
        self.waiting
    }
}

impl crate::state::Tracked for crate::protocol::amqp091::Amqp091 {
    type Context = Amqp091Context;
    type Snapshot = super::snapshot::Amqp091Snapshot;
    const RULES: &'static [&'static crate::base::Rule] = super::rules::RULES;

    fn tracker() -> Box<dyn crate::state::ProtocolTracker> {
        Box::new(super::ConnectionTracker::new())
    }

    fn diagnoser() -> Option<Box<dyn crate::state::diagnose::Diagnosing>> {
        Some(Box::<crate::state::diagnose::amqp091::Diag091>::default())
    }
}
