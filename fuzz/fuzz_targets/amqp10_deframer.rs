//! Fuzz the stream decoder (sniff + deframe + decode + assemble) with the input split at a
//! point chosen by the first byte. Must never panic; offsets must add up.
#![no_main]

use amqpeek::codec::StreamDecoder;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
    stream.extend_from_slice(rest);
    let cut = usize::from(cut) % (stream.len() + 1);
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    d.push(Bytes::copy_from_slice(&stream[..cut]), &mut out);
    d.push(Bytes::copy_from_slice(&stream[cut..]), &mut out);
    assert_eq!(d.offset(), stream.len() as u64);
});
