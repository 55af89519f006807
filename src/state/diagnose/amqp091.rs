//! AMQP 0-9-1 diagnoses: prefetch windows full and unacked, deliveries unacked and publishes
//! unconfirmed too long, a blocked connection, missed heartbeats, consumers cancelled by the
//! broker and not consumed again, redelivery loops.
//!
//! Prefetch follows RabbitMQ's reading of basic.qos: `global` false limits each consumer
//! started after it, `global` true the channel's consumers together. Deliveries are counted
//! to their consumer by the frame context's delivery start; basic.get deliveries are outside
//! any prefetch.

use std::collections::VecDeque;

use crate::hash::HashMap;

use bytes::Bytes;

use crate::base::{Awaits, Dir, EndWhy, FrameRef, ScopeKind, SettleKind, Timestamp};
use crate::codec::amqp091::{Frame, Method, MethodKind};
use crate::protocol::{AnyMessage, FrameEvent};

use crate::state::amqp091::slots::Slots;

use super::catalog as cat;
use super::cond::{Cond, Ctx};
use super::waiting::{CUT, Waiting};
use super::{Idle, MAX_NAMES, MAX_SCOPES};

/// Consumes awaiting their consume-ok per channel, at most (a client pipelining more is not
/// followed: its consumers get no prefetch limit here).
const MAX_PENDING: usize = 64;

/// Queues remembered as deleted by the client, at most.
const MAX_DELETED: usize = 64;

/// One consumer.
#[derive(Debug, Default)]
struct Consumer {
    /// Its consumer-tag (the deliveries to it hold a clone: an ack finds it by the clone's
    /// bytes' address before comparing them).
    tag: Bytes,
    queue: Bytes,
    /// Its prefetch-count (0: none).
    limit: u16,
    unacked: u32,
    full: Option<Cond>,
}

/// One channel.
#[derive(Debug, Default)]
struct Channel {
    /// basic.qos prefetch-count for consumers started after it (`global` false).
    per_consumer: u16,
    /// basic.qos prefetch-count shared by the channel's consumers (`global` true).
    shared: u16,
    shared_unacked: u32,
    shared_full: Option<Cond>,
    consumers: Slots<Bytes, Consumer>,
    /// Queues of consumes awaiting their consume-ok.
    pending: VecDeque<Bytes>,
    /// Unacked deliveries to consumers: their consumer's tag, by the delivery's start.
    deliveries: Deliveries,
    unacked: Waiting,
    unconfirmed: Waiting,
    redelivered: Option<Cond>,
    /// The message-id of the redelivery loop, and its latest delivery's start: the ack of
    /// that delivery ends the loop (the earlier attempts were rejected or requeued).
    redelivered_at: Option<(Bytes, FrameRef)>,
}

/// Unacked deliveries to consumers, by their start, in the order they started (the broker's
/// offsets grow), each with its consumer's tag (`None` once settled), in a run read from
/// `head` on. Acks come oldest first as a rule: the front is looked at before searching,
/// settled entries are passed over once they reach the front (the vector is emptied once all
/// are, and its settled front cut off once it is most of it), and the run is compacted once
/// they are most of it; no hashing and no node per delivery.
#[derive(Debug, Default)]
struct Deliveries {
    run: Vec<(FrameRef, Option<Bytes>)>,
    /// Where the held part of `run` starts.
    head: usize,
    /// Entries of `run[head..]` not settled.
    live: usize,
}

impl Deliveries {
    /// The delivery started by `start` is to the consumer `tag`.
    #[inline]
    fn insert(&mut self, start: FrameRef, tag: Bytes) {
        match self.run.last() {
            Some((last, _)) if *last >= start => self.insert_before(start, tag),
            _ => {
                self.run.push((start, Some(tag)));
                self.live += 1;
            }
        }
    }

