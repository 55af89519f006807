//! AMQP 0-9-1 diagnoses made by the real proxy of real traffic: lapin (and, for a client that
//! stops sending, a raw socket speaking 0-9-1) through the proxy to the RabbitMQ on
//! 127.0.0.1:5672, each stalled case with a healthy control of the same shape.
//!
//! The proxy's clock ticks with the traffic: a stalled client does one more thing (closes
//! its channel) after the threshold, and that chunk's tick starts the diagnosis.
//!
//! With env CI set, an unreachable broker fails the tests; otherwise they are skipped with a
//! note. Queue names are unique (the broker is shared); the memory alarm test restores the
//! watermark whatever happens.

mod common;
mod diag_live;
mod diag_support;
mod support;

use std::sync::Arc;
use std::time::Duration;

use amqpeek::event::{Diagnosis, EndWhy};
use common::Running;
use diag_live::{diagnoses, dump, proxy, started};
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The memory alarm blocks every publisher of the broker: the test raising it runs alone
/// (`write`), the others share (`read`).
static BROKER: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

fn uri(p: &Running, query: &str) -> String {
    format!("amqp://guest:guest@{}/%2f{query}", p.addr)
}

async fn connect(p: &Running, query: &str) -> Connection {
    Connection::connect(&uri(p, query), ConnectionProperties::default())
        .await
        .expect("connect through the proxy")
}

