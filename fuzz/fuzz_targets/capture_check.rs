//! Fuzz the capture readers end to end: the input is a capture file (pcap, pcapng or amqpeek
//! JSONL; seed the corpus with `captures/`), read through a stream that returns at most as many
//! bytes per read as the first byte says (so format sniffing and the packet reader's windows
//! see short reads), then reassembled, decoded, tracked and judged as `amqpeek check` does.
//! Must never panic, and one thread and two must agree.
#![no_main]

use std::io::Read;
use std::num::NonZeroUsize;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::replay::parallel;
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
});
