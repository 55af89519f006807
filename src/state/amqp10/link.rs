//! A link as both endpoints see it (AMQP 1.0 §2.6): name, which peer sends, each peer's handle
//! and attach (settle modes, termini, initial delivery-count, unsettled map), the flow-control
//! state of §2.6.7 (delivery-count, the receiver's grant, available, drain), the delivery in
//! progress, and a bounded history of link-credit for display.
//!
//! The link judges its own rules on the frames its session routes to it by handle
//! (`link_frames.rs`, `flow_checks.rs`, `delivery_frames.rs`).
//!
//! Never panics on input; the history is capped at [`CREDIT_HISTORY`] samples.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::hash::HashSet;

use crate::base::{Dir, Timestamp};
use crate::codec::amqp10::{AnyTarget, Attach, ReceiverSettleMode, Role, SenderSettleMode, Value};

use super::delivery::Partial;
use super::heard::UnheardLog;
use super::serial::Limit;

/// Samples of link-credit kept per link.
pub const CREDIT_HISTORY: usize = 120;

/// What one peer's attach said.
#[derive(Clone, Debug)]
pub struct AttachInfo {
    /// Its role.
    pub role: Role,
    /// snd-settle-mode.
    pub snd_settle_mode: SenderSettleMode,
    /// rcv-settle-mode.
    pub rcv_settle_mode: ReceiverSettleMode,
    /// Source address (rendered), if any.
    pub source_address: Option<String>,
    /// Source is dynamic.
    pub source_dynamic: bool,
    /// Target address (rendered), if any.
    pub target_address: Option<String>,
    /// Target is dynamic.
    pub target_dynamic: bool,
    /// The target is a `target` (not null, not a coordinator).
    pub target_is_terminus: bool,
    /// initial-delivery-count.
    pub initial_delivery_count: Option<u32>,
    /// Tags of the unsettled map (None: no map), looked up by a resumed transfer's tag.
    pub unsettled: Option<HashSet<Bytes>>,
    /// incomplete-unsettled.
    pub incomplete_unsettled: bool,
}

fn address(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.as_str().to_owned()),
        Value::Symbol(s) => Some(s.as_str().to_owned()),
        other => Some(other.render()),
    }
}

impl AttachInfo {
    /// From the typed attach.
    pub fn of(a: &Attach) -> Self {
        let (target_address, target_dynamic, target_is_terminus) = match &a.target {
            Some(AnyTarget::Target(t)) => (address(t.address.as_ref()), t.dynamic, true),
            Some(AnyTarget::Coordinator(_)) => (None, false, false),
            Some(AnyTarget::Other(v)) => (address(Some(v)), false, false),
            None => (None, false, false),
        };
        AttachInfo {
            role: a.role,
            snd_settle_mode: a.snd_settle_mode,
            rcv_settle_mode: a.rcv_settle_mode,
            source_address: a.source.as_ref().and_then(|s| address(s.address.as_ref())),
            source_dynamic: a.source.as_ref().is_some_and(|s| s.dynamic),
            target_address,
            target_dynamic,
            target_is_terminus,
            initial_delivery_count: a.initial_delivery_count,
            unsettled: a.unsettled.as_ref().map(|m| {
                m.iter()
                    .filter_map(|(k, _)| match k {
                        Value::Binary(b) => Some(b.clone()),
                        _ => None,
                    })
                    .collect()
            }),
            incomplete_unsettled: a.incomplete_unsettled,
        }
    }

    /// A sending link to the anonymous terminus: a target with a null address, not dynamic.
    pub fn is_anonymous_sender(&self) -> bool {
        self.role == Role::Sender
            && self.target_is_terminus
            && self.target_address.is_none()
            && !self.target_dynamic
    }
}

/// The link states of AMQP 1.0 §2.6, from the client's endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum LinkState {
    /// Neither end attached.
    DETACHED,
    /// The client attached, the server did not (yet).
    ATTACH_SENT,
    /// The server attached, the client did not (yet).
    ATTACH_RCVD,
    /// Both ends attached.
    ATTACHED,
    /// The client detached, the server is still attached.
    DETACH_SENT,
    /// The server detached, the client is still attached.
    DETACH_RCVD,
}

