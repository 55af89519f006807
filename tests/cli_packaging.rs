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

/// Every option of a subcommand is in its own page, `amqpeek man SUBCOMMAND` prints the page
/// `--dir` writes, and every page the main page's SUBCOMMANDS section names exists.
#[test]
fn each_subcommand_has_a_page_with_all_its_options() {
    let out = amqpeek().args(["man", "check"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.contains(".TH amqpeek-check 1"),
        "{}",
        &page[..page.len().min(200)]
    );
    for opt in [
        r"\-\-fail\-on",
        r"\-\-write\-baseline",
        r"\-\-jobs",
        r"\-\-format",
    ] {
        assert!(page.contains(opt), "amqpeek-check(1) lacks {opt}");
    }

    let dir = std::env::temp_dir().join(format!("amqpeek-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A folder that does not exist yet is created.
    let nested = dir.join("share/man/man1");
    let out = amqpeek()
        .arg("man")
        .arg("--dir")
        .arg(&nested)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(nested.join("amqpeek-check.1")).unwrap();
    assert_eq!(written, page, "--dir and `man check` give different pages");
    let main = std::fs::read_to_string(nested.join("amqpeek.1")).unwrap();
    for sub in ["decode", "proxy", "replay", "check", "stats"] {
        assert!(
            main.contains(&format!(r"amqpeek\-{sub}(1)")),
            "amqpeek(1) names no {sub} page"
        );
        let sub_page = std::fs::read_to_string(nested.join(format!("amqpeek-{sub}.1")));
        assert!(
            sub_page.is_ok(),
            "amqpeek(1) names amqpeek-{sub}(1), which was not written"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let out = amqpeek().args(["man", "chek"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("decode, proxy, replay, check"));
}

/// The README's completions line works in a home where the folder does not exist yet.
#[test]
fn the_readme_completions_line_works_on_a_fresh_home() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.contains("amqpeek completions bash"))
        .expect("README gives the bash completions line");
    let command = line.split('#').next().unwrap().trim();
    let home = std::env::temp_dir().join(format!("amqpeek-home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_amqpeek"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = Command::new("sh")
        .args(["-c", command])
        .env("HOME", &home)
        .env("PATH", path)
        .status()
        .unwrap();
    assert!(status.success(), "`{command}` failed in a fresh home");
    let script = home.join(".local/share/bash-completion/completions/amqpeek");
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("amqpeek")
    );
    std::fs::remove_dir_all(&home).unwrap();
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
