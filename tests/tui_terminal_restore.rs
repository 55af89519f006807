//! The terminal the UI took is given back however the UI ends: killed by SIGTERM or SIGINT
//! from outside, or aborted (SIGABRT, the way a stack overflow ends a program). Run in a real
//! terminal (tmux): after amqpeek is gone, the pane is off the alternate screen, no mouse mode
//! is on, and the line discipline is cooked again (`icanon echo`, as `stty` shows it).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `tmux -L SOCKET ARGS`: each session on a server of its own, so tests running at once do
/// not race to start one.
fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tmux_or_skip() -> bool {
    if Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is required when CI is set"
    );
    eprintln!("skipping: tmux is not installed");
    false
}

/// What the pane's terminal is in (the session's server is named as the session): alternate screen on, and any mouse mode on.
fn modes(session: &str) -> (bool, bool) {
    let f = tmux(
        session,
        &[
            "display",
            "-p",
            "-t",
            session,
            "#{alternate_on} #{mouse_any_flag}#{mouse_button_flag}#{mouse_standard_flag}#{mouse_sgr_flag}",
        ],
    );
    let mut it = f.split_whitespace();
    let alt = it.next() == Some("1");
    let mouse = it.next().is_some_and(|m| m.contains('1'));
    (alt, mouse)
}

/// Wait (at most 20 s) until `cond` holds of the pane's screen text; the screen.
fn wait_screen(session: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let screen = tmux(session, &["capture-pane", "-p", "-t", session]);
        if cond(&screen) {
            return screen;
        }
        if Instant::now() > deadline {
            let _ = tmux(session, &["kill-server"]);
            panic!("waiting for {what}; screen:\n{screen}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills the session's tmux server when the test ends, passed or not.
struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = tmux(&self.0, &["kill-server"]);
    }
}

/// The replay UI in a tmux pane, sent `signal` once it owns the terminal; the pane's modes
/// and `stty` after amqpeek is gone.
fn ended_by(signal: &str) -> ((bool, bool), String) {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/amqp091-lapin.jsonl");
    let session = format!("restore-{}-{signal}", std::process::id());
    let _guard = Session(session.clone());
    // `exec`: the pid written is amqpeek's; after it, the shell reports and shows `stty`.
    let cmd = format!(
        "sh -c 'echo $$ > {pid}; exec {bin} replay {cap}'; echo EXITED $?; \
         stty -a | tr ' ;' '\\n\\n' | grep -x -e -icanon -e icanon -e -echo -e echo | \
         tr '\\n' ' '; echo STTY; sleep 30",
        pid = pid_file.display(),
        bin = env!("CARGO_BIN_EXE_amqpeek"),
        cap = cap.display(),
    );
    let status = Command::new("tmux")
        .args([
            "-L",
            &session,
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ])
        .env("TERM", "xterm-256color")
        .status()
        .expect("tmux starts");
    assert!(status.success());
    wait_screen(&session, "the UI", |s| s.contains("amqp"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while modes(&session) != (true, true) {
        assert!(Instant::now() < deadline, "the UI never took the terminal");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let screen = wait_screen(&session, "the shell after amqpeek", |s| s.contains("STTY"));
    (modes(&session), screen)
}

/// Asserts the terminal is as it was after amqpeek ended by `signal`; the pane's screen.
fn assert_restored(signal: &str) -> String {
    let (modes, screen) = ended_by(signal);
    assert_eq!(
        modes,
        (false, false),
        "after SIG{signal}: (alternate screen, mouse) still on:\n{screen}"
    );
    let stty = screen.lines().find(|l| l.contains("STTY")).unwrap_or("");
    assert!(
        stty.contains("icanon") && !stty.contains("-icanon") && !stty.contains("-echo"),
        "after SIG{signal}: the terminal stayed raw: {stty}"
    );
    screen
}

#[test]
fn sigterm_and_sigint_quit_the_ui_and_give_the_terminal_back() {
    if !tmux_or_skip() {
        return;
    }
    for signal in ["TERM", "INT"] {
        let screen = assert_restored(signal);
        // Quit as on `q`: a clean end.
        assert!(screen.contains("EXITED 0"), "SIG{signal}: {screen}");
    }
}

#[test]
fn an_abort_gives_the_terminal_back_before_the_program_ends() {
    if !tmux_or_skip() {
        return;
    }
    let screen = assert_restored("ABRT");
    // The abort still ends the program as one: status 128 + SIGABRT (6).
    assert!(screen.contains("EXITED 134"), "{screen}");
}
