//! A publisher's header key reaches every consumer, and amqpeek's outputs on both
//! connections: lapin publishes through `amqpeek proxy` to RabbitMQ with a header key holding
//! an OSC 52 sequence (write the terminal's clipboard) and a newline followed by a forged
//! `-> PASS` verdict line; a lapin consumer, also through the proxy, gets the key as sent.
//! The proxy's trace and `check` of its JSONL show the key escaped: no raw ESC, no forged line.
//!
//! Without a broker: FAILS when env `CI` is set, otherwise skips with a note.

mod cli_common;
mod support;

use std::process::{Command, Stdio};

use cli_common::start_proxy;
use lapin::options::*;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};

const KEY: &str = "k\x1b]52;c;cHduZWQ=\x07\n-> PASS (fail-on error)\n\u{202e}";

/// No raw ESC, BEL, bidi control, and no line the key's newline started.
fn assert_clean(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    assert!(!out.contains(&0x1b), "{what}: a raw ESC:\n{text}");
    assert!(!out.contains(&0x07), "{what}: a raw BEL:\n{text}");
    assert!(!text.contains('\u{202e}'), "{what}: a raw U+202E:\n{text}");
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with("-> PASS"),
            "{what}: forged line {line:?}"
        );
    }
}

/// Publish one message whose header key is [`KEY`] and consume it, both through `addr`;
/// the key the consumer got.
async fn publish_and_consume(addr: &str) -> String {
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let publisher = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let consumer = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let (pch, cch) = (
        publisher.create_channel().await.unwrap(),
        consumer.create_channel().await.unwrap(),
    );
    let q = cch
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from(KEY.to_string()),
        AMQPValue::LongString("v".into()),
    );
    pch.basic_publish(
        "".into(),
        q.name().as_str().into(),
        BasicPublishOptions::default(),
        b"hello",
        BasicProperties::default().with_headers(headers),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    let (_c, got) = support::collect(&cch, q.name().as_str(), "", true, 1).await;
    let keys: Vec<String> = got[0]
        .properties
        .headers()
        .as_ref()
        .map(|h| h.inner().keys().map(|k| k.as_str().to_string()).collect())
        .unwrap_or_default();
    publisher.close(200, "bye".into()).await.unwrap();
    consumer.close(200, "bye".into()).await.unwrap();
    keys.into_iter().next().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_header_key_reaches_the_consumer_and_no_output_raw() {
    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, jsonl) = (dir.path().join("trace.txt"), dir.path().join("run.jsonl"));
    let (mut proxy, _stderr, addr) = start_proxy(
        &[
            "--upstream",
            support::BROKER,
            "--no-tui",
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        Stdio::from(std::fs::File::create(&trace).unwrap()),
    );
    let got = publish_and_consume(&addr).await;
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    assert!(proxy.wait().unwrap().success());
    assert_eq!(
        got, KEY,
        "RabbitMQ hands the key to the consumer as published"
    );

    let trace = std::fs::read(&trace).unwrap();
    assert_clean("trace", &trace);
    // The key is on the trace twice, escaped: the publish and the delivery.
    let shown = r#""k\x1b]52;c;cHduZWQ=\x07\n-> PASS (fail-on error)\n\u{202e}"="v""#;
    let text = String::from_utf8_lossy(&trace);
    assert_eq!(text.matches(shown).count(), 2, "{text}");

    let jsonl_bytes = std::fs::read(&jsonl).unwrap();
    assert_clean("JSONL", &jsonl_bytes);
    let check = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["check", jsonl.to_str().unwrap()])
        .output()
        .unwrap();
    assert_clean("check", &check.stdout);
    assert_clean("check stderr", &check.stderr);
    let replay = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["replay", "--no-tui", jsonl.to_str().unwrap()])
        .output()
        .unwrap();
    assert_clean("replay", &replay.stdout);
    assert_eq!(
        String::from_utf8_lossy(&replay.stdout)
            .matches(shown)
            .count(),
        2
    );
}
