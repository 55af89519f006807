//! Fuzz one AMQP 0-9-1 frame: `decode_frame` on arbitrary bytes (and on the same bytes behind
//! a consistent frame header), then render, assemble, and check that whatever decoded
//! re-encodes to a frame that decodes to the same thing.
#![no_main]

use amqpeek::codec::amqp091::{ContentAssembler, decode_frame};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut framed = vec![data.first().copied().unwrap_or(1) % 9, 0, 1];
    framed.extend_from_slice(&(data.len() as u32).to_be_bytes());
    framed.extend_from_slice(data);
    framed.push(0xce);
    let mut asm = ContentAssembler::default();
    for raw in [data.to_vec(), framed] {
        if let Ok(f) = decode_frame(Bytes::from(raw), 0) {
            let _ = (f.summary(), f.fields_json(), f.secret_ranges());
            let _ = asm.push(&f);
            let again = decode_frame(Bytes::from(f.to_bytes()), 0).expect("re-encoded frame decodes");
            assert_eq!(again.kind, f.kind);
        }
    }
});