impl LinkState {
    /// The spec's name (`ATTACHED` ...).
    pub fn name(self) -> &'static str {
        match self {
            LinkState::DETACHED => "DETACHED",
            LinkState::ATTACH_SENT => "ATTACH_SENT",
            LinkState::ATTACH_RCVD => "ATTACH_RCVD",
            LinkState::ATTACHED => "ATTACHED",
            LinkState::DETACH_SENT => "DETACH_SENT",
            LinkState::DETACH_RCVD => "DETACH_RCVD",
        }
    }
}

/// One link, both endpoints.
#[derive(Clone, Debug)]
pub struct Link {
    /// The session it belongs to.
    pub session: u64,
    /// Link name.
    pub name: String,
    /// The peer holding the sending end (its frames go in this direction).
    pub sender: Dir,
    /// Each peer's handle while attached.
    pub handle: [Option<u32>; 2],
    /// Each peer's attach.
    pub attach: [Option<AttachInfo>; 2],
    /// Each peer's detach (`Some(closed)`).
    pub detached: [Option<bool>; 2],
    /// False when part of its history was missed.
    pub known: bool,
    /// The peer whose attach created the link (None: learned after a gap).
    pub initiator: Option<Dir>,
    /// The sender's delivery-count (initial-delivery-count, +1 per delivery, sender flows).
    pub delivery_count: Option<u32>,
    /// The receiver's grant: delivery-count_rcv + link-credit_rcv.
    pub credit: Limit,
    /// The receiver's last link-credit.
    pub rcv_link_credit: Option<u32>,
    /// The receiver granted `rcv_link_credit` before the sender's attach, without a
    /// delivery-count: the grant counts from the initial-delivery-count the sender's attach
    /// will carry (§2.6.7), and is recorded when that attach comes.
    pub credit_awaits_attach: bool,
    /// The sender's last `available`.
    pub available: Option<u32>,
    /// The receiver's last drain flag.
    pub drain: bool,
    /// Offset of a receiver flow with drain=true the sender has not answered yet.
    pub pending_drain: Option<u64>,
    /// The delivery in progress.
    pub partial: Option<Partial>,
    /// (time, link-credit as the sender sees it) after each flow and transfer.
    pub credit_history: VecDeque<(Timestamp, i64)>,
    /// Deliveries started on the link.
    pub deliveries: u64,
    /// The delivery-count a receiver that heard everything the sender sent so far knows at
    /// least (the sender's attach or last flow, plus the complete deliveries since; see
    /// `heard.rs`). None: not known.
    pub heard: Option<u32>,
    /// The delivery-count the receiver is proven to know at least, by its dispositions. None:
    /// nothing proven.
    pub rcv_floor: Option<u32>,
    /// The events moving the count that the receiver is not yet known to have heard.
    pub unheard: UnheardLog,
    /// The greatest delivery-tag of the link's deliveries its session tracked, while each
    /// was greater than the one before (see `Deliveries::indexed`).
    pub top_tag: Option<super::delivery::ShortTag>,
}

impl Link {
    /// A link first seen from `dir`'s attach (or learned after a gap).
    pub fn new(session: u64, name: String, sender: Dir, known: bool) -> Self {
        Link {
            session,
            name,
            sender,
            handle: [None; 2],
            attach: [None, None],
            detached: [None; 2],
            known,
            initiator: None,
            delivery_count: None,
            credit: Limit::default(),
            rcv_link_credit: None,
            credit_awaits_attach: false,
            available: None,
            drain: false,
            pending_drain: None,
            partial: None,
            credit_history: VecDeque::new(),
            deliveries: 0,
            heard: None,
            rcv_floor: None,
            unheard: UnheardLog::default(),
            top_tag: None,
        }
    }

    /// The sender's attach.
    pub fn sender_attach(&self) -> Option<&AttachInfo> {
        self.attach[self.sender.index()].as_ref()
    }