    /// [`Deliveries::insert`] of a delivery that does not start after the last one.
    #[inline(never)]
    fn insert_before(&mut self, start: FrameRef, tag: Bytes) {
        match self.run[self.head..].binary_search_by(|(k, _)| k.cmp(&start)) {
            Ok(i) => {
                let e = &mut self.run[self.head + i].1;
                self.live += usize::from(e.is_none());
                *e = Some(tag);
            }
            Err(i) => {
                self.run.insert(self.head + i, (start, Some(tag)));
                self.live += 1;
            }
        }
    }

    /// The delivery started by `start` was settled: its consumer's tag, if it was held.
    #[inline]
    fn remove(&mut self, start: FrameRef) -> Option<Bytes> {
        let i = match self.run.get(self.head) {
            Some((k, _)) if *k == start => self.head,
            _ => {
                self.head
                    + self.run[self.head..]
                        .binary_search_by(|(k, _)| k.cmp(&start))
                        .ok()?
            }
        };
        let tag = self.run[i].1.take()?;
        self.live -= 1;
        while let Some((_, None)) = self.run.get(self.head) {
            self.head += 1;
        }
        if self.head == self.run.len() {
            self.run.clear();
            self.head = 0;
        } else if self.run.len() - self.head > 2 * self.live + 16
            || (self.head >= CUT && 2 * self.head >= self.run.len())
        {
            self.compact();
        }
        Some(tag)
    }

    /// Drop the settled entries, the front passed over with them.
    #[inline(never)]
    fn compact(&mut self) {
        self.run.retain(|(_, t)| t.is_some());
        self.head = 0;
    }
}

/// One AMQP 0-9-1 connection's diagnoses.
#[derive(Debug, Default)]
pub struct Diag091 {
    channels: Slots<u16, Channel>,
    idle: [Idle; 2],
    blocked: Option<Cond>,
    /// Queues whose consumer the broker cancelled, until consumed again.
    cancelled: HashMap<Bytes, Cond>,
    /// Redeliveries seen per message-id.
    redeliveries: HashMap<Bytes, u32>,
    /// The channel is in no further state once closing.
    closing: bool,
    /// Queues this connection's client asked to delete, the latest last (at most
    /// [`MAX_DELETED`]): the broker's basic.cancel of their consumers is what the client asked for.
    deleted: VecDeque<Bytes>,
    /// Consumers added since the count was last taken (at least the consumers held; taken
    /// again at [`MAX_SCOPES`]).
    consumers: usize,
}

fn at(fe: &FrameEvent) -> FrameRef {
    FrameRef {
        dir: fe.dir,
        offset: fe.offset,
    }
}

impl Diag091 {
    /// One frame. Most content frames only show their sender is alive: the rest of the
    /// judging is for frames with a method (an ack, a nack or a reject only settles), a
    /// settlement, or a delivered message, each out of line.
    #[inline]
    pub fn frame(&mut self, mut cx: Ctx<'_>, fe: &FrameEvent, f: &Frame, ts: Timestamp) {
        let idle = &mut self.idle[fe.dir.index()];
        idle.touch(cx.reborrow(), &cat::HEARTBEAT_MISSED, ts, at(fe));
        if let Some(m) = f.method()
            && !matches!(
                m.kind(),
                MethodKind::BasicAck | MethodKind::BasicNack | MethodKind::BasicReject
            )
        {
            self.method(cx.reborrow(), fe, f.channel(), m, ts);
        }
        if !fe.context.settles.is_empty() {
            self.settlements(cx.reborrow(), fe, ts);
        }
        if let Some(Ok(AnyMessage::Amqp091(msg))) = &fe.message
            && msg.method.kind() == MethodKind::BasicDeliver
        {
            // A first delivery with no redelivery counted has nothing to count or forget.
            let redelivered = msg.method.redelivered() == Some(true);
            if redelivered || !self.redeliveries.is_empty() {
                self.message(cx, f.channel(), msg, redelivered, ts);
            }
        }
    }

