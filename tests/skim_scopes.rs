//! A skim (frames passed over undecoded while a live view falls behind) hides only what frames
//! on the channels it passed over could change: the state tracker forgets those channels (or
//! the connection, for channel 0) and keeps the rest known, and judges nothing the skipped
//! frames could explain. Crafted conversations fed through `Inspector::chunk` and
//! `Inspector::skim` (skims are timing-driven; the skimmed bytes are chosen here).

#[path = "state_amqp091_conv/mod.rs"]
mod conv;

use amqpeek::codec::amqp091::{ContentHeader, FrameKind, Method, encode_frame};
use amqpeek::event::{Event, EventKind};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::state::snapshot::Detail;
use amqpeek::{Dir, Timestamp};
use bytes::Bytes;
use conv::{Conv, K, ll, m, sstr};

/// The bytes of a delivery of `tag` to `ctag` on `ch`, with its content (2 body bytes).
fn delivery_bytes(ch: u16, ctag: &str, tag: u64) -> Vec<u8> {
    let deliver: Method = m(
        K::BasicDeliver,
        &[("consumer-tag", sstr(ctag)), ("delivery-tag", ll(tag))],
    );
    let mut v = Vec::new();
    encode_frame(ch, &FrameKind::Method(deliver.into()), &mut v);
    encode_frame(
        ch,
        &FrameKind::Header(ContentHeader::basic(2).into()),
        &mut v,
    );
    encode_frame(ch, &FrameKind::Body(Bytes::from_static(b"hi")), &mut v);
    v
}

/// The 0-9-1 connection's state name, whether the connection is marked uncertain, and per
/// channel (number, unacked deliveries, uncertain).
fn amqp091_state(c: &Conv) -> (String, bool, Vec<(u16, usize, bool)>) {
    let snap = c.insp.tracker().snapshot();
    let Detail::Amqp091(s) = snap.detail else {
        panic!("not 0-9-1: {:?}", snap.detail);
    };
    let channels = s
        .channels
        .iter()
        .map(|ch| (ch.channel, ch.unacked_deliveries, ch.uncertain))
        .collect();
    (snap.name, s.connection.uncertain, channels)
}

/// The reasons of the skims reported as gaps.
fn skim_reasons(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Gap { reason, .. } if reason.starts_with("skimmed:") => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// Two channels consuming with manual acks, two deliveries unacked on channel 1 and one on
/// channel 2.
fn two_consumers() -> Conv {
    let mut c = Conv::new();
    c.handshake()
        .open(1)
        .open(2)
        .consume(1, "c1", false)
        .consume(2, "c2", false)
        .deliver(1, "c1", 1)
        .deliver(1, "c1", 2)
        .deliver(2, "c2", 1);
    c
}

#[test]
fn a_skim_on_channel_2_leaves_channel_1_and_the_connection_known() {
    let mut c = two_consumers();
    c.at(1).skim(Dir::S2C, delivery_bytes(2, "c2", 2));
    // Decoding resumes: channel 1 goes on, and the client acks the delivery the skim hid.
    c.deliver(1, "c1", 3)
        .c(2, K::BasicAck, &[("delivery-tag", ll(2))]);
    c.clean();
    let (name, uncertain, channels) = amqp091_state(&c);
    assert_eq!(name, "OPEN", "the connection stays known");
    assert!(!uncertain, "no connection frame was passed over");
    assert_eq!(
        channels,
        vec![(1, 3, false), (2, 0, true)],
        "channel 1 counts all three deliveries, channel 2 is marked unknown"
    );
    let reasons = skim_reasons(c.events());
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].ends_with("on channel 2"), "{reasons:?}");
}

#[test]
fn an_ack_on_a_channel_the_skim_missed_nothing_of_is_still_judged() {
    let mut c = two_consumers();
    c.at(1).skim(Dir::S2C, delivery_bytes(2, "c2", 2));
    c.deliver(1, "c1", 3);
    // Tag 9 was never delivered on channel 1, and nothing of channel 1 was skimmed.
    c.c(1, K::BasicAck, &[("delivery-tag", ll(9))]);
    let rules = c.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
}

