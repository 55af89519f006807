//! `amqpeek bundle` and `proxy --bundle`: real lapin (0-9-1, acking a tag never delivered) and
//! fe2o3 (1.0, SASL PLAIN) sessions through the proxy to RabbitMQ; the proxy writes a bundle
//! at exit, and `amqpeek bundle` makes one of the run's JSONL. Each archive is listed and
//! every file read back: `check` and `stats` of both captures agree with the reports inside,
//! tshark reads the pcapng, the environment names the peers; and no file of the archive
//! carries the password in any form the secrets probe knows.
//!
//! Without RabbitMQ at 127.0.0.1:5672, or without tshark, the test FAILS when env `CI` is set,
//! otherwise it is skipped with a note.

mod cli_common;
mod secrets;
mod support;

#[path = "../examples/demo_amqp091.rs"]
mod demo_client;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cli_common::{amqpeek, start_proxy};

const BAD_ACK: &str = "amqp091.basic.unknown-delivery-tag";

/// Whether tshark runs; its absence with `CI` set is a failure.
fn tshark_or_skip() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark does not run and CI is set"
        );
        eprintln!("note: tshark does not run; skipping");
    }
    ok
}

/// An AMQP 1.0 session with SASL PLAIN through the proxy at `addr`: two messages sent to a
/// queue and received back.
async fn session_10(addr: &str) {
    use fe2o3_amqp::types::messaging::{Body, Message};
    use fe2o3_amqp::types::primitives::Value;
    use fe2o3_amqp::{Connection, Receiver, Sender, Session};
    let url = format!("amqp://guest:guest@{addr}");
    let queue = format!("/queue/amqpeek-bundle-{}", std::process::id());
    let mut connection = Connection::open("amqpeek-bundle-test", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "bundle-sender", queue.as_str())
        .await
        .unwrap();
    for i in 0..2 {
        let msg = Message::builder().value(format!("bundle {i}")).build();
        sender.send(msg).await.unwrap();
    }
    let mut receiver = Receiver::attach(&mut session, "bundle-receiver", queue.as_str())
        .await
        .unwrap();
    for _ in 0..2 {
        let d = receiver.recv::<Body<Value>>().await.unwrap();
        receiver.accept(&d).await.unwrap();
    }
    let _ = receiver.close().await;
    let _ = sender.close().await;
    let _ = session.end().await;
    connection.close().await.unwrap();
}

/// Unpack `archive` into `into`: the entries' paths, in order.
fn unpack(archive: &Path, into: &Path) -> Vec<String> {
    let file = std::fs::File::open(archive).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut names = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        entry.unpack_in(into).unwrap();
        names.push(path);
    }
    names
}

/// `check --format json` of `capture`: the findings as (rule, conn, dir, first offset, count).
fn findings_of(json: &str) -> Vec<cli_common::Found> {
    cli_common::findings_in(&serde_json::from_str(json).unwrap())
}