    /// A method: the publishes and deliveries that flow here, the rest (each rare) by
    /// [`Diag091::control`].
    #[inline(never)]
    fn method(
        &mut self,
        mut cx: Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        m: &Method,
        ts: Timestamp,
    ) {
        let cx = &mut cx;
        match (m.kind(), fe.dir) {
            (MethodKind::BasicDeliver, Dir::S2C) => self.deliver(cx, fe, channel, m, ts),
            (MethodKind::BasicPublish, Dir::C2S) => {
                if let Some(d) = fe
                    .context
                    .delivery
                    .filter(|d| d.awaits == Some(Awaits::Settlement))
                {
                    let ch = self.channels.get_or_insert_with(channel, Channel::default);
                    ch.unconfirmed.add(ts.0, d.start);
                    ch.unconfirmed.refresh(cx, &cat::UNCONFIRMED, ts, at(fe));
                }
            }
            (MethodKind::BasicAck | MethodKind::BasicNack | MethodKind::BasicReject, _) => {}
            _ => self.control(cx, fe, channel, m, ts),
        }
    }

    /// A method that opens, closes or sets up a scope.
    #[inline(never)]
    fn control(
        &mut self,
        cx: &mut Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        m: &Method,
        ts: Timestamp,
    ) {
        let here = at(fe);
        match (m.kind(), fe.dir) {
            (MethodKind::ConnectionTuneOk, Dir::C2S) => {
                if let Some(h) = m.heartbeat().filter(|&h| h > 0) {
                    // §4.2.7: "If a peer detects no incoming traffic (i.e. received octets)
                    // for two heartbeat intervals or longer, it should close the connection":
                    // a peer beating once an interval is healthy, and a silence a little longer
                    // than one interval is the network's jitter, not a missed heartbeat.
                    let us = i64::from(h) * 2_000_000;
                    for i in &mut self.idle {
                        i.watch(cx, &cat::HEARTBEAT_MISSED, ts, here, us);
                    }
                }
            }
            (MethodKind::ConnectionClose | MethodKind::ConnectionCloseOk, _) => {
                self.closing = true;
                for i in &mut self.idle {
                    i.stop(cx, ts, EndWhy::ScopeClosed);
                }
            }
            (MethodKind::ConnectionBlocked, Dir::S2C) if self.blocked.is_none() => {
                let note = m
                    .get(crate::codec::amqp091::Arg::Reason)
                    .and_then(|v| v.as_bytes())
                    .map(|r| quoted(r));
                self.blocked = cx.arm(&cat::BLOCKED, ts, here, None).map(|c| match note {
                    Some(n) => c.noting(n),
                    None => c,
                });
            }
            (MethodKind::ConnectionUnblocked, Dir::S2C) => {
                cx.end(&mut self.blocked, ts, Some(here), EndWhy::Cleared);
            }
            (MethodKind::ChannelOpen | MethodKind::ChannelCloseOk, _) => {
                if let Some(mut ch) = self.channels.remove(&channel) {
                    close_channel(cx, &mut ch, ts, Some(here), EndWhy::ScopeClosed);
                }
            }
            (MethodKind::ChannelClose, Dir::S2C) if m.reply_code().is_some_and(|c| c != 200) => {
                self.channel_failed(cx, channel, ts, here)
            }
            (MethodKind::BasicQos, Dir::C2S) => self.qos(channel, m),
            (MethodKind::BasicConsume, Dir::C2S) => self.consume(cx, channel, m, ts, here),
            (MethodKind::QueueDelete, Dir::C2S) => {
                if let Some(q) = m.queue() {
                    if self.deleted.len() >= MAX_DELETED {
                        self.deleted.pop_front();
                    }
                    self.deleted.push_back(q.clone());
                }
            }
            (MethodKind::BasicConsumeOk, Dir::S2C) => self.consume_ok(channel, m),
            (MethodKind::BasicCancel | MethodKind::BasicCancelOk, dir) => {
                self.cancelled(cx, channel, m, dir, ts, here)
            }
            _ => {}
        }
    }

