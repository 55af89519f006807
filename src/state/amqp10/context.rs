//! AMQP 1.0 frame context: frames to links by handle, transfers to deliveries, dispositions to
//! the deliveries they settle (see [`crate::state::context`]).
//!
//! A delivery is keyed as the spec numbers it: by the session (the sender's outgoing channel)
//! and the delivery-id, in the direction it is sent. A disposition names deliveries by
//! delivery-id on the session it is sent on: by its `role`, those its sender sent (`sender`)
//! or received (`receiver`, §2.7.6), the latter on the session's channel in the other
//! direction, which only the begins tell (`remote-channel`): a disposition on a session whose
//! begins were not seen settles nothing here, rather than a guess.

use std::collections::hash_map::Entry;

use crate::hash::HashMap;

use crate::base::{Dir, FrameContext, FrameRef};
use crate::codec::amqp10::{Frame, Performative, Role};
use crate::state::context::{
    At, Awaits, ContextTracker, Delivery, FlowKey, MAX_OPEN, SettleKind, Settlement,
};
use crate::state::seq_map::SeqMap;
use crate::state::visits::visit;

/// A delivery waiting for its settlement.
#[derive(Clone, Debug)]
struct Open {
    start: FrameRef,
    ts: i64,
    flow: FlowKey,
}

/// The context of one AMQP 1.0 connection's frames.
#[derive(Debug, Default)]
pub struct Amqp10Context {
    /// Links by (direction of the frame naming the handle, its channel, handle).
    handles: HashMap<(Dir, u16, u32), FlowKey>,
    /// The handle the last transfer of each direction named, with its link as `handles` has
    /// it (until an attach or a closing detach changes `handles`): a link's transfers come in
    /// runs.
    last: [Option<((u16, u32), FlowKey)>; 2],
    /// A session's channel in the other direction, by (direction, channel), from the begins.
    peer: HashMap<(Dir, u16), u16>,
    /// Deliveries waiting for their settlement, by (sender's direction, channel), then
    /// delivery-id: a disposition's range is found by key. The session used last is held in
    /// `hot` instead.
    open: HashMap<(Dir, u16), SeqMap<u32, Open>>,
    /// The waiting deliveries of the session a transfer or disposition was about last (maybe
    /// none left): a session's transfers and the dispositions settling them come in runs.
    hot: Option<((Dir, u16), SeqMap<u32, Open>)>,
    /// How many deliveries `open` and `hot` hold.
    open_count: usize,
    /// The last session map that left `hot` empty, with its room, for the next session that
    /// has a delivery waiting.
    spare: SeqMap<u32, Open>,
    /// Multi-frame deliveries in progress, by the sender's (direction, channel, handle): their
    /// delivery-id (if it had one) and the frame that started them.
    current: HashMap<(Dir, u16, u32), (Option<u32>, FrameRef)>,
}

impl Amqp10Context {
    /// Take delivery `id` sent in `dir` on `channel` out of the waiting ones.
    fn take(&mut self, dir: Dir, channel: u16, id: u32) -> Option<Open> {
        let o = self.session((dir, channel), false)?.remove(&id)?;
        self.open_count -= 1;
        Some(o)
    }

    /// The waiting deliveries of the session `key` (`create`: an empty map when it has none),
    /// made the hot one. The one it replaces goes back to `open`, or, empty, becomes the spare.
    #[inline(always)]
    fn session(&mut self, key: (Dir, u16), create: bool) -> Option<&mut SeqMap<u32, Open>> {
        if self.hot.as_ref().is_none_or(|(k, _)| *k != key) {
            let m = match self.open.remove(&key) {
                Some(m) => m,
                None if create => std::mem::take(&mut self.spare),
                None => return None,
            };
            if let Some((k, old)) = self.hot.replace((key, m)) {
                if old.is_empty() {
                    self.spare = old;
                } else {
                    self.open.insert(k, old);
                }
            }
        }
        self.hot.as_mut().map(|(_, m)| m)
    }

