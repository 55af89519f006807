//! Violations only the conversation as a whole proves, each beside a healthy conversation of
//! the same shape: a receiver's delivery-count behind the deliveries its own dispositions show
//! it received (AMQP 1.0 §2.7.4, §2.6.7), and a delivery whose bare message does not decode
//! (messaging §3.2).

mod state_amqp10_common;

use amqpeek::codec::ProtocolHeader;
use amqpeek::codec::amqp10::{Value, described_list};
use amqpeek::event::{Dir, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use state_amqp10_common::*;

const BEHIND: &str = "amqp10.flow.receiver-delivery-count-behind";
const MALFORMED: &str = "amqp10.message.malformed";

/// A conversation that counts the bytes each way (for a gap's offset).
struct Talk {
    c: Convo,
    sent: [u64; 2],
    /// The client's next transfer-id.
    next_tid: u32,
}

impl Talk {
    /// The client's sending link "L" (handle 0, initial-delivery-count 0), the server granting
    /// 1000 link-credit.
    fn new() -> Self {
        Self::with(InspectOptions::default())
    }

    /// The same, inspected with `opts`.
    fn with(opts: InspectOptions) -> Self {
        let mut c = Convo::new();
        c.insp = Inspector::new(1, opts);
        let mut t = Talk {
            c,
            sent: [0; 2],
            next_tid: 0,
        };
        t.bytes(Dir::C2S, AMQP);
        t.bytes(Dir::S2C, AMQP);
        t.perf(Dir::C2S, open(&[]), &[]);
        t.perf(Dir::S2C, open(&[]), &[]);
        t.perf(Dir::C2S, begin(None, 0, 1000, 1000), &[]);
        t.perf(Dir::S2C, begin(Some(0), 0, 1000, 1000), &[]);
        t.perf(Dir::C2S, attach_sender("L", 0, &[]), &[]);
        t.perf(Dir::S2C, attach_receiver("L", 0, &[]), &[]);
        t.receiver_flow(0, Some(0), 1000, false);
        t
    }

    fn bytes(&mut self, d: Dir, b: &[u8]) {
        self.sent[d.index()] += b.len() as u64;
        self.c.bytes(d, b);
    }

    fn perf(&mut self, d: Dir, p: Value, payload: &[u8]) {
        let f = amqpeek::codec::amqp10::encode_frame(0, 0, Some(&p), payload).unwrap();
        self.bytes(d, &f);
    }

    /// The server's (receiver's) flow: next-incoming-id, delivery-count, link-credit, drain.
    fn receiver_flow(&mut self, next_in: u32, dc: Option<u32>, credit: u32, drain: bool) {
        let f = described_list(
            0x13,
            vec![
                u(next_in),
                u(1000),
                u(0),
                u(1000),
                u(0),
                opt_u(dc),
                u(credit),
                NULL,
                b(drain),
            ],
        );
        self.perf(Dir::S2C, f, &[]);
    }

    /// The client's (sender's) flow: its delivery-count and link-credit, drain.
    fn sender_flow(&mut self, dc: u32, credit: u32, drain: bool) {
        let f = described_list(
            0x13,
            vec![
                u(0),
                u(1000),
                u(self.next_tid),
                u(1000),
                u(0),
                u(dc),
                u(credit),
                u(0),
                b(drain),
            ],
        );
        self.perf(Dir::C2S, f, &[]);
    }

    /// One transfer of delivery `id` (`more`, `aborted`), carrying the `part`th third of a
    /// message (all of it when `part` is None).
    fn transfer(&mut self, id: u32, part: Option<usize>, more: bool, aborted: bool) {
        let first = part.is_none_or(|p| p == 0);
        let tag = id.to_be_bytes();
        let t = if first {
            transfer(0, Some(id), Some(&tag), None, more, &[(9, b(aborted))])
        } else {
            transfer(0, None, None, None, more, &[(9, b(aborted))])
        };
        let m = message(None);
        let third = m.len() / 3;
        let payload = match part {
            None => &m[..],
            Some(0) => &m[..third],
            Some(1) => &m[third..2 * third],
            Some(_) => &m[2 * third..],
        };
        self.next_tid += 1;
        self.perf(Dir::C2S, t, payload);
    }

    /// The receiver accepts and settles deliveries `first..=last`.
    fn settle(&mut self, first: u32, last: u32) {
        self.perf(Dir::S2C, disposition(true, first, Some(last), true), &[]);
    }

    /// `n` unsettled single-transfer deliveries, delivery-ids from `from`.
    fn deliveries(&mut self, from: u32, n: u32) {
        for id in from..from + n {
            self.transfer(id, None, false, false);
        }
    }

    /// Bytes the client sent were missed (capture loss) just now.
    fn client_gap(&mut self) {
        let mut out = Vec::new();
        let at = self.sent[0];
        self.c.insp.gap(
            Dir::C2S,
            Timestamp(self.c.now),
            at,
            0,
            "capture loss".into(),
            Some(ProtocolHeader::Amqp10),
            &mut out,
        );
    }
}

#[test]
fn a_receiver_that_received_fifty_deliveries_cannot_count_forty_nine() {
    let mut t = Talk::new();
    t.deliveries(0, 50);
    t.settle(0, 49);
    t.receiver_flow(50, Some(49), 1000, false);
    t.c.expect(&[BEHIND]);
    let v = &t.c.violations[0];
    assert_eq!(v.dir, Dir::S2C);
    assert!(v.message.contains("delivery-count 49"), "{}", v.message);
    assert!(v.message.contains("count to 50"), "{}", v.message);
}

#[test]
fn a_receiver_whose_link_had_not_received_the_last_delivery_yet_counts_forty_nine() {
    let mut t = Talk::new();
    t.deliveries(0, 50);
    // Its session received all fifty (next-incoming-id 50), its link has named 49 of them:
    // the fiftieth may still be on its way from the session to the link.
    t.settle(0, 48);
    t.receiver_flow(50, Some(49), 1000, false);
    t.settle(49, 49);
    t.receiver_flow(50, Some(50), 1000, false);
    t.c.expect_clean();
    // Crossing on the wire: the flow went before the last transfer reached the receiver.
    t.deliveries(50, 1);
    t.receiver_flow(50, Some(50), 1000, false);
    t.c.expect_clean();
}

#[test]
fn multi_transfer_deliveries_count_once_each_when_complete() {
    let mut t = Talk::new();
    for id in 0..10 {
        t.transfer(id, Some(0), true, false);
        t.transfer(id, Some(1), true, false);
        t.transfer(id, Some(2), false, false);
    }
    t.settle(0, 8);
    // Nine deliveries named, thirty transfers.
    t.receiver_flow(30, Some(9), 1000, false);
    // A receiver counting the tenth at its first transfer says ten: neither is wrong.
    t.receiver_flow(30, Some(10), 1000, false);
    t.c.expect_clean();
    t.receiver_flow(30, Some(8), 1000, false);
    t.c.expect(&[BEHIND]);
}

#[test]
fn an_aborted_delivery_is_not_held_against_the_receiver() {
    let mut t = Talk::new();
    t.deliveries(0, 3);
    t.transfer(3, Some(0), true, false);
    t.transfer(3, Some(1), false, true);
    t.deliveries(4, 1);
    t.settle(0, 4);
    // Counting the aborted delivery or not: 5 or 4.
    t.receiver_flow(6, Some(4), 1000, false);
    t.receiver_flow(6, Some(5), 1000, false);
    t.c.expect_clean();
    t.receiver_flow(6, Some(3), 1000, false);
    t.c.expect(&[BEHIND]);
}

#[test]
fn nothing_is_judged_after_bytes_were_missed() {
    let mut t = Talk::new();
    t.client_gap();
    t.deliveries(0, 50);
    t.settle(0, 49);
    t.receiver_flow(50, Some(10), 1000, false);
    t.c.expect_clean();
}

#[test]
fn a_drained_count_is_known_once_a_later_delivery_was_named() {
    let mut t = Talk::new();
    t.deliveries(0, 5);
    t.settle(0, 4);
    t.receiver_flow(5, Some(5), 10, true);
    // The sender answers the drain: delivery-count advanced to the limit, credit used up.
    t.sender_flow(15, 0, true);
    // Crossing the sender's answer: the receiver still knows 5.
    t.receiver_flow(5, Some(5), 10, false);
    t.c.expect_clean();
    // It heard the answer, grants again; one more delivery, named.
    t.receiver_flow(5, Some(15), 10, false);
    t.deliveries(5, 1);
    t.settle(5, 5);
    t.receiver_flow(6, Some(16), 10, false);
    t.c.expect_clean();
    // Having named delivery 5, it has heard the flow sent before it: 5 + 1 is behind 16.
    t.receiver_flow(6, Some(6), 10, false);
    t.c.expect(&[BEHIND]);
}

/// One settled transfer of delivery `id` with this payload (`more`).
fn raw_transfer(t: &mut Talk, id: u32, first: bool, more: bool, payload: &[u8]) {
    let tag = id.to_be_bytes();
    let p = if first {
        transfer(0, Some(id), Some(&tag), Some(true), more, &[])
    } else {
        transfer(0, None, None, None, more, &[])
    };
    t.next_tid += 1;
    t.perf(Dir::C2S, p, payload);
}

/// A data section (0x75) holding an empty map instead of binary.
const DATA_MAP: &[u8] = &[0x00, 0x53, 0x75, 0xc1, 0x01, 0x00];

/// A data section of `n` bytes (vbin32).
fn big_data(n: u32) -> Vec<u8> {
    let mut m = vec![0x00, 0x53, 0x75, 0xb0];
    m.extend_from_slice(&n.to_be_bytes());
    m.extend(std::iter::repeat_n(b'x', n as usize));
    m
}

#[test]
fn a_data_section_holding_a_map_is_a_malformed_message_with_its_path() {
    let mut t = Talk::new();
    raw_transfer(&mut t, 0, true, false, DATA_MAP);
    t.c.expect(&[MALFORMED]);
    let v = &t.c.violations[0];
    assert_eq!(v.dir, Dir::C2S);
    assert!(v.message.contains("message.data"), "{}", v.message);
    assert!(v.message.contains("delivery-id 0"), "{}", v.message);
    // The trace carries it like every violation, with the path.
    let line =
        t.c.events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Violation(_)))
            .find_map(amqpeek::sinks::trace::trace_line)
            .unwrap();
    assert!(
        line.contains(MALFORMED) && line.contains("message.data"),
        "{line}"
    );
    // The transfer's own line says the message does not decode, and where.
    let transfer =
        t.c.events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Frame(f) if f.frame.name() == "transfer"))
            .find_map(amqpeek::sinks::trace::trace_line)
            .unwrap();
    assert!(
        transfer.contains("message does not decode") && transfer.contains("message.data"),
        "{transfer}"
    );
}