    /// The broker closed `channel` with an error: its consumers are gone, as if cancelled.
    fn channel_failed(&mut self, cx: &mut Ctx<'_>, channel: u16, ts: Timestamp, here: FrameRef) {
        let Some(ch) = self.channels.get_mut(&channel) else {
            return;
        };
        let queues: Vec<Bytes> = ch
            .consumers
            .drain()
            .map(|(_, mut c)| {
                cx.end(&mut c.full, ts, Some(here), EndWhy::ScopeClosed);
                c.queue
            })
            .collect();
        for q in queues {
            self.cancel(cx, q, ts, here);
        }
    }

    /// A basic.qos: the channel's shared (global) or per-consumer prefetch window.
    fn qos(&mut self, channel: u16, m: &Method) {
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        let n = m.prefetch_count().unwrap_or(0);
        let global = m
            .get(crate::codec::amqp091::Arg::Global)
            .and_then(|v| v.as_bool());
        if global == Some(true) {
            ch.shared = n;
        } else {
            ch.per_consumer = n;
        }
    }

    /// A basic.consume-ok: the oldest pending consume gets its tag and the channel's
    /// per-consumer window.
    fn consume_ok(&mut self, channel: u16, m: &Method) {
        let room = self.room();
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        if let (Some(q), Some(tag), true) = (ch.pending.pop_front(), m.consumer_tag(), room) {
            let limit = ch.per_consumer;
            ch.consumers.insert(
                tag.clone(),
                Consumer {
                    tag: tag.clone(),
                    queue: q,
                    limit,
                    ..Consumer::default()
                },
            );
        }
    }

    /// A basic.cancel or cancel-ok: the consumer is gone. The broker's basic.cancel cancels;
    /// a cancel-ok answers the client's.
    fn cancelled(
        &mut self,
        cx: &mut Ctx<'_>,
        channel: u16,
        m: &Method,
        dir: Dir,
        ts: Timestamp,
        here: FrameRef,
    ) {
        let Some(tag) = m.consumer_tag() else { return };
        let Some(ch) = self.channels.get_mut(&channel) else {
            return;
        };
        let Some(mut c) = ch.consumers.remove(tag) else {
            return;
        };
        cx.end(&mut c.full, ts, Some(here), EndWhy::ScopeClosed);
        if m.kind() == MethodKind::BasicCancel && dir == Dir::S2C {
            self.cancel(cx, c.queue, ts, here);
        }
    }

    /// A basic.consume: what it consumes from is consumed again; its tag comes with the
    /// consume-ok (or at once, with nowait).
    fn consume(
        &mut self,
        cx: &mut Ctx<'_>,
        channel: u16,
        m: &Method,
        ts: Timestamp,
        here: FrameRef,
    ) {
        let q = m.queue().cloned().unwrap_or_default();
        if let Some(c) = self.cancelled.remove(&q) {
            cx.finish(c, ts, Some(here), EndWhy::Cleared);
        }
        if m.no_ack() == Some(true) {
            return;
        }
        let room = self.room();
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        if m.nowait() == Some(true) {
            if let Some(tag) = m.consumer_tag().filter(|t| !t.is_empty() && room) {
                let limit = ch.per_consumer;
                ch.consumers.insert(
                    tag.clone(),
                    Consumer {
                        tag: tag.clone(),
                        queue: q,
                        limit,
                        ..Consumer::default()
                    },
                );
            }
        } else if ch.pending.len() < MAX_PENDING {
            ch.pending.push_back(q);
        }
    }

    /// Whether one more consumer may be followed (see [`MAX_SCOPES`]); counts it.
    fn room(&mut self) -> bool {
        if self.consumers >= MAX_SCOPES {
            self.consumers = self.channels.values().map(|c| c.consumers.len()).sum();
        }
        let room = self.consumers < MAX_SCOPES;
        self.consumers += usize::from(room);
        room
    }

