//! Valid AMQP 0-9-1 conversations generated from a model of what each peer may send next
//! (channels opened and closed, confirm mode, publishes the broker confirms in order, singly or
//! `multiple`, consumers, deliveries the client acks singly or `multiple`, heartbeats while the
//! clock moves) make the state tracker report nothing: every frame is legal where it is sent.

mod state_amqp091_conv;

use std::collections::BTreeMap;

use amqpeek::Dir;
use amqpeek::codec::amqp091::{FrameKind, MethodKind as K};
use proptest::prelude::*;
use state_amqp091_conv::{Conv, bit, ll, short, sstr};

/// What a generated step asks for; applied only where the model allows it (else skipped).
#[derive(Clone, Debug)]
enum Op {
    Open(u16),
    Confirm(u16),
    Publish(u16, usize),
    Confirmed(u16, bool),
    Consume(u16),
    Deliver(u16),
    Ack(u16, bool, usize),
    Close(u16),
    Tick(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let ch = 1..4u16;
    prop_oneof![
        2 => ch.clone().prop_map(Op::Open),
        1 => ch.clone().prop_map(Op::Confirm),
        4 => (ch.clone(), 0..40usize).prop_map(|(c, n)| Op::Publish(c, n)),
        3 => (ch.clone(), any::<bool>()).prop_map(|(c, m)| Op::Confirmed(c, m)),
        1 => ch.clone().prop_map(Op::Consume),
        4 => ch.clone().prop_map(Op::Deliver),
        3 => (ch.clone(), any::<bool>(), 0..8usize).prop_map(|(c, m, i)| Op::Ack(c, m, i)),
        1 => ch.clone().prop_map(Op::Close),
        1 => (0..30u64).prop_map(Op::Tick),
    ]
}

/// One open channel as both peers see it.
#[derive(Default)]
struct Channel {
    /// Publish sequence numbers not yet confirmed, oldest first (`Some` once in confirm mode).
    unconfirmed: Option<Vec<u64>>,
    published: u64,
    consuming: bool,
    last_tag: u64,
    /// Delivery tags not yet acked, ascending.
    unacked: Vec<u64>,
}

/// Plays `ops` against the model, sending only what is legal, and returns the conversation
/// (still open).
fn play(ops: &[Op]) -> Conv {
    let mut c = Conv::new();
    c.handshake();
    let mut chans: BTreeMap<u16, Channel> = BTreeMap::new();
    let mut now = 0;
    for op in ops {
        match *op {
            Op::Open(ch) if !chans.contains_key(&ch) => {
                c.open(ch);
                chans.insert(ch, Channel::default());
            }
            Op::Confirm(ch) => {
                let Some(st) = chans.get_mut(&ch) else {
                    continue;
                };
                if st.unconfirmed.is_none() {
                    c.c(ch, K::ConfirmSelect, &[])
                        .s(ch, K::ConfirmSelectOk, &[]);
                    st.unconfirmed = Some(Vec::new());
                    st.published = 0;
                }
            }
            Op::Publish(ch, body) => {
                let Some(st) = chans.get_mut(&ch) else {
                    continue;
                };
                c.publish(ch, body);
                if let Some(pending) = &mut st.unconfirmed {
                    st.published += 1;
                    pending.push(st.published);
                }
            }
            Op::Confirmed(ch, multiple) => {
                let Some(pending) = chans.get_mut(&ch).and_then(|st| st.unconfirmed.as_mut())
                else {
                    continue;
                };
                let Some(&tag) = (if multiple {
                    pending.last()
                } else {
                    pending.first()
                }) else {
                    continue;
                };
                c.s(
                    ch,
                    K::BasicAck,
                    &[("delivery-tag", ll(tag)), ("multiple", bit(multiple))],
                );
                pending.retain(|&t| t > tag);
            }
            Op::Consume(ch) => {
                let Some(st) = chans.get_mut(&ch) else {
                    continue;
                };
                if !st.consuming {
                    c.consume(ch, &format!("ctag-{ch}"), false);
                    st.consuming = true;
                }
            }
            Op::Deliver(ch) => {
                let Some(st) = chans.get_mut(&ch).filter(|st| st.consuming) else {
                    continue;
                };
                st.last_tag += 1;
                st.unacked.push(st.last_tag);
                c.deliver(ch, &format!("ctag-{ch}"), st.last_tag);
            }
            Op::Ack(ch, multiple, which) => {
                let Some(st) = chans.get_mut(&ch).filter(|st| !st.unacked.is_empty()) else {
                    continue;
                };
                let tag = st.unacked[which % st.unacked.len()];
                c.c(
                    ch,
                    K::BasicAck,
                    &[("delivery-tag", ll(tag)), ("multiple", bit(multiple))],
                );
                st.unacked
                    .retain(|&t| if multiple { t > tag } else { t != tag });
            }
            Op::Close(ch) if chans.remove(&ch).is_some() => {
                c.c(
                    ch,
                    K::ChannelClose,
                    &[("reply-code", short(200)), ("reply-text", sstr("bye"))],
                )
                .s(ch, K::ChannelCloseOk, &[]);
            }
            Op::Tick(secs) => {
                // Heartbeat 60 s was agreed: both peers beat after each pause.
                now += secs;
                c.at(now);
                c.frame(Dir::C2S, 0, FrameKind::Heartbeat);
                c.frame(Dir::S2C, 0, FrameKind::Heartbeat);
            }
            _ => {}
        }
    }
    c
}

/// The client closes the connection, the server confirms, and the TCP connection ends.
fn close(c: &mut Conv) {
    c.c(
        0,
        K::ConnectionClose,
        &[("reply-code", short(200)), ("reply-text", sstr("bye"))],
    )
    .s(0, K::ConnectionCloseOk, &[])
    .end();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn conversations_the_model_allows_report_nothing(ops in prop::collection::vec(op(), 0..150)) {
        let mut c = play(&ops);
        close(&mut c);
        let v = c.violations();
        prop_assert!(v.is_empty(), "{:#?}", v);
    }
}

/// The model's conversations do reach the tracker's rules: one step outside it (acking a
/// delivery twice) is reported.
#[test]
fn a_step_outside_the_model_is_reported() {
    let mut c = play(&[
        Op::Open(1),
        Op::Consume(1),
        Op::Deliver(1),
        Op::Ack(1, false, 0),
    ]);
    c.clean();
    c.c(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(1)), ("multiple", bit(false))],
    );
    c.expect(&["amqp091.basic.unknown-delivery-tag"]);
}
