//! One AMQP 0-9-1 channel as both peers see it: open/close handshake, content framing per
//! direction, pending synchronous requests, confirm mode and publish sequence numbers,
//! deliveries and their tags, consumers, flow and transactions.
//!
//! Sans-IO. Never reports what it did not see: a channel learned after a gap is `uncertain`
//! and only learns until it is opened afresh.

use std::collections::{BTreeSet, VecDeque};

use super::content::{Broken, ContentState};
use super::methods::{answers, expects_reply, is_reply};
use super::rules;
use super::slots::Slots;
use crate::base::{Dir, Violation};
use crate::codec::amqp091::{FrameKind, Method, MethodKind};
use crate::state::seq_map::SeqSet;

/// More outstanding tags/sequence numbers than this and the channel stops judging them
/// (memory stays bounded whatever the peer does).
pub const MAX_OUTSTANDING: usize = 1 << 20;
/// At most this many pending synchronous requests are remembered per channel.
pub const MAX_PENDING: usize = 1024;

/// The channel's life-cycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelState {
    /// channel.open sent, open-ok not yet.
    Opening,
    /// Open.
    Open,
    /// channel.close sent by `by[dir]`; close-ok not yet.
    Closing {
        /// Which directions sent close (both when the closes crossed).
        by: [bool; 2],
    },
    /// Closed (close-ok seen); may be opened again.
    Closed {
        /// After crossing closes, the second close-ok still expected from this direction.
        late_close_ok: Option<Dir>,
    },
}

impl ChannelState {
    /// The state's name, spec style.
    pub fn name(&self) -> &'static str {
        match self {
            ChannelState::Opening => "OPENING",
            ChannelState::Open => "OPEN",
            ChannelState::Closing { .. } => "CLOSING",
            ChannelState::Closed { .. } => "CLOSED",
        }
    }
}

/// A consumer on the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Consumer {
    /// Deliveries need no ack.
    no_ack: bool,
    /// The client sent basic.cancel; deliveries may still arrive until cancel-ok.
    cancelling: bool,
}

/// One channel.
#[derive(Clone, Debug)]
pub struct Channel {
    /// Channel number.
    pub number: u16,
    /// Life-cycle state.
    pub state: ChannelState,
    /// Learned after a gap: what was missed is unknown, so nothing is judged, only learned.
    pub uncertain: bool,
    /// Content framing, per direction.
    content: [ContentState; 2],
    /// Synchronous requests awaiting their reply: (requester's direction, request).
    pending: VecDeque<(Dir, MethodKind)>,
    /// confirm.select was sent.
    confirm: bool,
    /// tx.select was sent.
    tx: bool,
    /// The next publish sequence number (confirm mode).
    next_seq: u64,
    /// Published, not yet confirmed.
    unconfirmed: SeqSet<u64>,
    /// The last delivery tag the server used (deliver / get-ok).
    last_delivery_tag: u64,
    /// Delivered with ack required, not yet settled by the client.
    unacked: SeqSet<u64>,
    /// Tags the client settled inside the current transaction (rollback restores them).
    tx_settled: Vec<u64>,
    /// Consumers by tag.
    consumers: Slots<Vec<u8>, Consumer>,
    /// basic.consume sent (tag as requested, no-ack), consume-ok not yet.
    pending_consumes: VecDeque<(Vec<u8>, bool)>,
    /// Tags cancelled with nowait: deliveries in flight may still name them.
    retired: BTreeSet<Vec<u8>>,
    /// basic.get sent (no-ack), answer not yet.
    pending_gets: VecDeque<bool>,
    /// basic.qos prefetch-count last requested.
    prefetch: Option<u16>,
    /// `flow_stopped[dir]`: the peer sending `dir` confirmed channel.flow active=false.
    flow_stopped: [bool; 2],
}

/// Who is speaking and where, for violations.
#[derive(Clone, Copy, Debug)]
pub struct At {
    /// Direction of the frame.
    pub dir: Dir,
    /// Offset of the frame.
    pub offset: u64,
}

