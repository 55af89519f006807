//! Decoding a realistic mix of AMQP 1.0 frames (a transfer carrying a small message, a flow,
//! a disposition), amqpeek vs serde_amqp decoding the same frames into fe2o3-amqp-types
//! performatives. Throughput is reported per frame (elements) and per byte.

use std::hint::black_box;

#[path = "support/mixes.rs"]
mod mixes;

use amqpeek::codec::amqp10::{self, MessageAssembler};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fe2o3_amqp::types::messaging::message::__private::Deserializable;
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::performatives::Performative;
use fe2o3_amqp::types::primitives::Value;

fn bench(c: &mut Criterion) {
    let frames = mixes::amqp10_mix();
    let bytes: usize = frames.iter().map(|(f, _)| f.len()).sum();
    for (f, _) in &frames {
        amqp10::decode_frame(f.clone(), 0).expect("valid frame");
    }

    let mut g = c.benchmark_group("frames");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("amqpeek_decode_frame", |b| {
        b.iter(|| {
            for (f, _) in &frames {
                black_box(amqp10::decode_frame(black_box(f.clone()), 0).unwrap());
            }
        })
    });
    g.bench_function("serde_amqp_performative", |b| {
        b.iter(|| {
            for (f, len) in &frames {
                let p: Performative = serde_amqp::from_slice(black_box(&f[8..8 + len])).unwrap();
                black_box(p);
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("bytes");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("amqpeek_decode_frame", |b| {
        b.iter(|| {
            for (f, _) in &frames {
                black_box(amqp10::decode_frame(black_box(f.clone()), 0).unwrap());
            }
        })
    });
    g.bench_function("serde_amqp_performative", |b| {
        b.iter(|| {
            for (f, len) in &frames {
                let p: Performative = serde_amqp::from_slice(black_box(&f[8..8 + len])).unwrap();
                black_box(p);
            }
        })
    });
    g.finish();

    // The same mix with the transfer's message decoded into sections too.
    let mut g = c.benchmark_group("frames_with_message");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("amqpeek_decode_frame_and_message", |b| {
        b.iter(|| {
            let mut asm = MessageAssembler::default();
            for (f, _) in &frames {
                let frame = amqp10::decode_frame(black_box(f.clone()), 0).unwrap();
                black_box(asm.push(&frame));
            }
        })
    });
    g.bench_function("serde_amqp_performative_and_message", |b| {
        b.iter(|| {
            for (f, len) in &frames {
                let p: Performative = serde_amqp::from_slice(black_box(&f[8..8 + len])).unwrap();
                if f.len() > 8 + len {
                    let m: Deserializable<Message<Body<Value>>> =
                        serde_amqp::from_slice(&f[8 + len..]).unwrap();
                    black_box(m);
                }
                black_box(p);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