    /// The flow of handle `handle` as named by `dir` on `channel`; an unnamed link sent in
    /// `sender` when its attach was not seen.
    fn flow_of(&self, dir: Dir, channel: u16, handle: u32, sender: Dir) -> FlowKey {
        self.handles
            .get(&(dir, channel, handle))
            .cloned()
            .unwrap_or(FlowKey::Link {
                name: None,
                unnamed: (channel, handle),
                sender,
            })
    }

    /// The delivery `t` (sent in `dir` on `channel`, at `here`) belongs to: whether it starts
    /// here, its delivery-id and the frame that started it. A delivery with more transfers to
    /// come is remembered until its last one; most are one transfer, and none is in progress
    /// then: the map is not looked into.
    fn continues(
        &mut self,
        dir: Dir,
        channel: u16,
        t: &crate::codec::amqp10::Transfer,
        here: FrameRef,
    ) -> (bool, Option<u32>, FrameRef) {
        let link = (dir, channel, t.handle);
        let more = t.more && !t.aborted;
        if !more {
            return match self.current.is_empty() {
                true => None,
                false => self.current.remove(&link),
            }
            .map_or((true, t.delivery_id, here), |(id, start)| {
                (false, id.or(t.delivery_id), start)
            });
        }
        match self.current.entry(link) {
            Entry::Occupied(mut e) => {
                let (id, start) = *e.get();
                let id = id.or(t.delivery_id);
                e.insert((id, start));
                (false, id, start)
            }
            Entry::Vacant(e) => {
                e.insert((t.delivery_id, here));
                (true, t.delivery_id, here)
            }
        }
    }

    /// The flow of the transfers `dir` sends on `channel` and `handle` (see
    /// [`Amqp10Context::flow_of`]), by the link its last transfer named first.
    fn transfer_flow(&mut self, dir: Dir, channel: u16, handle: u32) -> FlowKey {
        let last = &mut self.last[dir.index()];
        if let Some((named, flow)) = last
            && *named == (channel, handle)
        {
            return flow.clone();
        }
        match self.handles.get(&(dir, channel, handle)) {
            Some(flow) => {
                *last = Some(((channel, handle), flow.clone()));
                flow.clone()
            }
            None => self.flow_of(dir, channel, handle, dir),
        }
    }

    fn transfer(
        &mut self,
        at: At,
        channel: u16,
        t: &crate::codec::amqp10::Transfer,
        cx: &mut FrameContext,
    ) {
        let dir = at.dir();
        let flow = self.transfer_flow(dir, channel, t.handle);
        let (started, id, start) = self.continues(dir, channel, t, at.at);
        cx.flow = Some(flow.clone());
        let mut delivery = Delivery {
            start,
            starts: started,
            kind: SettleKind::TransferDisposition,
            awaits: None,
        };
        if t.settled == Some(true) || t.aborted {
            // Settled by its sender (or given up): nothing waits for a disposition. Said once
            // per delivery: on its first frame, or on a later one while it still waited.
            let waited = id.is_some_and(|id| self.take(dir, channel, id).is_some());
            if !t.aborted && (started || waited) {
                delivery.awaits = Some(Awaits::NotAwaited);
            }
            cx.delivery = Some(delivery);
            return;
        }
        delivery.awaits = match id {
            Some(id) if started => {
                if self.open_count >= MAX_OPEN {
                    Some(Awaits::Untimed)
                } else {
                    let open = Open {
                        start: at.at,
                        ts: at.ts,
                        flow,
                    };
                    if let Some(session) = self.session((dir, channel), true)
                        && session.insert(id, open).is_none()
                    {
                        self.open_count += 1;
                    }
                    Some(Awaits::Settlement)
                }
            }
            Some(_) => None,
            // No delivery-id on a delivery's first frame (malformed): it cannot be settled.
            None if started => Some(Awaits::Untimed),
            None => None,
        };
        cx.delivery = Some(delivery);
    }