    /// The entries held (see [`super::Diagnoser::entries`]).
    pub fn entries(&self) -> usize {
        let consumers: usize = self.channels.values().map(|c| c.consumers.len()).sum();
        self.channels.len() + consumers + self.cancelled.len() + self.redeliveries.len()
    }

    /// The broker cancelled the consumer of `queue`.
    fn cancel(&mut self, cx: &mut Ctx<'_>, queue: Bytes, ts: Timestamp, here: FrameRef) {
        // RabbitMQ, Consumer Cancel Notification: "the broker will send basic.cancel to the
        // client when a queue is deleted"; a queue this client deleted has no consumer to miss.
        if self.closing || self.cancelled.contains_key(&queue) || self.deleted.contains(&queue) {
            return;
        }
        if self.cancelled.len() >= MAX_NAMES {
            self.cancelled.retain(|_, c| c.started.is_some());
            if self.cancelled.len() >= MAX_NAMES {
                return;
            }
        }
        if let Some(c) = cx.arm(&cat::CANCELLED, ts, here, None) {
            self.cancelled.insert(queue, c);
        }
    }

    /// A basic.deliver to a consumer that acks: counted against its prefetch.
    fn deliver(
        &mut self,
        cx: &mut Ctx<'_>,
        fe: &FrameEvent,
        channel: u16,
        m: &Method,
        ts: Timestamp,
    ) {
        let Some(d) = fe
            .context
            .delivery
            .filter(|d| d.awaits == Some(Awaits::Settlement))
        else {
            return;
        };
        let here = at(fe);
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        ch.unacked.add(ts.0, d.start);
        ch.unacked.refresh(cx, &cat::UNACKED, ts, here);
        let Some(tag) = m.consumer_tag() else { return };
        let Some(c) = ch.consumers.get_mut(tag) else {
            return;
        };
        ch.deliveries.insert(d.start, c.tag.clone());
        c.unacked += 1;
        ch.shared_unacked += 1;
        if c.limit > 0 && c.unacked >= u32::from(c.limit) && c.full.is_none() {
            c.full = cx
                .arm(&cat::PREFETCH_FULL, ts, here, None)
                .map(|x| x.with_n(u64::from(c.limit)));
        }
        if ch.shared > 0 && ch.shared_unacked >= u32::from(ch.shared) && ch.shared_full.is_none() {
            ch.shared_full = cx
                .arm(&cat::PREFETCH_FULL, ts, here, None)
                .map(|x| x.with_n(u64::from(ch.shared)));
        }
    }

    /// What `fe` settles leaves the waiting sets and the prefetch windows. An ack or confirm
    /// with `multiple` settles a run of deliveries of one channel: the channel is looked up
    /// once for the run, and a waiting set is refreshed at the run's last settlement only (or
    /// when that reports something, see [`Waiting::quiet`]).
    #[inline(never)]
    fn settlements(&mut self, mut cx: Ctx<'_>, fe: &FrameEvent, ts: Timestamp) {
        let cx = &mut cx;
        let here = at(fe);
        let settles = &fe.context.settles;
        let mut channel: Option<(u16, &mut Channel)> = None;
        for (i, s) in settles.iter().enumerate() {
            let crate::base::FlowKey::Channel(n) = s.flow else {
                continue;
            };
            if channel.as_ref().is_none_or(|(held, _)| *held != n) {
                channel = self.channels.get_mut(&n).map(|ch| (n, ch));
            }
            let Some((_, ch)) = channel.as_mut() else {
                continue;
            };
            let last = settles
                .get(i + 1)
                .is_none_or(|next| next.flow != s.flow || next.kind != s.kind);
            settle(cx, ch, s, ts, here, last);
        }
    }

