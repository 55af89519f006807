//! Long randomized AMQP 0-9-1 conversations (any method, any direction, any channel, random
//! tags, flags, sizes, content frames, heartbeats, gaps and clock jumps) never make the state
//! tracker panic, and it always has a state name and a JSON snapshot of the documented shape.

mod state_amqp091_conv;

use amqpeek::codec::amqp091::{ContentHeader, FrameKind, METHODS, Method, Value, WireType};
use amqpeek::{Dir, Timestamp};
use bytes::Bytes;
use proptest::prelude::*;
use state_amqp091_conv::Conv;

#[derive(Clone, Debug)]
enum Step {
    Method {
        c2s: bool,
        channel: u16,
        method: usize,
        int: u64,
        flag: bool,
        text: u8,
    },
    Header {
        c2s: bool,
        channel: u16,
        class: u16,
        size: u64,
    },
    Body {
        c2s: bool,
        channel: u16,
        len: usize,
    },
    Heartbeat {
        c2s: bool,
        channel: u16,
    },
    Clock(u32),
    Gap {
        c2s: bool,
    },
}

fn channel() -> impl Strategy<Value = u16> {
    prop_oneof![0..4u16, Just(u16::MAX), any::<u16>()]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (any::<bool>(), channel(), 0..METHODS.len(), prop_oneof![0..6u64, any::<u64>()], any::<bool>(), 0..4u8)
            .prop_map(|(c2s, channel, method, int, flag, text)| Step::Method { c2s, channel, method, int, flag, text }),
        2 => (any::<bool>(), channel(), prop_oneof![Just(60u16), Just(50u16)], prop_oneof![0..20u64, any::<u64>()])
            .prop_map(|(c2s, channel, class, size)| Step::Header { c2s, channel, class, size }),
        2 => (any::<bool>(), channel(), 0..30usize).prop_map(|(c2s, channel, len)| Step::Body { c2s, channel, len }),
        1 => (any::<bool>(), channel()).prop_map(|(c2s, channel)| Step::Heartbeat { c2s, channel }),
        1 => any::<u32>().prop_map(Step::Clock),
        1 => any::<bool>().prop_map(|c2s| Step::Gap { c2s }),
    ]
}

/// A method with every integer argument `int`, every bit `flag`, every string one of a few.
fn method(idx: usize, int: u64, flag: bool, text: u8) -> Method {
    let def = &METHODS[idx];
    let mut m = Method::with_defaults(def.kind);
    let words = ["", "t", "PLAIN", "en_US"];
    for a in def.args {
        let v = match a.ty {
            WireType::Bit => Value::Bit(flag),
            WireType::Octet => Value::Octet(int as u8),
            WireType::Short => Value::Short(int as u16),
            WireType::Long => Value::Long(int as u32),
            WireType::LongLong => Value::LongLong(int),
            WireType::Timestamp => Value::Timestamp(int),
            WireType::ShortStr => {
                Value::ShortStr(Bytes::from_static(words[text as usize % 4].as_bytes()))
            }
            WireType::LongStr => {
                Value::LongStr(Bytes::from_static(words[text as usize % 4].as_bytes()))
            }
            WireType::Table => continue,
        };
        m = m.set(a.name, v).unwrap();
    }
    m
}

fn dir(c2s: bool) -> Dir {
    if c2s { Dir::C2S } else { Dir::S2C }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn random_conversations_never_panic(handshake in any::<bool>(), steps in prop::collection::vec(step(), 0..400)) {
        let mut c = Conv::new();
        if handshake {
            c.handshake().open(1).open(2);
        }
        let mut now: u64 = 0;
        for s in steps {
            match s {
                Step::Method { c2s, channel, method: i, int, flag, text } => {
                    c.frame(dir(c2s), channel, FrameKind::Method(method(i, int, flag, text).into()));
                }
                Step::Header { c2s, channel, class, size } => {
                    let mut h = ContentHeader::basic(size);
                    h.class_id = class;
                    c.frame(dir(c2s), channel, FrameKind::Header(h.into()));
                }
                Step::Body { c2s, channel, len } => {
                    c.frame(dir(c2s), channel, FrameKind::Body(Bytes::from(vec![7u8; len])));
                }
                Step::Heartbeat { c2s, channel } => {
                    c.frame(dir(c2s), channel, FrameKind::Heartbeat);
                }
                Step::Clock(secs) => {
                    now = now.saturating_add(u64::from(secs % 1000));
                    c.at(now);
                }
                Step::Gap { c2s } => {
                    let at = c.insp.bytes_seen(dir(c2s));
                    let mut out = Vec::new();
                    c.insp.gap(dir(c2s), Timestamp(0), at, 10, "test".into(),
                        Some(amqpeek::codec::ProtocolHeader::Amqp091), &mut out);
                }
            }
            prop_assert!(!c.state().is_empty());
        }
        c.end();
        let snap = c.snapshot();
        prop_assert!(snap["connection"]["state"].is_string());
        prop_assert!(snap["channels"].is_array());
        for v in c.violations() {
            prop_assert!(amqpeek::state::rules::by_id(v.rule.id).is_some(), "{} not in the catalog", v.rule);
        }
    }
}
