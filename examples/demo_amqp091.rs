//! A small AMQP 0-9-1 client (lapin) that exercises a broker: declares a queue, publishes in
//! confirm mode, gets, consumes, acks and nacks, closes. Point it at `amqpeek proxy` to see the
//! traffic:
//!
//! ```text
//! cargo run --example demo_amqp091 -- amqp://guest:guest@127.0.0.1:5673/%2f [--bad-ack]
//! ```
//!
//! `--bad-ack` also acks a delivery tag the broker never sent (RabbitMQ closes the channel with
//! 406 PRECONDITION_FAILED), to produce a real spec violation.

use std::time::Duration;

use lapin::options::*;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};

#[tokio::main(flavor = "current_thread")]
#[allow(dead_code)] // a test includes this file as a module and calls `exercise`
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let uri = args
        .iter()
        .find(|a| a.starts_with("amqp"))
        .cloned()
        .unwrap_or_else(|| "amqp://guest:guest@127.0.0.1:5673/%2f".into());
    let bad_ack = args.iter().any(|a| a == "--bad-ack");
    exercise(&uri, bad_ack).await
}

/// The client's whole session against the broker at `uri`; with `bad_ack`, it also acks a
/// delivery tag the broker never sent.
pub async fn exercise(uri: &str, bad_ack: bool) -> Result<(), Box<dyn std::error::Error>> {
    let conn = Connection::connect(uri, ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    // One queue per session, also when one process runs several at once (the tests do).
    static SESSIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let queue = format!("amqpeek-demo-{}-{n}", std::process::id());
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), AMQPValue::LongInt(100));
    ch.queue_declare(
        queue.as_str().into(),
        QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..Default::default()
        },
        args,
    )
    .await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    for i in 0..3 {
        let props = BasicProperties::default()
            .with_content_type(ShortString::from("text/plain"))
            .with_message_id(ShortString::from(format!("msg-{i}")));
        let body = format!("hello from amqpeek demo, message {i}");
        let confirm = ch
            .basic_publish(
                "".into(),
                queue.as_str().into(),
                BasicPublishOptions::default(),
                body.as_bytes(),
                props,
            )
            .await?
            .await?;
        println!("published {i}: ack={}", confirm.is_ack());
    }
    if let Some(got) = ch
        .basic_get(queue.as_str().into(), BasicGetOptions::default())
        .await?
    {
        println!("got: {}", String::from_utf8_lossy(&got.delivery.data));
        got.delivery.ack(BasicAckOptions::default()).await?;
    }
    let consumer = ch
        .basic_consume(
            queue.as_str().into(),
            "amqpeek-demo".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    consumer.set_delegate(move |d: lapin::message::DeliveryResult| {
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    for n in 0..2 {
        let d = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await?
            .ok_or("consumer ended")?;
        println!("delivered: {}", String::from_utf8_lossy(&d.data));
        if n == 0 {
            d.ack(BasicAckOptions::default()).await?;
        } else {
            d.nack(BasicNackOptions {
                requeue: false,
                multiple: false,
            })
            .await?;
        }
    }
    if bad_ack {
        let _ = ch.basic_ack(999, BasicAckOptions::default()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("acked unknown delivery tag 999 (the broker closes the channel)");
    } else {
        ch.close(200, "bye".into()).await?;
    }
    conn.close(200, "bye".into()).await?;
    Ok(())
}
