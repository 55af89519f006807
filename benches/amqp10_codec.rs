//! Decoding a realistic mix of AMQP 1.0 frames (a transfer carrying a small message, a flow,
//! a disposition), amqpeek vs serde_amqp decoding the same frames into fe2o3-amqp-types
//! performatives. Throughput is reported per frame (elements) and per byte.

use std::hint::black_box;

use amqpeek::codec::amqp10::{self, MessageAssembler};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fe2o3_amqp::types::definitions::{Handle, Role};
use fe2o3_amqp::types::messaging::message::__private::{Deserializable, Serializable};
use fe2o3_amqp::types::messaging::{
    Accepted, Body, DeliveryState, Header, Message, MessageId, Properties,
};
use fe2o3_amqp::types::performatives::{Disposition, Flow, Performative, Transfer};
use fe2o3_amqp::types::primitives::{Binary, Value};

/// (raw frame, performative length) for each frame of the mix.
fn mix() -> Vec<(Bytes, usize)> {
    let message = Message::builder()
        .header(Header {
            durable: true,
            ..Default::default()
        })
        .properties(Properties {
            message_id: Some(MessageId::Ulong(42)),
            ..Default::default()
        })
        .data(Binary::from(b"a small message body".to_vec()))
        .build();
    let payload = serde_amqp::to_vec(&Serializable(message)).unwrap();
    let transfer = Transfer {
        handle: Handle(0),
        delivery_id: Some(1234),
        delivery_tag: Some(Binary::from(vec![0, 0, 4, 0xd2])),
        message_format: Some(0),
        settled: Some(false),
        more: false,
        rcv_settle_mode: None,
        state: None,
        resume: false,
        aborted: false,
        batchable: false,
    };
    let flow = Flow {
        next_incoming_id: Some(1235),
        incoming_window: 2048,
        next_outgoing_id: 77,
        outgoing_window: 2048,
        handle: Some(Handle(0)),
        delivery_count: Some(1234),
        link_credit: Some(100),
        available: None,
        drain: false,
        echo: false,
        properties: None,
    };
    let disposition = Disposition {
        role: Role::Receiver,
        first: 1234,
        last: None,
        settled: true,
        state: Some(DeliveryState::Accepted(Accepted {})),
        batchable: false,
    };
    let frame = |body: Vec<u8>, payload: &[u8]| {
        let len = body.len();
        let mut raw = ((8 + body.len() + payload.len()) as u32)
            .to_be_bytes()
            .to_vec();
        raw.extend_from_slice(&[2, 0, 0, 1]);
        raw.extend(body);
        raw.extend_from_slice(payload);
        (Bytes::from(raw), len)
    };
    vec![
        frame(serde_amqp::to_vec(&transfer).unwrap(), &payload),
        frame(serde_amqp::to_vec(&flow).unwrap(), b""),
        frame(serde_amqp::to_vec(&disposition).unwrap(), b""),
    ]
}

fn bench(c: &mut Criterion) {
    let frames = mix();
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
