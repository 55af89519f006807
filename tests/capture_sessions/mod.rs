//! The real client sessions the capture tests record: lapin (AMQP 0-9-1) and fe2o3-amqp (AMQP
//! 1.0 with SASL PLAIN), each against RabbitMQ through a relay on `port`, guest/guest.
#![allow(dead_code)]

/// A lapin session through `port`: declare a queue, publish three messages (one of 70 KB),
/// get them back.
pub async fn lapin_session(port: u16) {
    use lapin::options::{BasicGetOptions, BasicPublishOptions, QueueDeclareOptions};
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    let uri = format!("amqp://guest:guest@127.0.0.1:{port}/%2f");
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let q = "amqpeek-capture-091";
    ch.queue_declare(
        q.into(),
        QueueDeclareOptions {
            auto_delete: false,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    for i in 0..3 {
        let body = vec![b'a' + i as u8; 100 + 70_000 * (i == 2) as usize];
        ch.basic_publish(
            "".into(),
            q.into(),
            BasicPublishOptions::default(),
            &body,
            BasicProperties::default().with_content_type("text/plain".into()),
        )
        .await
        .unwrap();
    }
    for _ in 0..3 {
        loop {
            if let Some(m) = ch
                .basic_get(q.into(), BasicGetOptions { no_ack: true })
                .await
                .unwrap()
            {
                assert!(!m.delivery.data.is_empty());
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    ch.close(200, "bye".into()).await.unwrap();
    conn.close(200, "bye".into()).await.unwrap();
}

/// A fe2o3-amqp session through `port` (SASL PLAIN): a sender and a receiver on one queue,
/// three messages each way.
pub async fn fe2o3_session(port: u16) {
    use fe2o3_amqp::{Connection, Receiver, Sender, Session};
    let url = format!("amqp://guest:guest@127.0.0.1:{port}");
    let mut conn = Connection::open("amqpeek-capture-test", &url[..])
        .await
        .unwrap();
    let mut session = Session::begin(&mut conn).await.unwrap();
    let addr = "/queue/amqpeek-capture-10";
    let mut sender = Sender::attach(&mut session, "capture-sender", addr)
        .await
        .unwrap();
    let mut receiver = Receiver::attach(&mut session, "capture-receiver", addr)
        .await
        .unwrap();
    for i in 0..3 {
        let outcome = sender.send(format!("hello {i}")).await.unwrap();
        outcome.accepted_or_else(|o| o).unwrap();
    }
    for _ in 0..3 {
        let d = receiver.recv::<String>().await.unwrap();
        receiver.accept(&d).await.unwrap();
    }
    // RabbitMQ 3.10 answers the second detach on a shared address oddly; the close handshake
    // of the links is not what this test is about.
    let _ = sender.close().await;
    let _ = receiver.close().await;
    session.end().await.unwrap();
    conn.close().await.unwrap();
}
