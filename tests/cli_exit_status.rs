//! Exit statuses as CI sees them: 0 clean, 1 violations at or above `--fail-on`, 2 anything
//! else (a run that never got to judge anything). Each case here is one that must not be
//! confused with "a peer broke a MUST".

mod cli_common;

use std::net::TcpListener;
use std::process::{Command, Output};

use cli_common::capture_path as capture;

fn amqpeek(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("amqpeek runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A pcap file with its global header and no packet: a valid capture with no connection.
fn empty_pcap(dir: &std::path::Path) -> String {
    let path = dir.join("empty.pcap");
    let mut header = Vec::new();
    header.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // magic, microseconds
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&0i32.to_le_bytes()); // thiszone
    header.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    header.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
    header.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    std::fs::write(&path, header).unwrap();
    path.display().to_string()
}

#[test]
fn an_unwritable_verdict_exits_2_and_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("verdict.txt");
    let path = path.to_str().unwrap();
    // Also on a capture that would fail the gate: 2 wins, the verdict was never delivered.
    for file in ["amqp091-lapin.jsonl", "amqp091-bad-ack.jsonl"] {
        let out = amqpeek(&["check", "-o", path, &capture(file)]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains(path), "{}", stderr(&out));
    }
}

#[test]
fn unwritable_or_unreadable_statistics_exit_2_and_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("stats.json");
    let path = path.to_str().unwrap();
    let out = amqpeek(&[
        "stats",
        "--format",
        "json",
        "-o",
        path,
        &capture("amqp10-fe2o3.jsonl"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(path), "{}", stderr(&out));
    let missing = dir.path().join("missing.pcapng");
    let out = amqpeek(&["stats", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.pcapng"), "{}", stderr(&out));
    // A capture with no AMQP in it is said so, and its (empty) statistics still given.
    let out = amqpeek(&["stats", &empty_pcap(dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no AMQP connection"),
        "{}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 connection(s)"));
}

#[test]
fn a_capture_with_no_amqp_connection_exits_2_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = empty_pcap(dir.path());
    let out = amqpeek(&["check", &pcap]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no AMQP connection"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "no verdict is given for nothing");
    let out = amqpeek(&["check", "--allow-empty", &pcap]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 connection(s)"));
}

#[test]
fn a_port_in_use_exits_2() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = amqpeek(&["proxy", "--no-tui", "--listen", &addr, "--fail-on", "error"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&addr), "{}", stderr(&out));
}

#[test]
fn an_upstream_that_does_not_resolve_exits_2() {
    let out = amqpeek(&[
        "proxy",
        "--no-tui",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "no-such-host.invalid:5672",
        "--fail-on",
        "error",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no-such-host.invalid"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_option_values_exit_2() {
    let out = amqpeek(&[
        "proxy",
        "--no-tui",
        "--listen",
        "127.0.0.1:0",
        "--connect-timeout",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = amqpeek(&[
        "replay",
        &capture("amqp10-fe2o3.pcapng"),
        "--jsonl",
        "-",
        "--pcap",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn an_unwritable_capture_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("out.jsonl");
    let path = path.to_str().unwrap();
    let out = amqpeek(&[
        "replay",
        "--no-tui",
        "-q",
        "--jsonl",
        path,
        &capture("amqp091-lapin.jsonl"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(path), "{}", stderr(&out));
}
