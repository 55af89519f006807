//! A long randomized conversation never panics the AMQP 1.0 tracker: random valid-ish
//! performatives with random fields (channels, handles, ids, windows, credit, flags), in both
//! directions, with random gaps and timestamps; the snapshot always has its three keys.

mod state_amqp10_common;

use amqpeek::codec::ProtocolHeader;
use amqpeek::codec::amqp10::Value;
use amqpeek::event::{Dir, Timestamp};
use proptest::prelude::*;
use state_amqp10_common::*;

fn small() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..4, Just(u32::MAX), Just(u32::MAX - 1), any::<u32>()]
}

fn perf() -> impl Strategy<Value = (u16, Value)> {
    let ch = prop_oneof![0u16..3, Just(u16::MAX)];
    let p = prop_oneof![
        (proptest::option::of(0u16..3), small(), small(), small())
            .prop_map(|(r, a, b, c)| begin(r, a, b, c)),
        (0u32..3, any::<bool>(), proptest::option::of(small())).prop_map(|(h, snd, idc)| {
            if snd {
                attach_sender("L", h, &[(9, opt_u(idc))])
            } else {
                attach_receiver("L", h, &[])
            }
        }),
        (
            0u32..3,
            proptest::option::of(small()),
            proptest::option::of(small()),
            any::<bool>()
        )
            .prop_map(|(h, dc, cr, dr)| link_flow(h, dc, cr, dr)),
        (proptest::option::of(small()), small(), small(), small())
            .prop_map(|(a, b, c, d)| flow(a, b, c, d)),
        (
            0u32..3,
            proptest::option::of(small()),
            proptest::option::of(prop_oneof![Just(b"a".to_vec()), Just(b"b".to_vec())]),
            proptest::option::of(any::<bool>()),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(0u8..3)
        )
            .prop_map(|(h, id, tag, settled, more, aborted, resume, rsm)| {
                transfer(
                    h,
                    id,
                    tag.as_deref(),
                    settled,
                    more,
                    &[
                        (6, rsm.map_or(NULL, Value::Ubyte)),
                        (8, b(resume)),
                        (9, b(aborted)),
                    ],
                )
            }),
        (
            any::<bool>(),
            small(),
            proptest::option::of(small()),
            any::<bool>()
        )
            .prop_map(|(r, f, l, s)| disposition(r, f, l, s)),
        (0u32..3, any::<bool>()).prop_map(|(h, c)| detach(h, c)),
        Just(end()),
        Just(close()),
        (
            proptest::option::of(0u32..2000),
            proptest::option::of(0u16..3)
        )
            .prop_map(|(mfs, cm)| open(&[
                (2, opt_u(mfs)),
                (3, cm.map_or(NULL, Value::Ushort)),
                (4, u(1000))
            ])),
    ];
    (ch, p)
}

#[derive(Debug, Clone)]
enum Step {
    Frame(bool, u16, Value),
    Empty(bool, u16),
    Gap(bool),
    Wait(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (any::<bool>(), perf()).prop_map(|(c, (ch, p))| Step::Frame(c, ch, p)),
        1 => (any::<bool>(), 0u16..3).prop_map(|(c, ch)| Step::Empty(c, ch)),
        1 => any::<bool>().prop_map(Step::Gap),
        1 => (0u32..5000).prop_map(Step::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn random_conversations_never_panic(sasl in any::<bool>(), steps in proptest::collection::vec(step(), 1..200)) {
        let mut c = Convo::new();
        if sasl {
            c.bytes(Dir::C2S, SASL);
            c.bytes(Dir::S2C, SASL);
            c.s_sasl(sasl_mechanisms(&["PLAIN"]));
            c.c_sasl(sasl_init("PLAIN"));
            c.s_sasl(sasl_outcome(0));
        }
        c.bytes(Dir::C2S, AMQP);
        c.bytes(Dir::S2C, AMQP);
        for s in steps {
            match s {
                Step::Frame(client, ch, p) => {
                    let dir = if client { Dir::C2S } else { Dir::S2C };
                    c.frame(dir, 0, ch, Some(&p), &message(None));
                }
                Step::Empty(client, ch) => {
                    let dir = if client { Dir::C2S } else { Dir::S2C };
                    c.frame(dir, 0, ch, None, &[]);
                }
                Step::Gap(client) => {
                    let dir = if client { Dir::C2S } else { Dir::S2C };
                    let mut out = Vec::new();
                    let at = c.insp.bytes_seen(dir);
                    c.insp.gap(dir, Timestamp(c.now), at, 10, "test".into(), Some(ProtocolHeader::Amqp10), &mut out);
                }
                Step::Wait(ms) => c.advance_ms(i64::from(ms)),
            }
            let snap = c.snapshot();
            prop_assert!(snap.get("connection").is_some() && snap["sessions"].is_array() && snap["links"].is_array());
            let _ = c.insp.tracker().state_name();
        }
        c.close_tcp();
        for v in &c.violations {
            prop_assert!(!v.message.is_empty());
            prop_assert!(
                amqpeek::state::rules::by_id(v.rule.id).is_some(),
                "{} not in the catalog",
                v.rule
            );
        }
    }
}