#[test]
fn a_valid_message_is_not_malformed() {
    let mut t = Talk::new();
    raw_transfer(&mut t, 0, true, false, &message(Some("q")));
    raw_transfer(&mut t, 1, true, false, &big_data(300));
    t.c.expect_clean();
}

#[test]
fn a_malformed_message_over_several_transfers_is_reported_once() {
    let mut t = Talk::new();
    let mut m = message(None);
    m.extend_from_slice(DATA_MAP);
    raw_transfer(&mut t, 0, true, true, &m[..4]);
    raw_transfer(&mut t, 0, false, true, &m[4..9]);
    raw_transfer(&mut t, 0, false, false, &m[9..]);
    t.c.expect(&[MALFORMED]);
}

#[test]
fn a_body_cut_by_the_body_limit_is_not_malformed() {
    let opts = InspectOptions {
        max_body: 16,
        ..InspectOptions::default()
    };
    let mut t = Talk::with(opts);
    // One transfer, and one delivery over three: only their start is kept.
    let m = big_data(5000);
    raw_transfer(&mut t, 0, true, false, &m);
    raw_transfer(&mut t, 1, true, true, &m[..1000]);
    raw_transfer(&mut t, 1, false, true, &m[1000..3000]);
    raw_transfer(&mut t, 1, false, false, &m[3000..]);
    t.c.expect_clean();
    // What is kept is still judged: a malformed start is reported.
    let mut bad = DATA_MAP.to_vec();
    bad.extend_from_slice(&m);
    raw_transfer(&mut t, 2, true, false, &bad);
    t.c.expect(&[MALFORMED]);
}

#[test]
fn a_delivery_begun_before_missed_bytes_is_not_judged() {
    let mut t = Talk::new();
    let m = big_data(40);
    raw_transfer(&mut t, 0, true, true, &m[..20]);
    t.client_gap();
    // Its last transfer repeats delivery-id and tag (allowed): decoded from its middle, the
    // bytes are no message, which says nothing about the sender.
    raw_transfer(&mut t, 0, true, false, &m[20..]);
    t.c.expect_clean();
}
