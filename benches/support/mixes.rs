//! The frame mixes the codec benchmarks and `examples/codec_profile.rs` decode: one
//! definition, so wall-clock and instruction-count measurements are of the same frames.
//! Included with `#[path]`; not a benchmark target of its own.

#![allow(dead_code)]

use amqpeek::codec::amqp091::{
    ContentHeader, FieldTable, FieldValue, FrameKind, Method, MethodKind, Value, encode_frame,
};
use bytes::Bytes;
use fe2o3_amqp::types::definitions::{Handle, Role};
use fe2o3_amqp::types::messaging::message::__private::Serializable;
use fe2o3_amqp::types::messaging::{
    Accepted, DeliveryState, Header, Message, MessageId, Properties,
};
use fe2o3_amqp::types::performatives::{Disposition, Flow, Transfer};
use fe2o3_amqp::types::primitives::Binary;

/// The AMQP 1.0 mix: a transfer carrying a small message, a flow, a disposition.
/// (raw frame, performative length) for each frame.
pub fn amqp10_mix() -> Vec<(Bytes, usize)> {
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

/// The AMQP 0-9-1 mix: `rounds` x (publish, deliver, ack with content header and body:
/// 7 frames), delivery tags counting up.
pub fn amqp091_mix(rounds: u64) -> Vec<Bytes> {
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
    for i in 0..rounds {
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
