//! Every lookup of a frame is by key: the entries the tracker and the frame context examine
//! for an attach or a disposition do not grow with the links or deliveries outstanding
//! (counted by [`crate::state::visits`], not timed). The delivery-tag index, built only once
//! a link's tags stop rising, finds what an index kept from the first delivery finds.

use bytes::Bytes;

use crate::base::{Dir, Timestamp};
use crate::codec::amqp10::views::code;
use crate::codec::amqp10::{Str, Value, described_list, encode_frame};
use crate::pipeline::{InspectOptions, Inspector};
use crate::state::visits;

/// One connection fed frame by frame.
struct Conn {
    insp: Inspector,
    now: i64,
    /// The rules broken so far, in order.
    seen: Vec<&'static str>,
}

fn s(x: &str) -> Value {
    Value::String(Str::from(x))
}

impl Conn {
    /// Opened, one session on channel 0 both ways, windows as large as they go.
    fn session() -> Conn {
        let mut c = Conn {
            insp: Inspector::new(1, InspectOptions::default()),
            now: 1_000_000,
            seen: Vec::new(),
        };
        for d in [Dir::C2S, Dir::S2C] {
            c.bytes(d, b"AMQP\x00\x01\x00\x00");
        }
        c.send(
            Dir::C2S,
            &described_list(code::OPEN, vec![s("client")]),
            &[],
        );
        c.send(
            Dir::S2C,
            &described_list(code::OPEN, vec![s("broker")]),
            &[],
        );
        let begin = |remote: Option<u16>| {
            let window = Value::Uint(u32::MAX / 2);
            let remote = remote.map_or(Value::Null, Value::Ushort);
            described_list(
                code::BEGIN,
                vec![remote, Value::Uint(0), window.clone(), window],
            )
        };
        c.send(Dir::C2S, &begin(None), &[]);
        c.send(Dir::S2C, &begin(Some(0)), &[]);
        c
    }

    fn bytes(&mut self, d: Dir, b: &[u8]) {
        self.now += 10;
        let mut out = Vec::new();
        let ts = Timestamp(self.now);
        self.insp.chunk(d, ts, Bytes::copy_from_slice(b), &mut out);
        for e in out {
            if let crate::event::EventKind::Violation(v) = e.kind {
                self.seen.push(v.rule.id);
            }
        }
    }

    fn send(&mut self, d: Dir, p: &Value, payload: &[u8]) {
        self.bytes(d, &encode_frame(0, 0, Some(p), payload).unwrap());
    }

    /// The client's sending link `name` on `handle`, answered by the server, with credit.
    fn link(&mut self, name: &str, handle: u32) {
        let (null, h) = (Value::Null, Value::Uint(handle));
        let terminus = |code| described_list(code, vec![s("q")]);
        let mut sender = vec![s(name), h.clone(), Value::Bool(false), null.clone()];
        sender.extend([null.clone(), terminus(code::SOURCE), terminus(code::TARGET)]);
        sender.extend([null.clone(), null.clone(), Value::Uint(0)]);
        self.send(Dir::C2S, &described_list(code::ATTACH, sender), &[]);
        let mut receiver = vec![s(name), h.clone(), Value::Bool(true), null.clone()];
        receiver.extend([null, terminus(code::SOURCE), terminus(code::TARGET)]);
        self.send(Dir::S2C, &described_list(code::ATTACH, receiver), &[]);
        let window = Value::Uint(u32::MAX / 2);
        let mut flow = vec![Value::Uint(0), window.clone(), Value::Uint(0), window];
        flow.extend([h, Value::Uint(0), Value::Uint(u32::MAX / 2)]);
        self.send(Dir::S2C, &described_list(code::FLOW, flow), &[]);
    }

    /// An unsettled transfer of delivery `id` on handle 0.
    fn transfer(&mut self, id: u32) {
        self.tagged(id, &id.to_be_bytes());
    }

    /// An unsettled transfer of delivery `id` on handle 0, with delivery-tag `tag`.
    fn tagged(&mut self, id: u32, tag: &[u8]) {
        let tag = Value::Binary(Bytes::copy_from_slice(tag));
        let fields = vec![Value::Uint(0), Value::Uint(id), tag, Value::Uint(0)];
        let data = [0x00, 0x53, 0x75, 0xa0, 0x01, b'x'];
        self.send(Dir::C2S, &described_list(code::TRANSFER, fields), &data);
    }

    /// The receiver settles `first..=last` as accepted.
    fn settle(&mut self, first: u32, last: u32) {
        let accepted = described_list(code::ACCEPTED, vec![]);
        let fields = vec![
            Value::Bool(true),
            Value::Uint(first),
            Value::Uint(last),
            Value::Bool(true),
            accepted,
        ];
        self.send(Dir::S2C, &described_list(code::DISPOSITION, fields), &[]);
    }
}

/// Entries examined per frame of the `k` frames `f` sends, with `n` links attached and never
/// detached.
fn attach_visits(n: u32, k: u32) -> u64 {
    let mut c = Conn::session();
    for i in 0..n {
        c.link(&format!("link-{i}"), i);
    }
    visits::take();
    for i in n..n + k {
        c.link(&format!("link-{i}"), i);
    }
    visits::take() / u64::from(k)
}

#[test]
fn an_attach_examines_its_names_links_not_every_link() {
    // A name index: a link and its answer (each attach finds at most the one link it pairs
    // with or collides with), whatever the links outstanding. A scan: every link, per attach.
    let (few, many) = (attach_visits(10, 50), attach_visits(2_000, 50));
    assert!(
        many <= 2,
        "{many} entries examined per link attached among 2,000"
    );
    assert_eq!(few, many, "the same with 10 links as with 2,000");
}

