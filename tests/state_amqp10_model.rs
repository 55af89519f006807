//! Valid AMQP 1.0 conversations generated from a model of what each peer may send next make
//! the state tracker report nothing: every frame is legal where it is sent.
//!
//! The model plays both peers in turn (no frames cross): SASL or not, both headers, both opens
//! (each asking for an idle time-out the other then honours with empty frames), sessions begun
//! by the client with small incoming windows on either side, links of either direction (the
//! client's receivers sometimes granting credit before the server's attach, as Qpid Proton
//! does, and then without a delivery-count, §2.7.4), transfers of one to three frames, settled
//! or not, against the link's credit and the receiving session's window, dispositions of runs of
//! unsettled deliveries, drains answered by the sender, windows reopened by session flows,
//! closing detaches, ends, and the close.

mod state_amqp10_common;

use std::collections::BTreeMap;

use amqpeek::codec::amqp10::{Value, described_list};
use amqpeek::event::Dir;
use amqpeek::state::snapshot::Detail;
use proptest::prelude::*;
use state_amqp10_common::*;

/// A session's outgoing window as both peers send it: never the limit in these conversations.
const OUTGOING_WINDOW: u32 = 1_000_000;
/// The idle time-out each peer asks for (ms); a `Tick` is always shorter.
const IDLE_TIMEOUT_MS: u32 = 8_000;
/// The server's session channel is the client's plus this (each peer picks its own).
const SERVER_CHANNEL_OFFSET: u16 = 5;
/// The server's link handle is the client's plus this (each peer picks its own).
const SERVER_HANDLE_OFFSET: u32 = 10;

/// What a generated step asks for; applied only where the model allows it (else skipped).
#[derive(Clone, Debug)]
enum Op {
    /// Begin a session on the client's channel, with the client's and the server's incoming
    /// windows.
    Begin(u16, u32, u32),
    /// Attach link (channel, client handle): whether the client sends on it, whether a client
    /// receiver grants its credit before the server's attach, and that credit.
    Attach(u16, u32, bool, bool, u32),
    /// The link's receiver grants this much credit.
    Grant(u16, u32, u32),
    /// One delivery on the link, in this many frames, settled or not.
    Transfer(u16, u32, usize, bool),
    /// The receiving side (the client when true) settles its oldest run of unsettled deliveries.
    Settle(u16, bool),
    /// The link's receiver asks for a drain; the sender answers using the credit up.
    Drain(u16, u32),
    /// A peer (the client when true) reopens its incoming window with a session flow.
    Window(u16, bool),
    /// A peer (the client when true) detaches the link, closing it; the other answers.
    Detach(u16, u32, bool),
    /// A peer (the client when true) ends the session; the other answers.
    End(u16, bool),
    /// Time passes (ms); then both peers send an empty frame.
    Tick(u32),
}

fn op() -> impl Strategy<Value = Op> {
    let ch = 0..3u16;
    let h = 0..3u32;
    prop_oneof![
        2 => (ch.clone(), 1..6u32, 1..6u32).prop_map(|(c, a, b)| Op::Begin(c, a, b)),
        3 => (ch.clone(), h.clone(), any::<bool>(), any::<bool>(), 0..5u32)
            .prop_map(|(c, h, snd, pipe, cr)| Op::Attach(c, h, snd, pipe, cr)),
        3 => (ch.clone(), h.clone(), 0..6u32).prop_map(|(c, h, cr)| Op::Grant(c, h, cr)),
        8 => (ch.clone(), h.clone(), 1..4usize, any::<bool>())
            .prop_map(|(c, h, n, s)| Op::Transfer(c, h, n, s)),
        3 => (ch.clone(), any::<bool>()).prop_map(|(c, by)| Op::Settle(c, by)),
        1 => (ch.clone(), h.clone()).prop_map(|(c, h)| Op::Drain(c, h)),
        3 => (ch.clone(), any::<bool>()).prop_map(|(c, by)| Op::Window(c, by)),
        1 => (ch.clone(), h.clone(), any::<bool>()).prop_map(|(c, h, by)| Op::Detach(c, h, by)),
        1 => (ch.clone(), any::<bool>()).prop_map(|(c, by)| Op::End(c, by)),
        1 => (0..IDLE_TIMEOUT_MS / 2).prop_map(Op::Tick),
    ]
}

/// One direction of a session, as the peer that sends on it knows it.
#[derive(Clone, Debug)]
struct Outgoing {
    /// The sender's next-outgoing-id (transfer ids).
    next_transfer: u32,
    /// The sender's next delivery-id.
    next_delivery: u32,
}

