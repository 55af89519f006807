//! `--filter EXPR` headless, as `tshark -Y` has it: on `replay` (the trace, `--jsonl`,
//! `--pcap`) of the shipped captures of real peers (fe2o3-amqp and lapin with RabbitMQ), and
//! on `proxy` between lapin and RabbitMQ, where it filters what is written, never what is
//! relayed. Field terms name any field of the frame (`handle:1`, `delivery-id:1`,
//! `settled:false`, `delivery-tag:2`).
//!
//! Needs tshark and RabbitMQ for two of the tests: without them those fail when `CI` is set.

mod cli_common;
mod support;

use std::process::{Command, Output, Stdio};

use cli_common::{capture_path as capture, start_proxy};

fn amqpeek(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The trace's frame lines (`... -> ch0 @transfer(20) [...]`).
fn frame_lines(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| l.contains(" -> ch") || l.contains(" <- ch"))
        .collect()
}

#[test]
fn field_terms_filter_the_trace_of_a_real_amqp10_session() {
    let cap = capture("amqp10-fe2o3.jsonl");
    let all = stdout(&amqpeek(&["replay", &cap, "--no-tui"]));
    let transfers = frame_lines(&all)
        .into_iter()
        .filter(|l| l.contains("@transfer"))
        .count();
    assert_eq!(transfers, 6, "{all}");

    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "name:transfer handle:1",
    ]));
    let lines = frame_lines(&t);
    assert_eq!(lines.len(), 3, "{t}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("@transfer") && l.contains("[handle=1,")),
        "{t}"
    );
    // The connection stays readable: its connect, headers and close pass.
    assert!(t.lines().next().unwrap().contains("connect"), "{t}");
    assert!(t.contains("header AMQP 1.0 (0 1 0 0)"), "{t}");
    assert!(t.lines().last().unwrap().contains("close:"), "{t}");

    // A number, a boolean and a restricted type's spec name; `!` negates a field term.
    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "delivery-id:1 !dir:s2c",
    ]));
    let lines = frame_lines(&t);
    assert_eq!(lines.len(), 1, "{t}");
    assert!(lines[0].contains("@transfer") && lines[0].contains("delivery-id=1,"));
    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "settled:true name:disposition state:accepted dir:c2s",
    ]));
    assert_eq!(frame_lines(&t).len(), 3, "{t}");
    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "name:attach role:receiver source.address:amqpeek-demo10",
    ]));
    let lines = frame_lines(&t);
    assert_eq!(lines.len(), 2, "{t}");
    assert!(lines.iter().all(|l| l.contains("demo-receiver")), "{t}");
}

/// A frame goes with its own violations: `violations` passes the two flows RabbitMQ sent
/// without delivery-count, each followed by its violation, and the violations of no frame
/// (found at the close); `rule:` passes only the latter when they are the ones named.
#[test]
fn a_frame_passes_with_its_violations_and_lone_violations_by_their_rule() {
    let cap = capture("amqp10-fe2o3.jsonl");
    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "violations",
    ]));
    let body: Vec<&str> = t
        .lines()
        .filter(|l| !l.contains("connect") && !l.contains("header") && !l.contains("close:"))
        .collect();
    assert_eq!(body.len(), 6, "{t}");
    for pair in body[..4].chunks(2) {
        assert!(pair[0].contains("@flow(19)"), "{t}");
        assert!(
            pair[1].contains("!! error amqp10.flow.receiver-delivery-count-missing"),
            "{t}"
        );
    }
    assert!(
        body[4..]
            .iter()
            .all(|l| l.contains("amqp10.link.detach-not-closed")),
        "{t}"
    );

    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "rule:detach-not-closed",
    ]));
    assert!(frame_lines(&t).is_empty(), "{t}");
    assert_eq!(
        t.matches("!! warning amqp10.link.detach-not-closed")
            .count(),
        2,
        "{t}"
    );
    assert!(!t.contains("receiver-delivery-count-missing"), "{t}");
}

