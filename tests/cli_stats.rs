//! `amqpeek stats` on captures of real peers recorded by `amqpeek proxy --jsonl --pcap`:
//! lapin's AMQP 0-9-1 channels with RabbitMQ (publish -> confirm, deliver -> ack, a no-ack
//! consumer, publishes outside confirm mode) and fe2o3-amqp's AMQP 1.0 links (transfer ->
//! disposition both ways). The counts are what the clients did; the JSONL and the pcapng of
//! the same run give the same statistics, whatever `--jobs`.
//!
//! Without a broker: FAILS when env `CI` is set, otherwise skips with a note.

mod cli_common;
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cli_common::start_proxy;
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::Value;

/// `amqpeek stats ARGS CAPTURE`: its stdout (it must exit 0).
fn stats(capture: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .arg("stats")
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stats failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON statistics of `capture`, checked to be the same from every `--jobs`.
fn stats_json(capture: &Path) -> Value {
    let one = stats(capture, &["--format", "json", "--jobs", "1"]);
    let two = stats(capture, &["--format", "json", "--jobs", "2"]);
    assert_eq!(one, two, "the numbers do not depend on --jobs");
    serde_json::from_str(&one).unwrap()
}

/// The settlement row of `kind`.
fn settle<'a>(s: &'a Value, kind: &str) -> &'a Value {
    s["settlement"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} row: {s}"))
}

/// The flow row labelled `flow`.
fn flow<'a>(s: &'a Value, label: &str) -> &'a Value {
    s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["flow"] == label)
        .unwrap_or_else(|| panic!("no flow {label}: {s}"))
}

/// Messages of `flow` in `dir`.
fn messages(flow: &Value, dir: &str) -> u64 {
    flow["dirs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dir"] == dir)
        .map_or(0, |d| d["messages"].as_u64().unwrap())
}

/// Frames named `name` in `dir`.
fn frames(s: &Value, name: &str, dir: &str) -> u64 {
    s["by_name"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == name && r["dir"] == dir)
        .map(|r| r["frames"].as_u64().unwrap())
        .sum()
}