/// One peer's receiving side of a session.
#[derive(Clone, Debug)]
struct Incoming {
    /// What it last advertised as its incoming-window.
    window_max: u32,
    /// What is left of it.
    window_left: u32,
    /// Deliveries it received and has not settled, with the link (client handle) of each.
    unsettled: BTreeMap<u32, u32>,
}

/// One link as both peers see it.
#[derive(Clone, Debug)]
struct Link {
    client_sends: bool,
    delivery_count: u32,
    credit: u32,
}

/// One session as both peers see it; index 0 is the client's side, 1 the server's.
#[derive(Clone, Debug)]
struct Session {
    out: [Outgoing; 2],
    inc: [Incoming; 2],
    links: BTreeMap<u32, Link>,
}

fn side(client: bool) -> usize {
    if client { 0 } else { 1 }
}

/// A flow with every session field as `from` knows it, and the link fields when given
/// (handle, delivery-count, link-credit, drain).
fn session_flow(s: &Session, from: usize, link: Option<(u32, Option<u32>, u32, bool)>) -> Value {
    let peer = 1 - from;
    let mut fields = vec![
        u(s.out[peer].next_transfer),
        u(s.inc[from].window_left),
        u(s.out[from].next_transfer),
        u(OUTGOING_WINDOW),
    ];
    if let Some((handle, dc, credit, drain)) = link {
        fields.extend([u(handle), opt_u(dc), u(credit), NULL, b(drain)]);
    }
    described_list(0x13, fields)
}

/// The conversation and the model's state of it.
struct Model {
    c: Convo,
    sessions: BTreeMap<u16, Session>,
}

impl Model {
    /// Send `p` from the client (`client`) or the server on the session of client channel `ch`.
    fn send(&mut self, client: bool, ch: u16, p: Value) {
        if client {
            self.c.c(ch, p);
        } else {
            self.c.s(ch + SERVER_CHANNEL_OFFSET, p);
        }
    }

    fn begin(&mut self, ch: u16, client_window: u32, server_window: u32) {
        if self.sessions.contains_key(&ch) {
            return;
        }
        // Each peer starts its transfer ids where it likes.
        let (client_first, server_first) = (0, 7 + u32::from(ch));
        self.c.c(
            ch,
            begin(None, client_first, client_window, OUTGOING_WINDOW),
        );
        self.c.s(
            ch + SERVER_CHANNEL_OFFSET,
            begin(Some(ch), server_first, server_window, OUTGOING_WINDOW),
        );
        let out = |first| Outgoing {
            next_transfer: first,
            next_delivery: 0,
        };
        let inc = |w| Incoming {
            window_max: w,
            window_left: w,
            unsettled: BTreeMap::new(),
        };
        self.sessions.insert(
            ch,
            Session {
                out: [out(client_first), out(server_first)],
                inc: [inc(client_window), inc(server_window)],
                links: BTreeMap::new(),
            },
        );
    }

    fn attach(&mut self, ch: u16, h: u32, client_sends: bool, pipelined: bool, credit: u32) {
        let Some(s) = self.sessions.get(&ch) else {
            return;
        };
        if s.links.contains_key(&h) {
            return;
        }
        let name = format!("link-{ch}-{h}");
        let sh = h + SERVER_HANDLE_OFFSET;
        if client_sends {
            self.c.c(ch, attach_sender(&name, h, &[]));
            self.send(false, ch, attach_receiver(&name, sh, &[]));
        } else {
            self.c.c(ch, attach_receiver(&name, h, &[]));
            if pipelined {
                // Before the sender's attach the receiver does not know the delivery-count:
                // it "MUST NOT be set" (§2.7.4).
                let flow = session_flow(s, 0, Some((h, None, credit, false)));
                self.c.c(ch, flow);
            }
            self.send(false, ch, attach_sender(&name, sh, &[]));
        }
        let s = self.sessions.get_mut(&ch).expect("the session is there");
        s.links.insert(
            h,
            Link {
                client_sends,
                delivery_count: 0,
                credit: if pipelined && !client_sends {
                    credit
                } else {
                    0
                },
            },
        );
    }

    /// The handle `h` (the client's) as the peer `from` sends it.
    fn handle(from: usize, h: u32) -> u32 {
        if from == 0 {
            h
        } else {
            h + SERVER_HANDLE_OFFSET
        }
    }

