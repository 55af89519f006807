//! Fuzz the stream decoder (sniff + deframe + decode + assemble): the input follows a protocol
//! header (AMQP 1.0's, or when a flag bit says so the SASL layer's, a sasl-outcome and then
//! 1.0's, as real connections start), which a flag bit lets the input mutate. Split at a point
//! the input chooses, the stream must give exactly the items it gives whole (a decoder that
//! stalls on a cut, e.g. in the header after SASL, fails this); skimmed (passed over by frame
//! sizes, as the proxy does when a live view falls behind), offsets must still add up.
#![no_main]

use amqpeek::protocol::StreamDecoder;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

/// sasl-outcome (code ok) in a SASL frame.
const SASL_OUTCOME: [u8; 16] = [0, 0, 0, 16, 2, 1, 0, 0, 0, 0x53, 0x44, 0xc0, 3, 1, 0x50, 0];

fn decode(parts: &[&[u8]]) -> (Vec<amqpeek::protocol::Item>, u64) {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    for p in parts {
        d.push(Bytes::copy_from_slice(p), &mut out);
    }
    (out, d.offset())
}

fuzz_target!(|data: &[u8]| {
    let [flags, cut, at, xor, rest @ ..] = data else {
        return;
    };
    let mut stream = Vec::new();
    if flags & 2 != 0 {
        stream.extend_from_slice(b"AMQP\x03\x01\x00\x00");
        stream.extend_from_slice(&SASL_OUTCOME);
    }
    stream.extend_from_slice(b"AMQP\x00\x01\x00\x00");
    if flags & 4 != 0 {
        let i = usize::from(*at) % stream.len();
        stream[i] ^= xor;
    }
    stream.extend_from_slice(rest);
    let cut = usize::from(*cut) * stream.len() / 256;
    let whole = decode(&[&stream]);
    assert_eq!(whole.1, stream.len() as u64);
    assert_eq!(whole, decode(&[&stream[..cut], &stream[cut..]]));
    if flags & 1 != 0 {
        let mut d = StreamDecoder::new();
        let mut out = Vec::new();
        d.push(Bytes::copy_from_slice(&stream[..cut]), &mut out);
        let second = Bytes::copy_from_slice(&stream[cut..]);
        let s = d.skim(&second);
        d.push(second.slice(s.bytes..), &mut out);
        assert_eq!(d.offset(), stream.len() as u64);
    }
});
