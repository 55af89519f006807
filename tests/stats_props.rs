//! Properties of the statistics' pairing, on random sequences of the frames that start and
//! settle deliveries (AMQP 0-9-1 publishes, confirms, deliveries, acks, channel reopens; AMQP
//! 1.0 transfers in one or several frames, dispositions of any range and role) and gaps, fed
//! to each protocol's context tracker as the pipeline feeds them:
//! - a settlement names a frame that started a delivery, of the kind it started, and each
//!   delivery is settled (or found to need none) at most once;
//! - its latency is the time between the two frames;
//! - a gap forgets everything waiting, and nothing waits that did not start.

use std::collections::{HashMap, HashSet};

use amqpeek::codec::amqp10 as a10;
use amqpeek::codec::amqp091::{self as a091, FrameKind, Method, MethodKind as K, Value};
use amqpeek::event::{Awaits, Dir, FrameContext, FrameRef, SettleKind};
use amqpeek::state::amqp10::context::Amqp10Context;
use amqpeek::state::amqp091::context::Amqp091Context;
use amqpeek::state::context::{At, ContextTracker};
use bytes::Bytes;
use proptest::prelude::*;

mod state_amqp10_common;
use state_amqp10_common as c10;

/// What the contexts told so far, checked as they come.
#[derive(Default)]
struct Ledger {
    /// Frames that started a delivery, and the kinds of settlement their direction gets.
    started: HashMap<FrameRef, Dir>,
    /// Deliveries settled or found to need none.
    done: HashSet<FrameRef>,
    ts: HashMap<FrameRef, i64>,
}

impl Ledger {
    fn take(&mut self, at: At, cx: &mut FrameContext, kind_of: impl Fn(Dir) -> SettleKind) {
        self.ts.insert(at.at, at.ts);
        if let Some(d) = cx.delivery {
            if d.starts {
                assert_eq!(d.start, at.at, "a delivery starts on its own frame");
                self.started.insert(at.at, at.dir());
            }
            if d.awaits == Some(Awaits::NotAwaited) {
                let dir = *self.started.get(&d.start).expect("a started delivery");
                assert_eq!(d.kind, kind_of(dir));
                assert!(self.done.insert(d.start), "{:?} settled twice", d.start);
            }
        }
        for s in cx.settles.drain(..) {
            let start = s.start;
            let dir = *self
                .started
                .get(&start)
                .expect("settles a started delivery");
            assert_eq!(s.kind, kind_of(dir), "kind of {start:?}");
            assert_eq!(s.after_us, at.ts - self.ts[&start], "latency of {start:?}");
            assert!(self.done.insert(start), "{start:?} settled twice");
        }
        *cx = FrameContext::default();
    }
}

/// Frame `seq` of `dir`, at time `seq * 10`.
fn at(seq: u64, dir: Dir) -> At {
    At {
        at: FrameRef { dir, offset: seq },
        ts: seq as i64 * 10,
    }
}

#[derive(Clone, Debug)]
enum Op091 {
    Select(u16),
    Publish(u16),
    Confirm {
        ch: u16,
        tag: u64,
        multiple: bool,
        nack: bool,
    },
    Deliver {
        ch: u16,
        tag: u64,
    },
    Ack {
        ch: u16,
        tag: u64,
        multiple: bool,
        reject: bool,
    },
    Reopen(u16),
    CloseOk(u16),
    Gap(bool),
}

fn op091() -> impl Strategy<Value = Op091> {
    let ch = 1u16..3;
    prop_oneof![
        1 => ch.clone().prop_map(Op091::Select),
        3 => ch.clone().prop_map(Op091::Publish),
        2 => (ch.clone(), 0u64..8, any::<bool>(), any::<bool>())
            .prop_map(|(ch, tag, multiple, nack)| Op091::Confirm { ch, tag, multiple, nack }),
        2 => (ch.clone(), 1u64..8).prop_map(|(ch, tag)| Op091::Deliver { ch, tag }),
        2 => (ch.clone(), 0u64..8, any::<bool>(), any::<bool>())
            .prop_map(|(ch, tag, multiple, reject)| Op091::Ack { ch, tag, multiple, reject }),
        1 => ch.clone().prop_map(Op091::Reopen),
        1 => ch.prop_map(Op091::CloseOk),
        1 => any::<bool>().prop_map(Op091::Gap),
    ]
}

fn frame091(ch: u16, kind: K, args: &[(&str, Value)]) -> a091::Frame {
    let mut m = Method::with_defaults(kind);
    for (name, v) in args {
        m = m.set(name, v.clone()).unwrap();
    }
    let mut raw = Vec::new();
    a091::encode_frame(ch, &FrameKind::Method(m.into()), &mut raw);
    a091::decode_frame(Bytes::from(raw), 0).unwrap()
}

