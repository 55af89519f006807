//! Runs of quiet transfers against following every transfer in full: random conversations of
//! three links (two the client sends on, one the server sends on) with settled and unsettled
//! transfers, redelivered messages, credit and window flows, drains and dispositions, at
//! random times, make the same diagnoses (what, when, which frames) both ways.

use std::sync::Arc;

use bytes::Bytes;

use crate::base::test_rng::Rng;
use crate::base::{Dir, Timestamp};
use crate::codec::amqp10::views::code;
use crate::codec::amqp10::{Described, Descriptor, Str, Value, described_list, encode_frame};
use crate::event::EventKind;
use crate::pipeline::{InspectOptions, Inspector};
use crate::state::diagnose::Thresholds;

use super::NO_RUNS;

fn u(x: u32) -> Value {
    Value::Uint(x)
}

fn s(x: &str) -> Value {
    Value::String(Str::from(x))
}

fn opt(x: Option<u32>) -> Value {
    x.map_or(Value::Null, Value::Uint)
}

fn frame(channel: u16, p: Value, payload: &[u8]) -> Vec<u8> {
    encode_frame(0, channel, Some(&p), payload).unwrap()
}

fn section(code: u64, value: Value) -> Vec<u8> {
    let mut out = Vec::new();
    Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value,
    }))
    .encode(&mut out)
    .unwrap();
    out
}

/// A message: a data body, after a header saying `redelivered` earlier attempts if given.
fn message(redelivered: Option<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(n) = redelivered {
        let header = vec![
            Value::Bool(true),
            Value::Null,
            Value::Null,
            Value::Null,
            u(n),
        ];
        described_list(code::HEADER, header)
            .encode(&mut out)
            .unwrap();
    }
    out.extend(section(code::DATA, Value::Binary(Bytes::from_static(b"m"))));
    out
}

fn attach(name: &str, handle: u32, receiver: bool) -> Vec<u8> {
    let mut f = vec![
        s(name),
        u(handle),
        Value::Bool(receiver),
        Value::Null,
        Value::Null,
    ];
    f.extend([
        described_list(code::SOURCE, vec![s("q")]),
        described_list(code::TARGET, vec![s("q")]),
    ]);
    if !receiver {
        f.extend([Value::Null, Value::Null, u(0)]);
    }
    frame(0, described_list(code::ATTACH, f), &[])
}

/// One conversation, fed through the real inspector; its diagnoses, in words.
struct Conv {
    insp: Inspector,
    now: i64,
    out: Vec<String>,
}

impl Conv {
    fn new() -> Conv {
        let mut t = Thresholds::new();
        for id in [
            "amqp10.link.no-credit",
            "amqp10.link.credit-exhausted",
            "amqp10.session.window-exhausted",
            "amqp10.link.sender-idle-after-flow-without-count",
            "amqp10.link.drain-unanswered",
            "amqp10.link.unsettled",
        ] {
            t.set(id, 0.05).unwrap();
        }
        t.set("amqp.delivery.redelivery-loop", 3.0).unwrap();
        let opts = InspectOptions {
            emit_data: false,
            emit_state: false,
            diagnosis: Some(Arc::new(t)),
            ..InspectOptions::default()
        };
        Conv {
            insp: Inspector::new(1, opts),
            now: 1_764_417_600_000_000,
            out: Vec::new(),
        }
    }

    fn take(&mut self, events: Vec<crate::event::Event>) {
        for e in events {
            if let EventKind::Diagnosis(d) = e.kind {
                self.out.push(format!("{d:?}"));
            }
        }
    }

    fn send(&mut self, dir: Dir, bytes: &[u8], step_us: i64) {
        self.now += step_us;
        let mut out = Vec::new();
        let b = Bytes::copy_from_slice(bytes);
        self.insp.chunk(dir, Timestamp(self.now), b, &mut out);
        self.take(out);
    }

    fn tick(&mut self, step_us: i64) {
        self.now += step_us;
        let mut out = Vec::new();
        self.insp.tick(Timestamp(self.now), &mut out);
        self.take(out);
    }

    fn close(&mut self) {
        self.now += 1;
        let mut out = Vec::new();
        let why = crate::event::CloseReason::CaptureEnded;
        self.insp.close(Timestamp(self.now), why, &mut out);
        self.take(out);
    }
}

