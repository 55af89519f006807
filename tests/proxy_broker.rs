//! End to end through the proxy against RabbitMQ (127.0.0.1:5672, guest/guest): lapin (AMQP
//! 0-9-1) and fe2o3-amqp (AMQP 1.0 with SASL PLAIN), several connections at once.
//!
//! The chain is `client -> recorder 1 -> proxy -> recorder 2 -> broker`: the recorders prove
//! the proxy relayed every byte unchanged both ways, the JSONL capture is checked frame by frame
//! against the recorded bytes (differing in exactly the password's bytes), the decoded
//! credential fields show the mask, and neither the capture nor the trace contains the password
//! in any form.

mod common;
mod secrets;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use amqpeek::proxy::BoxSink;
use amqpeek::sinks::{JsonOptions, JsonlSink, TraceSink};
use base64::Engine;
use common::{Running, SharedBuf, broker, start_proxy};
use serde_json::Value;
use support::{Recording, Relay};

struct Harness {
    client_addr: SocketAddr,
    proxy: Running,
    near: Relay,
    far: Relay,
    jsonl: tempfile::TempPath,
    trace: SharedBuf,
}

async fn harness(broker: SocketAddr) -> Harness {
    let far = Relay::to(broker).await;
    let far_addr = far.addr;
    let jsonl = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let trace = SharedBuf::default();
    let sinks: Vec<BoxSink> = vec![
        Box::new(JsonlSink::new(
            std::io::BufWriter::new(std::fs::File::create(&jsonl).unwrap()),
            JsonOptions { max_body: 64 },
        )),
        Box::new(TraceSink::new(trace.clone())),
    ];
    let proxy = start_proxy(far_addr, sinks).await;
    let near = Relay::to(proxy.addr).await;
    let client_addr = near.addr;
    Harness {
        client_addr,
        proxy,
        near,
        far,
        jsonl,
        trace,
    }
}

struct Outcome {
    lines: Vec<Value>,
    trace: String,
    far: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Wait for `n` connections to end everywhere, stop the proxy, and check the relaying was
/// byte-exact: what the client side sent/received equals what the broker side received/sent.
async fn finish(h: Harness, n: usize) -> Outcome {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while h.near.ended().len() < n || h.far.ended().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "connections did not all end"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for conn in 1..=n as u64 {
        h.proxy.wait_closed(conn).await;
    }
    let (summary, _) = h.proxy.stop().await;
    assert_eq!(summary.connections, n as u64);
    let mut near: Vec<_> = h.near.ended().iter().map(Recording::split).collect();
    let mut far: Vec<_> = h.far.ended().iter().map(Recording::split).collect();
    near.sort();
    far.sort();
    assert_eq!(near.len(), n);
    for ((nc, ns), (fc, fs)) in near.iter().zip(&far) {
        assert!(nc.len() > 8 && ns.len() > 8, "real traffic both ways");
        assert!(nc == fc, "client->server bytes relayed unchanged");
        assert!(ns == fs, "server->client bytes relayed unchanged");
    }
    let text = std::fs::read_to_string(&h.jsonl).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let trace = String::from_utf8(h.trace.0.lock().unwrap().clone()).unwrap();
    secrets::assert_no_password(&text, "guest", "guest", "JSONL");
    secrets::assert_no_password(&trace, "guest", "guest", "trace");
    Outcome { lines, trace, far }
}

fn raw_of(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v["raw"].as_str().expect("raw"))
        .expect("raw is base64")
}

