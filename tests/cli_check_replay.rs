//! `amqpeek check` and `amqpeek replay`, run as the built binary on the captures shipped in
//! `captures/` (real lapin and fe2o3-amqp sessions with RabbitMQ).

mod cli_common;

use std::path::PathBuf;

use cli_common::capture_path as capture;
use std::process::{Command, Output};

fn amqpeek(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .output()
        .expect("amqpeek runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_clean_capture_passes_and_a_broken_one_fails_with_its_rule_in_every_format() {
    for file in ["amqp091-lapin.jsonl", "amqp091-lapin.pcapng"] {
        let out = amqpeek(&["check", &capture(file)]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stdout));
        assert!(
            text(&out.stdout).contains("-> PASS"),
            "{}",
            text(&out.stdout)
        );
    }
    for file in ["amqp091-bad-ack.jsonl", "amqp091-bad-ack.pcapng"] {
        let out = amqpeek(&["check", &capture(file)]);
        assert_eq!(out.status.code(), Some(1), "{file}: {}", text(&out.stdout));
        let report = text(&out.stdout);
        assert!(
            report.contains("amqp091.basic.unknown-delivery-tag"),
            "{report}"
        );
        assert!(report.contains("delivery-tag=999"), "{report}");

        let out = amqpeek(&["check", "--format", "json", &capture(file)]);
        assert_eq!(out.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["verdict"], "fail");
        assert_eq!(v["errors"], 1);
        assert_eq!(
            v["findings"][0]["rule"],
            "amqp091.basic.unknown-delivery-tag"
        );
        assert_eq!(v["findings"][0]["side"], "client");
        assert_eq!(v["findings"][0]["channel"], 1);
        assert_eq!(v["findings"][0]["occurrences"][0]["offset"], 938);
        assert_eq!(
            v["failing"][0]["rule"],
            "amqp091.basic.unknown-delivery-tag"
        );

        let out = amqpeek(&["check", "--format", "junit", &capture(file)]);
        let xml = text(&out.stdout);
        assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
        assert!(xml.contains("name=\"amqp091.basic.unknown-delivery-tag\""));
    }
}