#[test]
fn field_terms_filter_a_real_amqp091_session_and_a_bad_filter_is_refused() {
    let cap = capture("amqp091-lapin.jsonl");
    let t = stdout(&amqpeek(&[
        "replay",
        &cap,
        "--no-tui",
        "--filter",
        "delivery-tag:2",
    ]));
    let lines = frame_lines(&t);
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().nth(4).unwrap())
        .collect();
    assert_eq!(names, ["basic.ack", "basic.deliver", "basic.ack"], "{t}");
    assert!(lines.iter().all(|l| l.contains("delivery-tag=2 ")), "{t}");

    let bad = amqpeek(&["replay", &cap, "--no-tui", "--filter", "colour:red"]);
    assert_eq!(bad.status.code(), Some(2), "a usage error");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown filter key 'colour'"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// A filtered JSONL and pcapng hold the passed frames with their own bytes, and the holes the
/// others leave: checked, they report nothing (the holes are gaps, and nothing is judged that
/// the missing frames could explain); tshark dissects exactly the passed frames.
#[test]
fn filtered_captures_hold_the_passed_frames_and_check_clean() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, pcap) = (dir.path().join("f.jsonl"), dir.path().join("f.pcapng"));
    let (j, p) = (jsonl.to_str().unwrap(), pcap.to_str().unwrap());
    let cap = capture("amqp10-fe2o3.pcapng");
    stdout(&amqpeek(&[
        "replay",
        &cap,
        "--quiet",
        "--filter",
        "name:transfer",
        "--jsonl",
        j,
        "--pcap",
        p,
    ]));

    let text = std::fs::read_to_string(&jsonl).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds = |k: &str| events.iter().filter(|e| e["event"] == k).count();
    let frames: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "frame").collect();
    assert_eq!(frames.len(), 6, "{text}");
    assert!(frames.iter().all(|f| f["name"] == "transfer"), "{text}");
    assert_eq!(
        (kinds("connect"), kinds("header"), kinds("close")),
        (1, 4, 1)
    );

    for out in [j, p] {
        let c = amqpeek(&["check", out]);
        assert_eq!(
            c.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&c.stdout)
        );
    }
    let back = stdout(&amqpeek(&["replay", j, "--no-tui"]));
    assert_eq!(frame_lines(&back).len(), 6, "{back}");

    let tshark = Command::new("tshark")
        .args([
            "-r",
            p,
            "-Y",
            "amqp",
            "-T",
            "fields",
            "-e",
            "amqp.performative",
        ])
        .stderr(Stdio::null())
        .output();
    let Ok(tshark) = tshark else {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark is missing (CI is set)"
        );
        eprintln!("note: tshark missing; skipping its part");
        return;
    };
    let dissected: Vec<String> = String::from_utf8_lossy(&tshark.stdout)
        .lines()
        .flat_map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .filter(|p| !p.is_empty())
        .collect();
    // Performative 20 is transfer.
    assert_eq!(
        dissected,
        vec!["20"; 6],
        "tshark dissected the passed frames"
    );
}

/// The proxy filters what it writes, never what it relays: lapin publishes with confirms
/// through it (every confirm comes back), and the JSONL holds only the publishes.
#[tokio::test]
async fn the_proxy_writes_only_what_passes_and_relays_everything() {
    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("p.jsonl");
    let (mut proxy, _stderr, addr) = start_proxy(
        &[
            "--upstream",
            support::BROKER,
            "--quiet",
            "--filter",
            "name:basic.publish",
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let conn = lapin::Connection::connect(&uri, lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.confirm_select(Default::default()).await.unwrap();
    let q = ch
        .queue_declare(
            "".into(),
            lapin::options::QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            Default::default(),
        )
        .await
        .unwrap();
    for i in 0..5u8 {
        let confirm = ch
            .basic_publish(
                "".into(),
                q.name().as_str().into(),
                Default::default(),
                &[i; 10],
                Default::default(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
        assert!(confirm.is_ack(), "message {i} confirmed through the proxy");
    }
    conn.close(200, "bye".into()).await.unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    assert!(proxy.wait().unwrap().success());

    let text = std::fs::read_to_string(&jsonl).unwrap();
    let frames: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "frame")
        .collect();
    assert_eq!(frames.len(), 5, "{text}");
    assert!(
        frames.iter().all(|f| f["name"] == "basic.publish"),
        "{text}"
    );
}
