//! AMQP 1.0 diagnoses made by the real proxy of real traffic: fe2o3-amqp (SASL PLAIN) through
//! the proxy to the RabbitMQ on 127.0.0.1:5672 (rabbitmq_amqp1_0), a stalled receiver with a
//! healthy control of the same shape, and a healthy send/receive session with none.
//!
//! The proxy's clock ticks with the traffic: a stalled receiver does one more thing (detaches)
//! after the threshold, and that chunk's tick starts the diagnosis.
//!
//! With env CI set, an unreachable broker fails the tests; otherwise they are skipped with a
//! note.

mod common;
mod diag_live;
mod support;

use std::sync::Arc;
use std::time::Duration;

use amqpeek::event::Diagnosis;
use common::Running;
use diag_live::{diagnoses, dump, proxy, started};
use fe2o3_amqp::connection::ConnectionHandle;
use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::session::SessionHandle;
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};

/// A unique queue address.
fn queue(what: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "/queue/amqpeek-diag10-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Bounded, so a peer that never answers cannot hang the suite.
const T: Duration = Duration::from_secs(5);

async fn open(p: &Running) -> (ConnectionHandle<()>, SessionHandle<()>) {
    let url = format!("amqp://guest:guest@{}", p.addr);
    let mut c = Connection::open("amqpeek-diag10", url.as_str())
        .await
        .expect("open through the proxy");
    let s = Session::begin(&mut c).await.unwrap();
    (c, s)
}

async fn send(session: &mut SessionHandle<()>, q: &str, n: u32) {
    let mut sender = Sender::attach(session, format!("send-{q}"), q)
        .await
        .unwrap();
    for i in 0..n {
        let msg = Message::builder()
            .data(Binary::from(format!("m{i}").into_bytes()))
            .build();
        assert!(sender.send(msg).await.unwrap().is_accepted());
    }
    let _ = tokio::time::timeout(T, sender.close()).await;
}

async fn recv(r: &mut Receiver) {
    let d = tokio::time::timeout(Duration::from_secs(10), r.recv::<Body<Value>>())
        .await
        .expect("receive in time")
        .unwrap();
    r.accept(&d).await.unwrap();
}

/// Five messages queued; a receiver with `mode` takes `take` of them (granting `grant` first
/// when manual), waits past the thresholds, and detaches.
async fn receiver(mode: CreditMode, grant: Option<u32>, take: u32) -> Option<Vec<Arc<Diagnosis>>> {
    let lim = [
        ("amqp10.link.no-credit", 1.0),
        ("amqp10.link.credit-exhausted", 1.0),
        ("amqp10.link.unsettled", 1.0),
    ];
    let p = proxy(&lim).await?;
    let (mut conn, mut session) = open(&p).await;
    let q = queue("credit");
    send(&mut session, &q, 5).await;
    let mut r = Receiver::builder()
        .name(format!("recv-{q}"))
        .source(q.as_str())
        .credit_mode(mode)
        .attach(&mut session)
        .await
        .unwrap();
    if let Some(n) = grant {
        r.set_credit(n).await.unwrap();
    }
    for _ in 0..take {
        recv(&mut r).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _ = tokio::time::timeout(T, r.close()).await;
    let _ = tokio::time::timeout(T, session.end()).await;
    let _ = tokio::time::timeout(T, conn.close()).await;
    Some(diagnoses(p, 1).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_grants_credit_is_diagnosed() {
    let Some(ds) = receiver(CreditMode::Manual, None, 0).await else {
        return;
    };
    assert_eq!(started(&ds), vec!["amqp10.link.no-credit"], "{}", dump(&ds));
    assert!(ds[0].name.contains("recv-"), "{}", ds[0].name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_granting_credit_once_is_diagnosed_when_its_credit_runs_out() {
    let Some(ds) = receiver(CreditMode::Manual, Some(1), 1).await else {
        return;
    };
    assert_eq!(
        started(&ds),
        vec!["amqp10.link.credit-exhausted"],
        "{}",
        dump(&ds)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_with_automatic_credit_is_not_diagnosed() {
    let Some(ds) = receiver(CreditMode::Auto(2), None, 5).await else {
        return;
    };
    assert!(ds.is_empty(), "{}", dump(&ds));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_send_receive_session_has_no_diagnosis() {
    let Some(p) = proxy(&[]).await else {
        return;
    };
    let (mut conn, mut session) = open(&p).await;
    let q = queue("healthy");
    send(&mut session, &q, 40).await;
    let mut auto = Receiver::builder()
        .name(format!("auto-{q}"))
        .source(q.as_str())
        .credit_mode(CreditMode::Auto(4))
        .attach(&mut session)
        .await
        .unwrap();
    for _ in 0..20 {
        recv(&mut auto).await;
    }
    let mut manual = Receiver::builder()
        .name(format!("manual-{q}"))
        .source(q.as_str())
        .credit_mode(CreditMode::Manual)
        .attach(&mut session)
        .await
        .unwrap();
    manual.set_credit(10).await.unwrap();
    for _ in 0..10 {
        recv(&mut manual).await;
    }
    let _ = tokio::time::timeout(T, auto.close()).await;
    let _ = tokio::time::timeout(T, manual.close()).await;
    let _ = tokio::time::timeout(T, session.end()).await;
    let _ = tokio::time::timeout(T, conn.close()).await;
    let ds = diagnoses(p, 1).await;
    assert!(ds.is_empty(), "{}", dump(&ds));
}