    /// A whole delivered message (`redelivered`: flagged so): a redelivery counts against its
    /// message-id, a first delivery forgets the count.
    #[inline(never)]
    fn message(
        &mut self,
        mut cx: Ctx<'_>,
        channel: u16,
        msg: &crate::codec::amqp091::Message,
        redelivered: bool,
        ts: Timestamp,
    ) {
        let Some(id) = msg.header.message_id() else {
            return;
        };
        if !redelivered {
            self.redeliveries.remove(id);
            return;
        }
        if self.redeliveries.len() >= MAX_NAMES && !self.redeliveries.contains_key(id) {
            self.redeliveries.clear();
        }
        let n = self.redeliveries.entry(id.clone()).or_default();
        *n = n.saturating_add(1);
        let count = *n;
        let start = FrameRef {
            dir: Dir::S2C,
            offset: msg.offset,
        };
        let ch = self.channels.get_or_insert_with(channel, Channel::default);
        if ch.redelivered_at.as_ref().is_some_and(|(i, _)| i == id) {
            ch.redelivered_at = Some((id.clone(), start));
        }
        if count >= cx.core.limits.count(&cat::REDELIVERED) && ch.redelivered.is_none() {
            ch.redelivered_at = Some((id.clone(), start));
            ch.redelivered = cx
                .arm(&cat::REDELIVERED, ts, start, None)
                .map(|c| c.with_n(u64::from(count)).noting(quoted(id)));
        }
    }

    /// Start what is due at `now`.
    pub fn due(&mut self, cx: &mut Ctx<'_>, now: i64) {
        self.idle[0].due(cx, now, Dir::C2S);
        self.idle[1].due(cx, now, Dir::S2C);
        if let Some(c) = &mut self.blocked {
            let detail = |c: &Cond| {
                format!(
                    "connection.blocked at {} (reason {})",
                    c.place(),
                    c.note.as_deref().unwrap_or("none")
                )
            };
            cx.fire(
                c,
                now,
                ScopeKind::Connection,
                &|| "connection".into(),
                &detail,
            );
        }
        for (q, c) in &mut self.cancelled {
            let name = || format!("consumer of queue {}", quoted(q));
            let detail = |c: &Cond| {
                format!(
                    "the broker cancelled it at {}; nothing consumed from the queue since",
                    c.place()
                )
            };
            cx.fire(c, now, ScopeKind::Consumer, &name, &detail);
        }
        for (&n, ch) in self.channels.iter_mut() {
            channel_due(cx, n, ch, now);
        }
    }

    /// End every diagnosis at `ts`, for `why`.
    pub fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        for i in &mut self.idle {
            i.stop(cx, ts, why);
        }
        cx.end(&mut self.blocked, ts, None, why);
        for (_, mut ch) in self.channels.drain() {
            close_channel(cx, &mut ch, ts, None, why);
        }
        for (_, c) in self.cancelled.drain() {
            cx.finish(c, ts, None, why);
        }
    }
}

/// A delivery of `ch` was settled (`s`) by the frame `here`; `last`: the last settlement of
/// its kind the frame makes on the channel.
fn settle(
    cx: &mut Ctx<'_>,
    ch: &mut Channel,
    s: &crate::base::Settlement,
    ts: Timestamp,
    here: FrameRef,
    last: bool,
) {
    let start_ts = ts.0 - s.after_us;
    if s.kind == SettleKind::PublishConfirm {
        ch.unconfirmed.remove(start_ts, s.start);
        if last || !ch.unconfirmed.quiet() {
            ch.unconfirmed.refresh(cx, &cat::UNCONFIRMED, ts, here);
        }
        return;
    }
    ch.unacked.remove(start_ts, s.start);
    if last || !ch.unacked.quiet() {
        ch.unacked.refresh(cx, &cat::UNACKED, ts, here);
    }
    if ch
        .redelivered_at
        .as_ref()
        .is_some_and(|(_, a)| *a == s.start)
        && s.outcome == "ack"
    {
        ch.redelivered_at = None;
        cx.end(&mut ch.redelivered, ts, Some(here), EndWhy::Cleared);
    }
    let Some(tag) = ch.deliveries.remove(s.start) else {
        return;
    };
    ch.shared_unacked = ch.shared_unacked.saturating_sub(1);
    if ch.shared_unacked < u32::from(ch.shared) {
        cx.end(&mut ch.shared_full, ts, Some(here), EndWhy::Cleared);
    }
    let same = |k: &Bytes| k.as_ptr() == tag.as_ptr() && k.len() == tag.len();
    if let Some(c) = ch.consumers.get_mut_by(&tag, same) {
        c.unacked = c.unacked.saturating_sub(1);
        if c.unacked < u32::from(c.limit) {
            cx.end(&mut c.full, ts, Some(here), EndWhy::Cleared);
        }
    }
}