fn method091(op: &Op091) -> Option<(Dir, a091::Frame)> {
    let tag = |t: u64| ("delivery-tag", Value::LongLong(t));
    let bit = |n: &'static str, b: bool| (n, Value::Bit(b));
    Some(match *op {
        Op091::Select(ch) => (Dir::C2S, frame091(ch, K::ConfirmSelect, &[])),
        Op091::Publish(ch) => (Dir::C2S, frame091(ch, K::BasicPublish, &[])),
        Op091::Confirm {
            ch,
            tag: t,
            multiple,
            nack,
        } => {
            let kind = if nack { K::BasicNack } else { K::BasicAck };
            (
                Dir::S2C,
                frame091(ch, kind, &[tag(t), bit("multiple", multiple)]),
            )
        }
        Op091::Deliver { ch, tag: t } => (Dir::S2C, frame091(ch, K::BasicDeliver, &[tag(t)])),
        Op091::Ack {
            ch,
            tag: t,
            reject: true,
            ..
        } => (Dir::C2S, frame091(ch, K::BasicReject, &[tag(t)])),
        Op091::Ack {
            ch,
            tag: t,
            multiple,
            ..
        } => (
            Dir::C2S,
            frame091(ch, K::BasicAck, &[tag(t), bit("multiple", multiple)]),
        ),
        Op091::Reopen(ch) => (Dir::C2S, frame091(ch, K::ChannelOpen, &[])),
        Op091::CloseOk(ch) => (Dir::S2C, frame091(ch, K::ChannelCloseOk, &[])),
        Op091::Gap(_) => return None,
    })
}

#[derive(Clone, Debug)]
enum Op10 {
    /// A transfer from the client on its session (channel 0 its way, 3 the server's).
    Transfer {
        id: u32,
        settled: Option<bool>,
        more: bool,
    },
    /// A disposition from `server` (else the client) with this role and range.
    Disposition {
        server: bool,
        receiver: bool,
        first: u32,
        span: u32,
        settled: bool,
    },
    Gap,
}

fn op10() -> impl Strategy<Value = Op10> {
    prop_oneof![
        4 => (0u32..6, prop::option::of(any::<bool>()), any::<bool>())
            .prop_map(|(id, settled, more)| Op10::Transfer { id, settled, more }),
        3 => (any::<bool>(), any::<bool>(), 0u32..6, 0u32..4, any::<bool>()).prop_map(
            |(server, receiver, first, span, settled)| Op10::Disposition {
                server,
                receiver,
                first,
                span,
                settled,
            }
        ),
        1 => Just(Op10::Gap),
    ]
}

fn frame10(ch: u16, body: &a10::Value) -> a10::Frame {
    let raw = a10::encode_frame(0, ch, Some(body), b"").unwrap();
    a10::decode_frame(Bytes::from(raw), 0).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn amqp091_settlements_pair_each_delivery_once(ops in prop::collection::vec(op091(), 1..80)) {
        let mut t = Amqp091Context::default();
        let mut ledger = Ledger::default();
        let mut cx = FrameContext::default();
        let kind_of = |d: Dir| if d == Dir::C2S { SettleKind::PublishConfirm } else { SettleKind::DeliverAck };
        for (seq, op) in ops.iter().enumerate() {
            let seq = seq as u64;
            let Some((dir, frame)) = method091(op) else {
                let Op091::Gap(c2s) = op else { unreachable!() };
                t.gap(if *c2s { Dir::C2S } else { Dir::S2C });
                prop_assert_eq!(t.open(), 0, "a gap forgets what waited");
                continue;
            };
            let at = at(seq, dir);
            t.frame(at, &frame, &mut cx);
            ledger.take(at, &mut cx, kind_of);
            let waiting = ledger.started.len() - ledger.done.len();
            prop_assert!(t.open() <= waiting, "{} waiting of {} started", t.open(), waiting);
        }
    }

    #[test]
    fn amqp10_settlements_pair_each_delivery_once(ops in prop::collection::vec(op10(), 1..80)) {
        let mut t = Amqp10Context::default();
        let mut ledger = Ledger::default();
        let mut cx = FrameContext::default();
        // One session: the client's channel 0, the server's 3; a sending link of the client.
        let setup = [
            (Dir::C2S, 0, c10::begin(None, 0, 100, 100)),
            (Dir::S2C, 3, c10::begin(Some(0), 0, 100, 100)),
            (Dir::C2S, 0, c10::attach_sender("L", 0, &[])),
            (Dir::S2C, 3, c10::attach_receiver("L", 0, &[])),
        ];
        let mut seq = 0u64;
        for (dir, ch, body) in &setup {
            t.frame(at(seq, *dir), &frame10(*ch, body), &mut cx);
            cx = FrameContext::default();
            seq += 1;
        }
        for op in &ops {
            let (dir, ch, body) = match *op {
                Op10::Gap => {
                    t.gap(Dir::C2S);
                    prop_assert_eq!(t.open(), 0);
                    continue;
                }
                Op10::Transfer { id, settled, more } => (
                    Dir::C2S,
                    0,
                    c10::transfer(0, Some(id), Some(&[id as u8]), settled, more, &[]),
                ),
                Op10::Disposition { server, receiver, first, span, settled } => {
                    let (dir, ch) = if server { (Dir::S2C, 3) } else { (Dir::C2S, 0) };
                    (dir, ch, c10::disposition(receiver, first, Some(first + span), settled))
                }
            };
            let at = at(seq, dir);
            t.frame(at, &frame10(ch, &body), &mut cx);
            ledger.take(at, &mut cx, |_| SettleKind::TransferDisposition);
            let waiting = ledger.started.len() - ledger.done.len();
            prop_assert!(t.open() <= waiting, "{} waiting of {} started", t.open(), waiting);
            seq += 1;
        }
    }
}