impl Channel {
    /// A channel opened (channel.open seen) with nothing known about it yet.
    pub fn opening(number: u16) -> Channel {
        Channel {
            number,
            state: ChannelState::Opening,
            uncertain: false,
            content: Default::default(),
            pending: VecDeque::new(),
            confirm: false,
            tx: false,
            next_seq: 1,
            unconfirmed: SeqSet::new(),
            last_delivery_tag: 0,
            unacked: SeqSet::new(),
            tx_settled: Vec::new(),
            consumers: Slots::default(),
            pending_consumes: VecDeque::new(),
            retired: BTreeSet::new(),
            pending_gets: VecDeque::new(),
            prefetch: None,
            flow_stopped: [false; 2],
        }
    }

    /// A channel first seen after a gap: assumed open, everything about it unknown.
    pub fn learned(number: u16) -> Channel {
        let mut c = Channel::opening(number);
        c.state = ChannelState::Open;
        c.forget();
        c
    }

    /// Bytes were missed: stop judging this channel (until it is opened afresh).
    pub fn forget(&mut self) {
        self.uncertain = true;
        self.content = [ContentState::Unknown; 2];
        self.pending.clear();
        self.pending_consumes.clear();
        self.pending_gets.clear();
        self.unacked.clear();
        self.unconfirmed.clear();
        self.tx_settled.clear();
    }

    /// Whether `dir` may not send content now (it confirmed channel.flow active=false).
    #[inline]
    pub fn flow_stopped(&self, dir: Dir) -> bool {
        self.flow_stopped[dir.index()]
    }

    /// A frame on this channel. Returns violations through `out`.
    #[inline]
    pub fn frame(&mut self, at: At, kind: &FrameKind, out: &mut Vec<Violation>) {
        if self.state == ChannelState::Open {
            self.open_frame(at, kind, out);
        } else {
            self.life_cycle_frame(at, kind, out);
        }
    }

    /// [`Channel::frame`] on a channel not open: opening, closing or closed.
    #[inline(never)]
    fn life_cycle_frame(&mut self, at: At, kind: &FrameKind, out: &mut Vec<Violation>) {
        let n = self.number;
        let method = match kind {
            FrameKind::Method(m) => Some(&**m),
            _ => None,
        };
        let mk = method.map(Method::kind);
        match self.state {
            ChannelState::Closed { late_close_ok } => {
                if mk == Some(MethodKind::ChannelOpen) {
                    *self = Channel::opening(n);
                } else if mk == Some(MethodKind::ChannelCloseOk) && late_close_ok == Some(at.dir) {
                    self.state = ChannelState::Closed {
                        late_close_ok: None,
                    };
                } else if self.uncertain {
                    self.state = ChannelState::Open;
                    self.open_frame(at, kind, out);
                } else {
                    out.push(rules::CHANNEL_NOT_OPEN.violation(
                        at.dir,
                        at.offset,
                        format!("{} on channel {n}, which is closed", frame_name(kind)),
                    ));
                }
            }
            ChannelState::Opening => match mk {
                Some(MethodKind::ChannelOpenOk) => self.state = ChannelState::Open,
                Some(MethodKind::ChannelClose) => {
                    let mut by = [false; 2];
                    by[at.dir.index()] = true;
                    self.state = ChannelState::Closing { by };
                }
                Some(MethodKind::ChannelOpen) => out.push(rules::CHANNEL_ALREADY_OPEN.violation(
                    at.dir,
                    at.offset,
                    format!("channel.open on channel {n}, which is already opening"),
                )),
                // After bytes were missed, the channel.open-ok may be among them.
                _ if self.uncertain => {
                    self.state = ChannelState::Open;
                    self.open_frame(at, kind, out);
                }
                // The client (the only opener) pipelining behind its channel.open: a warning,
                // and the frame is tracked so the server's answers to it are not blamed.
                _ if at.dir == Dir::C2S => {
                    out.push(rules::CHANNEL_PIPELINED.violation(
                        at.dir,
                        at.offset,
                        format!(
                            "{} on channel {n} after channel.open, before the server's open-ok",
                            frame_name(kind)
                        ),
                    ));
                    self.open_frame(at, kind, out);
                }
                _ => out.push(rules::CHANNEL_NOT_OPEN.violation(
                    at.dir,
                    at.offset,
                    format!("{} on channel {n} before channel.open-ok", frame_name(kind)),
                )),
            },
            ChannelState::Closing { mut by } => {
                let me = at.dir.index();
                let other = at.dir.flip().index();
                match mk {
                    Some(MethodKind::ChannelCloseOk) if by[other] => {
                        let late = (by[me] && by[other]).then_some(at.dir.flip());
                        self.closed(late);
                    }
                    Some(MethodKind::ChannelClose) if !by[me] => {
                        by[me] = true;
                        self.state = ChannelState::Closing { by };
                    }
                    Some(MethodKind::ChannelOpen) if !by[me] => {
                        out.push(rules::CHANNEL_ALREADY_OPEN.violation(
                            at.dir,
                            at.offset,
                            format!("channel.open on channel {n} before answering its channel.close with close-ok"),
                        ));
                    }
                    _ if by[me] => out.push(rules::CHANNEL_AFTER_CLOSE.violation(
                        at.dir,
                        at.offset,
                        format!(
                            "{} on channel {n} after this peer sent channel.close (only close-ok may follow)",
                            frame_name(kind)
                        ),
                    )),
                    // The receiver of close: frames it sent before it saw close are in flight
                    // and discarded by the closer.
                    _ => {}
                }
            }
            ChannelState::Open => self.open_frame(at, kind, out),
        }
    }

