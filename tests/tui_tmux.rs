//! End to end: the built binary replays a tiny JSONL capture into the TUI inside tmux at
//! 80x24; the test reads the screen with `tmux capture-pane` and drives it with keys.
//!
//! Needs tmux (Debian package; `.ci/run` installs it): without it the test fails when `CI` is
//! set and is skipped with a note otherwise.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;

mod tui_support;

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// One AMQP 1.0 connection: both headers, an open each way, and the close.
fn capture(path: &Path) {
    let open = |c: &str| {
        let mut body = vec![0x00, 0x53, 0x10, 0xd0];
        let field = [&[0xa1, c.len() as u8][..], c.as_bytes()].concat();
        body.extend_from_slice(&((field.len() + 4) as u32).to_be_bytes());
        body.extend_from_slice(&1u32.to_be_bytes());
        body.extend_from_slice(&field);
        let mut f = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        f.extend_from_slice(&[2, 0, 0, 0]);
        f.extend_from_slice(&body);
        f
    };
    let hdr = b"AMQP\x00\x01\x00\x00";
    let (o1, o2) = (open("client-x"), open("broker-y"));
    let lines = [
        r#"{"v":1,"ts":"2025-11-29T12:00:00.000000Z","conn":1,"event":"connect","client":"127.0.0.1:50001","upstream":"127.0.0.1:5672"}"#.to_string(),
        format!(r#"{{"v":1,"ts":"2025-11-29T12:00:00.001000Z","conn":1,"event":"header","dir":"c2s","proto":"amqp-1.0","offset":0,"raw":"{}"}}"#, b64(hdr)),
        format!(r#"{{"v":1,"ts":"2025-11-29T12:00:00.002000Z","conn":1,"event":"header","dir":"s2c","proto":"amqp-1.0","offset":0,"raw":"{}"}}"#, b64(hdr)),
        format!(r#"{{"v":1,"ts":"2025-11-29T12:00:00.003000Z","conn":1,"event":"frame","dir":"c2s","proto":"amqp-1.0","offset":8,"raw":"{}","channel":0,"name":"open","fields":{{"container-id":"client-x"}},"summary":"open"}}"#, b64(&o1)),
        format!(r#"{{"v":1,"ts":"2025-11-29T12:00:00.004000Z","conn":1,"event":"frame","dir":"s2c","proto":"amqp-1.0","offset":8,"raw":"{}","channel":0,"name":"open","fields":{{"container-id":"broker-y"}},"summary":"open"}}"#, b64(&o2)),
        format!(r#"{{"v":1,"ts":"2025-11-29T12:00:00.005000Z","conn":1,"event":"close","reason":"client closed","bytes_c2s":{},"bytes_s2c":{}}}"#, 8 + o1.len(), 8 + o2.len()),
    ];
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Wait until the pane shows `what` (or fail with the screen).
fn wait_for(session: &str, what: &str) -> String {
    wait_for_within(session, what, Duration::from_secs(10))
}

/// As [`wait_for`], waiting `limit` at most.
fn wait_for_within(session: &str, what: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let s = tmux(&["capture-pane", "-p", "-t", session]);
        if s.contains(what) {
            return s;
        }
        if start.elapsed() > limit {
            let _ = tmux(&["kill-session", "-t", session]);
            panic!("screen never showed {what:?}:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (10 s at most) until the screen of `session` no longer shows `what`.
fn wait_until_gone(session: &str, what: &str) {
    let start = Instant::now();
    loop {
        let s = tmux(&["capture-pane", "-p", "-t", session]);
        if !s.contains(what) {
            return;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = tmux(&["kill-session", "-t", session]);
            panic!("screen kept showing {what:?}:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A detached tmux session `session` of `size` (columns, rows) running `amqpeek replay ARGS`,
/// then `EXITED <status>` (kept on screen a few seconds).
fn start_replay(session: &str, args: &str, (w, h): (u16, u16)) {
    let cmd = format!(
        "{} replay {args}; echo EXITED $?; sleep 5",
        env!("CARGO_BIN_EXE_amqpeek")
    );
    let (w, h) = (w.to_string(), h.to_string());
    let status = Command::new("tmux")
        .args(["new-session", "-d", "-s", session, "-x", &w, "-y", &h, &cmd])
        .env("TERM", "xterm-256color")
        .status()
        .expect("tmux starts");
    assert!(status.success());
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

#[test]
fn replay_in_tmux_at_80x24_shows_the_connection_help_and_quits() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tiny.jsonl");
    capture(&cap);
    let session = format!("amqpeek-tui-{}", std::process::id());
    start_replay(&session, &cap.display().to_string(), (80, 24));

    let s = wait_for(&session, "Connections 1");
    assert!(s.contains("127.0.0.1:50001 -> "), "{s}");
    let s = wait_for(&session, "end of feed");
    assert!(s.contains("header         amqp-1.0 protocol header"), "{s}");
    assert!(s.lines().any(|l| l.contains("<-   0   open")), "{s}");
    assert_eq!(s.lines().count(), 24, "{s}");
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");

    tmux(&["send-keys", "-t", &session, "?"]);
    let s = wait_for(&session, "amqpeek keys");
    assert!(
        s.contains("first / last row (End, G, F resume follow)"),
        "{s}"
    );
    tmux(&["send-keys", "-t", &session, "Escape"]);
    // A key right after Esc would be read as Alt+key: wait until the Esc closed the overlay.
    wait_until_gone(&session, "amqpeek keys");
    tmux(&["send-keys", "-t", &session, "q"]);
    // The terminal is restored: the shell line after the program is visible.
    let s = wait_for(&session, "EXITED 0");
    assert!(!s.contains("Connections 1"), "alternate screen left: {s}");
    let _ = tmux(&["kill-session", "-t", &session]);
}

/// `q` quits a replay of stdin at once, though the stdin never closes (as with
/// `dumpcap -w - | amqpeek replay -`): the capture comes through a FIFO this test holds open
/// for writing until the end, and amqpeek must be gone well before it.
#[test]
fn q_quits_a_replay_of_a_stdin_that_never_closes() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tiny.jsonl");
    capture(&cap);
    let fifo = dir.path().join("stdin.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    // Read and write: opening does not wait for the reader, and the pipe never ends while
    // this handle lives.
    let mut writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    std::io::Write::write_all(&mut writer, &std::fs::read(&cap).unwrap()).unwrap();
    let session = format!("amqpeek-tui-stdin-{}", std::process::id());
    start_replay(&session, &format!("- < {}", fifo.display()), (80, 24));
    let s = wait_for(&session, "Connections 1");
    assert!(!s.contains("end of feed"), "stdin is still open: {s}");
    wait_for(&session, "connection closed");
    let asked = Instant::now();
    tmux(&["send-keys", "-t", &session, "q"]);
    let s = wait_for(&session, "EXITED 0");
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "q took {:?} to quit",
        asked.elapsed()
    );
    assert!(!s.contains("Connections 1"), "alternate screen left: {s}");
    let _ = tmux(&["kill-session", "-t", &session]);
    drop(writer);
}

/// `tmux -L socket ARGS`: a server of this test's own, whose options touch no other test.
fn tmux_at(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Wait until `check` holds for the screen of `session` on `socket` (or fail with it).
fn wait_at(socket: &str, session: &str, what: &str) -> String {
    let start = Instant::now();
    loop {
        let s = tmux_at(socket, &["capture-pane", "-p", "-t", session]);
        if s.contains(what) {
            return s;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = tmux_at(socket, &["kill-server"]);
            panic!("screen never showed {what:?}:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ends a tmux server of its own when dropped (also when the test fails).
struct KillServer(String);

impl Drop for KillServer {
    fn drop(&mut self) {
        let _ = tmux_at(&self.0, &["kill-server"]);
    }
}

/// In a real terminal: `y` puts the selected frame's hex on the clipboard through OSC 52
/// (tmux takes it into its paste buffer), and that hex decodes as the frame; `e` writes an
/// export that replays.
#[test]
fn y_copies_through_osc52_and_e_exports_from_the_terminal() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tiny.jsonl");
    capture(&cap);
    let out = dir.path().join("conn.jsonl");
    let socket = format!("amqpeek-osc52-{}", std::process::id());
    let _server = KillServer(socket.clone());
    let session = "copy";
    let cmd = format!(
        "cd {} && {} replay {}; sleep 5",
        dir.path().display(),
        env!("CARGO_BIN_EXE_amqpeek"),
        cap.display()
    );
    let started = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            session,
        ])
        .args(["-x", "100", "-y", "30", &cmd])
        .env("TERM", "xterm-256color")
        .status()
        .expect("tmux starts");
    assert!(started.success());
    // tmux takes an application's OSC 52 into a paste buffer.
    tmux_at(&socket, &["set-option", "-s", "set-clipboard", "on"]);
    wait_at(&socket, session, "end of feed");
    // The list follows to its last row (the close); one up is the broker's open.
    tmux_at(&socket, &["send-keys", "-t", session, "Up"]);
    tmux_at(&socket, &["send-keys", "-t", session, "y"]);
    wait_at(&socket, session, "copied open bytes as hex");
    let hex = tmux_at(&socket, &["show-buffer"]);
    let decoded = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["decode", hex.trim()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&decoded.stdout);
    assert!(
        text.contains("@open") && text.contains("broker-y"),
        "{hex}: {text}"
    );

    // e: the export line, what to export cycled with Tab, a path typed over the default.
    tmux_at(&socket, &["send-keys", "-t", session, "e"]);
    wait_at(&socket, session, "export shown to: amqpeek-export.pcapng");
    for _ in 0.."amqpeek-export.pcapng".len() {
        tmux_at(&socket, &["send-keys", "-t", session, "BSpace"]);
    }
    tmux_at(&socket, &["send-keys", "-t", session, "Tab"]);
    tmux_at(&socket, &["send-keys", "-t", session, "-l", "conn.jsonl"]);
    wait_at(&socket, session, "export connection to: conn.jsonl");
    tmux_at(&socket, &["send-keys", "-t", session, "Enter"]);
    wait_at(
        &socket,
        session,
        "exported connection frames of the file: 2 frame(s)",
    );
    tmux_at(&socket, &["send-keys", "-t", session, "q"]);
    let _ = tmux_at(&socket, &["kill-server"]);
    let back = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["replay", out.to_str().unwrap(), "--no-tui"])
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&back.stdout);
    assert_eq!(trace.matches("@open(16)").count(), 2, "{trace}");
}

/// The capture the end-to-end test replays is one the capture reader reads: a connect, the
/// bytes of both headers and both opens, in order, and the close.
#[test]
fn the_tiny_capture_reads_back_as_the_connection_it_describes() {
    use amqpeek::capture::{self, SourceEvent};
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tiny.jsonl");
    capture(&cap);
    let events: Vec<SourceEvent> = capture::open(&cap, Default::default())
        .expect("opens")
        .collect();
    assert!(matches!(
        events.first(),
        Some(SourceEvent::Connect { conn: 1, .. })
    ));
    assert!(matches!(
        events.last(),
        Some(SourceEvent::Close { conn: 1, .. })
    ));
    let mut bytes = [Vec::new(), Vec::new()];
    for e in &events {
        if let SourceEvent::Chunk(c) = e {
            bytes[c.dir.index()].extend_from_slice(&c.bytes);
        }
    }
    for b in &bytes {
        assert_eq!(&b[..8], b"AMQP\x00\x01\x00\x00");
        // Header, then the open: frame header, descriptor, list32 (code, size, count), str8.
        assert_eq!(b.len(), 8 + (8 + 3 + 1 + 4 + 4 + 2 + 8));
    }
}

/// The replay of a generated capture of 200,000 frames (2 connections of
/// 100,000) reaches the whole capture, not only the last 10,000 frames of each connection:
/// `g` shows connection 1's first row, `G` its last, and Enter on the first violation (its 15th
/// frame) selects that frame. Before, `g` stopped at the oldest frame kept and Enter said "no
/// longer in memory".
#[test]
fn a_200k_frame_replay_reaches_its_first_and_last_rows_and_an_early_violation() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("big.jsonl");
    tui_support::write_whole_capture(&cap, 2, 100_000);
    let session = format!("amqpeek-tui-whole-{}", std::process::id());
    start_replay(&session, &cap.display().to_string(), (120, 40));
    // A debug build on a shared machine reads it in well under a minute.
    let long = Duration::from_secs(300);
    wait_for_within(&session, "end of feed", long);
    let s = wait_for(&session, "frames in memory");
    assert!(
        s.contains("of 100,005 frames in memory") || s.contains("of 200,010 frames"),
        "{s}"
    );
    // Connection 1 only, then its first row.
    for k in ["c", "Home", "Down", "Enter", "g"] {
        tmux(&["send-keys", "-t", &session, k]);
    }
    let s = wait_for_within(&session, "header conn 1 -> @0", long);
    assert!(s.contains("amqp-1.0 protocol header"), "{s}");
    tmux(&["send-keys", "-t", &session, "G"]);
    let s = wait_for_within(&session, "close conn 1 ", long);
    assert!(s.contains("connection closed: capture ended"), "{s}");
    // The first violation: connection 1's `end` on channel 7, its 15th frame (Enter selects
    // it in the frame list, `d` shows it in detail).
    for k in ["v", "Home", "Enter", "d"] {
        tmux(&["send-keys", "-t", &session, k]);
    }
    let offset = 8 + tui_support::amqp10::open("c1").len() + 5 * 8;
    let s = wait_for_within(&session, &format!("end conn 1 -> @{offset} ch 7"), long);
    assert!(!s.contains("no longer in memory"), "{s}");
    tmux(&["send-keys", "-t", &session, "q"]);
    wait_for(&session, "EXITED 0");
    let _ = tmux(&["kill-session", "-t", &session]);
}

/// Waits (`limit` at most) until a line of the screen of `session` holds every one of `parts`.
fn wait_line(session: &str, parts: &[&str], limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let s = tmux(&["capture-pane", "-p", "-t", session]);
        if s.lines().any(|l| parts.iter().all(|p| l.contains(p))) {
            return s;
        }
        if start.elapsed() > limit {
            let _ = tmux(&["kill-session", "-t", session]);
            panic!("no line showed {parts:?}:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The search: in the replay of a generated 200,000-frame capture whose
/// `begin`s lie every 9,973 frames (on channels 100, 101, ...), with the filter `name:begin` on,
/// `g` finds the first far before the frames in memory, `>` the next, `G` the last and `<` the
/// one before, the filter staying on; past the last, "no match after". Before, `g` cleared the
/// filter and `>` did nothing.
#[test]
fn a_200k_frame_replay_searches_the_whole_capture_with_the_filter() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("big.jsonl");
    tui_support::write_whole_capture_with(&cap, 2, 100_000, Some(9973));
    let session = format!("amqpeek-tui-search-{}", std::process::id());
    start_replay(&session, &cap.display().to_string(), (120, 40));
    let long = Duration::from_secs(300);
    wait_for_within(&session, "end of feed", long);
    for k in ["c", "Home", "Down", "Enter", "/"] {
        tmux(&["send-keys", "-t", &session, k]);
    }
    tmux(&["send-keys", "-t", &session, "-l", "name:begin"]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let begin = "begin conn 1 -> @";
    for (k, ch) in [("g", 100), (">", 101), ("G", 109), ("<", 108)] {
        tmux(&["send-keys", "-t", &session, k]);
        let s = wait_line(&session, &[begin, &format!(" ch {ch} ")], long);
        assert!(s.contains("/name:begin"), "the filter stays on:\n{s}");
    }
    tmux(&["send-keys", "-t", &session, ">"]);
    wait_line(&session, &[begin, " ch 109 "], long);
    tmux(&["send-keys", "-t", &session, ">"]);
    wait_for_within(&session, "no match after #", long);
    tmux(&["send-keys", "-t", &session, "q"]);
    wait_for(&session, "EXITED 0");
    let _ = tmux(&["kill-session", "-t", &session]);
}

/// `S` in a replay shows the statistics of the whole capture, as `amqpeek stats` prints
/// them: lapin's three confirmed publishes and three acked deliveries.
#[test]
fn s_shows_the_statistics_of_a_replay() {
    if !tmux_or_skip() {
        return;
    }
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/amqp091-lapin.jsonl");
    let session = format!("amqpeek-tui-stats-{}", std::process::id());
    start_replay(&session, &cap.display().to_string(), (140, 50));
    wait_for(&session, "end of feed");
    tmux(&["send-keys", "-t", &session, "S"]);
    let s = wait_for(&session, "Settlement latency");
    for (kind, count) in [("publish->confirm", "3"), ("deliver->ack", "3")] {
        let line = s
            .lines()
            .find(|l| l.contains(kind))
            .unwrap_or_else(|| panic!("{s}"))
            .replace('│', " ");
        assert_eq!(line.split_whitespace().nth(1), Some(count), "{s}");
    }
    assert!(s.contains("channel 1"), "{s}");
    tmux(&["send-keys", "-t", &session, "q"]);
    wait_for(&session, "EXITED 0");
    let _ = tmux(&["kill-session", "-t", &session]);
}

/// Kills the process `pid` when dropped, if it still runs (also when the test fails).
struct KillPid(i32);

impl Drop for KillPid {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .status();
    }
}

/// The terminal going away (here its tmux server killed, as a closed window or a dropped SSH
/// session does) ends the UI at once: it neither keeps running nor spins on the dead terminal.
#[test]
fn the_ui_quits_when_its_terminal_hangs_up() {
    if !tmux_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tiny.jsonl");
    capture(&cap);
    let pid_file = dir.path().join("pid");
    let socket = format!("amqpeek-hangup-{}", std::process::id());
    let _server = KillServer(socket.clone());
    let session = "hangup";
    let cmd = format!(
        "echo $$ > {}; exec {} replay {}",
        pid_file.display(),
        env!("CARGO_BIN_EXE_amqpeek"),
        cap.display()
    );
    let started = Command::new("tmux")
        .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", session, "-x", "100", "-y", "30", &cmd])
        .env("TERM", "xterm-256color")
        .status()
        .expect("tmux starts");
    assert!(started.success());
    wait_at(&socket, session, "Connections 1");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _stray = KillPid(pid);
    let proc_dir = Path::new("/proc").join(pid.to_string());
    assert!(proc_dir.exists(), "the UI runs");
    tmux_at(&socket, &["kill-server"]);
    let start = Instant::now();
    // A zombie until reaped by init: gone means no directory, or its state is Z.
    let running = || {
        std::fs::read_to_string(proc_dir.join("stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    };
    while running() {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "the UI still runs 3 s after its terminal hung up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
