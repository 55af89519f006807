//! What packaging gives a user: shell completions and a man page generated from the command
//! line's definition, and logs that carry colour only on a terminal (a log written to a file
//! has no escape codes).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn amqpeek() -> Command {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
}

#[test]
fn completions_cover_every_command() {
    let out = amqpeek().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8(out.stdout).unwrap();
    for cmd in ["decode", "proxy", "replay", "check", "--fail-on", "--jsonl"] {
        assert!(script.contains(cmd), "bash completion lacks {cmd}");
    }
    let out = amqpeek().args(["completions", "zsh"]).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("#compdef amqpeek")
    );
}

#[test]
fn the_man_page_is_roff_naming_every_command() {
    let out = amqpeek().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.contains(".TH amqpeek 1"),
        "{}",
        &page[..page.len().min(200)]
    );
    for cmd in ["decode", "proxy", "replay", "check"] {
        assert!(page.contains(cmd), "man page lacks {cmd}");
    }
}

#[test]
fn logs_written_to_a_file_carry_no_escape_codes() {
    // The proxy logs where it listens at info level, on stderr: here a pipe, not a terminal.
    let mut proxy = amqpeek()
        .args([
            "proxy",
            "--no-tui",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
        ])
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(proxy.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(line.contains("listening on"), "{line:?}");
    assert!(
        !line.contains('\x1b'),
        "escape codes in a log that is not a terminal: {line:?}"
    );
}
