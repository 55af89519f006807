//! Fuzz the stream decoder (sniff + deframe + decode + assemble) with the input split at a
//! point chosen by the first byte, the second part skimmed (passed over by frame sizes, as the
//! proxy does when a live view falls behind) when the first byte is odd. Must never panic;
//! offsets must add up.
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
    let skim = cut % 2 == 1;
    let cut = usize::from(cut) % (stream.len() + 1);
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    d.push(Bytes::copy_from_slice(&stream[..cut]), &mut out);
    let second = Bytes::copy_from_slice(&stream[cut..]);
    if skim {
        let s = d.skim(&second);
        d.push(second.slice(s.bytes..), &mut out);
    } else {
        d.push(second, &mut out);
    }
    assert_eq!(d.offset(), stream.len() as u64);
});