/// Entries examined per disposition of one delivery, with `n` unsettled.
fn disposition_visits(n: u32, k: u32) -> u64 {
    let mut c = Conn::session();
    c.link("L", 0);
    for id in 0..n + k {
        c.transfer(id);
    }
    visits::take();
    for id in 0..k {
        c.settle(id, id);
    }
    // A range of ids none of which is outstanding examines nothing.
    c.settle(n + k, u32::MAX - 1);
    visits::take() / u64::from(k)
}

#[test]
fn a_disposition_examines_what_it_settles_not_every_unsettled_delivery() {
    // The tracker and the frame context each settle the one delivery named.
    let (few, many) = (disposition_visits(10, 50), disposition_visits(5_000, 50));
    assert!(
        many <= 2,
        "{many} entries examined per disposition among 5,000 unsettled"
    );
    assert_eq!(few, many, "the same with 10 unsettled as with 5,000");
}

#[test]
fn tags_reused_are_found_as_by_an_index_kept_from_the_first_delivery() {
    // The index kept from the first delivery: tag -> the delivery-id put last, its entry
    // dropped when any delivery of that tag is settled (one link).
    let mut rng = crate::base::test_rng::Rng(0x2545_f491_4f6c_dd1d);
    let mut c = Conn::session();
    c.link("L", 0);
    let mut unsettled = std::collections::BTreeMap::<u32, Vec<u8>>::new();
    let mut index = std::collections::HashMap::<Vec<u8>, u32>::new();
    let (mut next, mut reused) = (0u32, 0);
    for step in 0..3_000u32 {
        let r = rng.next();
        // No settlement just before the rising tags end: the first tag after them repeats
        // the last one, still unsettled.
        if r.is_multiple_of(5) && !(990..=1_000).contains(&step) {
            let first = next.saturating_sub(1 + (r >> 8) as u32 % 40);
            let last = first + (r >> 16) as u32 % 8;
            c.settle(first, last);
            for (_, tag) in unsettled.range(first..=last) {
                index.remove(tag);
            }
            unsettled.retain(|id, _| !(first..=last).contains(id));
            continue;
        }
        // Rising 4-byte tags for a while, then tags from a small set, longer and empty ones.
        let tag: Vec<u8> = match (step < 1_000, r % 7) {
            (true, _) => step.to_be_bytes().to_vec(),
            _ if step == 1_000 => 999u32.to_be_bytes().to_vec(),
            (false, 0) => vec![7; 17 + (r >> 8) as usize % 3],
            (false, 1) => Vec::new(),
            (false, _) => vec![(r >> 8) as u8 % 24],
        };
        c.seen.clear();
        c.tagged(next, &tag);
        let want = index.contains_key(&tag);
        let got = c.seen.contains(&"amqp10.delivery.tag-reused");
        assert_eq!(got, want, "step {step}: tag {tag:?}");
        reused += usize::from(got);
        index.insert(tag.clone(), next);
        unsettled.insert(next, tag);
        next += 1;
    }
    assert!(reused > 100, "{reused} tags reused");
}

#[test]
fn delivery_ids_reused_or_not_rising_are_found_as_a_set_of_the_unsettled_ones_finds_them() {
    // A new delivery's id is judged against what is unsettled before it goes in (the map is
    // searched once, by the insert): reused when the set holds it, else not rising when it
    // does not follow the last new id. Tags always rise: no tag is reused.
    let mut rng = crate::base::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
    let mut c = Conn::session();
    c.link("L", 0);
    let mut unsettled = std::collections::BTreeSet::<u32>::new();
    let (mut next, mut last) = (0u32, None::<u32>);
    let (mut reused, mut back, mut fresh) = (0, 0, 0);
    for step in 0..3_000u32 {
        let r = rng.next();
        if r.is_multiple_of(6) {
            let first = next.saturating_sub(1 + (r >> 8) as u32 % 40);
            let end = first + (r >> 16) as u32 % 8;
            c.settle(first, end);
            unsettled.retain(|id| !(first..=end).contains(id));
            continue;
        }
        let id = match ((r >> 8) % 8, unsettled.len()) {
            (0, n) if n > 0 => *unsettled.iter().nth((r >> 16) as usize % n).unwrap(),
            (1, _) => next.saturating_sub(1 + (r >> 16) as u32 % 30),
            _ => {
                next += 1;
                next
            }
        };
        c.seen.clear();
        c.tagged(id, &step.to_be_bytes());
        let is_reused = unsettled.contains(&id);
        let is_back = !is_reused && last.is_some_and(|p| id <= p);
        let want: Vec<&str> = [
            (is_reused, "amqp10.delivery.id-reused"),
            (is_back, "amqp10.delivery.id-not-increasing"),
        ]
        .into_iter()
        .filter_map(|(w, id)| w.then_some(id))
        .collect();
        let got: Vec<&str> = c
            .seen
            .iter()
            .copied()
            .filter(|r| r.starts_with("amqp10.delivery."))
            .collect();
        assert_eq!(got, want, "step {step}: delivery-id {id}");
        reused += usize::from(is_reused);
        back += usize::from(is_back);
        fresh += usize::from(!is_reused && !is_back);
        unsettled.insert(id);
        last = Some(id);
    }
    assert!(
        reused > 100 && back > 100 && fresh > 1_000,
        "{reused} reused, {back} not rising, {fresh} fresh"
    );
}