    fn grant(&mut self, ch: u16, h: u32, credit: u32) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        let Some(link) = s.links.get_mut(&h) else {
            return;
        };
        link.credit = credit;
        let receiver = side(!link.client_sends);
        let dc = link.delivery_count;
        let flow = session_flow(
            s,
            receiver,
            Some((Self::handle(receiver, h), Some(dc), credit, false)),
        );
        self.send(receiver == 0, ch, flow);
    }

    fn transfer(&mut self, ch: u16, h: u32, frames: usize, settled: bool) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        let Some(link) = s.links.get_mut(&h) else {
            return;
        };
        let (sender, receiver) = if link.client_sends { (0, 1) } else { (1, 0) };
        if link.credit == 0 || (s.inc[receiver].window_left as usize) < frames {
            return;
        }
        link.credit -= 1;
        link.delivery_count = link.delivery_count.wrapping_add(1);
        let id = s.out[sender].next_delivery;
        s.out[sender].next_delivery = id.wrapping_add(1);
        s.out[sender].next_transfer = s.out[sender].next_transfer.wrapping_add(frames as u32);
        s.inc[receiver].window_left -= frames as u32;
        if !settled {
            s.inc[receiver].unsettled.insert(id, h);
        }
        let payload = message(None);
        let cut = payload.len().div_ceil(frames);
        let handle = Self::handle(sender, h);
        let tag = format!("tag-{id}").into_bytes();
        for (i, part) in payload.chunks(cut).enumerate() {
            let first = i == 0;
            let more = (i + 1) * cut < payload.len();
            let t = transfer(
                handle,
                first.then_some(id),
                first.then_some(tag.as_slice()),
                first.then_some(settled),
                more,
                &[],
            );
            let dir = if sender == 0 { Dir::C2S } else { Dir::S2C };
            let channel = if sender == 0 {
                ch
            } else {
                ch + SERVER_CHANNEL_OFFSET
            };
            self.c.frame(dir, 0, channel, Some(&t), part);
        }
    }

    fn settle(&mut self, ch: u16, by_client: bool) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        let receiver = side(by_client);
        let Some(&first) = s.inc[receiver].unsettled.keys().next() else {
            return;
        };
        let mut last = first;
        while s.inc[receiver]
            .unsettled
            .contains_key(&last.wrapping_add(1))
        {
            last = last.wrapping_add(1);
        }
        s.inc[receiver]
            .unsettled
            .retain(|&id, _| !(first..=last).contains(&id));
        let d = disposition(true, first, (last != first).then_some(last), true);
        self.send(by_client, ch, d);
    }

    fn drain(&mut self, ch: u16, h: u32) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        let Some(link) = s.links.get(&h).cloned() else {
            return;
        };
        let (sender, receiver) = if link.client_sends { (0, 1) } else { (1, 0) };
        let ask = session_flow(
            s,
            receiver,
            Some((
                Self::handle(receiver, h),
                Some(link.delivery_count),
                link.credit,
                true,
            )),
        );
        // The sender has nothing to send: it uses the credit up by advancing delivery-count
        // (§2.6.7) and says so in its answer.
        let used_up = link.delivery_count.wrapping_add(link.credit);
        let answer = session_flow(
            s,
            sender,
            Some((Self::handle(sender, h), Some(used_up), 0, true)),
        );
        let l = s.links.get_mut(&h).expect("the link is there");
        l.delivery_count = used_up;
        l.credit = 0;
        self.send(receiver == 0, ch, ask);
        self.send(sender == 0, ch, answer);
    }

    fn window(&mut self, ch: u16, by_client: bool) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        let me = side(by_client);
        s.inc[me].window_left = s.inc[me].window_max;
        let flow = session_flow(s, me, None);
        self.send(by_client, ch, flow);
    }

    fn detach(&mut self, ch: u16, h: u32, by_client: bool) {
        let Some(s) = self.sessions.get_mut(&ch) else {
            return;
        };
        if s.links.remove(&h).is_none() {
            return;
        }
        // The link's unsettled deliveries go with it.
        for inc in &mut s.inc {
            inc.unsettled.retain(|_, link| *link != h);
        }
        let me = side(by_client);
        self.send(by_client, ch, detach(Self::handle(me, h), true));
        self.send(!by_client, ch, detach(Self::handle(1 - me, h), true));
    }

    fn end(&mut self, ch: u16, by_client: bool) {
        if self.sessions.remove(&ch).is_none() {
            return;
        }
        self.send(by_client, ch, end());
        self.send(!by_client, ch, end());
    }

    fn tick(&mut self, ms: u32) {
        self.c.advance_ms(i64::from(ms));
        self.c.frame(Dir::C2S, 0, 0, None, &[]);
        self.c.frame(Dir::S2C, 0, 0, None, &[]);
    }
}

