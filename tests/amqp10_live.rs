//! Live: a fe2o3-amqp client talks to RabbitMQ (127.0.0.1:5672, SASL PLAIN guest/guest)
//! through a tiny recording TCP relay; the recorded streams are fed to `StreamDecoder`, and
//! every frame must decode, the expected performatives appear in each direction, message bodies
//! equal what was sent (including one large enough to span several transfers), and the PLAIN
//! password is exactly what `secret_ranges` covers.
//!
//! Without a broker: FAILS when env `CI` is set, otherwise skips with a note.

mod support;

use std::time::Duration;

use amqpeek::codec::amqp10::MessageBody;
use amqpeek::event::Dir;
use amqpeek::protocol::{AnyFrame, AnyMessage, Item, StreamDecoder};
use bytes::Bytes;
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use support::{Relay, broker_or_skip, bytes_of};

fn decode_stream(bytes: &[u8]) -> Vec<Item> {
    // Whole bodies kept: the messages are compared with what was sent.
    let mut d = StreamDecoder::new().with_limits(amqpeek::codec::Limits {
        body: 1 << 20,
        ..amqpeek::codec::Limits::default()
    });
    let mut out = Vec::new();
    // Feed in uneven chunks, as a relay would see them.
    for chunk in bytes.chunks(1000) {
        d.push(Bytes::copy_from_slice(chunk), &mut out);
    }
    out
}

fn names(items: &[Item]) -> Vec<&'static str> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Frame(fe) => Some(fe.frame.name()),
            _ => None,
        })
        .collect()
}

fn data_bodies(items: &[Item]) -> Vec<Vec<u8>> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Frame(fe) => match &fe.message {
                Some(Ok(AnyMessage::Amqp10(m))) => match m.body() {
                    MessageBody::Data(d) => Some(d.concat()),
                    other => panic!("unexpected body {other:?}"),
                },
                Some(Err(e)) => panic!("message failed to decode: {e}"),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fe2o3_through_recording_relay_to_rabbitmq() {
    if !broker_or_skip().await {
        return;
    }
    let relay = Relay::start().await;
    let port = relay.port();
    let queue = format!("/queue/amqpeek-amqp10-live-{}", std::process::id());
    let bodies: Vec<Vec<u8>> = vec![
        b"hello amqpeek".to_vec(),
        (0..300_000u32).map(|i| (i % 251) as u8).collect(), // spans several transfers
        b"third".to_vec(),
    ];

    let url = format!("amqp://guest:guest@127.0.0.1:{port}");
    let mut connection = Connection::open("amqpeek-live", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "amqpeek-sender", queue.as_str())
        .await
        .unwrap();
    for b in &bodies {
        let msg = Message::builder().data(Binary::from(b.clone())).build();
        let outcome = sender.send(msg).await.unwrap();
        assert!(outcome.is_accepted(), "{outcome:?}");
    }
    let mut receiver = Receiver::attach(&mut session, "amqpeek-receiver", queue.as_str())
        .await
        .unwrap();
    for b in &bodies {
        let d = tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        receiver.accept(&d).await.unwrap();
        match d.body() {
            Body::Data(batch) => {
                let got: Vec<u8> = batch.iter().flat_map(|x| x.0.to_vec()).collect();
                assert_eq!(&got, b);
            }
            other => panic!("fe2o3 received {other:?}"),
        }
    }
    // Teardown errors are reported, not fatal: the frames must still be on the wire (checked
    // below). RabbitMQ 3.10 answers detach(closed=true) with a
    // detach lacking closed=true, which fe2o3 0.18 reports as IllegalState.
    if let Err(e) = receiver.close().await {
        eprintln!("receiver close: {e:?}");
    }
    if let Err(e) = sender.close().await {
        eprintln!("sender close: {e:?}");
    }
    if let Err(e) = session.end().await {
        eprintln!("session end: {e:?}");
    }
    if let Err(e) = connection.close().await {
        eprintln!("connection close: {e:?}");
    }
    let chunks = relay.finish_one(Duration::from_secs(10)).await.chunks;

    let c2s = bytes_of(&chunks, Dir::C2S);
    let s2c = bytes_of(&chunks, Dir::S2C);
    for (dir, stream) in [("c2s", &c2s), ("s2c", &s2c)] {
        let items = decode_stream(stream);
        for i in &items {
            assert!(
                matches!(i, Item::Header { .. } | Item::Frame(_)),
                "{dir}: {i:?}"
            );
            if let Item::Frame(fe) = i {
                let _ = (fe.frame.summary(), fe.frame.fields_json());
            }
        }
        assert_eq!(
            items
                .iter()
                .filter(|i| matches!(i, Item::Header { .. }))
                .count(),
            2,
            "{dir}: SASL header then AMQP header"
        );
    }

    let up = decode_stream(&c2s);
    let down = decode_stream(&s2c);

    let (un, dn) = (names(&up), names(&down));
    for n in [
        "sasl-init",
        "open",
        "begin",
        "attach",
        "flow",
        "transfer",
        "disposition",
        "detach",
        "end",
        "close",
    ] {
        assert!(un.contains(&n), "c2s lacks {n}: {un:?}");
    }
    for n in [
        "sasl-mechanisms",
        "sasl-outcome",
        "open",
        "begin",
        "attach",
        "flow",
        "transfer",
        "disposition",
        "detach",
        "end",
        "close",
    ] {
        assert!(dn.contains(&n), "s2c lacks {n}: {dn:?}");
    }
    // The large message was split over several transfers and reassembled in both directions.
    assert!(un.iter().filter(|n| **n == "transfer").count() > bodies.len());
    assert_eq!(data_bodies(&up), bodies, "sent bodies");
    assert_eq!(data_bodies(&down), bodies, "received bodies");

    // The PLAIN response's password (and only it) is a secret.
    let init = up
        .iter()
        .find_map(|i| match i {
            Item::Frame(fe) => match &fe.frame {
                AnyFrame::Amqp10(f) if f.name() == "sasl-init" => {
                    Some((fe.raw.clone(), f.secret_ranges()))
                }
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    assert_eq!(init.1.len(), 1);
    assert_eq!(&init.0[init.1[0].clone()], b"guest");
    let resp = &init.0[..init.1[0].start];
    assert!(resp.ends_with(b"\0guest\0"), "authcid stays visible");
}