#[test]
fn a_skimmed_server_frame_on_channel_0_makes_the_connection_unknown_and_only_it() {
    let mut c = two_consumers();
    c.s(
        0,
        K::ConnectionBlocked,
        &[("reason", sstr("low on memory"))],
    );
    // The broker unblocks in frames the view passed over.
    let mut unblocked = Vec::new();
    let m0 = m(K::ConnectionUnblocked, &[]);
    encode_frame(0, &FrameKind::Method(m0.into()), &mut unblocked);
    unblocked.extend(delivery_bytes(2, "c2", 2));
    c.at(1).skim(Dir::S2C, unblocked);
    c.deliver(1, "c1", 3).publish(1, 4);
    // Whether the connection is still blocked is not known: the publish is not judged.
    c.clean();
    let (name, uncertain, channels) = amqp091_state(&c);
    assert_eq!(name, "UNKNOWN");
    assert!(uncertain, "the connection line says bytes were missed");
    assert_eq!(channels, vec![(1, 3, false), (2, 0, true)]);
    let reasons = skim_reasons(c.events());
    assert!(reasons[0].ends_with("on channels 0, 2"), "{reasons:?}");
}

#[test]
fn skimmed_heartbeats_hide_nothing() {
    let mut c = two_consumers();
    let mut beats = Vec::new();
    for _ in 0..3 {
        encode_frame(0, &FrameKind::Heartbeat, &mut beats);
    }
    c.at(1).skim(Dir::S2C, beats);
    c.deliver(2, "c2", 2);
    c.clean();
    let (name, uncertain, channels) = amqp091_state(&c);
    assert_eq!((name.as_str(), uncertain), ("OPEN", false));
    assert_eq!(channels, vec![(1, 2, false), (2, 2, false)]);
}

// ---- AMQP 1.0 ----

mod amqp10 {
    use super::*;
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};

    pub const OPEN: u64 = 0x10;
    pub const BEGIN: u64 = 0x11;
    pub const ATTACH: u64 = 0x12;
    pub const FLOW: u64 = 0x13;
    pub const TRANSFER: u64 = 0x14;
    pub const DISPOSITION: u64 = 0x15;

    /// A frame of performative `code` with `fields` on `ch`.
    pub fn perf(ch: u16, code: u64, fields: Vec<Value>) -> Vec<u8> {
        encode_frame(0, ch, Some(&described_list(code, fields)), &[]).unwrap()
    }

    /// An empty frame (a heartbeat).
    pub fn empty() -> Vec<u8> {
        encode_frame(0, 0, None, &[]).unwrap()
    }

    fn s(x: &str) -> Value {
        Value::String(x.into())
    }

    /// An open with `idle_ms` as idle-time-out (0: none).
    pub fn open(id: &str, idle_ms: u32) -> Vec<u8> {
        let mut v = b"AMQP\x00\x01\x00\x00".to_vec();
        let idle = if idle_ms > 0 {
            Value::Uint(idle_ms)
        } else {
            Value::Null
        };
        v.extend(perf(
            0,
            OPEN,
            vec![s(id), Value::Null, Value::Null, Value::Null, idle],
        ));
        v
    }

    /// A begin on `ch`, answering `remote` when given.
    pub fn begin(ch: u16, remote: Option<u16>) -> Vec<u8> {
        let remote = remote.map_or(Value::Null, Value::Ushort);
        let w = Value::Uint(10_000);
        perf(ch, BEGIN, vec![remote, Value::Uint(0), w.clone(), w])
    }

    /// An attach of link `name`, handle 0, on `ch`: the client's sender or the server's
    /// receiver.
    pub fn attach(ch: u16, name: &str, receiver: bool) -> Vec<u8> {
        let mut fields = vec![
            s(name),
            Value::Uint(0),
            Value::Bool(receiver),
            Value::Null,
            Value::Null,
            described_list(0x28, vec![s("q")]),
            described_list(0x29, vec![s("q")]),
        ];
        if !receiver {
            fields.extend([Value::Null, Value::Null, Value::Uint(0)]);
        }
        perf(ch, ATTACH, fields)
    }

    /// The receiver's flow on `ch`, handle 0, granting `credit` at delivery-count 0.
    pub fn flow(ch: u16, credit: u32) -> Vec<u8> {
        let w = Value::Uint(10_000);
        perf(
            ch,
            FLOW,
            vec![
                Value::Uint(0),
                w.clone(),
                Value::Uint(0),
                w,
                Value::Uint(0),
                Value::Uint(0),
                Value::Uint(credit),
            ],
        )
    }

    /// An unsettled transfer of delivery `id` on `ch`, handle 0.
    pub fn transfer(ch: u16, id: u32) -> Vec<u8> {
        let fields = vec![
            Value::Uint(0),
            Value::Uint(id),
            Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes())),
            Value::Uint(0),
            Value::Bool(false),
        ];
        let body = [0x00, 0x53, 0x75, 0xa0, 2, b'h', b'i'];
        encode_frame(0, ch, Some(&described_list(TRANSFER, fields)), &body).unwrap()
    }

    /// The receiver settles deliveries `first..=last` on `ch` as accepted.
    pub fn accept(ch: u16, first: u32, last: u32) -> Vec<u8> {
        perf(
            ch,
            DISPOSITION,
            vec![
                Value::Bool(true),
                Value::Uint(first),
                Value::Uint(last),
                Value::Bool(true),
                described_list(0x24, vec![]),
            ],
        )
    }
}

