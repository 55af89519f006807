//! `amqpeek proxy` as the built binary: it relays, traces, writes a complete JSONL capture and
//! exits cleanly on SIGINT.

mod cli_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use cli_common::{echo_upstream, start_proxy};

/// A connection through the proxy at `addr` that sends a 0-9-1 header and gets it echoed.
fn header_echoed(addr: &str) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"AMQP\x00\x00\x09\x01").unwrap();
    let mut echoed = [0u8; 8];
    c.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"AMQP\x00\x00\x09\x01");
    c
}

fn sigint(pid: u32) {
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
#[cfg(unix)]
fn sigint_flushes_a_complete_capture_and_exits() {
    let up_addr = echo_upstream();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("cap.jsonl");
    let jsonl_arg = jsonl.to_str().unwrap();
    let up = up_addr.to_string();
    let (child, _stderr, addr) = start_proxy(
        &["--no-tui", "--upstream", &up, "--jsonl", jsonl_arg],
        Stdio::piped(),
    );
    let _c = header_echoed(&addr);
    // SIGINT with the connection still open.
    sigint(child.id());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let trace = String::from_utf8(out.stdout).unwrap();
    assert!(trace.contains(" #1 connect "), "{trace}");
    assert!(trace.contains(" #1 -> header AMQP 0-9-1"), "{trace}");
    assert!(trace.contains(" #1 <- header AMQP 0-9-1"), "{trace}");
    assert!(
        trace.contains(" #1 close: proxy stopped (c2s 8 B, s2c 8 B)"),
        "{trace}"
    );

    let capture = std::fs::read_to_string(&jsonl).unwrap();
    assert!(capture.ends_with('\n'));
    let events: Vec<serde_json::Value> = capture
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["connect", "header", "header", "close"]);
    assert_eq!(events[0]["upstream"], up_addr.to_string());
    assert_eq!(events[3]["reason"], "proxy stopped");
    assert_eq!(events[3]["bytes_s2c"], 8);
}

#[test]
#[cfg(unix)]
fn a_closed_stderr_neither_stops_the_relay_nor_the_shutdown() {
    let up_addr = echo_upstream();
    let up = up_addr.to_string();
    let (mut child, stderr, addr) = start_proxy(
        &["--no-tui", "--quiet", "-v", "--upstream", &up],
        Stdio::null(),
    );
    // Whoever started the proxy stops reading its diagnostics (`-v`: one per connection).
    drop(stderr);
    for _ in 0..3 {
        header_echoed(&addr);
    }
    sigint(child.id());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