/// A proxy to RabbitMQ writing `dir/run.jsonl` and `dir/run.pcapng`: its child and address.
fn recording_proxy(dir: &Path) -> (std::process::Child, impl Sized, String) {
    let (jsonl, pcap) = (dir.join("run.jsonl"), dir.join("run.pcapng"));
    start_proxy(
        &[
            "--upstream",
            support::BROKER,
            "--quiet",
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
        Stdio::null(),
    )
}

fn stop(mut proxy: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    assert!(proxy.wait().unwrap().success());
}

const CONFIRMED: usize = 20;
const UNCONFIRMED: usize = 5;

/// lapin: channel 1 publishes CONFIRMED messages in confirm mode (all pipelined, then the
/// confirms awaited) and acks each delivery of them on channel 2; channel 3 publishes
/// UNCONFIRMED outside confirm mode to a queue a no-ack consumer on channel 3 drains.
async fn lapin_traffic(uri: &str) {
    let conn = Connection::connect(uri, ConnectionProperties::default())
        .await
        .unwrap();
    let (pubch, subch, fire) = (
        conn.create_channel().await.unwrap(),
        conn.create_channel().await.unwrap(),
        conn.create_channel().await.unwrap(),
    );
    pubch.confirm_select(Default::default()).await.unwrap();
    let declare = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    let q = pubch
        .queue_declare("".into(), declare, FieldTable::default())
        .await
        .unwrap();
    let q2 = fire
        .queue_declare("".into(), declare, FieldTable::default())
        .await
        .unwrap();
    let mut pending = Vec::new();
    for i in 0..CONFIRMED {
        let p = pubch
            .basic_publish(
                "".into(),
                q.name().as_str().into(),
                BasicPublishOptions::default(),
                format!("confirmed {i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap();
        pending.push(p);
    }
    for p in pending {
        assert!(p.await.unwrap().is_ack());
    }
    for i in 0..UNCONFIRMED {
        fire.basic_publish(
            "".into(),
            q2.name().as_str().into(),
            BasicPublishOptions::default(),
            format!("fire and forget {i}").as_bytes(),
            BasicProperties::default(),
        )
        .await
        .unwrap();
    }
    let (_acked, got) = support::collect(&subch, q.name().as_str(), "", false, CONFIRMED).await;
    for d in got {
        d.ack(BasicAckOptions::default()).await.unwrap();
    }
    support::collect(&fire, q2.name().as_str(), "", true, UNCONFIRMED).await;
    conn.close(200, "bye".into()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_times_lapins_confirms_and_acks_and_counts_what_needs_neither() {
    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (proxy, _stderr, addr) = recording_proxy(dir.path());
    lapin_traffic(&format!("amqp://guest:guest@{addr}/%2f")).await;
    stop(proxy);

    let s = stats_json(&dir.path().join("run.jsonl"));
    assert_eq!(
        s,
        stats_json(&dir.path().join("run.pcapng")),
        "the JSONL and the pcapng of one run give the same statistics"
    );
    assert_eq!(s["connections"], 1);
    let confirm = settle(&s, "publish->confirm");
    assert_eq!(confirm["latency"]["count"], CONFIRMED as u64, "{s:#}");
    assert_eq!(confirm["not_awaited"], UNCONFIRMED as u64, "{s:#}");
    let ack = settle(&s, "deliver->ack");
    assert_eq!(ack["latency"]["count"], CONFIRMED as u64, "{s:#}");
    assert_eq!(ack["not_awaited"], UNCONFIRMED as u64, "{s:#}");
    assert!(
        settle(&s, "transfer->disposition")["latency"].is_null(),
        "no AMQP 1.0 here"
    );
    assert_eq!(s["unsettled_at_close"], 0, "{s:#}");
    let (p50, p99) = (
        confirm["latency"]["p50_us"].as_u64().unwrap(),
        confirm["latency"]["p99_us"].as_u64().unwrap(),
    );
    assert!(0 < p50 && p50 <= p99, "{confirm}");

    // Per channel: lapin numbers its channels 1, 2, 3 in the order they were created.
    assert_eq!(messages(flow(&s, "channel 1"), "c2s"), CONFIRMED as u64);
    assert_eq!(flow(&s, "channel 1")["settled"], CONFIRMED as u64);
    assert_eq!(messages(flow(&s, "channel 2"), "s2c"), CONFIRMED as u64);
    assert_eq!(flow(&s, "channel 2")["settled"], CONFIRMED as u64);
    let fire = flow(&s, "channel 3");
    assert_eq!(messages(fire, "c2s"), UNCONFIRMED as u64);
    assert_eq!(messages(fire, "s2c"), UNCONFIRMED as u64);
    assert_eq!(fire["settled"], 0);
    let c2s = &flow(&s, "channel 1")["dirs"][0];
    assert!(c2s["messages_per_s"].as_f64().unwrap() > 0.0, "{c2s}");

    // Per name and direction: every publish, and the content frames of each message.
    let all = (CONFIRMED + UNCONFIRMED) as u64;
    assert_eq!(frames(&s, "basic.publish", "c2s"), all);
    assert_eq!(frames(&s, "content-header", "c2s"), all);
    assert_eq!(frames(&s, "basic.deliver", "s2c"), all);
    assert_eq!(frames(&s, "basic.ack", "c2s"), CONFIRMED as u64);
    assert!(frames(&s, "basic.ack", "s2c") >= 1, "confirms came back");
    let by_name: u64 = s["by_name"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(s["bytes"], by_name);

    // Only channel 1: its publishes and their confirms; the acks of channel 2 are not counted.
    let one: Value = serde_json::from_str(&stats(
        &dir.path().join("run.jsonl"),
        &["--format", "json", "--filter", "channel:1"],
    ))
    .unwrap();
    assert_eq!(
        settle(&one, "publish->confirm")["latency"]["count"],
        CONFIRMED as u64
    );
    assert!(settle(&one, "deliver->ack")["latency"].is_null(), "{one:#}");
    let flows: Vec<_> = one["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["flow"])
        .collect();
    assert_eq!(flows, ["channel 1"]);
    assert_eq!(frames(&one, "basic.publish", "c2s"), CONFIRMED as u64);

    let text = stats(&dir.path().join("run.jsonl"), &[]);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("publish->confirm"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        row.split_whitespace().nth(1),
        Some(CONFIRMED.to_string().as_str()),
        "{text}"
    );
}

const MESSAGES: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_times_fe2o3s_transfers_to_their_dispositions_per_link() {
    use fe2o3_amqp::types::messaging::{Body, Message};
    use fe2o3_amqp::types::primitives::Value as AmqpValue;
    use fe2o3_amqp::{Receiver, Sender, Session};

    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (proxy, _stderr, addr) = recording_proxy(dir.path());
    let queue = format!("/queue/amqpeek-stats-{}", std::process::id());
    let url = format!("amqp://guest:guest@{addr}");
    let mut connection = fe2o3_amqp::Connection::open("amqpeek-stats", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "stats-sender", queue.as_str())
        .await
        .unwrap();
    for i in 0..MESSAGES {
        let outcome = sender
            .send(Message::builder().value(format!("m{i}")).build())
            .await
            .unwrap();
        assert!(outcome.is_accepted());
    }
    let mut receiver = Receiver::attach(&mut session, "stats-receiver", queue.as_str())
        .await
        .unwrap();
    for _ in 0..MESSAGES {
        let d = tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<AmqpValue>>())
            .await
            .expect("receive in time")
            .unwrap();
        receiver.accept(&d).await.unwrap();
    }
    let _ = receiver.close().await;
    let _ = sender.close().await;
    let _ = session.end().await;
    let _ = connection.close().await;
    stop(proxy);

    let s = stats_json(&dir.path().join("run.jsonl"));
    assert_eq!(s, stats_json(&dir.path().join("run.pcapng")));
    let disp = settle(&s, "transfer->disposition");
    assert_eq!(disp["latency"]["count"], 2 * MESSAGES as u64, "{s:#}");
    assert_eq!(disp["not_awaited"], 0);
    let out = flow(&s, "link \"stats-sender\" c2s");
    assert_eq!(messages(out, "c2s"), MESSAGES as u64);
    assert_eq!(out["settled"], MESSAGES as u64);
    let inb = flow(&s, "link \"stats-receiver\" s2c");
    assert_eq!(messages(inb, "s2c"), MESSAGES as u64);
    assert_eq!(inb["settled"], MESSAGES as u64);
    assert_eq!(frames(&s, "transfer", "c2s"), MESSAGES as u64);
    assert_eq!(frames(&s, "transfer", "s2c"), MESSAGES as u64);
    assert!(frames(&s, "sasl-init", "c2s") == 1, "{s:#}");
}
