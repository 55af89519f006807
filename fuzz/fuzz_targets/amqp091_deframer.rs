//! Fuzz the AMQP 0-9-1 stream path: arbitrary bytes after an `AMQP 0 0 9 1` header (which a
//! flag bit lets the input mutate), split at a fuzzer-chosen point, through `StreamDecoder`
//! (deframe, decode, assemble, render). Must never panic and must give the same items
//! whatever the split.
#![no_main]

use amqpeek::protocol::{Item, StreamDecoder};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fn run(parts: &[&[u8]]) -> Vec<String> {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    for p in parts {
        d.push(Bytes::copy_from_slice(p), &mut out);
    }
    out.iter()
        .map(|i| match i {
            Item::Frame(fe) => {
                let frame = &fe.frame;
                let _ = (frame.fields_json(), frame.secret_ranges());
                if let Some(Ok(m)) = &fe.message {
                    let _ = m.to_json(64);
                }
                format!("{} {}", fe.offset, frame.summary())
            }
            other => format!("{other:?}"),
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [split, flags, at, xor, rest @ ..] = data else {
        return;
    };
    let mut stream = b"AMQP\x00\x00\x09\x01".to_vec();
    if flags & 1 != 0 {
        stream[usize::from(*at) % 8] ^= xor;
    }
    stream.extend_from_slice(rest);
    let at = (usize::from(*split) * stream.len() / 256).min(stream.len());
    assert_eq!(run(&[&stream]), run(&[&stream[..at], &stream[at..]]));
});