/// A unique queue name.
fn queue(what: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "amqpeek-diag-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

async fn declare(ch: &Channel, q: &str) {
    ch.queue_declare(
        q.into(),
        QueueDeclareOptions {
            exclusive: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
}

async fn publish(ch: &Channel, q: &str, body: &[u8], props: BasicProperties) {
    ch.basic_publish(
        "".into(),
        q.into(),
        BasicPublishOptions::default(),
        body,
        props,
    )
    .await
    .unwrap();
}

/// A consumer on `q` whose deliveries come out of the returned receiver.
async fn consume(
    ch: &Channel,
    q: &str,
    tag: &str,
) -> (
    lapin::Consumer,
    tokio::sync::mpsc::UnboundedReceiver<lapin::message::Delivery>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = ch
        .basic_consume(
            q.into(),
            tag.into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    consumer.set_delegate(move |d: lapin::message::DeliveryResult| {
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    (consumer, rx)
}

async fn next(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<lapin::message::Delivery>,
) -> lapin::message::Delivery {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a delivery in time")
        .expect("a delivery")
}

/// basic.qos(1), three messages, one delivery held without ack (or each acked).
async fn prefetch_one(ack: bool) -> Option<Vec<Arc<Diagnosis>>> {
    let lim = [
        ("amqp091.consumer.prefetch-full", 1.0),
        ("amqp091.channel.unacked", 1.0),
    ];
    let p = proxy(&lim).await?;
    let conn = connect(&p, "").await;
    let ch = conn.create_channel().await.unwrap();
    let q = queue("prefetch");
    declare(&ch, &q).await;
    ch.basic_qos(1, BasicQosOptions::default()).await.unwrap();
    for i in 0..3 {
        publish(
            &ch,
            &q,
            format!("m{i}").as_bytes(),
            BasicProperties::default(),
        )
        .await;
    }
    let (_c, mut rx) = consume(&ch, &q, "held").await;
    let d = next(&mut rx).await;
    if ack {
        d.ack(BasicAckOptions::default()).await.unwrap();
        for _ in 0..2 {
            next(&mut rx)
                .await
                .ack(BasicAckOptions::default())
                .await
                .unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    ch.close(200, "bye".into()).await.unwrap();
    conn.close(200, "bye".into()).await.unwrap();
    Some(diagnoses(p, 1).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_holding_its_prefetch_unacked_is_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(ds) = prefetch_one(false).await else {
        return;
    };
    assert_eq!(
        started(&ds),
        vec!["amqp091.channel.unacked", "amqp091.consumer.prefetch-full"],
        "{}",
        dump(&ds)
    );
    let full = ds
        .iter()
        .find(|d| d.check.id == "amqp091.consumer.prefetch-full")
        .unwrap();
    assert!(full.name.contains("\"held\""), "{}", full.name);
    assert!(full.detail.starts_with("1 unacked"), "{}", full.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_acking_its_prefetch_is_not_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(ds) = prefetch_one(true).await else {
        return;
    };
    assert!(ds.is_empty(), "{}", dump(&ds));
}

/// Sets RabbitMQ's memory high watermark so low that a memory alarm is raised; dropping it
/// restores the default (0.4), on a panic too.
struct MemoryAlarm;

impl MemoryAlarm {
    fn raise() -> MemoryAlarm {
        let alarm = MemoryAlarm;
        watermark("0.0000001");
        alarm
    }
}

impl Drop for MemoryAlarm {
    fn drop(&mut self) {
        watermark("0.4");
    }
}

fn watermark(v: &str) {
    let ok = std::process::Command::new("rabbitmqctl")
        .args(["set_vm_memory_high_watermark", v])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::thread::panicking(),
        "rabbitmqctl set_vm_memory_high_watermark {v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_alarm_blocks_the_publisher_and_leaves_its_publish_unconfirmed() {
    let _broker = BROKER.write().await;
    let Some(p) = proxy(&[("amqp091.channel.unconfirmed", 1.0)]).await else {
        return;
    };
    let conn = connect(&p, "").await;
    let ch = conn.create_channel().await.unwrap();
    let q = queue("blocked");
    declare(&ch, &q).await;
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    let confirm = {
        let _alarm = MemoryAlarm::raise();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let confirm = ch
            .basic_publish(
                "".into(),
                q.as_str().into(),
                BasicPublishOptions::default(),
                b"while blocked",
                BasicProperties::default(),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        confirm
    };
    let confirmed = tokio::time::timeout(Duration::from_secs(20), confirm)
        .await
        .expect("the confirm comes once the alarm clears")
        .unwrap();
    assert!(confirmed.is_ack());
    conn.close(200, "bye".into()).await.unwrap();
    let ds = diagnoses(p, 1).await;
    assert_eq!(
        started(&ds),
        vec!["amqp091.channel.unconfirmed", "amqp091.connection.blocked"],
        "{}",
        dump(&ds)
    );
    for d in ds.iter().filter(|d| d.ended.is_some()) {
        assert_eq!(
            d.ended.as_ref().unwrap().why,
            EndWhy::Cleared,
            "{}",
            dump(&ds)
        );
    }
    let blocked = ds
        .iter()
        .find(|d| d.check.id == "amqp091.connection.blocked")
        .unwrap();
    assert!(blocked.detail.contains("memory"), "{}", blocked.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmed_publishes_are_not_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(p) = proxy(&[("amqp091.channel.unconfirmed", 1.0)]).await else {
        return;
    };
    let conn = connect(&p, "").await;
    let ch = conn.create_channel().await.unwrap();
    let q = queue("confirmed");
    declare(&ch, &q).await;
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    for i in 0..20 {
        let c = ch
            .basic_publish(
                "".into(),
                q.as_str().into(),
                BasicPublishOptions::default(),
                format!("m{i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap();
        assert!(c.await.unwrap().is_ack());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    conn.close(200, "bye".into()).await.unwrap();
    let ds = diagnoses(p, 1).await;
    assert!(ds.is_empty(), "{}", dump(&ds));
}

/// How a consumer ends.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    /// Another connection deletes its queue: the broker cancels it.
    OtherDeletes,
    /// Its own connection deletes its queue (the broker cancels it as asked).
    OwnDeletes,
    /// Its client cancels it, then deletes the queue.
    ClientCancels,
}

/// A consumer of a queue, ended as `how`, and the time past the threshold.
async fn cancelled(how: Ending) -> Option<Vec<Arc<Diagnosis>>> {
    let p = proxy(&[("amqp091.consumer.cancelled", 1.0)]).await?;
    let conn = connect(&p, "").await;
    let ch = conn.create_channel().await.unwrap();
    let other = conn.create_channel().await.unwrap();
    let q = queue("cancel");
    ch.queue_declare(
        q.as_str().into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    let (_c, _rx) = consume(&ch, &q, "doomed").await;
    if how == Ending::ClientCancels {
        ch.basic_cancel("doomed".into(), BasicCancelOptions::default())
            .await
            .unwrap();
    }
    let delete = |ch: Channel| {
        let q = q.clone();
        async move {
            ch.queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                .await
                .unwrap();
        }
    };
    if how == Ending::OtherDeletes {
        // An administrator's connection, straight to the broker.
        let admin = Connection::connect(
            &format!("amqp://guest:guest@{}/%2f", support::BROKER),
            ConnectionProperties::default(),
        )
        .await
        .unwrap();
        delete(admin.create_channel().await.unwrap()).await;
        let _ = admin.close(200, "bye".into()).await;
    } else {
        delete(other.clone()).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    other.close(200, "bye".into()).await.unwrap();
    conn.close(200, "bye".into()).await.unwrap();
    Some(diagnoses(p, 1).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_broker_cancels_is_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(ds) = cancelled(Ending::OtherDeletes).await else {
        return;
    };
    assert_eq!(
        started(&ds),
        vec!["amqp091.consumer.cancelled"],
        "{}",
        dump(&ds)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_cancelled_as_its_own_client_deleted_the_queue_is_not_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(ds) = cancelled(Ending::OwnDeletes).await else {
        return;
    };
    assert!(ds.is_empty(), "{}", dump(&ds));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_client_cancels_is_not_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(ds) = cancelled(Ending::ClientCancels).await else {
        return;
    };
    assert!(ds.is_empty(), "{}", dump(&ds));
}

/// Read what comes within `ms` (at least one read), or until the peer closes: whether it did.
async fn read_for(s: &mut tokio::net::TcpStream, ms: u64) -> bool {
    let end = tokio::time::Instant::now() + Duration::from_millis(ms);
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(end, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_sending_misses_its_heartbeats() {
    let _broker = BROKER.read().await;
    let Some(p) = proxy(&[]).await else {
        return;
    };
    // A raw 0-9-1 client: a heartbeat of 1 s negotiated, then silence; RabbitMQ keeps
    // beating, and closes the socket once it gives the client up.
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    let frames = diag_support::a091::handshake(1);
    for (client, f) in &frames[..7] {
        if *client {
            s.write_all(f).await.unwrap();
        } else {
            read_for(&mut s, 300).await;
        }
    }
    let closed = read_for(&mut s, 8000).await;
    drop(s);
    let ds = diagnoses(p, 1).await;
    let missed: Vec<_> = ds
        .iter()
        .filter(|d| d.check.id == "amqp091.connection.heartbeat-missed" && d.ended.is_none())
        .collect();
    assert_eq!(
        missed.len(),
        1,
        "closed by the broker: {closed}\n{}",
        dump(&ds)
    );
    assert_eq!(missed[0].name, "client");
    assert_eq!(missed[0].at.0 - missed[0].since.0, 2_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_beating_its_heartbeats_is_not_diagnosed() {
    let _broker = BROKER.read().await;
    let Some(p) = proxy(&[]).await else {
        return;
    };
    let conn = connect(&p, "?heartbeat=1").await;
    let _ch = conn.create_channel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(4000)).await;
    conn.close(200, "bye".into()).await.unwrap();
    let ds = diagnoses(p, 1).await;
    assert!(ds.is_empty(), "{}", dump(&ds));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_publish_consume_ack_session_has_no_diagnosis() {
    let _broker = BROKER.read().await;
    let Some(p) = proxy(&[]).await else {
        return;
    };
    let conn = connect(&p, "?heartbeat=5").await;
    let pubch = conn.create_channel().await.unwrap();
    let subch = conn.create_channel().await.unwrap();
    let q = queue("healthy");
    declare(&pubch, &q).await;
    pubch
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    subch
        .basic_qos(5, BasicQosOptions::default())
        .await
        .unwrap();
    let (_c, mut rx) = consume(&subch, &q, "healthy").await;
    for i in 0..50 {
        let props = BasicProperties::default().with_message_id(format!("m-{i}").into());
        let c = pubch
            .basic_publish(
                "".into(),
                q.as_str().into(),
                BasicPublishOptions::default(),
                b"body",
                props,
            )
            .await
            .unwrap();
        assert!(c.await.unwrap().is_ack());
    }
    for i in 0..50 {
        let d = next(&mut rx).await;
        if i % 10 == 3 {
            // A requeue now and then: one redelivery each, not a loop.
            d.nack(BasicNackOptions {
                requeue: true,
                multiple: false,
            })
            .await
            .unwrap();
            next(&mut rx)
                .await
                .ack(BasicAckOptions::default())
                .await
                .unwrap();
        } else {
            d.ack(BasicAckOptions::default()).await.unwrap();
        }
    }
    let got = pubch
        .basic_get(q.as_str().into(), BasicGetOptions::default())
        .await
        .unwrap();
    assert!(got.is_none());
    subch
        .basic_cancel("healthy".into(), BasicCancelOptions::default())
        .await
        .unwrap();
    subch.close(200, "bye".into()).await.unwrap();
    conn.close(200, "bye".into()).await.unwrap();
    let ds = diagnoses(p, 1).await;
    assert!(ds.is_empty(), "{}", dump(&ds));
}