/// The diagnoses of the conversation `seed` makes, runs of quiet transfers made or not.
fn conversation(seed: u64, runs: bool) -> Vec<String> {
    NO_RUNS.with(|n| n.set(!runs));
    let mut rng = Rng(seed);
    let mut c = Conv::new();
    let header = b"AMQP\x00\x01\x00\x00";
    c.send(Dir::C2S, header, 1);
    c.send(Dir::S2C, header, 1);
    let open = |idle: Option<u32>| {
        let fields = vec![s("c"), Value::Null, Value::Null, Value::Null, opt(idle)];
        frame(0, described_list(code::OPEN, fields), &[])
    };
    c.send(Dir::C2S, &open(None), 1);
    let idle = (rng.below(3) == 0).then_some(40);
    c.send(Dir::S2C, &open(idle), 1);
    let window = 5 + rng.below(40) as u32;
    let begin = |remote: Option<u16>| {
        let remote = remote.map_or(Value::Null, Value::Ushort);
        let fields = vec![remote, u(0), u(window), u(window)];
        frame(0, described_list(code::BEGIN, fields), &[])
    };
    c.send(Dir::C2S, &begin(None), 1);
    c.send(Dir::S2C, &begin(Some(0)), 1);
    // Links by handle: the client sends on 0 and 1, the server on 2.
    let senders = [Dir::C2S, Dir::C2S, Dir::S2C];
    for (h, name) in ["a", "b", "c"].iter().enumerate() {
        let from_client = senders[h] == Dir::C2S;
        c.send(Dir::C2S, &attach(name, h as u32, !from_client), 1);
        c.send(Dir::S2C, &attach(name, h as u32, from_client), 1);
    }
    // Per direction: the next delivery-id, and the lowest not yet settled.
    let mut next_id = [0u32; 2];
    let mut unsettled_from = [0u32; 2];
    let mut sent = [0u32; 3];
    for _ in 0..300 {
        let h = rng.below(3) as usize;
        let dir = senders[h];
        let step = [1, 1, 1, 500, 20_000, 80_000][rng.below(6) as usize];
        match rng.below(20) {
            0..=11 => {
                // A burst of transfers of one link.
                for _ in 0..1 + rng.below(12) {
                    let id = next_id[dir.index()];
                    next_id[dir.index()] += 1;
                    sent[h] += 1;
                    let settled = rng.below(3) == 0;
                    let redelivered = (rng.below(8) == 0).then(|| rng.below(6) as u32);
                    let tag = Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes()));
                    let fields = vec![u(h as u32), u(id), tag, u(0), Value::Bool(settled)];
                    let p = described_list(code::TRANSFER, fields);
                    c.send(dir, &frame(0, p, &message(redelivered)), step);
                }
            }
            12..=14 => {
                // The receiver settles a range of what was sent to it.
                let d = dir.index();
                let (first, end) = (unsettled_from[d], next_id[d]);
                if end > first {
                    let last = first + rng.below(u64::from(end - first)) as u32;
                    unsettled_from[d] = last + 1;
                    let outcome = described_list(code::ACCEPTED + rng.below(2), vec![]);
                    let fields = vec![Value::Bool(true), u(first), u(last), Value::Bool(true)];
                    let mut fields = fields;
                    fields.push(outcome);
                    c.send(
                        dir.flip(),
                        &frame(0, described_list(code::DISPOSITION, fields), &[]),
                        step,
                    );
                }
            }
            15..=17 => {
                // A link flow from the receiver (credit, maybe without delivery-count or
                // draining) or the sender (what it has), with session windows.
                let from_receiver = rng.below(4) != 0;
                let by = if from_receiver { dir.flip() } else { dir };
                let next_in = next_id[by.flip().index()];
                let dc = (rng.below(4) != 0).then_some(sent[h]);
                let credit = rng.below(15) as u32;
                let in_window = rng.below(u64::from(window) + 5) as u32;
                let fields = vec![
                    u(next_in),
                    u(in_window),
                    u(next_id[by.index()]),
                    u(window),
                    u(h as u32),
                    opt(dc),
                    u(credit),
                    opt((rng.below(3) == 0).then(|| rng.below(4) as u32)),
                    Value::Bool(rng.below(6) == 0),
                ];
                c.send(by, &frame(0, described_list(code::FLOW, fields), &[]), step);
            }
            _ => c.tick(step),
        }
    }
    c.tick(200_000);
    c.close();
    c.out
}

#[test]
fn runs_of_quiet_transfers_make_the_diagnoses_each_transfer_in_full_makes() {
    let mut made = 0;
    for seed in 1..=100u64 {
        let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let with = conversation(seed, true);
        let without = conversation(seed, false);
        assert_eq!(with, without, "seed {seed:#x}");
        made += with.len();
    }
    NO_RUNS.with(|n| n.set(false));
    // The conversations do diagnose (else the comparison would show nothing).
    assert!(made > 100, "{made} diagnoses");
}