#[test]
fn warnings_fail_only_when_asked() {
    // The clean lapin capture with its closing handshake an hour late: both peers were silent
    // for longer than two heartbeat intervals, a SHOULD, so warnings only.
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.jsonl");
    let shipped = std::fs::read_to_string(capture("amqp091-lapin.jsonl")).unwrap();
    let mut lines: Vec<String> = shipped.lines().map(String::from).collect();
    let close = lines
        .iter()
        .position(|l| l.contains("\"name\":\"connection.close\""))
        .expect("the capture closes the connection");
    for l in &mut lines[close..] {
        *l = l.replace("\"ts\":\"2026-11-29T13:", "\"ts\":\"2026-11-29T14:");
    }
    std::fs::write(&late, lines.join("\n") + "\n").unwrap();
    let cap = late.to_str().unwrap();
    let out = amqpeek(&["check", cap]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("amqp091.heartbeat.missed"));
    let out = amqpeek(&["check", "--fail-on", "warning", cap]);
    assert_eq!(out.status.code(), Some(1));
    // RabbitMQ 3.10's receiver flows omit delivery-count, a MUST (§2.7.4): an error by default.
    let out = amqpeek(&["check", &capture("amqp10-fe2o3.jsonl")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(report.contains("amqp10.flow.receiver-delivery-count-missing"));
    assert!(report.contains("amqp10.link.detach-not-closed"));
}

#[test]
fn unreadable_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"this is not a capture at all\n").unwrap();
    let junk = junk.to_str().unwrap();
    for args in [vec!["check", junk], vec!["replay", "--no-tui", junk]] {
        let out = amqpeek(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = amqpeek(&["check", dir.path().join("missing.pcap").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn jobs_change_nothing_in_the_verdict_or_the_exit_status() {
    for file in [
        "amqp091-bad-ack.pcapng",
        "amqp10-fe2o3.jsonl",
        "amqp091-lapin.pcapng",
    ] {
        for format in ["text", "json", "junit"] {
            let base = ["check", "--fail-on", "warning", "--format", format];
            let one = amqpeek(&[&base[..], &["--jobs", "1", &capture(file)]].concat());
            let three = amqpeek(&[&base[..], &["-j", "3", &capture(file)]].concat());
            let default = amqpeek(&[&base[..], &[capture(file).as_str()]].concat());
            for other in [&three, &default] {
                assert_eq!(other.status.code(), one.status.code(), "{file} {format}");
                assert_eq!(text(&other.stdout), text(&one.stdout), "{file} {format}");
            }
        }
    }
    let out = amqpeek(&["check", "--jobs", "0", &capture("amqp091-lapin.jsonl")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn replay_writes_the_same_jsonl_and_trace_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["amqp10-fe2o3.pcapng", "amqp091-bad-ack.jsonl"] {
        let mut seen = Vec::new();
        for jobs in ["1", "3"] {
            let jsonl = dir.path().join(format!("{jobs}.jsonl"));
            let out = amqpeek(&[
                "replay",
                "--no-tui",
                "--jobs",
                jobs,
                "--jsonl",
                jsonl.to_str().unwrap(),
                &capture(file),
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            seen.push((text(&out.stdout), std::fs::read(&jsonl).unwrap()));
        }
        assert!(seen[0].0.lines().count() > 40, "{file}: {}", seen[0].0);
        assert!(seen[0] == seen[1], "{file}: 1 and 3 jobs differ");
    }
}

#[test]
fn replay_converts_pcapng_to_jsonl_and_back_with_the_same_frames_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl: PathBuf = dir.path().join("from-pcap.jsonl");
    let pcap: PathBuf = dir.path().join("from-jsonl.pcapng");
    let out = amqpeek(&[
        "replay",
        "--no-tui",
        "--quiet",
        "--jsonl",
        jsonl.to_str().unwrap(),
        &capture("amqp10-fe2o3.pcapng"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = amqpeek(&[
        "replay",
        "--no-tui",
        "--quiet",
        "--pcap",
        pcap.to_str().unwrap(),
        jsonl.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // The frames (direction, offset, name) are the same in the shipped JSONL and in the
    // JSONL converted from the shipped pcapng.
    let frames = |p: &str| -> Vec<(String, u64, String)> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["event"] == "frame")
            .map(|v| {
                (
                    v["dir"].as_str().unwrap().to_string(),
                    v["offset"].as_u64().unwrap(),
                    v["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let shipped = frames(&capture("amqp10-fe2o3.jsonl"));
    assert!(shipped.len() > 20, "{shipped:?}");
    assert_eq!(frames(jsonl.to_str().unwrap()), shipped);

    // And the pcapng rebuilt from that JSONL gets the same verdict.
    let a = amqpeek(&["check", "--format", "json", &capture("amqp10-fe2o3.jsonl")]);
    let b = amqpeek(&["check", "--format", "json", pcap.to_str().unwrap()]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(a["frames"], b["frames"]);
    assert_eq!(a["warnings"], b["warnings"]);
    assert_eq!(a["errors"], b["errors"]);
}

#[test]
fn replay_without_a_terminal_prints_the_trace_with_credentials_masked() {
    let out = amqpeek(&["replay", &capture("amqp091-lapin.pcapng")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace = text(&out.stdout);
    assert!(trace.contains("-> ch0 connection.start-ok"), "{trace}");
    assert!(trace.contains("password=\"*****\""), "{trace}");
    assert!(!trace.contains("password=\"guest\""));
    assert!(trace.contains("basic.publish"));
}

/// The trace line of the transfer completing an AMQP 1.0 message shows its body, as a 0-9-1
/// content-body line does (the issue saw only "(payload 39 bytes)").
#[test]
fn the_trace_shows_an_amqp10_messages_body() {
    let path = capture("amqp10-fe2o3.jsonl");
    let out = amqpeek(&["replay", "--no-tui", &path]);
    let trace = text(&out.stdout);
    let transfers: Vec<&str> = trace.lines().filter(|l| l.contains("@transfer")).collect();
    assert!(!transfers.is_empty(), "{trace}");
    for line in &transfers {
        assert!(line.contains(" body \"hello from amqpeek demo"), "{line}");
    }
}
