//! Living with a known broker bug, as the built binary does it on the shipped captures:
//! `--ignore`, `--severity`, `amqpeek.toml` / `--config`, `--write-baseline` / `--baseline`, on
//! `check` and `replay --fail-on`; and the failing rules named on stderr.

mod cli_common;

use std::path::Path;
use std::process::{Command, Output};

use cli_common::capture_path as capture;

/// `amqpeek ARGS` run in `cwd` (where `amqpeek.toml` is looked for).
fn amqpeek_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .output()
        .expect("amqpeek runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const BAD_ACK: &str = "amqp091.basic.unknown-delivery-tag";

#[test]
fn a_failing_check_names_the_failing_rule_with_its_count_and_first_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let out = amqpeek_in(
        dir.path(),
        &["check", "-q", &capture("amqp091-bad-ack.jsonl")],
    );
    // `-q` is not a check option: usage errors are 2, never 1.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = amqpeek_in(
        dir.path(),
        &[
            "check",
            "--format",
            "junit",
            &capture("amqp091-bad-ack.jsonl"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("FAIL: 1 rule(s) at or above error"), "{err}");
    assert!(
        err.contains(&format!(
            "{BAD_ACK}: 1 occurrence(s) in 1 finding(s); first: conn 1 client ch1 @938"
        )),
        "{err}"
    );
}

#[test]
fn ignoring_a_rule_on_the_peer_that_broke_it_passes_and_lists_it_as_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture("amqp091-bad-ack.jsonl");
    // The other peer's findings only: still failing.
    let out = amqpeek_in(
        dir.path(),
        &["check", "--ignore", &format!("server:{BAD_ACK}"), &cap],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    for pattern in [
        format!("client:{BAD_ACK}"),
        "amqp091.basic.*".into(),
        "*".into(),
    ] {
        let out = amqpeek_in(dir.path(), &["check", "--ignore", &pattern, &cap]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{pattern}: {}",
            text(&out.stdout)
        );
        let report = text(&out.stdout);
        assert!(
            report.contains(&format!("(ignored: {pattern})")),
            "{report}"
        );
        assert!(report.contains("1 occurrence ignored -> PASS"), "{report}");
        let out = amqpeek_in(
            dir.path(),
            &["check", "--format", "json", "--ignore", &pattern, &cap],
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["findings"][0]["status"], "ignored");
        assert_eq!(v["ignored"], 1);
        assert_eq!(v["errors"], 0);
    }
    let out = amqpeek_in(dir.path(), &["check", "--ignore", "broker:x", &cap]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn a_severity_override_passes_an_error_or_fails_on_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture("amqp091-bad-ack.jsonl");
    let run = |overrides: &[&str]| {
        let mut args = vec!["check"];
        for o in overrides {
            args.extend(["--severity", o]);
        }
        args.push(&cap);
        amqpeek_in(dir.path(), &args)
    };
    // The client's error judged a warning: the gate at error passes.
    let out = run(&[&format!("client:{BAD_ACK}=warning")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // The server's findings only: nothing changes.
    let out = run(&["server:amqp091.*=info"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    // Everything a warning, then this rule an error again: the last match wins.
    let out = run(&["*=warning", &format!("{BAD_ACK}=error")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains(BAD_ACK), "{}", text(&out.stderr));
    let out = run(&["x=loud"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_config_file_in_the_current_folder_or_named_judges_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture("amqp091-bad-ack.jsonl");
    std::fs::write(
        dir.path().join("amqpeek.toml"),
        format!("ignore = [\"client:{BAD_ACK}\"]\n"),
    )
    .unwrap();
    let out = amqpeek_in(dir.path(), &["check", &cap]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A named file instead, from elsewhere; the command line's --fail-on wins over its own.
    let other = tempfile::tempdir().unwrap();
    let named = dir.path().join("amqpeek.toml");
    std::fs::write(
        &named,
        format!("fail-on = \"warning\"\n[severity]\n\"{BAD_ACK}\" = \"warning\"\n"),
    )
    .unwrap();
    let named = named.to_str().unwrap();
    let out = amqpeek_in(other.path(), &["check", "--config", named, &cap]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("warning amqp091.basic"),
        "{}",
        text(&out.stdout)
    );
    let out = amqpeek_in(
        other.path(),
        &["check", "--config", named, "--fail-on", "error", &cap],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A mistake in the file is exit 2, naming it.
    std::fs::write(dir.path().join("amqpeek.toml"), "fail_on = \"warning\"\n").unwrap();
    let out = amqpeek_in(dir.path(), &["check", &cap]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("amqpeek.toml"),
        "{}",
        text(&out.stderr)
    );
    let out = amqpeek_in(other.path(), &["check", "--config", "missing.toml", &cap]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_baseline_fails_only_on_new_findings() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let baseline = baseline.to_str().unwrap();
    let bad = capture("amqp091-bad-ack.jsonl");
    let out = amqpeek_in(dir.path(), &["check", "--write-baseline", baseline, &bad]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The report printed agrees with the status: judged with the baseline just written.
    let report = text(&out.stdout);
    assert!(report.contains("-> PASS"), "{report}");
    assert!(!report.contains("FAIL"), "{report}");
    assert!(report.contains("(in baseline)"), "{report}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(baseline).unwrap()).unwrap();
    assert_eq!(written["findings"][0]["rule"], BAD_ACK);
    assert_eq!(written["findings"][0]["side"], "client");

    let out = amqpeek_in(dir.path(), &["check", "--baseline", baseline, &bad]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("(in baseline)"),
        "{}",
        text(&out.stdout)
    );
    // A finding of another rule is new.
    let fe2o3 = capture("amqp10-fe2o3.jsonl");
    let out = amqpeek_in(
        dir.path(),
        &[
            "check",
            "--baseline",
            baseline,
            "--fail-on",
            "warning",
            &fe2o3,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    std::fs::write(baseline, "[]").unwrap();
    let out = amqpeek_in(dir.path(), &["check", "--baseline", baseline, &bad]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn replay_judges_with_fail_on_and_the_same_policy() {
    let dir = tempfile::tempdir().unwrap();
    for cap in [
        capture("amqp091-bad-ack.jsonl"),
        capture("amqp091-bad-ack.pcapng"),
    ] {
        let out = amqpeek_in(dir.path(), &["replay", "--no-tui", "-q", &cap]);
        assert_eq!(out.status.code(), Some(0), "no --fail-on, no verdict");
        let out = amqpeek_in(
            dir.path(),
            &["replay", "--no-tui", "-q", "--fail-on", "error", &cap],
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(BAD_ACK), "{}", text(&out.stderr));
        let out = amqpeek_in(
            dir.path(),
            &[
                "replay",
                "--no-tui",
                "-q",
                "--fail-on",
                "error",
                "--ignore",
                BAD_ACK,
                &cap,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("PASS (--fail-on error): 1 connection(s)"),
            "{}",
            text(&out.stderr)
        );
    }
}