    fn disposition(
        &mut self,
        at: At,
        channel: u16,
        d: &crate::codec::amqp10::Disposition,
        cx: &mut FrameContext,
    ) {
        if !d.settled {
            return;
        }
        let dir = at.dir();
        let (sender, sender_channel) = match d.role {
            Role::Sender => (dir, channel),
            Role::Receiver => match self.peer.get(&(dir, channel)) {
                Some(&c) => (dir.flip(), c),
                None => return,
            },
        };
        let outcome = d.state.as_ref().map_or("settled", |s| s.name());
        let last = d.last.unwrap_or(d.first);
        let settle = |o: Open| Settlement {
            start: o.start,
            after_us: at.ts - o.ts,
            kind: SettleKind::TransferDisposition,
            flow: o.flow,
            outcome,
        };
        let Some(session) = self.session((sender, sender_channel), false) else {
            return;
        };
        // Delivery-ids are serial numbers: the range may wrap. Taken straight into the
        // context, with no list of the taken entries between.
        let before = cx.settles.len();
        if d.first <= last {
            cx.settles
                .extend(session.drain_range(d.first..=last).map(|(_, o)| settle(o)));
        } else {
            cx.settles
                .extend(session.drain_range(d.first..).map(|(_, o)| settle(o)));
            cx.settles
                .extend(session.drain_range(..=last).map(|(_, o)| settle(o)));
        }
        let taken = cx.settles.len() - before;
        visit(taken);
        self.open_count -= taken;
        // Delivery ids settle in order of the range; the report reads them in start order
        // (which they are in as a rule: sent in the order of their ids).
        if !cx.settles.is_sorted_by_key(|s| s.start) {
            cx.settles.sort_by_key(|s| s.start);
        }
    }
}

impl ContextTracker for Amqp10Context {
    type Frame = Frame;

    fn frame(&mut self, at: At, frame: &Frame, cx: &mut FrameContext) {
        let Some(p) = frame.performative() else {
            return;
        };
        let (dir, channel) = (at.dir(), frame.channel());
        match p {
            Performative::Begin(b) => {
                if let Some(r) = b.remote_channel {
                    self.peer.insert((dir, channel), r);
                    self.peer.insert((dir.flip(), r), channel);
                }
            }
            Performative::Attach(a) => {
                let sender = match a.role {
                    Role::Sender => dir,
                    Role::Receiver => dir.flip(),
                };
                let flow = FlowKey::Link {
                    name: Some(a.name.as_str().into()),
                    unnamed: (0, 0),
                    sender,
                };
                self.handles.insert((dir, channel, a.handle), flow.clone());
                self.last = Default::default();
                cx.flow = Some(flow);
            }
            Performative::Flow(f) => {
                if let Some(h) = f.handle {
                    // A flow's sender may be either end: unnamed, it is counted with the link
                    // its handle names in that direction.
                    cx.flow = Some(self.flow_of(dir, channel, h, dir));
                }
            }
            Performative::Transfer(t) => self.transfer(at, channel, t, cx),
            Performative::Disposition(d) => self.disposition(at, channel, d, cx),
            Performative::Detach(d) => {
                let flow = self.flow_of(dir, channel, d.handle, dir);
                if d.closed {
                    self.handles.remove(&(dir, channel, d.handle));
                    self.last = Default::default();
                }
                cx.flow = Some(flow);
            }
            Performative::End(_) => {
                if let Some(r) = self.peer.remove(&(dir, channel)) {
                    self.peer.remove(&(dir.flip(), r));
                }
            }
            Performative::Open(_) | Performative::Close(_) => {}
        }
    }

    fn gap(&mut self, _dir: Dir) {
        self.open.clear();
        self.hot = None;
        self.spare = SeqMap::new();
        self.open_count = 0;
        self.current.clear();
    }

    fn open(&self) -> usize {
        self.open_count
    }
}

impl crate::state::Tracked for crate::protocol::amqp10::Amqp10 {
    type Context = Amqp10Context;
    type Snapshot = super::snapshot::Amqp10Snapshot;
    const RULES: &'static [&'static crate::base::Rule] = super::rules::RULES;

    fn tracker() -> Box<dyn crate::state::ProtocolTracker> {
        Box::new(super::ConnectionTracker::new())
    }

    fn diagnoser() -> Option<Box<dyn crate::state::diagnose::Diagnosing>> {
        Some(Box::<crate::state::diagnose::amqp10::Diag10>::default())
    }
}