/// One AMQP 1.0 connection fed chunk by chunk, a clock in milliseconds.
struct Conv10 {
    insp: Inspector,
    out: Vec<Event>,
    now_ms: i64,
}

impl Conv10 {
    /// Both opens (the server's asking for `idle_ms`) at t = 1 s.
    fn new(idle_ms: u32) -> Conv10 {
        let mut c = Conv10 {
            insp: Inspector::new(1, InspectOptions::default()),
            out: Vec::new(),
            now_ms: 1_000,
        };
        c.c2s(amqp10::open("client", 0))
            .s2c(amqp10::open("server", idle_ms));
        c
    }

    fn ts(&self) -> Timestamp {
        Timestamp(self.now_ms * 1_000)
    }

    fn at_ms(&mut self, ms: i64) -> &mut Self {
        self.now_ms = ms;
        self
    }

    fn c2s(&mut self, b: Vec<u8>) -> &mut Self {
        let ts = self.ts();
        self.insp.chunk(Dir::C2S, ts, Bytes::from(b), &mut self.out);
        self
    }

    fn s2c(&mut self, b: Vec<u8>) -> &mut Self {
        let ts = self.ts();
        self.insp.chunk(Dir::S2C, ts, Bytes::from(b), &mut self.out);
        self
    }

    fn skim_c2s(&mut self, b: Vec<u8>) -> &mut Self {
        let ts = self.ts();
        self.insp.skim(Dir::C2S, ts, Bytes::from(b), &mut self.out);
        self
    }

    fn skim_s2c(&mut self, b: Vec<u8>) -> &mut Self {
        let ts = self.ts();
        self.insp.skim(Dir::S2C, ts, Bytes::from(b), &mut self.out);
        self
    }

    fn rules(&self) -> Vec<&'static str> {
        self.out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation(v) => Some(v.rule.id),
                _ => None,
            })
            .collect()
    }

    /// Per session (its client channel, known) and per link (name, credit, known).
    #[allow(clippy::type_complexity)]
    fn state(
        &self,
    ) -> (
        String,
        Vec<(Option<u16>, bool)>,
        Vec<(String, Option<i64>, bool)>,
    ) {
        let snap = self.insp.tracker().snapshot();
        let Detail::Amqp10(s) = snap.detail else {
            panic!("not 1.0: {:?}", snap.detail);
        };
        let mut sessions: Vec<_> = s
            .sessions
            .iter()
            .map(|x| (x.channel.c2s, x.known))
            .collect();
        sessions.sort();
        let mut links: Vec<_> = s
            .links
            .iter()
            .map(|l| (l.name.clone(), l.link_credit, l.known))
            .collect();
        links.sort();
        (snap.name, sessions, links)
    }
}

/// Two sessions (client channels 1 and 2), each with a sender link (`a`, `b`) granted
/// `credit[i]`, and a transfer on each.
fn two_sessions(credit: [u32; 2]) -> Conv10 {
    use amqp10::*;
    let mut c = Conv10::new(0);
    for (ch, name, credit) in [(1, "a", credit[0]), (2, "b", credit[1])] {
        c.c2s(begin(ch, None))
            .s2c(begin(ch, Some(ch)))
            .c2s(attach(ch, name, false))
            .s2c(attach(ch, name, true))
            .s2c(flow(ch, credit))
            .c2s(transfer(ch, 0));
    }
    c
}

