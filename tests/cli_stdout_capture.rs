//! `--jsonl -` and `--pcap -`: a capture written to stdout (into `jq`, or into Wireshark live
//! with `wireshark -k -i -`), with nothing else on stdout. The live test runs lapin through
//! `amqpeek proxy --pcap -` into a real `tshark -i -` against RabbitMQ.

mod cli_common;
mod support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use cli_common::{capture_path as capture, lines_of, start_proxy};

fn amqpeek(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_capture_on_stdout_is_the_file_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["amqp10-fe2o3.pcapng", "amqp091-bad-ack.jsonl"] {
        for (flag, file) in [("--jsonl", "out.jsonl"), ("--pcap", "out.pcapng")] {
            let path = dir.path().join(file);
            let to_file = amqpeek(&[
                "replay",
                "--quiet",
                &capture(name),
                flag,
                path.to_str().unwrap(),
            ]);
            assert!(to_file.status.success());
            let written = std::fs::read(&path).unwrap();
            assert!(written.len() > 1000, "{name} {flag}");
            // No `--quiet`: the trace gives way to the capture.
            let to_stdout = amqpeek(&["replay", &capture(name), flag, "-"]);
            assert!(to_stdout.status.success(), "{name} {flag}");
            assert!(
                to_stdout.stdout == written,
                "{name} {flag}: stdout is the file, byte for byte"
            );
        }
    }
    let both = amqpeek(&[
        "replay",
        &capture("amqp10-fe2o3.pcapng"),
        "--jsonl",
        "-",
        "--pcap",
        "-",
    ]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "a usage error is not a violation"
    );
    assert!(String::from_utf8_lossy(&both.stderr).contains("both ask for stdout"));
}

#[tokio::test]
async fn the_proxy_feeds_tshark_live_through_a_pipe() {
    if !support::broker_or_skip().await {
        return;
    }
    let tshark = Command::new("tshark").arg("--version").output();
    if tshark.is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark is missing (CI is set)"
        );
        eprintln!("note: tshark missing; skipping");
        return;
    }
    let (mut proxy, _stderr, addr) = start_proxy(
        &["--upstream", support::BROKER, "--pcap", "-"],
        Stdio::piped(),
    );
    let mut tshark = Command::new("tshark")
        .args([
            "-l",
            "-i",
            "-",
            "-Y",
            "amqp",
            "-T",
            "fields",
            "-e",
            "amqp.method.method",
        ])
        .stdin(Stdio::from(proxy.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines_of(tshark.stdout.take().unwrap());
    // A lapin connection through the proxy, kept open while tshark is read.
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let conn = lapin::Connection::connect(&uri, lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let _ch = conn.create_channel().await.unwrap();
    // tshark prints 0-9-1 method numbers: connection start 10, start-ok 11, tune 30,
    // tune-ok 31, open 40, open-ok 41, then channel open 10, open-ok 11.
    let expected = ["10", "11", "30", "31", "40", "41", "10", "11"];
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        match rx.recv_timeout(Duration::from_secs(15)) {
            // One line per packet: frames sharing a packet are comma-separated.
            Ok(line) => seen.extend(line.split(',').map(str::to_string)),
            Err(_) => break,
        }
    }
    let still_running = proxy.try_wait().unwrap().is_none();
    let _ = conn.close(200, "bye".into()).await;
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    let status = proxy.wait().unwrap();
    let _ = tshark.wait();
    assert_eq!(
        seen, expected,
        "tshark dissected the connection's frames live"
    );
    assert!(
        still_running,
        "the frames reached tshark while the proxy ran"
    );
    assert!(status.success(), "{status}");
}