/// Per connection: the frames' names in order, and a check that headers + frames, concatenated
/// per direction, are exactly the recorded bytes (but for the masked password).
fn check_capture(out: &Outcome) -> BTreeMap<u64, Vec<Value>> {
    let mut per_conn: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for l in &out.lines {
        assert_eq!(l["v"], 1);
        assert!(l["ts"].as_str().unwrap().ends_with('Z'));
        per_conn
            .entry(l["conn"].as_u64().unwrap())
            .or_default()
            .push(l.clone());
    }
    let mut unmatched: Vec<&(Vec<u8>, Vec<u8>)> = out.far.iter().collect();
    for (conn, evs) in &per_conn {
        assert_eq!(evs.first().unwrap()["event"], "connect", "#{conn}");
        assert_eq!(evs.last().unwrap()["event"], "close", "#{conn}");
        // RabbitMQ 3.10's own breaches (its receiver flows omit delivery-count, §2.7.4; it
        // answers a closing detach without closed=true, §2.6.6) are the server's, not the
        // client's.
        let broker_breach = |e: &&Value| {
            e["dir"] == "s2c"
                && [
                    "amqp10.flow.receiver-delivery-count-missing",
                    "amqp10.link.detach-not-closed",
                ]
                .contains(&e["rule"].as_str().unwrap_or_default())
        };
        let violations: Vec<_> = evs
            .iter()
            .filter(|e| e["event"] == "violation")
            .filter(|e| !broker_breach(e))
            .collect();
        assert!(
            violations.is_empty(),
            "#{conn}: a real client breaks no rule: {violations:?}"
        );
        let mut stream = [Vec::new(), Vec::new()];
        for e in evs
            .iter()
            .filter(|e| e["event"] == "header" || e["event"] == "frame")
        {
            let d = usize::from(e["dir"] == "s2c");
            assert_eq!(e["offset"].as_u64().unwrap() as usize, stream[d].len());
            stream[d].extend_from_slice(&raw_of(e));
        }
        let masked_equal = |captured: &[u8], real: &[u8]| {
            captured.len() == real.len()
                && captured
                    .iter()
                    .zip(real)
                    .all(|(c, r)| c == r || *c == secrets::MASK)
        };
        let i = unmatched
            .iter()
            .position(|(c2s, s2c)| masked_equal(&stream[0], c2s) && masked_equal(&stream[1], s2c))
            .unwrap_or_else(|| panic!("#{conn}: capture does not match any relayed stream"));
        let (c2s, s2c) = unmatched.remove(i);
        let what = format!("#{conn} c2s");
        secrets::assert_exactly_password_masked(&stream[0], c2s, "guest", "guest", &what);
        assert_eq!(&stream[1], s2c, "#{conn}: nothing masked server to client");
        let close = evs.last().unwrap();
        assert_eq!(close["bytes_c2s"].as_u64().unwrap() as usize, c2s.len());
    }
    per_conn
}

fn names(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["event"] == "frame")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

fn frames<'a>(evs: &'a [Value], name: &str) -> Vec<&'a Value> {
    evs.iter()
        .filter(|e| e["event"] == "frame" && e["name"] == name)
        .collect()
}