#[test]
fn an_amqp10_skim_on_one_session_leaves_the_other_sessions_credit_known() {
    use amqp10::*;
    // Link b has used its one credit; the server grants more in a flow the view passes over.
    let mut c = two_sessions([100, 1]);
    c.skim_s2c(flow(2, 10));
    // Decoding resumes: the client sends on link b with the credit the skim hid (not judged),
    // and on link a; the server settles them.
    for id in 1..4 {
        c.c2s(transfer(2, id));
    }
    c.c2s(transfer(1, 1))
        .s2c(accept(2, 0, 3))
        .s2c(accept(1, 0, 1));
    assert_eq!(c.rules(), Vec::<&str>::new());
    let (name, sessions, links) = c.state();
    assert_eq!(name, "OPENED", "the connection stays known");
    assert_eq!(sessions, vec![(Some(1), true), (Some(2), false)]);
    assert_eq!(links[0], ("a".into(), Some(98), true), "{links:?}");
    assert!(!links[1].2, "link b is marked unknown: {links:?}");
    let reasons = skim_reasons(&c.out);
    assert!(reasons[0].ends_with("on channel 2"), "{reasons:?}");
}

#[test]
fn an_amqp10_transfer_beyond_credit_on_a_session_the_skim_missed_is_still_judged() {
    use amqp10::*;
    let mut c = two_sessions([1, 100]);
    c.skim_s2c(flow(2, 10));
    c.c2s(transfer(1, 1));
    assert_eq!(c.rules().len(), 1, "{:?}", c.rules());
}

#[test]
fn an_amqp10_skim_on_channel_0_makes_the_whole_connection_unknown() {
    use amqp10::*;
    let mut c = two_sessions([100, 100]);
    let mut hidden = perf(0, FLOW, vec![Value10::Uint(1), Value10::Uint(10_000)]);
    hidden.extend(transfer(1, 1));
    c.skim_c2s(hidden);
    c.c2s(transfer(1, 2));
    assert_eq!(c.rules(), Vec::<&str>::new());
    let (_, sessions, links) = c.state();
    assert!(sessions.iter().all(|s| !s.1), "{sessions:?}");
    assert!(links.iter().all(|l| !l.2), "{links:?}");
}

use amqpeek::codec::amqp10::Value as Value10;

#[test]
fn the_idle_time_out_after_a_gap_or_a_skim_is_measured_from_it_not_from_the_open() {
    // The server asks for frames at least every second; the client sends one every 0.5 s.
    for how in ["gap", "skim"] {
        let mut c = Conv10::new(1_000);
        for t in (1_500..=10_000).step_by(500) {
            c.at_ms(t).c2s(amqp10::empty());
        }
        c.at_ms(10_400);
        let offset = c.insp.bytes_seen(Dir::C2S);
        let ts = c.ts();
        if how == "gap" {
            c.insp.gap(
                Dir::C2S,
                ts,
                offset,
                8,
                "capture loss".into(),
                Some(amqpeek::codec::ProtocolHeader::Amqp10),
                &mut c.out,
            );
        } else {
            c.skim_c2s(amqp10::empty());
        }
        c.at_ms(10_800).c2s(amqp10::empty());
        assert_eq!(c.rules(), Vec::<&str>::new(), "after a {how}");
        // Silence after the gap is still judged.
        c.at_ms(13_000).c2s(amqp10::empty());
        assert_eq!(
            c.rules(),
            vec!["amqp10.connection.idle-timeout-exceeded"],
            "after a {how}"
        );
    }
}

#[test]
fn a_session_or_channel_begun_in_skimmed_frames_is_learned_not_reported() {
    use amqp10::*;
    // AMQP 1.0: the client's begin on channel 3 is passed over; the server's answer and the
    // session's first frames are judged as after a gap.
    let mut c = two_sessions([100, 100]);
    c.skim_c2s(begin(3, None));
    c.s2c(begin(5, Some(3)))
        .c2s(attach(3, "c", false))
        .s2c(attach(5, "c", true));
    assert_eq!(c.rules(), Vec::<&str>::new());
    let (name, sessions, _) = c.state();
    assert_eq!(name, "OPENED");
    assert!(sessions.contains(&(Some(1), true)), "{sessions:?}");
    // AMQP 0-9-1: channel.open on channel 3 is passed over.
    let mut c = two_consumers();
    let mut open = Vec::new();
    let m0 = m(K::ChannelOpen, &[]);
    encode_frame(3, &FrameKind::Method(m0.into()), &mut open);
    c.skim(Dir::C2S, open);
    c.s(3, K::ChannelOpenOk, &[]).publish(3, 4);
    c.clean();
    let (name, _, channels) = amqp091_state(&c);
    assert_eq!(name, "OPEN");
    assert!(channels.contains(&(1, 2, false)), "{channels:?}");
}
