//! AMQP 0-9-1 decode throughput for a publish/deliver/ack mix (method + content header + body
//! frames): `decode_frame` + content assembly per frame, and the whole `StreamDecoder` path.

use std::hint::black_box;

use amqpeek::codec::amqp091::{
    ContentAssembler, ContentHeader, FieldTable, FieldValue, FrameKind, Method, MethodKind, Value,
    decode_frame, encode_frame,
};
use amqpeek::codec::{ProtocolHeader, StreamDecoder};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ROUNDS: usize = 1000;

fn frames() -> Vec<Bytes> {
    let s = |x: &'static [u8]| Value::ShortStr(Bytes::from_static(x));
    let publish = Method::with_defaults(MethodKind::BasicPublish)
        .set("exchange", s(b"orders"))
        .unwrap()
        .set("routing-key", s(b"orders.created.eu"))
        .unwrap();
    let header = ContentHeader::basic(64)
        .with("content-type", s(b"application/json"))
        .unwrap()
        .with("delivery-mode", Value::Octet(2))
        .unwrap()
        .with(
            "headers",
            Value::Table(FieldTable::new().with(
                "x-trace",
                FieldValue::LongStr(Bytes::from_static(b"abc123")),
            )),
        )
        .unwrap();
    let body = Bytes::from(vec![b'x'; 64]);
    let mut out = Vec::new();
    for i in 0..ROUNDS as u64 {
        let deliver = Method::with_defaults(MethodKind::BasicDeliver)
            .set("consumer-tag", s(b"amq.ctag-abcdefghijkl"))
            .unwrap()
            .set("delivery-tag", Value::LongLong(i + 1))
            .unwrap()
            .set("exchange", s(b"orders"))
            .unwrap()
            .set("routing-key", s(b"orders.created.eu"))
            .unwrap();
        let ack = Method::with_defaults(MethodKind::BasicAck)
            .set("delivery-tag", Value::LongLong(i + 1))
            .unwrap();
        for (ch, kind) in [
            (1, FrameKind::Method(publish.clone().into())),
            (1, FrameKind::Header(header.clone().into())),
            (1, FrameKind::Body(body.clone())),
            (2, FrameKind::Method(deliver.into())),
            (2, FrameKind::Header(header.clone().into())),
            (2, FrameKind::Body(body.clone())),
            (2, FrameKind::Method(ack.into())),
        ] {
            let mut v = Vec::new();
            encode_frame(ch, &kind, &mut v);
            out.push(Bytes::from(v));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let frames = frames();
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
