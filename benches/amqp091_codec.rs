//! AMQP 0-9-1 decode throughput for a publish/deliver/ack mix (method + content header + body
//! frames): `decode_frame` + content assembly per frame, and the whole `StreamDecoder` path.

use std::hint::black_box;

#[path = "support/mixes.rs"]
mod mixes;

use amqpeek::codec::ProtocolHeader;
use amqpeek::codec::amqp091::{ContentAssembler, decode_frame};
use amqpeek::protocol::StreamDecoder;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ROUNDS: usize = 1000;

fn bench(c: &mut Criterion) {
    let frames = mixes::amqp091_mix(ROUNDS as u64);
    let stream: Bytes = frames
        .iter()
        .flat_map(|f| f.iter().copied())
        .collect::<Vec<u8>>()
        .into();
    let mut g = c.benchmark_group("amqp091");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("decode_frame+assemble publish/deliver/ack", |b| {
        b.iter(|| {
            let mut asm = ContentAssembler::default();
            let mut off = 0u64;
            let mut messages = 0usize;
            for f in &frames {
                let fr = decode_frame(f.clone(), off).unwrap();
                off += f.len() as u64;
                if let Some(Ok(_)) = asm.push(&fr) {
                    messages += 1;
                }
                black_box(&fr);
            }
            assert_eq!(messages, 2 * ROUNDS);
        })
    });
    g.bench_function("stream_decoder publish/deliver/ack", |b| {
        let mut items = Vec::with_capacity(frames.len());
        b.iter(|| {
            let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
            items.clear();
            d.push(stream.clone(), &mut items);
            assert_eq!(items.len(), frames.len());
            black_box(&items);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
