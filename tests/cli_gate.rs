//! The CI use of docs/guide-ci.md, end to end: `amqpeek proxy --fail-on error` (the built binary) between
//! a real lapin client and RabbitMQ, stopped with SIGINT as a CI job does. A clean client passes
//! (exit 0); a client that acks a delivery tag the broker never sent fails (exit 1) with the
//! rule, its count and its first occurrence named on stderr; the same run with that rule
//! ignored on the client passes and says it ignored it.

mod cli_common;
mod support;

use std::io::Read;
use std::process::{Command, Stdio};

use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

use cli_common::start_proxy;

const BAD_ACK: &str = "amqp091.basic.unknown-delivery-tag";

/// A lapin session through the proxy at `addr`: a queue, a confirmed publish, a get and its
/// ack; with `bad_ack`, also an ack of delivery tag 999, never delivered. Returns once the
/// connection is closed (so the proxy has relayed every frame).
async fn session(addr: &str, bad_ack: bool) {
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .expect("connects through the proxy");
    let ch = conn.create_channel().await.unwrap();
    let queue = ch
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
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    ch.basic_publish(
        "".into(),
        queue.name().as_str().into(),
        BasicPublishOptions::default(),
        b"gate",
        BasicProperties::default(),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    let got = ch
        .basic_get(queue.name().as_str().into(), BasicGetOptions::default())
        .await
        .unwrap()
        .expect("the message published");
    got.delivery.ack(BasicAckOptions::default()).await.unwrap();
    if bad_ack {
        let _ = ch.basic_ack(999, BasicAckOptions::default()).await;
        // RabbitMQ answers with channel.close 406. Close the connection once lapin has sent
        // its channel.close-ok, so the test's client does not race its own two closes.
        channel_closed(&ch).await;
    } else {
        ch.close(200, "bye".into()).await.unwrap();
    }
    conn.close(200, "bye".into()).await.unwrap();
}

/// Wait until lapin has answered the broker's channel.close (the channel is neither open nor
/// closing any more), polling its state; fails after 10 s.
async fn channel_closed(ch: &lapin::Channel) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while ch.status().connected() || ch.status().closing() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the broker never closed the channel"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Run one session through `amqpeek proxy --fail-on error EXTRA`, stop the proxy with SIGINT;
/// its exit status and stderr.
async fn gated(bad_ack: bool, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec![
        "--no-tui",
        "--quiet",
        "--upstream",
        support::BROKER,
        "--fail-on",
        "error",
    ];
    args.extend_from_slice(extra);
    let (child, mut stderr, addr) = start_proxy(&args, Stdio::null());
    session(&addr, bad_ack).await;
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    (out.status.code(), err)
}

#[tokio::test]
async fn proxy_fail_on_passes_a_clean_client_and_fails_a_bad_ack_naming_the_rule() {
    if !support::broker_or_skip().await {
        return;
    }
    let (code, err) = gated(false, &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("PASS (--fail-on error): 1 connection(s)"),
        "{err}"
    );

    let (code, err) = gated(true, &[]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FAIL: 1 rule(s) at or above error"), "{err}");
    assert!(
        err.contains(&format!(
            "error {BAD_ACK}: 1 occurrence(s) in 1 finding(s); first: conn 1 client ch1 @"
        )),
        "{err}"
    );
    assert!(err.contains("delivery tag 999"), "{err}");

    // The broker's answer (channel.close 406) is not blamed: the failing rule is the only one.
    assert_eq!(err.matches("occurrence(s) in").count(), 1, "{err}");

    let ignore = format!("client:{BAD_ACK}");
    let (code, err) = gated(true, &["--ignore", &ignore]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("1 finding(s) ignored"), "{err}");
}