const LAPIN_CONNS: usize = 3;
const LAPIN_MESSAGES: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lapin_publishes_and_consumes_through_the_proxy() {
    use lapin::options::*;
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};

    let Some(broker) = broker().await else { return };
    let h = harness(broker).await;
    let url = format!("amqp://guest:guest@{}/%2f", h.client_addr);
    let mut clients = Vec::new();
    for c in 0..LAPIN_CONNS {
        let url = url.clone();
        clients.push(tokio::spawn(async move {
            let conn = Connection::connect(&url, ConnectionProperties::default())
                .await
                .expect("connect through the proxy");
            let ch = conn.create_channel().await.unwrap();
            ch.confirm_select(ConfirmSelectOptions::default())
                .await
                .unwrap();
            let queue = format!("amqpeek-proxy-test-{}-{c}", std::process::id());
            ch.queue_declare(
                queue.clone().into(),
                QueueDeclareOptions {
                    auto_delete: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .unwrap();
            for i in 0..LAPIN_MESSAGES {
                let body = format!("msg-{c}-{i}-{}", "x".repeat(i * 37));
                ch.basic_publish(
                    "".into(),
                    queue.clone().into(),
                    BasicPublishOptions::default(),
                    body.as_bytes(),
                    BasicProperties::default(),
                )
                .await
                .unwrap()
                .await
                .unwrap();
            }
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let acked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let acked2 = acked.clone();
            let consumer = ch
                .basic_consume(
                    queue.clone().into(),
                    "amqpeek-test".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .unwrap();
            consumer.set_delegate(move |d: lapin::message::DeliveryResult| {
                // Record in delivery order (the returned futures may run concurrently).
                if let Ok(Some(d)) = &d {
                    let _ = tx.send(d.data.clone());
                }
                let acked = acked2.clone();
                async move {
                    if let Ok(Some(d)) = d {
                        d.ack(BasicAckOptions::default()).await.unwrap();
                        acked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
            for i in 0..LAPIN_MESSAGES {
                let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                    .await
                    .expect("delivery")
                    .unwrap();
                let want = format!("msg-{c}-{i}-{}", "x".repeat(i * 37));
                assert!(
                    got == want.as_bytes(),
                    "delivery {i} of connection {c} in order"
                );
            }
            while acked.load(std::sync::atomic::Ordering::SeqCst) < LAPIN_MESSAGES {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ch.close(200, "done".into()).await.unwrap();
            conn.close(200, "bye".into()).await.unwrap();
            queue
        }));
    }
    let mut queues = BTreeSet::new();
    for c in clients {
        queues.insert(c.await.unwrap());
    }
    let out = finish(h, LAPIN_CONNS).await;
    assert!(
        out.trace.contains("connection.start-ok"),
        "trace shows frames"
    );
    let per_conn = check_capture(&out);
    assert_eq!(per_conn.len(), LAPIN_CONNS);
    for evs in per_conn.values() {
        let n = names(evs);
        for want in [
            "connection.start",
            "connection.start-ok",
            "connection.tune",
            "connection.tune-ok",
            "connection.open",
            "connection.open-ok",
            "channel.open",
            "confirm.select",
            "queue.declare",
            "queue.declare-ok",
            "basic.publish",
            "content-header",
            "basic.ack",
            "basic.consume",
            "basic.deliver",
            "channel.close",
            "connection.close",
            "connection.close-ok",
        ] {
            assert!(n.iter().any(|x| x == want), "{want} missing from {n:?}");
        }
        let publishes = frames(evs, "basic.publish");
        assert_eq!(publishes.len(), LAPIN_MESSAGES);
        assert_eq!(frames(evs, "basic.deliver").len(), LAPIN_MESSAGES);
        let queue = publishes[0]["fields"]["routing-key"].as_str().unwrap();
        assert!(queues.contains(queue), "{queue}");
        assert_eq!(publishes[0]["proto"], "amqp-0-9-1");
        assert_eq!(publishes[0]["channel"], 1);
        let start_ok = frames(evs, "connection.start-ok")[0];
        assert_eq!(start_ok["fields"]["mechanism"], "PLAIN");
        assert_eq!(
            start_ok["fields"]["response"],
            serde_json::json!({"authzid": "", "username": "guest", "password": "*****"}),
            "the decoded response shows the mask"
        );
        assert!(
            start_ok["summary"]
                .as_str()
                .unwrap()
                .contains(r#"username="guest" password="*****""#),
            "{}",
            start_ok["summary"]
        );
        let raw = raw_of(start_ok);
        assert!(
            raw.windows(12).any(|w| w == b"\x00guest\x00*****"),
            "start-ok raw has the password masked"
        );
        // Messages: one per publish (c2s) and per delivery (s2c), bodies truncated at 64.
        let messages: Vec<&Value> = evs.iter().filter(|e| e.get("message").is_some()).collect();
        assert_eq!(messages.len(), 2 * LAPIN_MESSAGES);
        assert!(
            messages
                .iter()
                .any(|m| m["message"].to_string().contains("msg-"))
        );
    }
}

const FE2O3_CONNS: usize = 2;
const FE2O3_MESSAGES: usize = 50;

async fn declare_queue(broker: SocketAddr, name: &str) {
    use lapin::options::*;
    use lapin::types::FieldTable;
    let conn = lapin::Connection::connect(
        &format!("amqp://guest:guest@{broker}/%2f"),
        lapin::ConnectionProperties::default(),
    )
    .await
    .unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.queue_declare(
        name.into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    conn.close(200, "ok".into()).await.unwrap();
}

async fn delete_queue(broker: SocketAddr, name: &str) {
    use lapin::options::*;
    let Ok(conn) = lapin::Connection::connect(
        &format!("amqp://guest:guest@{broker}/%2f"),
        lapin::ConnectionProperties::default(),
    )
    .await
    else {
        return;
    };
    if let Ok(ch) = conn.create_channel().await {
        let _ = ch
            .queue_delete(name.into(), QueueDeleteOptions::default())
            .await;
    }
    let _ = conn.close(200, "ok".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fe2o3_sends_and_receives_through_the_proxy() {
    use fe2o3_amqp::{Connection, Receiver, Sender, Session};

    let Some(broker) = broker().await else { return };
    let queues: Vec<String> = (0..FE2O3_CONNS)
        .map(|c| format!("amqpeek-proxy-test10-{}-{c}", std::process::id()))
        .collect();
    for q in &queues {
        declare_queue(broker, q).await;
    }
    let h = harness(broker).await;
    let url = format!("amqp://guest:guest@{}", h.client_addr);
    let mut clients = Vec::new();
    for (c, q) in queues.iter().enumerate() {
        let url = url.clone();
        let addr = format!("/amq/queue/{q}");
        clients.push(tokio::spawn(async move {
            let mut conn = Connection::open(format!("amqpeek-test-{c}"), url.as_str())
                .await
                .expect("open through the proxy");
            let mut session = Session::begin(&mut conn).await.unwrap();
            let mut sender = Sender::attach(&mut session, format!("tx-{c}"), addr.as_str())
                .await
                .unwrap();
            for i in 0..FE2O3_MESSAGES {
                let outcome = sender.send(format!("hello-{c}-{i}")).await.unwrap();
                assert!(outcome.is_accepted(), "{outcome:?}");
            }
            let mut receiver = Receiver::attach(&mut session, format!("rx-{c}"), addr.as_str())
                .await
                .unwrap();
            for i in 0..FE2O3_MESSAGES {
                let d = tokio::time::timeout(Duration::from_secs(20), receiver.recv::<String>())
                    .await
                    .expect("delivery")
                    .unwrap();
                assert_eq!(d.body(), &format!("hello-{c}-{i}"));
                receiver.accept(&d).await.unwrap();
            }
            sender.detach().await.map_err(|(_, e)| e).unwrap();
            receiver.detach().await.map_err(|(_, e)| e).unwrap();
            session.end().await.unwrap();
            conn.close().await.unwrap();
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    let out = finish(h, FE2O3_CONNS).await;
    for q in &queues {
        delete_queue(broker, q).await;
    }
    assert!(out.trace.contains("sasl-init") || out.trace.contains("@sasl-init"));
    let per_conn = check_capture(&out);
    assert_eq!(per_conn.len(), FE2O3_CONNS);
    for evs in per_conn.values() {
        let n = names(evs);
        for want in [
            "sasl-mechanisms",
            "sasl-init",
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
            assert!(n.iter().any(|x| x == want), "{want} missing from {n:?}");
        }
        let headers: Vec<_> = evs
            .iter()
            .filter(|e| e["event"] == "header")
            .map(|e| e["proto"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            ["amqp-sasl", "amqp-sasl", "amqp-1.0", "amqp-1.0"],
            "SASL then AMQP headers, both directions"
        );
        let init = frames(evs, "sasl-init")[0];
        assert_eq!(init["proto"], "amqp-sasl");
        assert_eq!(
            init["fields"]["mechanism"],
            serde_json::json!({"symbol": "PLAIN"})
        );
        assert_eq!(
            init["fields"]["initial-response"],
            serde_json::json!({"binary": hex::encode(secrets::plain("guest", "*****"))}),
            "the decoded initial-response shows the mask"
        );
        let raw = raw_of(init);
        assert!(raw.windows(12).any(|w| w == b"\x00guest\x00*****"));
        let transfers = frames(evs, "transfer");
        assert_eq!(transfers.len(), 2 * FE2O3_MESSAGES);
        assert_eq!(transfers[0]["proto"], "amqp-1.0");
        let attaches = frames(evs, "attach");
        assert!(attaches.iter().any(|a| {
            a["fields"]["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("tx-")
        }));
        let messages: Vec<&Value> = evs
            .iter()
            .filter(|e| e["event"] == "frame" && e.get("message").is_some())
            .collect();
        assert_eq!(messages.len(), 2 * FE2O3_MESSAGES);
        assert!(
            messages
                .iter()
                .any(|m| m["message"].to_string().contains("hello-"))
        );
    }
}
