//! Fuzz one AMQP 1.0 frame: decode, render, mask, assemble. Must never panic.
#![no_main]

use amqpeek::codec::amqp10;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let raw = Bytes::copy_from_slice(data);
    if let Ok(frame) = amqp10::decode_frame(raw, 0) {
        let _ = frame.summary();
        let _ = frame.fields_json();
        for r in frame.secret_ranges() {
            assert!(r.start <= r.end && r.end <= data.len());
        }
        if let Some(Ok(m)) = amqp10::MessageAssembler::default().push(&frame) {
            let _ = m.to_json(64);
        }
    }
});
