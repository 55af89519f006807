//! `amqpeek check -` and `amqpeek replay -`: a capture read from stdin, as `tcpdump -U -w -`
//! writes it, gives what the file gives, and a replay shows each frame as it arrives.

mod cli_common;
mod wait;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use cli_common::{capture_path as path, lines_of, spawn_piped};

fn capture(name: &str) -> Vec<u8> {
    std::fs::read(path(name)).unwrap()
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = spawn_piped(args);
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.unwrap_or_default().to_vec();
    // Written in small pieces from another thread: reads from the pipe return short.
    let writer = std::thread::spawn(move || {
        for piece in bytes.chunks(777) {
            if input.write_all(piece).is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_capture_on_stdin_gives_what_the_file_gives() {
    for name in [
        "amqp091-bad-ack.pcapng",
        "amqp091-lapin.pcapng",
        "amqp10-fe2o3.pcapng",
        "amqp10-fe2o3.jsonl",
    ] {
        let bytes = capture(name);
        for args in [
            &["check", "--format", "json"][..],
            &["replay", "--no-tui"][..],
        ] {
            let from_file = run(&[args, &[path(name).as_str()]].concat(), None);
            let from_stdin = run(&[args, &["-"]].concat(), Some(&bytes));
            assert_eq!(
                from_stdin.status.code(),
                from_file.status.code(),
                "{name} {args:?}: {}",
                text(&from_stdin.stderr)
            );
            let (a, b) = (text(&from_file.stdout), text(&from_stdin.stdout));
            assert!(a.lines().count() > 5, "{name} {args:?}: {a}");
            // The verdict names its input: the path, or stdin.
            assert_eq!(
                b.replace("<stdin>", "INPUT"),
                a.replace(&path(name), "INPUT"),
                "{name} {args:?}"
            );
        }
    }
}

#[test]
fn stdin_that_is_no_capture_is_refused() {
    let out = run(&["check", "-"], Some(b"GET / HTTP/1.1\r\n\r\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not a pcap, pcapng or amqpeek JSONL"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["check", "-"], Some(b""));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn a_replay_from_stdin_shows_frames_before_the_capture_ends() {
    let bytes = capture("amqp091-lapin.pcapng");
    let mut child = spawn_piped(&["replay", "--no-tui", "-"]);
    let mut input = child.stdin.take().unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    // The first half of the capture, then nothing more for now: what it holds must show.
    let half = bytes.len() / 2;
    input.write_all(&bytes[..half]).unwrap();
    input.flush().unwrap();
    let mut early = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        early.push(line);
        if early.iter().any(|l| l.contains("connection.open-ok")) {
            break;
        }
    }
    assert!(
        early.iter().any(|l| l.contains("connection.open-ok")),
        "the frames of the first half show while stdin is still open: {early:#?}"
    );
    input.write_all(&bytes[half..]).unwrap();
    drop(input);
    let mut all = early;
    all.extend(rx.iter());
    assert!(child.wait().unwrap().success());
    let from_file = run(&["replay", "--no-tui", &path("amqp091-lapin.pcapng")], None);
    assert_eq!(all.join("\n") + "\n", text(&from_file.stdout));
}

/// Whether `pid` has a SIGINT handler installed, and whether a SIGINT is pending (sent, not
/// yet handled), from `/proc/PID/status`.
fn sigint_state(pid: u32) -> (bool, bool) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let has_sigint = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << 1) != 0)
    };
    (
        has_sigint("SigCgt:"),
        has_sigint("SigPnd:") || has_sigint("ShdPnd:"),
    )
}

/// Waits (10 s at most) until `pid` catches SIGINT.
fn wait_catching_sigint(pid: u32) {
    wait::until("the SIGINT handler", Duration::from_secs(10), || {
        sigint_state(pid).0.then_some(())
    });
}

/// Sends SIGINT to `pid` and waits until it has been handled, so that a second one is not
/// merged with it.
fn interrupt(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -INT {pid}");
    wait::until("SIGINT handled", Duration::from_secs(10), || {
        (!sigint_state(pid).1).then_some(())
    });
}

#[test]
fn a_first_ctrl_c_lets_check_finish_when_the_capture_ends_and_a_second_quits() {
    let bytes = capture("amqp091-bad-ack.pcapng");
    let start = |bytes: &[u8]| {
        let mut child = spawn_piped(&["check", "-"]);
        let mut input = child.stdin.take().unwrap();
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
        // Ctrl-C is only meaningful once amqpeek handles it.
        wait_catching_sigint(child.id());
        (child, input)
    };
    // Ctrl-C reaches the capturing program too, which ends the pipe: the verdict follows.
    let (child, mut input) = start(&bytes[..bytes.len() / 2]);
    interrupt(child.id());
    input.write_all(&bytes[bytes.len() / 2..]).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("amqp091.basic.unknown-delivery-tag"),
        "{report}"
    );
    assert!(report.contains("-> FAIL"), "{report}");
    // A second Ctrl-C quits at once, input still open.
    let (child, input) = start(&bytes[..bytes.len() / 2]);
    interrupt(child.id());
    interrupt(child.id());
    // Should it not quit, the input ends after a while and the status says so.
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(10));
        drop(input);
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
}

#[test]
fn stdin_that_is_a_terminal_is_refused_at_once() {
    // `script` (util-linux) runs the command on a pseudo-terminal of its own.
    let cmd = format!("{} check -", env!("CARGO_BIN_EXE_amqpeek"));
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("stdin is a terminal"),
        "{}",
        text(&out.stdout)
    );
}