/// Start what is due on channel `n` at `now`.
fn channel_due(cx: &mut Ctx<'_>, n: u16, ch: &mut Channel, now: i64) {
    let name = || format!("channel {n}");
    if let Some(c) = ch.unacked.current(cx, &cat::UNACKED) {
        cx.fire(c, now, ScopeKind::Channel, &name, &|c| {
            format!("{} deliveries unacked, the oldest since {}", c.n, c.place())
        });
    }
    if let Some(c) = ch.unconfirmed.current(cx, &cat::UNCONFIRMED) {
        cx.fire(c, now, ScopeKind::Channel, &name, &|c| {
            format!(
                "{} publishes unconfirmed, the oldest since {}",
                c.n,
                c.place()
            )
        });
    }
    if let Some(c) = &mut ch.redelivered {
        cx.fire(c, now, ScopeKind::Channel, &name, &|c| {
            format!(
                "message-id {} redelivered {} times, the last at {}",
                c.note.as_deref().unwrap_or("?"),
                c.n,
                c.place()
            )
        });
    }
    if let Some(c) = &mut ch.shared_full {
        cx.fire(c, now, ScopeKind::Channel, &name, &|c| {
            format!(
                "{} unacked deliveries fill the channel's shared prefetch since {}",
                c.n,
                c.place()
            )
        });
    }
    for (tag, consumer) in ch.consumers.iter_mut() {
        if let Some(c) = &mut consumer.full {
            let name = || format!("consumer {} on channel {n}", quoted(tag));
            cx.fire(c, now, ScopeKind::Consumer, &name, &|c| {
                format!(
                    "{} unacked deliveries fill its prefetch-count since {}",
                    c.n,
                    c.place()
                )
            });
        }
    }
}

/// The channel is gone: end every diagnosis of it.
fn close_channel(
    cx: &mut Ctx<'_>,
    ch: &mut Channel,
    ts: Timestamp,
    frame: Option<FrameRef>,
    why: EndWhy,
) {
    for (_, mut c) in ch.consumers.drain() {
        cx.end(&mut c.full, ts, frame, why);
    }
    for c in [
        &mut ch.unacked.cond,
        &mut ch.unconfirmed.cond,
        &mut ch.redelivered,
        &mut ch.shared_full,
    ] {
        cx.end(c, ts, frame, why);
    }
}

/// A wire string quoted and escaped as every text output shows one (`crate::base::escape`).
fn quoted(b: &[u8]) -> String {
    let mut out = String::new();
    crate::base::escape::quoted_bytes_into(&mut out, b);
    out
}

impl super::Diagnosing for Diag091 {
    fn entries(&self) -> usize {
        Diag091::entries(self)
    }
    fn due(&mut self, cx: &mut Ctx<'_>, now: i64) {
        Diag091::due(self, cx, now)
    }
    fn frame(&mut self, cx: Ctx<'_>, fe: &FrameEvent, ts: Timestamp) {
        if let crate::protocol::AnyFrame::Amqp091(f) = &fe.frame {
            Diag091::frame(self, cx, fe, f, ts)
        }
    }
    fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        Diag091::end_all(self, cx, ts, why)
    }
}
