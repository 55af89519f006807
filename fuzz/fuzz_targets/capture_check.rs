//! Fuzz the capture readers end to end: the input is a capture file (pcap, pcapng or amqpeek
//! JSONL; seed the corpus with `captures/`), read through a stream that returns at most as many
//! bytes per read as the first byte says (so format sniffing and the packet reader's windows
//! see short reads), then reassembled, decoded, tracked and judged as `amqpeek check` does.
//! Must never panic, and one thread and two must agree.
//!
//! Then the capture is replayed with the relayed bytes on (`Data` events, as the pcapng and the
//! TUI get them), once with secrets shown and once masked: every credential a decoded frame
//! carries (its exact byte ranges, known from the unmasked decode) must be all `*` in the
//! masked frame's bytes and in every `Data` byte at those offsets. Only ranges of frames that
//! decoded are checked, so no legitimate input can make this fail.
//!
//! And the statistics of it (`amqpeek stats`, the TUI's `S`) count every frame, header and
//! undecoded run exactly once, and never hold more deliveries waiting than their bound.
#![no_main]

use std::io::Read;
use std::num::NonZeroUsize;

use amqpeek::capture::{self, CaptureOptions, CaptureSource};
use amqpeek::event::{Event, EventKind};
use amqpeek::pipeline::{InspectOptions, MASK_BYTE};
use amqpeek::driver::Router;
use amqpeek::replay::parallel;
use amqpeek::stats::{Collector, MAX_OPEN};
use libfuzzer_sys::fuzz_target;

/// Returns at most `step` bytes per read.
struct Short {
    data: Vec<u8>,
    at: usize,
    step: usize,
}

impl Read for Short {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, file)) = data.split_first() else {
        return;
    };
    let open = |step: usize| {
        let src = Short {
            data: file.to_vec(),
            at: 0,
            step,
        };
        capture::from_reader(Box::new(src), CaptureOptions::default())
    };
    let one = match open(usize::from(step) * 61 + 1) {
        Ok(s) => parallel::check(s, NonZeroUsize::MIN),
        Err(_) => return,
    };
    // The same file, read whole, on two threads: the same verdict.
    let two = parallel::check(open(usize::MAX).unwrap(), NonZeroUsize::new(2).unwrap());
    assert_eq!(one.stats, two.stats);
    assert_eq!(one.report.totals(), two.report.totals());
    let shown = replay(open(usize::MAX).unwrap(), true);
    let masked = replay(open(usize::MAX).unwrap(), false);
    let mut stats = Collector::new();
    let mut counted = 0u64;
    for e in &masked {
        stats.add(e);
        counted += u64::from(matches!(
            e.kind,
            EventKind::Frame(_) | EventKind::Header { .. } | EventKind::Undecoded { .. }
        ));
    }
    let report = stats.report();
    assert_eq!(report.frames, counted);
    assert!(report.unsettled_at_close <= MAX_OPEN as u64 * one.stats.connections.max(1));
    for e in &shown {
        let EventKind::Frame(f) = &e.kind else {
            continue;
        };
        for r in f.frame.secret_ranges() {
            let (start, end) = (f.offset + r.start as u64, f.offset + r.end as u64);
            for m in &masked {
                let (dir, offset, bytes) = match &m.kind {
                    EventKind::Frame(g) if g.offset == f.offset => (g.dir, g.offset, &g.raw),
                    EventKind::Data { dir, offset, bytes } => (*dir, *offset, bytes),
                    _ => continue,
                };
                if m.conn != e.conn || dir != f.dir {
                    continue;
                }
                let (from, to) = (start.max(offset), end.min(offset + bytes.len() as u64));
                for at in from..to {
                    assert_eq!(bytes[(at - offset) as usize], MASK_BYTE, "credential byte at {at}");
                }
            }
        }
    }
});

/// Every event of replaying `source` with the relayed bytes on.
fn replay(source: CaptureSource, show_secrets: bool) -> Vec<Event> {
    let mut r = Router::new(InspectOptions {
        show_secrets,
        emit_data: true,
        ..InspectOptions::default()
    });
    let mut out = Vec::new();
    for ev in source {
        r.feed(ev, &mut out);
    }
    out
}
