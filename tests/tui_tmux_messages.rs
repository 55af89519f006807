//! End to end, in a real terminal: lapin publishes through `amqpeek proxy --jsonl` to
//! RabbitMQ, one body holding terminal escapes (set the window title, clear the screen); the
//! built binary replays the capture into the TUI inside tmux at 80x24, and the message view
//! (`b`) shows the bodies while the terminal's title and screen stay as the UI drew them.
//!
//! Needs tmux and the broker: without either the test fails when `CI` is set and is skipped
//! with a note otherwise.

mod cli_common;
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

const EVIL: &[u8] = b"\x1b]2;PWNED-TITLE\x07\x1b[2Jhello-after-escape";

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tmux_or_skip() -> bool {
    if Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is required when CI is set"
    );
    eprintln!("skipping: tmux is not installed");
    false
}

/// Wait (10 s at most) until the pane shows `what` (or fail with the screen).
fn wait_for(session: &str, what: &str) -> String {
    let start = Instant::now();
    loop {
        let s = tmux(&["capture-pane", "-p", "-t", session]);
        if s.contains(what) {
            return s;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = tmux(&["kill-session", "-t", session]);
            panic!("screen never showed {what:?}:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Publish the hostile body and a JSON one through a proxy writing `jsonl`.
async fn record(jsonl: &std::path::Path) {
    let (mut child, _stderr, addr) = cli_common::start_proxy(
        &[
            "--no-tui",
            "--quiet",
            "--upstream",
            &support::broker_addr().to_string(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let queue = format!("amqpeek-tmux-messages-{}", std::process::id());
    ch.queue_declare(
        queue.as_str().into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    for body in [EVIL, br#"{"second":true}"#] {
        ch.basic_publish(
            "".into(),
            queue.as_str().into(),
            BasicPublishOptions::default(),
            body,
            BasicProperties::default(),
        )
        .await
        .unwrap();
    }
    ch.queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    conn.close(200, "bye".into()).await.unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_message_view_shows_a_hostile_body_in_tmux_without_the_terminal_obeying_it() {
    if !tmux_or_skip() || !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("messages.jsonl");
    record(&cap).await;
    let session = format!("amqpeek-tui-messages-{}", std::process::id());
    let cmd = format!(
        "{} replay {}; echo EXITED $?; sleep 5",
        env!("CARGO_BIN_EXE_amqpeek"),
        cap.display()
    );
    let status = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "80",
            "-y",
            "24",
            &cmd,
        ])
        .env("TERM", "xterm-256color")
        .status()
        .expect("tmux starts");
    assert!(status.success());
    wait_for(&session, "end of feed");
    let title_before = tmux(&["display-message", "-p", "-t", &session, "#{pane_title}"]);
    // The publishes only; the cursor follows to the last.
    tmux(&["send-keys", "-t", &session, "/"]);
    tmux(&["send-keys", "-t", &session, "-l", "name:basic.publish"]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    wait_for(&session, "/name:basic.publish");
    tmux(&["send-keys", "-t", &session, "b"]);
    let s = wait_for(&session, "Messages of channel 1 of conn 1: 2");
    assert!(s.contains("\"second\": true"), "the JSON body:\n{s}");
    tmux(&["send-keys", "-t", &session, "g"]);
    let s = wait_for(&session, "hello-after-escape");
    assert!(s.contains("PWNED-TITLE"), "the escape shown as text:\n{s}");
    assert!(
        s.contains("Messages of channel 1 of conn 1: 2"),
        "the screen was not cleared:\n{s}"
    );
    let title = tmux(&["display-message", "-p", "-t", &session, "#{pane_title}"]);
    assert!(
        !title.contains("PWNED"),
        "the terminal obeyed the body: {title}"
    );
    assert_eq!(title, title_before);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let s = wait_for(&session, "message 1: 3 frame(s)");
    assert!(!s.contains("Messages of"), "{s}");
    tmux(&["send-keys", "-t", &session, "q"]);
    wait_for(&session, "EXITED 0");
    let _ = tmux(&["kill-session", "-t", &session]);
}
