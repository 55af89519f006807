//! Real traffic: lapin talks to the RabbitMQ on 127.0.0.1:5672 through a recording TCP relay
//! written here; both recorded directions are then decoded by `StreamDecoder`. Every frame must
//! decode, the expected methods appear in order, assembled bodies equal what was published
//! (including a body split over several frames by frame-max), and start-ok's secret range is
//! exactly the password.
//!
//! With env CI set, an unreachable broker fails the test; otherwise it is skipped with a note.

mod support;

use std::time::Duration;

use amqpeek::codec::ProtocolHeader;
use amqpeek::codec::amqp091::{Frame, FrameKind, Message};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::protocol::{AnyFrame, AnyMessage, Item, StreamDecoder};
use amqpeek::{Dir, EventKind, Timestamp};
use bytes::Bytes;
use lapin::message::DeliveryResult;
use lapin::options::*;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::json;
use support::{Relay, broker_or_skip};

struct Decoded {
    frames: Vec<(Bytes, Frame)>,
    messages: Vec<Message>,
}

/// Decode a recorded direction fed in uneven chunks; nothing may fail to decode.
fn decode(stream: &[u8]) -> Decoded {
    // The client sends a protocol header; a 0-9-1 server answers with frames straight away.
    let d = if stream.starts_with(b"AMQP") {
        StreamDecoder::new()
    } else {
        StreamDecoder::assuming(ProtocolHeader::Amqp091)
    };
    // Whole bodies kept: the messages are compared with what was published.
    let mut d = d.with_limits(amqpeek::codec::Limits {
        body: 1 << 20,
        ..amqpeek::codec::Limits::default()
    });
    let mut items = Vec::new();
    let mut at = 0;
    let mut step = 1;
    while at < stream.len() {
        let end = (at + step).min(stream.len());
        d.push(Bytes::copy_from_slice(&stream[at..end]), &mut items);
        at = end;
        step = step * 3 % 1777 + 1;
    }
    assert_eq!(d.buffered(), 0, "stream ends on a frame boundary");
    let mut out = Decoded {
        frames: Vec::new(),
        messages: Vec::new(),
    };
    for item in items {
        match item {
            Item::Header { .. } => {}
            Item::Frame(fe) => {
                let fe = std::sync::Arc::unwrap_or_clone(fe);
                let AnyFrame::Amqp091(f) = fe.frame else {
                    panic!("not a 0-9-1 frame");
                };
                match fe.message {
                    Some(Ok(AnyMessage::Amqp091(m))) => out.messages.push(m),
                    None => {}
                    other => panic!("bad message at {}: {other:?}", f.name()),
                }
                out.frames.push((fe.raw, f));
            }
            other => panic!("not a clean 0-9-1 frame: {other:?}"),
        }
    }
    out
}

fn names(d: &Decoded) -> Vec<&'static str> {
    d.frames.iter().map(|(_, f)| f.name()).collect()
}

/// `want` appears in `have` in order (not necessarily adjacent).
fn assert_subsequence(have: &[&str], want: &[&str]) {
    let mut it = have.iter();
    for w in want {
        assert!(it.any(|h| h == w), "{w} missing (in order) from {have:?}");
    }
}

fn start_ok(d: &Decoded) -> (&Bytes, &Frame) {
    d.frames
        .iter()
        .find(|(_, f)| f.name() == "connection.start-ok")
        .map(|(r, f)| (r, f))
        .expect("start-ok")
}

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