    /// The receiver's attach.
    pub fn receiver_attach(&self) -> Option<&AttachInfo> {
        self.attach[self.sender.flip().index()].as_ref()
    }

    /// The link carries messages to the anonymous terminus: the sender *created* the sending
    /// link with a null target address (Anonymous Terminus §2: "When creating a sending link,
    /// ... the target address is null"), and the receiver (when it answered with a target) kept
    /// it null. A receiver-initiated link whose sender merely echoes a receiver's null target is
    /// not the anonymous relay.
    pub fn is_anonymous(&self) -> bool {
        let Some(s) = self.sender_attach() else {
            return false;
        };
        if !s.is_anonymous_sender() || self.initiator != Some(self.sender) {
            return false;
        }
        match self.receiver_attach() {
            Some(r) if r.target_is_terminus => r.target_address.is_none(),
            _ => true,
        }
    }

    /// link-credit as the sender must compute it (§2.6.7): delivery-count_rcv + link-credit_rcv
    /// - delivery-count_snd.
    pub fn link_credit(&self) -> Option<i64> {
        Some(self.credit.cur?.remaining(self.delivery_count?))
    }

    /// The actual sender settle mode (the sender's attach), default mixed.
    pub fn snd_settle_mode(&self) -> SenderSettleMode {
        self.sender_attach()
            .map_or(SenderSettleMode::Mixed, |a| a.snd_settle_mode)
    }

    /// The actual receiver settle mode (the receiver's attach), if it attached.
    pub fn rcv_settle_mode(&self) -> Option<ReceiverSettleMode> {
        self.receiver_attach().map(|a| a.rcv_settle_mode)
    }

    /// Record a credit sample, keeping the last [`CREDIT_HISTORY`].
    pub fn sample(&mut self, ts: Timestamp) {
        if let Some(c) = self.link_credit() {
            if self.credit_history.len() >= CREDIT_HISTORY {
                self.credit_history.pop_front();
            }
            self.credit_history.push_back((ts, c));
        }
    }

    /// Bytes were missed: its history is no longer known, and what was in progress is lost.
    pub fn forget(&mut self) {
        self.known = false;
        self.partial = None;
        self.pending_drain = None;
        self.heard = None;
        self.rcv_floor = None;
        self.unheard.clear();
    }

    /// Neither end is attached any more.
    pub fn gone(&self) -> bool {
        self.handle[0].is_none() && self.handle[1].is_none()
    }

    /// The link's state, from the client's side.
    pub fn state(&self) -> LinkState {
        let (c, s) = (Dir::C2S.index(), Dir::S2C.index());
        match (self.handle[c].is_some(), self.handle[s].is_some()) {
            (true, true) => LinkState::ATTACHED,
            (true, false) if self.detached[s].is_some() => LinkState::DETACH_RCVD,
            (true, false) => LinkState::ATTACH_SENT,
            (false, true) if self.detached[c].is_some() => LinkState::DETACH_SENT,
            (false, true) => LinkState::ATTACH_RCVD,
            (false, false) => LinkState::DETACHED,
        }
    }

    /// The link's state name for display.
    pub fn state_name(&self) -> &'static str {
        self.state().name()
    }
}

/// `sender` / `receiver`.
pub fn role_name(r: Role) -> &'static str {
    match r {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
    }
}

/// Settle mode names as the spec spells them.
pub fn snd_mode_name(m: SenderSettleMode) -> String {
    match m {
        SenderSettleMode::Unsettled => "unsettled".into(),
        SenderSettleMode::Settled => "settled".into(),
        SenderSettleMode::Mixed => "mixed".into(),
        SenderSettleMode::Other(x) => format!("unknown({x})"),
    }
}

/// Receiver settle mode names as the spec spells them.
pub fn rcv_mode_name(m: ReceiverSettleMode) -> String {
    match m {
        ReceiverSettleMode::First => "first".into(),
        ReceiverSettleMode::Second => "second".into(),
        ReceiverSettleMode::Other(x) => format!("unknown({x})"),
    }
}
