//! The diagnoser's memory is bounded: one AMQP 1.0 connection attaches a million links that
//! never get credit and are never detached (past the no-credit threshold), and the diagnoser
//! holds no more than `MAX_SCOPES` links (plus its sessions), making no more than that many
//! diagnoses. Counted in entries, not in time.

mod diag_support;

use std::sync::Arc;

use amqpeek::event::{CloseReason, Dir, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::state::diagnose::{Diagnoser, MAX_SCOPES, Thresholds};
use bytes::Bytes;
use diag_support::{T0, a10};

const LINKS: u32 = 1_000_000;
/// Link pairs per chunk.
const PER_CHUNK: u32 = 1000;

/// An attach frame of link `link-NNNNNNN` on handle N (sender or receiver), from a template
/// whose name and handle are patched in place.
struct Template {
    bytes: Vec<u8>,
    name_at: usize,
    handle_at: usize,
}

impl Template {
    fn new(receiver: bool) -> Template {
        let bytes = a10::frame(
            0,
            amqpeek::codec::amqp10::described_list(0x12, {
                let mut f = vec![
                    a10::s("link-9999999"),
                    a10::u(0x7eee_eeee),
                    a10::b(receiver),
                    a10::NULL,
                    a10::NULL,
                    amqpeek::codec::amqp10::described_list(0x28, vec![a10::s("q")]),
                    amqpeek::codec::amqp10::described_list(0x29, vec![a10::s("q")]),
                ];
                if !receiver {
                    f.extend([a10::NULL, a10::NULL, a10::u(0)]);
                }
                f
            }),
            &[],
        );
        let find = |pat: &[u8]| bytes.windows(pat.len()).position(|w| w == pat).unwrap();
        Template {
            name_at: find(b"link-9999999") + 5,
            handle_at: find(&[0x70, 0x7e, 0xee, 0xee, 0xee]) + 1,
            bytes,
        }
    }

    fn put(&self, i: u32, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        out[at + self.name_at..at + self.name_at + 7].copy_from_slice(format!("{i:07}").as_bytes());
        out[at + self.handle_at..at + self.handle_at + 4].copy_from_slice(&i.to_be_bytes());
    }
}

#[test]
fn a_million_idle_links_keep_the_diagnoser_within_its_budget() {
    let mut limits = Thresholds::new();
    limits.set("amqp10.link.no-credit", 1.0).unwrap();
    let limits = Arc::new(limits);
    let opts = InspectOptions {
        emit_data: false,
        emit_state: false,
        diagnosis: Some(limits.clone()),
        ..InspectOptions::default()
    };
    let mut insp = Inspector::new(1, opts);
    // A second diagnoser fed the same frames (with the context the pipeline gave them), to
    // count what it holds.
    let mut diag = Diagnoser::new(1, (*limits).clone());
    let mut held = Vec::new();
    let (mut pipeline_starts, mut most) = (0usize, 0usize);
    let mut ts = T0;
    let mut feed =
        |dir: Dir, bytes: Vec<u8>, ts: i64, insp: &mut Inspector, diag: &mut Diagnoser| {
            let mut out = Vec::new();
            insp.chunk(dir, Timestamp(ts), Bytes::from(bytes), &mut out);
            diag.tick(Timestamp(ts), &mut held);
            for e in out {
                match &e.kind {
                    EventKind::Frame(f) => diag.frame(f, Timestamp(ts), &mut held),
                    EventKind::Diagnosis(d) if d.ended.is_none() => pipeline_starts += 1,
                    _ => {}
                }
            }
            most = most.max(diag.entries());
        };
    let mut hs = Vec::new();
    hs.extend_from_slice(a10::HEADER);
    hs.extend(a10::open("client", None));
    hs.extend(a10::begin(0, None, 1000));
    ts += 1000;
    feed(Dir::C2S, hs, ts, &mut insp, &mut diag);
    let mut hs = Vec::new();
    hs.extend_from_slice(a10::HEADER);
    hs.extend(a10::open("broker", None));
    hs.extend(a10::begin(0, Some(0), 1000));
    ts += 1000;
    feed(Dir::S2C, hs, ts, &mut insp, &mut diag);
    let (snd, rcv) = (Template::new(false), Template::new(true));
    for first in (0..LINKS).step_by(PER_CHUNK as usize) {
        for (dir, t) in [(Dir::C2S, &snd), (Dir::S2C, &rcv)] {
            let mut chunk = Vec::with_capacity(PER_CHUNK as usize * t.bytes.len());
            for i in first..first + PER_CHUNK {
                t.put(i, &mut chunk);
            }
            ts += 1000;
            feed(dir, chunk, ts, &mut insp, &mut diag);
        }
    }
    // Past the threshold of the last link, then the capture ends.
    ts += 2_000_000;
    let mut out = Vec::new();
    insp.close(Timestamp(ts), CloseReason::CaptureEnded, &mut out);
    pipeline_starts += out
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Diagnosis(d) if d.ended.is_none()))
        .count();
    diag.close(
        Timestamp(ts),
        amqpeek::event::EndWhy::CaptureEnded,
        &mut held,
    );

    // The budget: the links judged, and two session endpoints.
    assert!(most <= MAX_SCOPES + 2, "{most} entries held");
    assert_eq!(diag.entries(), 0, "all gone at the end");
    let starts = held.iter().filter(|d| d.ended.is_none()).count();
    assert_eq!(starts, MAX_SCOPES, "one no-credit per judged link");
    assert_eq!(
        pipeline_starts, MAX_SCOPES,
        "the pipeline's diagnoser agrees"
    );
    assert!(held.iter().all(|d| d.check.id == "amqp10.link.no-credit"));
}