/// Every check the archive at `archive` must pass: its listing, each file read back, no
/// credential anywhere. `root` is its top folder.
fn verify(archive: &Path, root: &str, tshark: bool) {
    let dir = tempfile::tempdir().unwrap();
    let names = unpack(archive, dir.path());
    let folder = format!("{root}/1-");
    let mut want = vec![
        format!("{root}/README.txt"),
        format!("{root}/environment.txt"),
    ];
    let capture_dir = names
        .iter()
        .find(|n| n.starts_with(&folder))
        .map(|n| {
            Path::new(n)
                .parent()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .expect("a capture folder");
    for f in [
        "capture.jsonl",
        "capture.pcapng",
        "check.json",
        "check.junit.xml",
        "check.txt",
        "diagnoses.txt",
        "stats.json",
        "stats.txt",
    ] {
        want.push(format!("{capture_dir}/{f}"));
    }
    assert_eq!(names, want, "{}: the listing", archive.display());

    let at = |n: &str| dir.path().join(n);
    let inside = at(&capture_dir);
    let check_json = std::fs::read_to_string(inside.join("check.json")).unwrap();
    let found = findings_of(&check_json);
    // The client's bad ack (RabbitMQ's own 1.0 findings come too, as `check` reports them).
    assert!(
        found.iter().any(|f| f.0 == BAD_ACK && f.1 == 1),
        "{found:?}"
    );
    for capture in ["capture.jsonl", "capture.pcapng"] {
        let path = inside.join(capture);
        let out = amqpeek(&["check", "--format", "json", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "check of {capture}");
        assert_eq!(
            findings_of(&String::from_utf8_lossy(&out.stdout)),
            found,
            "check of {capture} and the bundle's check.json"
        );
        let out = amqpeek(&["stats", "--format", "json", path.to_str().unwrap()]);
        assert!(out.status.success(), "stats of {capture}");
        let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(inside.join("stats.json")).unwrap())
                .unwrap();
        assert_eq!(
            theirs, ours,
            "stats of {capture} and the bundle's stats.json"
        );
    }
    let text = std::fs::read_to_string(inside.join("check.txt")).unwrap();
    assert!(text.contains(BAD_ACK) && text.contains("FAIL"), "{text}");
    let junit = std::fs::read_to_string(inside.join("check.junit.xml")).unwrap();
    assert!(junit.contains("<testsuite") && junit.contains(BAD_ACK));
    let diag = std::fs::read_to_string(inside.join("diagnoses.txt")).unwrap();
    assert!(diag.contains("Active at the end of the capture:") && diag.contains("Ended:"));
    let readme = std::fs::read_to_string(at(&format!("{root}/README.txt"))).unwrap();
    assert!(readme.contains("capture.pcapng") && readme.contains("check.junit.xml"));
    let env = std::fs::read_to_string(at(&format!("{root}/environment.txt"))).unwrap();
    assert!(
        env.contains(&format!("amqpeek: {}", env!("CARGO_PKG_VERSION"))),
        "{env}"
    );
    assert!(env.contains("client lapin "), "{env}");
    assert!(env.contains("server RabbitMQ "), "{env}");
    assert!(env.contains("os: linux"), "{env}");
    assert!(env.contains("command: "), "{env}");
    if tshark {
        let pcap = inside.join("capture.pcapng");
        let out = Command::new("tshark")
            .args(["-r", pcap.to_str().unwrap(), "-Y", "amqp"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = String::from_utf8_lossy(&out.stdout);
        assert!(lines.contains("AMQP"), "tshark sees no AMQP: {lines}");
        assert!(lines.lines().count() > 10, "{lines}");
    }
    // The secrets probe over every file: the PLAIN response of guest/guest in no form.
    for n in &names {
        let bytes = std::fs::read(at(n)).unwrap();
        secrets::assert_no_password(&String::from_utf8_lossy(&bytes), "guest", "guest", n);
    }
}

#[tokio::test]
async fn the_proxys_bundle_and_amqpeek_bundle_hold_every_report_and_no_credential() {
    if !support::broker_or_skip().await {
        return;
    }
    let tshark = tshark_or_skip();
    let dir = tempfile::tempdir().unwrap();
    let at = |n: &str| dir.path().join(n).display().to_string();
    let (jsonl, at_exit) = (at("run.jsonl"), at("at-exit.tar.gz"));
    let args = [
        "--no-tui",
        "--quiet",
        "--upstream",
        support::BROKER,
        "--jsonl",
        &jsonl,
        "--bundle",
        &at_exit,
    ];
    let (child, mut stderr, addr) = start_proxy(&args, Stdio::null());
    demo_client::exercise(&format!("amqp://guest:guest@{addr}/%2f"), true)
        .await
        .unwrap();
    session_10(&addr).await;
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("bundle "), "{err}");
    verify(Path::new(&at_exit), "at-exit", tshark);

    let made = at("made.tar.gz");
    let out = amqpeek(&["bundle", &jsonl, "-o", &made]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    verify(Path::new(&made), "made", tshark);
    // Nothing is left beside the archives but the run's capture and the archives.
    let mut left: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec![
            dir.path().join("at-exit.tar.gz"),
            dir.path().join("made.tar.gz"),
            dir.path().join("run.jsonl")
        ]
    );
}

#[test]
fn a_bundle_that_cannot_be_written_fails_naming_its_path() {
    let out = amqpeek(&[
        "bundle",
        &cli_common::capture_path("amqp091-bad-ack.jsonl"),
        "-o",
        "/nonexistent-dir/x.tar.gz",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-dir/"), "{err}");
}

#[tokio::test]
async fn with_no_capture_the_proxy_bundles_a_capture_kept_for_it_and_each_ring_dump_gets_one() {
    if !support::broker_or_skip().await {
        return;
    }
    let tshark = tshark_or_skip();
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    let at_exit = dir.path().join("at-exit.tar.gz");
    let args = [
        "--no-tui",
        "--quiet",
        "--upstream",
        support::BROKER,
        "--bundle",
        at_exit.to_str().unwrap(),
        "--ring",
        "1M",
        "--dump-after",
        "0",
        "--dump-dir",
        dumps.to_str().unwrap(),
    ];
    let (child, mut stderr, addr) = start_proxy(&args, Stdio::null());
    demo_client::exercise(&format!("amqp://guest:guest@{addr}/%2f"), true)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let dump_bundle = loop {
        let found = std::fs::read_dir(&dumps).ok().and_then(|d| {
            d.map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        });
        if let Some(p) = found {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no bundle of the dump"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // The bundle is renamed into place whole: once it is there, it is complete.
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    verify(&at_exit, "at-exit", tshark);
    let root = dump_bundle
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".tar.gz", "");
    verify(&dump_bundle, &root, tshark);
    // The capture kept for the bundle is gone: only the bundle and the dumps are left.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["at-exit.tar.gz", "dumps"]);
}