    fn closed(&mut self, late_close_ok: Option<Dir>) {
        let uncertain = self.uncertain;
        *self = Channel::opening(self.number);
        self.uncertain = uncertain;
        self.state = ChannelState::Closed { late_close_ok };
    }

    /// A frame on an open channel: content framing, then (a method) what the method does.
    #[inline(always)]
    fn open_frame(&mut self, at: At, kind: &FrameKind, out: &mut Vec<Violation>) {
        let content = &mut self.content[at.dir.index()];
        let broken = match kind {
            FrameKind::Method(m) => return self.open_method(at, m, out),
            FrameKind::Header(h) => content.header(h.class_id, h.body_size),
            FrameKind::Body(b) => content.body(b.len() as u64),
            FrameKind::Heartbeat => None,
        };
        if let Some(broken) = broken {
            self.content_broken(at, broken, out);
        }
    }

    /// A method on an open channel: content framing (a method ends any content in progress;
    /// a content-bearing one starts one), then what the method does.
    #[inline(never)]
    fn open_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let starts = m.def.content.then_some(m.class_id());
        if let Some(broken) = self.content[at.dir.index()].method(m.name(), starts) {
            self.content_broken(at, broken, out);
        }
        self.method(at, m, out);
    }

    /// Reports a broken content rule.
    #[cold]
    #[inline(never)]
    fn content_broken(&self, at: At, (rule, msg): Broken, out: &mut Vec<Violation>) {
        let n = self.number;
        out.push(rule.violation(at.dir, at.offset, format!("channel {n}: {msg}")));
    }

    /// A method on an open channel (content framing already checked).
    #[inline]
    fn method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        // The methods most frames carry are neither replies nor requests awaiting one: no
        // pairing to do.
        match m.kind() {
            MethodKind::BasicPublish => return self.published(),
            MethodKind::BasicDeliver => return self.deliver(at, m, out),
            MethodKind::BasicAck | MethodKind::BasicNack | MethodKind::BasicReject => {
                return self.settle(at, m, out);
            }
            _ => {}
        }
        self.other_method(at, m, out);
    }

    /// [`Channel::method`] of a method other than basic.publish, deliver, ack, nack, reject.
    #[inline(never)]
    fn other_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        self.reply_pairing(at, m, out);
        match m.kind() {
            MethodKind::ChannelOpen
            | MethodKind::ChannelOpenOk
            | MethodKind::ChannelClose
            | MethodKind::ChannelCloseOk
            | MethodKind::ChannelFlowOk => self.channel_method(at, m, out),
            MethodKind::BasicConsume
            | MethodKind::BasicConsumeOk
            | MethodKind::BasicCancel
            | MethodKind::BasicCancelOk
            | MethodKind::BasicDeliver => self.consumer_method(at, m, out),
            MethodKind::BasicQos
            | MethodKind::BasicGet
            | MethodKind::BasicGetOk
            | MethodKind::BasicGetEmpty
            | MethodKind::BasicAck
            | MethodKind::BasicNack
            | MethodKind::BasicReject
            | MethodKind::BasicRecover
            | MethodKind::BasicRecoverAsync => self.delivery_method(at, m, out),
            MethodKind::BasicPublish
            | MethodKind::ConfirmSelect
            | MethodKind::TxSelect
            | MethodKind::TxCommit
            | MethodKind::TxRollback => self.mode_method(at, m, out),
            _ => {}
        }
    }

    /// A reply must answer a pending request of the partner; a request that expects a reply
    /// becomes pending (at most [`MAX_PENDING`]).
    fn reply_pairing(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let n = self.number;
        let kind = m.kind();
        let judge = !self.uncertain;
        if is_reply(kind) {
            let requester = at.dir.flip();
            match self
                .pending
                .iter()
                .position(|&(d, req)| d == requester && answers(req, kind))
            {
                Some(i) => {
                    self.pending.remove(i);
                }
                None if judge => out.push(rules::UNEXPECTED_REPLY.violation(
                    at.dir,
                    at.offset,
                    format!("{} on channel {n} answers no pending request", m.name()),
                )),
                None => {}
            }
        }
        if expects_reply(m) {
            if self.pending.len() >= MAX_PENDING {
                self.pending.pop_front();
            }
            self.pending.push_back((at.dir, kind));
        }
    }

    /// The channel class on an open channel: no second open, close and close-ok, flow.
    fn channel_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let n = self.number;
        let judge = !self.uncertain;
        match m.kind() {
            MethodKind::ChannelOpen if judge => {
                out.push(rules::CHANNEL_ALREADY_OPEN.violation(
                    at.dir,
                    at.offset,
                    format!("channel.open on channel {n}, which is already open"),
                ));
            }
            MethodKind::ChannelOpenOk if judge => {
                out.push(rules::UNEXPECTED_REPLY.violation(
                    at.dir,
                    at.offset,
                    format!("channel.open-ok on channel {n}, which is already open"),
                ));
            }
            MethodKind::ChannelClose => {
                let mut by = [false; 2];
                by[at.dir.index()] = true;
                self.state = ChannelState::Closing { by };
            }
            MethodKind::ChannelCloseOk => {
                if judge {
                    out.push(rules::UNEXPECTED_REPLY.violation(
                        at.dir,
                        at.offset,
                        format!("channel.close-ok on channel {n}, which nobody is closing"),
                    ));
                }
                self.closed(None);
            }
            MethodKind::ChannelFlowOk => {
                self.flow_stopped[at.dir.index()] = !m.active().unwrap_or(true);
            }
            _ => {}
        }
    }

    /// Consumers: consume, cancel (either side), and deliveries to a consumer tag.
    fn consumer_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        match m.kind() {
            MethodKind::BasicConsume => self.consume(at, m, out),
            MethodKind::BasicConsumeOk => {
                let no_ack = self.pending_consumes.pop_front().is_some_and(|(_, a)| a);
                if let Some(tag) = m.consumer_tag() {
                    self.consumers.insert(
                        tag.to_vec(),
                        Consumer {
                            no_ack,
                            cancelling: false,
                        },
                    );
                }
            }
            MethodKind::BasicCancel => {
                let tag = m.consumer_tag().map(|t| t.to_vec()).unwrap_or_default();
                let nowait = m.nowait().unwrap_or(false);
                if at.dir == Dir::S2C || nowait {
                    // Server cancel: no deliveries follow. Client nowait cancel: deliveries
                    // already in flight may still come.
                    if self.consumers.remove(&tag).is_some() && at.dir == Dir::C2S {
                        self.retire(tag);
                    }
                } else if let Some(c) = self.consumers.get_mut(&tag) {
                    c.cancelling = true;
                }
            }
            MethodKind::BasicCancelOk => {
                if let Some(tag) = m.consumer_tag() {
                    self.consumers.remove(&tag[..]);
                }
            }
            MethodKind::BasicDeliver => self.deliver(at, m, out),
            _ => {}
        }
    }

    /// basic.deliver: to a consumer of the channel (or one cancelled with nowait).
    #[inline]
    fn deliver(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let tag: &[u8] = m.consumer_tag().map_or(&[], |t| &t[..]);
        let consumer = self.consumers.get(tag).copied();
        if consumer.is_none() && !self.retired.contains(tag) && !self.uncertain {
            out.push(rules::UNKNOWN_CONSUMER.violation(
                at.dir,
                at.offset,
                format!(
                    "basic.deliver on channel {} to consumer tag {:?}, not a consumer on this channel",
                    self.number,
                    String::from_utf8_lossy(tag)
                ),
            ));
        }
        let no_ack = consumer.is_some_and(|c| c.no_ack);
        self.delivered(at, m, no_ack, out);
    }

    /// Prefetch, basic.get, acknowledgements and confirms, recover.
    fn delivery_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        match m.kind() {
            MethodKind::BasicQos => self.prefetch = m.prefetch_count(),
            MethodKind::BasicGet => {
                self.pending_gets.push_back(m.no_ack().unwrap_or(false));
                if self.pending_gets.len() > MAX_PENDING {
                    self.pending_gets.pop_front();
                }
            }
            MethodKind::BasicGetOk => {
                let no_ack = self.pending_gets.pop_front().unwrap_or(false);
                self.delivered(at, m, no_ack, out);
            }
            MethodKind::BasicGetEmpty => {
                self.pending_gets.pop_front();
            }
            MethodKind::BasicAck | MethodKind::BasicNack | MethodKind::BasicReject => {
                self.settle(at, m, out);
            }
            MethodKind::BasicRecover | MethodKind::BasicRecoverAsync => {
                // Every unacked message is redelivered (with a new tag) or requeued.
                self.unacked.clear();
                self.tx_settled.clear();
            }
            _ => {}
        }
    }

    /// basic.ack, nack or reject: from the client, of deliveries; from the broker, confirms.
    #[inline]
    fn settle(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let tag = m.delivery_tag().unwrap_or(0);
        let multiple = m.multiple().unwrap_or(false);
        match at.dir {
            Dir::C2S => self.settle_delivery(at, m.name(), tag, multiple, out),
            Dir::S2C => self.confirmed(at, m.name(), tag, multiple, out),
        }
    }

    /// Confirm and transaction modes: publish sequence numbers, select (not both), commit, rollback.
    fn mode_method(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let n = self.number;
        let judge = !self.uncertain;
        match m.kind() {
            MethodKind::BasicPublish => self.published(),
            MethodKind::ConfirmSelect => {
                if self.tx && judge {
                    out.push(rules::CONFIRM_TX_CONFLICT.violation(
                        at.dir,
                        at.offset,
                        format!(
                            "confirm.select on channel {n}, which is transactional (tx.select)"
                        ),
                    ));
                }
                self.confirm = true;
            }
            MethodKind::TxSelect => {
                if self.confirm && judge {
                    out.push(rules::CONFIRM_TX_CONFLICT.violation(
                        at.dir,
                        at.offset,
                        format!("tx.select on channel {n}, which is in confirm mode"),
                    ));
                }
                self.tx = true;
            }
            MethodKind::TxCommit => self.tx_settled.clear(),
            MethodKind::TxRollback => {
                let restored = std::mem::take(&mut self.tx_settled);
                self.unacked.extend(restored);
            }
            _ => {}
        }
    }

    /// basic.publish: in confirm mode, it takes the next publish sequence number.
    #[inline]
    fn published(&mut self) {
        if !self.confirm {
            return;
        }
        let seq = self.next_seq;
        self.next_seq = seq.saturating_add(1);
        if !self.uncertain {
            self.unconfirmed.insert(seq);
            if self.unconfirmed.len() > MAX_OUTSTANDING {
                self.forget();
            }
        }
    }

    fn retire(&mut self, tag: Vec<u8>) {
        if self.retired.len() >= MAX_PENDING {
            self.retired.pop_first();
        }
        self.retired.insert(tag);
    }

    fn consume(&mut self, at: At, m: &Method, out: &mut Vec<Violation>) {
        let tag = m.consumer_tag().map(|t| t.to_vec()).unwrap_or_default();
        let no_ack = m.no_ack().unwrap_or(false);
        let in_use = !tag.is_empty()
            && (self.consumers.contains_key(&tag)
                || self.pending_consumes.iter().any(|(t, _)| *t == tag));
        if in_use && !self.uncertain {
            out.push(rules::CONSUMER_TAG_IN_USE.violation(
                at.dir,
                at.offset,
                format!(
                    "basic.consume on channel {} with consumer tag {:?}, already in use",
                    self.number,
                    String::from_utf8_lossy(&tag)
                ),
            ));
        }
        if m.nowait().unwrap_or(false) {
            self.retired.remove(&tag);
            self.consumers.insert(
                tag,
                Consumer {
                    no_ack,
                    cancelling: false,
                },
            );
        } else if self.pending_consumes.len() < MAX_PENDING {
            self.pending_consumes.push_back((tag, no_ack));
        }
    }

    /// A deliver / get-ok with a delivery tag.
    #[inline]
    fn delivered(&mut self, at: At, m: &Method, no_ack: bool, out: &mut Vec<Violation>) {
        let tag = m.delivery_tag().unwrap_or(0);
        if tag <= self.last_delivery_tag || tag == 0 {
            if !self.uncertain {
                out.push(rules::DELIVERY_TAG_ORDER.violation(
                    at.dir,
                    at.offset,
                    format!(
                        "{} on channel {} with delivery tag {tag}; the previous tag was {} (tags start at 1 and increase)",
                        m.name(),
                        self.number,
                        self.last_delivery_tag
                    ),
                ));
            }
        } else {
            self.last_delivery_tag = tag;
        }
        if !no_ack && !self.uncertain {
            self.unacked.insert(tag);
            if self.unacked.len() > MAX_OUTSTANDING {
                self.forget();
            }
        }
    }

    /// The client settles delivery `tag` (ack / nack / reject).
    fn settle_delivery(
        &mut self,
        at: At,
        name: &str,
        tag: u64,
        multiple: bool,
        out: &mut Vec<Violation>,
    ) {
        if multiple && tag == 0 {
            let all = std::mem::take(&mut self.unacked);
            if self.tx {
                self.tx_settled.extend(all);
            }
            return;
        }
        // A single tag leaves the set as it is found.
        let held = if multiple {
            self.unacked.contains(&tag)
        } else {
            self.unacked.remove(&tag)
        };
        if !held {
            if !self.uncertain {
                self.unknown_delivery_tag(at, name, tag, multiple, out);
            }
            return;
        }
        // Outside a transaction nothing keeps the settled tags: none is collected.
        let keep = self.tx && self.tx_settled.len() < MAX_OUTSTANDING;
        if !multiple {
            if keep {
                self.tx_settled.push(tag);
            }
        } else if keep {
            self.tx_settled.extend(self.unacked.drain_range(..=tag));
        } else {
            drop(self.unacked.drain_range(..=tag));
        }
    }

    /// Reports the client settling a delivery tag that is not outstanding.
    #[cold]
    #[inline(never)]
    fn unknown_delivery_tag(
        &self,
        at: At,
        name: &str,
        tag: u64,
        multiple: bool,
        out: &mut Vec<Violation>,
    ) {
        let why = if tag == 0 {
            "tag 0 is only valid with multiple=true".to_string()
        } else if tag > self.last_delivery_tag {
            format!(
                "never delivered (the last delivery tag was {})",
                self.last_delivery_tag
            )
        } else {
            "not outstanding: already acked/nacked/rejected, or delivered with no-ack".to_string()
        };
        out.push(rules::UNKNOWN_DELIVERY_TAG.violation(
            at.dir,
            at.offset,
            format!(
                "{name} on channel {} of delivery tag {tag}{}: {why}",
                self.number,
                if multiple { " (multiple)" } else { "" }
            ),
        ));
    }

    /// The broker confirms publish sequence number `tag` (ack / nack).
    fn confirmed(
        &mut self,
        at: At,
        name: &str,
        tag: u64,
        multiple: bool,
        out: &mut Vec<Violation>,
    ) {
        let n = self.number;
        if !self.confirm {
            if self.uncertain {
                self.confirm = true;
            } else {
                out.push(rules::CONFIRM_NOT_SELECTED.violation(
                    at.dir,
                    at.offset,
                    format!("{name} (delivery tag {tag}) from the broker on channel {n}, which is not in confirm mode"),
                ));
            }
            return;
        }
        if self.uncertain {
            return;
        }
        let published = self.next_seq.saturating_sub(1);
        let problem = if tag == 0 {
            Some("0 is not a publish sequence number".to_string())
        } else if tag > published {
            Some(format!(
                "not yet published (only {published} messages published in confirm mode)"
            ))
        } else if multiple {
            let covered = self.unconfirmed.drain_range(..=tag).count();
            (covered == 0)
                .then(|| format!("every sequence number up to {tag} was already confirmed"))
        } else {
            (!self.unconfirmed.remove(&tag)).then(|| "already confirmed".to_string())
        };
        if let Some(p) = problem {
            out.push(rules::CONFIRM_UNKNOWN_SEQUENCE.violation(
                at.dir,
                at.offset,
                format!(
                    "{name} on channel {n} of publish sequence number {tag}{}: {p}",
                    if multiple { " (multiple)" } else { "" }
                ),
            ));
        }
    }

    /// The channel as the TUI shows it.
    pub fn snapshot(&self) -> super::snapshot::ChannelSnapshot {
        super::snapshot::ChannelSnapshot {
            channel: self.number,
            state: self.state.name(),
            confirm_mode: self.confirm,
            next_publish_seq: self.confirm.then_some(self.next_seq),
            pending_confirms: self.unconfirmed.len(),
            consumers: {
                let mut tags: Vec<&Vec<u8>> = self.consumers.iter().map(|(t, _)| t).collect();
                tags.sort_unstable();
                tags.into_iter()
                    .map(|t| String::from_utf8_lossy(t).into_owned())
                    .collect()
            },
            unacked_deliveries: self.unacked.len(),
            last_delivery_tag: self.last_delivery_tag,
            prefetch: self.prefetch,
            flow_active: !self.flow_stopped[Dir::C2S.index()],
            tx_mode: self.tx,
            pending_content: crate::state::snapshot::PerDir::from_fn(|d| {
                self.content[d.index()].into()
            }),
            uncertain: self.uncertain,
        }
    }
}

/// A frame's name for messages (`basic.publish`, `content-header`, ...).
pub fn frame_name(kind: &FrameKind) -> &'static str {
    match kind {
        FrameKind::Method(m) => m.name(),
        FrameKind::Header(_) => "content-header",
        FrameKind::Body(_) => "content-body",
        FrameKind::Heartbeat => "heartbeat",
    }
}
