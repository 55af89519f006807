//! A live capture piped in: Wireshark's `dumpcap` captures the loopback while a lapin client
//! breaks the ack rule against RabbitMQ, and `amqpeek replay -` reports the violation while
//! the capture is still running. Needs the broker and `dumpcap` (Debian package `tshark`, which
//! `.ci/run` installs) with the right to capture; with `CI` set, a missing one fails the test.

mod cli_common;
mod support;
mod wait;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cli_common::lines_of;

/// `dumpcap` capturing the broker's port and `probe`'s on the loopback to its stdout, once it
/// says it captures; `None` (with a note) when it cannot run here and CI is not set.
fn start_dumpcap(probe: &wait::Probe) -> Option<Child> {
    let filter = format!("tcp port 5672 or tcp port {}", probe.addr().port());
    let spawned = Command::new("dumpcap")
        .args(["-q", "-i", "lo", "-f", &filter, "-w", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "dumpcap: {e} (CI is set)");
            eprintln!("note: dumpcap does not run here ({e}); skipping");
            return None;
        }
    };
    // It says so on stderr when it captures, or why it cannot.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            assert!(
                std::env::var_os("CI").is_none(),
                "dumpcap cannot capture (CI is set): {said}"
            );
            eprintln!("note: dumpcap cannot capture here: {said}; skipping");
            let _ = child.wait();
            return None;
        }
        said.push_str(&line);
        if line.contains("Capturing on") {
            break;
        }
    }
    // Keep draining its stderr so that it never blocks on it.
    std::thread::spawn(move || for _ in stderr.lines() {});
    Some(child)
}

/// Sends a bare 0-9-1 protocol header to `probe` until `replay -` shows one: from then on the
/// capture is running and reaches amqpeek. Returns the lines seen meanwhile.
fn wait_until_capturing(
    probe: &wait::Probe,
    rx: &std::sync::mpsc::Receiver<String>,
) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..40 {
        probe.send_raw(b"AMQP\x00\x00\x09\x01");
        while let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
            let hit = line.contains("header AMQP 0-9-1");
            seen.push(line);
            if hit {
                return seen;
            }
        }
    }
    panic!("the probe's header never showed through dumpcap and replay -: {seen:#?}");
}

/// Acks a delivery tag the broker never sent; RabbitMQ closes the channel (406).
async fn bad_ack() {
    use lapin::options::BasicAckOptions;
    use lapin::{Connection, ConnectionProperties};
    let uri = format!("amqp://guest:guest@{}/%2f", support::BROKER);
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let _ = ch.basic_ack(999, BasicAckOptions::default()).await;
    // Wait for the broker's channel.close to arrive.
    for _ in 0..100 {
        if !ch.status().connected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = conn.close(200, "bye".into()).await;
}

#[tokio::test]
async fn a_violation_shows_while_dumpcap_is_still_capturing() {
    if !support::broker_or_skip().await {
        return;
    }
    let probe = wait::Probe::new();
    let Some(mut dumpcap) = start_dumpcap(&probe) else {
        return;
    };
    let mut amqpeek = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["replay", "--no-tui", "-"])
        .stdin(Stdio::from(dumpcap.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(amqpeek.stdout.take().unwrap());
    let mut seen = wait_until_capturing(&probe, &rx);
    bad_ack().await;
    let found = loop {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => {
                let hit = line.contains("amqp091.basic.unknown-delivery-tag");
                seen.push(line);
                if hit {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    let still_capturing = dumpcap.try_wait().unwrap().is_none();
    let _ = dumpcap.kill();
    let _ = dumpcap.wait();
    let status = amqpeek.wait().unwrap();
    assert!(found, "no violation line: {seen:#?}");
    assert!(
        still_capturing,
        "dumpcap stopped before the violation showed"
    );
    assert!(
        seen.iter().any(|l| l.contains("connection.start-ok")),
        "the whole conversation shows: {seen:#?}"
    );
    assert!(status.success(), "amqpeek ends with the pipe: {status}");
}
