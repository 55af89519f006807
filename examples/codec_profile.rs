//! A fixed amount of codec work for instruction-count profiling (`valgrind --tool=callgrind`),
//! where wall-clock benchmarks are too noisy on a shared machine: the frame mixes of
//! benches/amqp10_codec.rs and benches/amqp091_codec.rs decoded a given number of rounds.
//!
//! `codec_profile <amqp10|amqp091|amqp091-stream> [rounds]` prints the frames decoded; divide
//! the instruction count of the run (minus a run with 0 rounds, for setup) by it.

use std::hint::black_box;

use amqpeek::codec::amqp091::{
    ContentAssembler, ContentHeader, FieldTable, FieldValue, FrameKind, Method, MethodKind, Value,
    decode_frame, encode_frame,
};
use amqpeek::codec::{ProtocolHeader, StreamDecoder, amqp10};
use bytes::Bytes;
use fe2o3_amqp::types::definitions::{Handle, Role};
use fe2o3_amqp::types::messaging::message::__private::Serializable;
use fe2o3_amqp::types::messaging::{
    Accepted, DeliveryState, Header, Message, MessageId, Properties,
};
use fe2o3_amqp::types::performatives::{Disposition, Flow, Transfer};
use fe2o3_amqp::types::primitives::Binary;

/// The AMQP 1.0 bench mix: a transfer with a small message, a flow, a disposition.
fn amqp10_mix() -> Vec<Bytes> {
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
        let mut raw = ((8 + body.len() + payload.len()) as u32)
            .to_be_bytes()
            .to_vec();
        raw.extend_from_slice(&[2, 0, 0, 1]);
        raw.extend(body);
        raw.extend_from_slice(payload);
        Bytes::from(raw)
    };
    vec![
        frame(serde_amqp::to_vec(&transfer).unwrap(), &payload),
        frame(serde_amqp::to_vec(&flow).unwrap(), b""),
        frame(serde_amqp::to_vec(&disposition).unwrap(), b""),
    ]
}

/// The AMQP 0-9-1 bench mix: publish, deliver, ack with content header and body (7 frames).
fn amqp091_mix() -> Vec<Bytes> {
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
    let deliver = Method::with_defaults(MethodKind::BasicDeliver)
        .set("consumer-tag", s(b"amq.ctag-abcdefghijkl"))
        .unwrap()
        .set("delivery-tag", Value::LongLong(7))
        .unwrap()
        .set("exchange", s(b"orders"))
        .unwrap()
        .set("routing-key", s(b"orders.created.eu"))
        .unwrap();
    let ack = Method::with_defaults(MethodKind::BasicAck)
        .set("delivery-tag", Value::LongLong(7))
        .unwrap();
    let body = Bytes::from(vec![b'x'; 64]);
    [
        (1, FrameKind::Method(publish.into())),
        (1, FrameKind::Header(header.clone().into())),
        (1, FrameKind::Body(body.clone())),
        (2, FrameKind::Method(deliver.into())),
        (2, FrameKind::Header(header.into())),
        (2, FrameKind::Body(body)),
        (2, FrameKind::Method(ack.into())),
    ]
    .into_iter()
    .map(|(ch, kind)| {
        let mut v = Vec::new();
        encode_frame(ch, &kind, &mut v);
        Bytes::from(v)
    })
    .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "amqp10".into());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut frames = 0usize;
    match which.as_str() {
        "amqp10" => {
            let mix = amqp10_mix();
            for _ in 0..rounds {
                for f in &mix {
                    black_box(amqp10::decode_frame(black_box(f.clone()), 0).unwrap());
                    frames += 1;
                }
            }
        }
        "amqp091" => {
            let mix = amqp091_mix();
            let mut asm = ContentAssembler::default();
            for _ in 0..rounds {
                for f in &mix {
                    let fr = decode_frame(black_box(f.clone()), 0).unwrap();
                    black_box(asm.push(&fr));
                    black_box(&fr);
                    frames += 1;
                }
            }
        }
        "amqp091-stream" => {
            let mix = amqp091_mix();
            let per_push = 1000;
            let stream: Bytes = (0..per_push)
                .flat_map(|_| mix.iter().flat_map(|f| f.iter().copied()))
                .collect::<Vec<u8>>()
                .into();
            let mut items = Vec::with_capacity(per_push * mix.len());
            for _ in 0..rounds / per_push {
                let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
                items.clear();
                d.push(stream.clone(), &mut items);
                frames += items.len();
                black_box(&items);
            }
        }
        "sizes" => {
            use std::mem::size_of;
            println!("Item {}", size_of::<amqpeek::codec::stream::Item>());
            println!("AnyFrame {}", size_of::<amqpeek::codec::stream::AnyFrame>());
            println!(
                "AnyMessage {}",
                size_of::<amqpeek::codec::stream::AnyMessage>()
            );
            println!("amqp10::Frame {}", size_of::<amqp10::Frame>());
            println!("amqp10::FrameBody {}", size_of::<amqp10::FrameBody>());
            println!("amqp10::Composite {}", size_of::<amqp10::Composite>());
            println!("amqp10::Performative {}", size_of::<amqp10::Performative>());
            println!("amqp10::SaslFrame {}", size_of::<amqp10::SaslFrame>());
            println!("amqp10::Message {}", size_of::<amqp10::Message>());
            println!(
                "amqp091::Frame {}",
                size_of::<amqpeek::codec::amqp091::Frame>()
            );
            println!(
                "amqp091::Message {}",
                size_of::<amqpeek::codec::amqp091::Message>()
            );
            println!("DecodeError {}", size_of::<amqpeek::codec::DecodeError>());
        }
        other => panic!("unknown mix {other}"),
    }
    println!("{frames} frames");
}