async fn traffic(uri: &str, queue: &str) {
    let conn = Connection::connect(uri, ConnectionProperties::default())
        .await
        .expect("connect");
    let pubch = conn.create_channel().await.unwrap();
    let subch = conn.create_channel().await.unwrap();
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), AMQPValue::LongInt(100));
    pubch
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            args,
        )
        .await
        .unwrap();
    pubch
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();

    let mut headers = FieldTable::default();
    headers.insert("h1".into(), AMQPValue::LongString(LongString::from("v1")));
    headers.insert("n".into(), AMQPValue::LongLongInt(42));
    let props = BasicProperties::default()
        .with_content_type(ShortString::from("text/plain"))
        .with_delivery_mode(2)
        .with_headers(headers)
        .with_correlation_id(ShortString::from("corr-1"))
        .with_message_id(ShortString::from("msg-1"))
        .with_timestamp(1_700_000_000)
        .with_app_id(ShortString::from("amqpeek-test"));
    let bodies: Vec<Vec<u8>> = vec![
        b"get me".to_vec(),
        b"hello amqpeek".to_vec(),
        body(20_000),
        b"nack me".to_vec(),
    ];
    // basic.get first
    let confirm = pubch
        .basic_publish(
            "".into(),
            queue.into(),
            BasicPublishOptions::default(),
            &bodies[0],
            BasicProperties::default(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(confirm.is_ack());
    let got = pubch
        .basic_get(queue.into(), BasicGetOptions::default())
        .await
        .unwrap()
        .expect("a message to get");
    assert_eq!(got.delivery.data, bodies[0]);
    got.delivery.ack(BasicAckOptions::default()).await.unwrap();

    for (i, b) in bodies.iter().enumerate().skip(1) {
        let p = if i == 1 {
            props.clone()
        } else {
            BasicProperties::default()
        };
        let confirm = pubch
            .basic_publish(
                "".into(),
                queue.into(),
                BasicPublishOptions::default(),
                b,
                p,
            )
            .await
            .unwrap()
            .await
            .unwrap();
        assert!(confirm.is_ack());
    }
    // unroutable + mandatory: the broker returns it (basic.return with content)
    let returned = pubch
        .basic_publish(
            "".into(),
            "amqpeek-no-such-queue".into(),
            BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            },
            b"bounce",
            BasicProperties::default(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(returned.take_message().is_some());

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = subch
        .basic_consume(
            queue.into(),
            "amqpeek-consumer".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    consumer.set_delegate(move |d: DeliveryResult| {
        // send before returning: the returned futures may run concurrently
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    let mut deliveries = Vec::new();
    for _ in &bodies[1..] {
        let d = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("delivery in time")
            .unwrap();
        deliveries.push(d);
    }
    deliveries.sort_by_key(|d| d.delivery_tag);
    for (d, expected) in deliveries.into_iter().zip(&bodies[1..]) {
        assert_eq!(&d.data, expected);
        if expected == b"nack me" {
            d.nack(BasicNackOptions {
                requeue: false,
                multiple: false,
            })
            .await
            .unwrap();
        } else {
            d.ack(BasicAckOptions::default()).await.unwrap();
        }
    }
    subch
        .basic_cancel("amqpeek-consumer".into(), BasicCancelOptions::default())
        .await
        .unwrap();
    conn.close(200, "bye".into()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lapin_through_recording_relay_decodes_cleanly() {
    if !broker_or_skip().await {
        return;
    }
    let relay = Relay::start().await;
    let addr = relay.addr;
    let queue = format!("amqpeek-091-{}", std::process::id());
    let uri = format!("amqp://guest:guest@{addr}/%2f?frame_max=4096");
    tokio::time::timeout(Duration::from_secs(60), traffic(&uri, &queue))
        .await
        .expect("traffic in time");
    let (c2s, s2c) = relay.finish_one(Duration::from_secs(10)).await.split();
    let c = decode(&c2s);
    let s = decode(&s2c);
    let cn = names(&c);
    let sn = names(&s);
    assert_subsequence(
        &cn,
        &[
            "connection.start-ok",
            "connection.tune-ok",
            "connection.open",
            "channel.open",
            "channel.open",
            "queue.declare",
            "confirm.select",
            "basic.publish",
            "content-header",
            "content-body",
            "basic.get",
            "basic.ack",
            "basic.publish",
            "basic.publish",
            "basic.publish",
            "basic.publish",
            "basic.consume",
            "basic.ack",
            "basic.ack",
            "basic.nack",
            "basic.cancel",
            "connection.close",
        ],
    );
    assert_subsequence(
        &sn,
        &[
            "connection.start",
            "connection.tune",
            "connection.open-ok",
            "channel.open-ok",
            "channel.open-ok",
            "queue.declare-ok",
            "confirm.select-ok",
            "basic.ack",
            "basic.get-ok",
            "content-header",
            "content-body",
            "basic.ack",
            "basic.return",
            "basic.consume-ok",
            "basic.deliver",
            "basic.deliver",
            "basic.deliver",
            "basic.cancel-ok",
            "connection.close-ok",
        ],
    );

    // tune negotiated frame-max 4096, so the 20000-byte body took several body frames
    let tune_ok = c
        .frames
        .iter()
        .find(|(_, f)| f.name() == "connection.tune-ok")
        .unwrap();
    assert_eq!(tune_ok.1.method().unwrap().frame_max(), Some(4096));
    let big_bodies = c
        .frames
        .iter()
        .filter(|(_, f)| matches!(&f.kind, FrameKind::Body(b) if b.len() > 1000))
        .count();
    assert!(
        big_bodies >= 5,
        "20000 bytes at frame-max 4096: {big_bodies} body frames"
    );

    // assembled messages
    let published: Vec<&[u8]> = c.messages.iter().map(|m| &m.body[..]).collect();
    let big = body(20_000);
    assert_eq!(
        published,
        vec![
            &b"get me"[..],
            b"hello amqpeek",
            &big,
            b"nack me",
            b"bounce"
        ]
    );
    let first = &c.messages[1];
    assert_eq!(first.method.name(), "basic.publish");
    assert_eq!(first.header.content_type().unwrap(), &b"text/plain"[..]);
    assert_eq!(first.header.delivery_mode(), Some(2));
    assert_eq!(first.header.timestamp(), Some(1_700_000_000));
    let j = first.to_json(100);
    assert_eq!(j["properties"]["headers"], json!({"h1": "v1", "n": 42}));
    assert_eq!(j["properties"]["app-id"], json!("amqpeek-test"));
    assert_eq!(j["body"], json!("hello amqpeek"));

    let received: Vec<(&str, &[u8])> = s
        .messages
        .iter()
        .map(|m| (m.method.name(), &m.body[..]))
        .collect();
    assert_eq!(
        received,
        vec![
            ("basic.get-ok", &b"get me"[..]),
            ("basic.return", b"bounce"),
            ("basic.deliver", b"hello amqpeek"),
            ("basic.deliver", &big),
            ("basic.deliver", b"nack me"),
        ]
    );
    let ret = &s.messages[1].method;
    assert_eq!(ret.reply_code(), Some(312));
    let nack = c
        .frames
        .iter()
        .find_map(|(_, f)| f.method().filter(|m| m.name() == "basic.nack"))
        .unwrap();
    assert_eq!(
        (nack.multiple(), nack.requeue()),
        (Some(false), Some(false))
    );
    let deliver_tags: Vec<u64> = s
        .frames
        .iter()
        .filter_map(|(_, f)| f.method().filter(|m| m.name() == "basic.deliver"))
        .map(|m| m.delivery_tag().unwrap())
        .collect();
    assert_eq!(deliver_tags, vec![1, 2, 3]);

    // PLAIN credentials: the secret is exactly the password "guest" after the second NUL
    let (raw, f) = start_ok(&c);
    let ranges = f.secret_ranges();
    assert_eq!(ranges.len(), 1);
    assert_eq!(&raw[ranges[0].clone()], b"guest");
    assert_eq!(&raw[ranges[0].start - 7..ranges[0].start], b"\0guest\0");
    assert_eq!(
        f.fields_json()["response"],
        json!({"authzid": "", "username": "guest", "password": "guest"})
    );
    // and nothing else on the connection is secret
    let others: usize = c
        .frames
        .iter()
        .chain(&s.frames)
        .map(|(_, f)| f.secret_ranges().len())
        .sum();
    assert_eq!(others, 1);

    // Through the pipeline's inspector the relayed bytes and the re-decoded frame are masked.
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut events = Vec::new();
    for chunk in c2s.chunks(777) {
        insp.chunk(
            Dir::C2S,
            Timestamp(0),
            Bytes::copy_from_slice(chunk),
            &mut events,
        );
    }
    let mut relayed = Vec::new();
    let mut masked_response = None;
    for e in &events {
        match &e.kind {
            EventKind::Data { bytes, .. } => relayed.extend_from_slice(bytes),
            EventKind::Frame(fe) if fe.frame.name() == "connection.start-ok" => {
                masked_response = Some(fe.frame.fields_json()["response"].clone());
            }
            _ => {}
        }
    }
    assert_eq!(relayed.len(), c2s.len());
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(find(&c2s, b"\0guest\0guest"));
    assert!(!find(&relayed, b"\0guest\0guest"));
    assert!(find(&relayed, b"\0guest\0*****"));
    assert_eq!(
        masked_response,
        Some(json!({"authzid": "", "username": "guest", "password": "*****"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lapin_amqplain_login_secret_is_the_password_value() {
    if !broker_or_skip().await {
        return;
    }
    let relay = Relay::start().await;
    let addr = relay.addr;
    let uri = format!("amqp://guest:guest@{addr}/%2f?auth_mechanism=amqplain");
    tokio::time::timeout(Duration::from_secs(30), async {
        let conn = Connection::connect(&uri, ConnectionProperties::default())
            .await
            .expect("connect");
        conn.close(200, "bye".into()).await.unwrap();
    })
    .await
    .expect("in time");
    let (c2s, s2c) = relay.finish_one(Duration::from_secs(10)).await.split();
    let c = decode(&c2s);
    decode(&s2c);
    let (raw, f) = start_ok(&c);
    assert_eq!(f.method().unwrap().mechanism().unwrap(), &b"AMQPLAIN"[..]);
    let ranges = f.secret_ranges();
    assert_eq!(ranges.len(), 1);
    assert_eq!(&raw[ranges[0].clone()], b"guest");
    assert_eq!(
        &raw[ranges[0].start - 14..ranges[0].start],
        b"\x08PASSWORDS\0\0\0\x05"
    );
    assert_eq!(
        f.fields_json()["response"],
        json!({"LOGIN": "guest", "PASSWORD": "guest"})
    );
    assert_subsequence(
        &names(&c),
        &["connection.start-ok", "connection.open", "connection.close"],
    );
}