/// Plays `ops` against the model, sending only what is legal, and returns the conversation
/// (still open).
fn play(sasl: bool, ops: &[Op]) -> Convo {
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
    c.c(0, open(&[(4, u(IDLE_TIMEOUT_MS))]));
    c.s(0, open(&[(4, u(IDLE_TIMEOUT_MS))]));
    let mut m = Model {
        c,
        sessions: BTreeMap::new(),
    };
    for op in ops {
        match *op {
            Op::Begin(ch, a, b) => m.begin(ch, a, b),
            Op::Attach(ch, h, snd, pipe, cr) => m.attach(ch, h, snd, pipe, cr),
            Op::Grant(ch, h, cr) => m.grant(ch, h, cr),
            Op::Transfer(ch, h, n, settled) => m.transfer(ch, h, n, settled),
            Op::Settle(ch, by) => m.settle(ch, by),
            Op::Drain(ch, h) => m.drain(ch, h),
            Op::Window(ch, by) => m.window(ch, by),
            Op::Detach(ch, h, by) => m.detach(ch, h, by),
            Op::End(ch, by) => m.end(ch, by),
            Op::Tick(ms) => m.tick(ms),
        }
    }
    m.c
}

/// The client closes the connection, the server answers, and the TCP connection ends.
fn finish(c: &mut Convo) {
    c.c(0, close());
    c.s(0, close());
    c.close_tcp();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn conversations_the_model_allows_report_nothing(
        sasl in any::<bool>(),
        ops in prop::collection::vec(op(), 0..200),
    ) {
        let mut c = play(sasl, &ops);
        finish(&mut c);
        prop_assert!(c.violations.is_empty(), "{:#?}", c.violations);
    }
}

/// The model does reach the deliveries: a conversation it plays holds transfers and
/// dispositions, and each link's credit and each session's window are spent as it says.
#[test]
fn the_model_reaches_transfers_and_their_settlement() {
    let ops = [
        Op::Begin(0, 2, 2),
        Op::Attach(0, 0, true, false, 0),
        Op::Grant(0, 0, 3),
        Op::Transfer(0, 0, 1, false),
        Op::Transfer(0, 0, 1, false),
        // The server's window of 2 is spent: this one is not sent.
        Op::Transfer(0, 0, 1, false),
        Op::Settle(0, false),
        Op::Window(0, false),
        Op::Transfer(0, 0, 2, true),
    ];
    let mut c = play(false, &ops);
    let snap = c.insp.tracker().snapshot();
    let Detail::Amqp10(snap) = snap.detail else {
        panic!("an AMQP 1.0 snapshot: {snap:?}")
    };
    let [link] = snap.links.as_slice() else {
        panic!("one link: {:?}", snap.links)
    };
    assert_eq!(
        (
            link.deliveries,
            link.delivery_count,
            link.link_credit,
            link.unsettled
        ),
        (3, Some(3), Some(0), 0),
        "three deliveries against a credit of 3, the first two settled by the disposition"
    );
    finish(&mut c);
    c.expect_clean();
}

/// One step outside the model is reported: a transfer beyond the credit the receiver gave.
#[test]
fn a_step_outside_the_model_is_reported() {
    let mut c = play(
        false,
        &[
            Op::Begin(0, 5, 5),
            Op::Attach(0, 0, true, false, 0),
            Op::Grant(0, 0, 1),
            Op::Transfer(0, 0, 1, true),
        ],
    );
    c.expect_clean();
    // A second delivery with the one credit spent.
    c.c_payload(
        0,
        transfer(0, Some(1), Some(b"x"), Some(true), false, &[]),
        &message(None),
    );
    assert!(
        c.rules().contains(&"amqp10.link.transfer-without-credit"),
        "{:?}",
        c.rules()
    );
}

/// §2.6.7: a receiver that grants credit before the sender's attach (no delivery-count, as
/// Qpid Proton does) grants it from the initial-delivery-count of that attach: the sender may
/// use it, and no more than it.
#[test]
fn credit_granted_before_the_senders_attach_counts_from_its_initial_delivery_count() {
    let mut c = play(
        false,
        &[
            Op::Begin(0, 5, 5),
            Op::Attach(0, 0, false, true, 2),
            Op::Transfer(0, 0, 1, true),
            Op::Transfer(0, 0, 1, true),
        ],
    );
    c.expect_clean();
    let third = transfer(
        SERVER_HANDLE_OFFSET,
        Some(2),
        Some(b"x"),
        Some(true),
        false,
        &[],
    );
    c.frame(
        Dir::S2C,
        0,
        SERVER_CHANNEL_OFFSET,
        Some(&third),
        &message(None),
    );
    c.expect(&["amqp10.link.transfer-without-credit"]);
}
