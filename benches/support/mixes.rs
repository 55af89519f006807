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

/// An AMQP 1.0 settled transfer frame on channel 0, handle 0, carrying `payload` as one data
/// section.
pub fn amqp10_transfer(delivery_id: u32, payload: &[u8]) -> Vec<u8> {
    amqp10_transfer_with(delivery_id, true, payload)
}

/// An AMQP 1.0 transfer frame on channel 0, handle 0, carrying `payload` as one data section.
pub fn amqp10_transfer_with(delivery_id: u32, settled: bool, payload: &[u8]) -> Vec<u8> {
    let mut perf = vec![0x00, 0x53, 0x14]; // described: transfer
    let tag = delivery_id.to_be_bytes();
    let mut fields = vec![0x43]; // handle: uint0
    fields.push(0x70); // delivery-id: uint
    fields.extend_from_slice(&delivery_id.to_be_bytes());
    fields.extend_from_slice(&[0xa0, 4]); // delivery-tag: vbin8
    fields.extend_from_slice(&tag);
    fields.push(0x43); // message-format: uint0
    fields.push(if settled { 0x41 } else { 0x42 }); // settled
    perf.push(0xc0); // list8
    perf.push((fields.len() + 1) as u8);
    perf.push(5);
    perf.extend_from_slice(&fields);
    let mut section = vec![0x00, 0x53, 0x75, 0xb0]; // data, vbin32
    section.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    let size = 8 + perf.len() + section.len() + payload.len();
    let mut f = Vec::with_capacity(size);
    f.extend_from_slice(&(size as u32).to_be_bytes());
    f.extend_from_slice(&[2, 0, 0, 0]);
    f.extend_from_slice(&perf);
    f.extend_from_slice(&section);
    f.extend_from_slice(payload);
    f
}

/// The relay benchmark's traffic: a spec-correct AMQP 1.0 connection whose client floods
/// settled transfers on one link, and the server's side of it. An inspector sees no violation.
pub struct Flood {
    /// Client to server: header, open, begin, attach (sender), `messages` settled transfers,
    /// detach, end, close.
    pub client: Vec<u8>,
    /// Server to client before the transfers: header, open, begin, attach (receiver), and a
    /// flow granting credit for every transfer.
    pub server_open: Vec<u8>,
    /// Server to client after the client's close: detach, end, close.
    pub server_close: Vec<u8>,
}

/// Client preamble length within [`Flood::client`]: the bytes before the first transfer.
pub fn amqp10_client_open() -> Vec<u8> {
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
    let s = |x: &str| Value::String(x.into());
    let f = |v: Value| encode_frame(0, 0, Some(&v), &[]).unwrap();
    let mut out = b"AMQP\x00\x01\x00\x00".to_vec();
    out.extend(f(described_list(
        0x10,
        vec![s("bench-client"), s("localhost")],
    )));
    out.extend(f(described_list(
        0x11,
        vec![
            Value::Null,
            Value::Uint(0),
            Value::Uint(u32::MAX),
            Value::Uint(u32::MAX),
        ],
    )));
    out.extend(f(amqp10_attach(false)));
    out
}

fn amqp10_attach(receiver: bool) -> amqpeek::codec::amqp10::Value {
    use amqpeek::codec::amqp10::{Value, described_list};
    let s = |x: &str| Value::String(x.into());
    let mut fields = vec![
        s("flood"),
        Value::Uint(0),
        Value::Bool(receiver),
        Value::Null,
        Value::Null,
        described_list(0x28, vec![s("q")]),
        described_list(0x29, vec![s("q")]),
    ];
    if !receiver {
        fields.extend([Value::Null, Value::Null, Value::Uint(0)]); // initial-delivery-count
    }
    described_list(0x12, fields)
}

/// The closing frames both sides send: detach (closed), end, close.
pub fn amqp10_closing() -> Vec<u8> {
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
    let f = |v: Value| encode_frame(0, 0, Some(&v), &[]).unwrap();
    let mut out = f(described_list(
        0x16,
        vec![Value::Uint(0), Value::Bool(true)],
    ));
    out.extend(f(described_list(0x17, vec![])));
    out.extend(f(described_list(0x18, vec![])));
    out
}

/// The server's answer to [`amqp10_client_open`]: header, open, begin, attach, and a flow
/// granting `credit`.
pub fn amqp10_server_open(credit: u32) -> Vec<u8> {
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
    let s = |x: &str| Value::String(x.into());
    let f = |v: Value| encode_frame(0, 0, Some(&v), &[]).unwrap();
    let mut out = b"AMQP\x00\x01\x00\x00".to_vec();
    out.extend(f(described_list(0x10, vec![s("bench-server")])));
    out.extend(f(described_list(
        0x11,
        vec![
            Value::Ushort(0),
            Value::Uint(0),
            Value::Uint(u32::MAX),
            Value::Uint(u32::MAX),
        ],
    )));
    out.extend(f(amqp10_attach(true)));
    out.extend(f(described_list(
        0x13,
        vec![
            Value::Uint(0),
            Value::Uint(u32::MAX),
            Value::Uint(0),
            Value::Uint(u32::MAX),
            Value::Uint(0),
            Value::Uint(0),
            Value::Uint(credit),
        ],
    )));
    out
}

/// The link credit a flood's server grants: more than any flood sends.
pub const FLOOD_CREDIT: u32 = 1 << 30;

/// A spec-correct flood of `messages` settled transfers of `payload` bytes (see [`Flood`]).
pub fn amqp10_flood(messages: usize, payload: usize) -> Flood {
    let body = vec![0x5a; payload];
    let mut client = amqp10_client_open();
    client.reserve(messages * (payload + 40));
    for i in 0..messages {
        client.extend_from_slice(&amqp10_transfer(i as u32, &body));
    }
    client.extend(amqp10_closing());
    Flood {
        client,
        server_open: amqp10_server_open(FLOOD_CREDIT),
        server_close: amqp10_closing(),
    }
}

/// The receiver's disposition settling `delivery_id` as accepted.
pub fn amqp10_accept(delivery_id: u32) -> Vec<u8> {
    use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
    let d = described_list(
        0x15,
        vec![
            Value::Bool(true),
            Value::Uint(delivery_id),
            Value::Null,
            Value::Bool(true),
            described_list(0x24, vec![]),
        ],
    );
    encode_frame(0, 0, Some(&d), &[]).unwrap()
}
