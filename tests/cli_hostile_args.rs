//! The command line given what no one means: filters nested past reason, numbers outside what
//! their option or field holds, files that are no files (FIFOs, devices, directories, huge
//! files), outputs that are one file through a symlink not created yet. Each is refused
//! quickly, with exit status 2 and a message naming the option, the limit or the path; the
//! values at the limits are taken.

mod cli_common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_common::{capture_path, start_proxy};

/// `args` for a message: each cut to 60 characters (a hostile filter is 20,000).
fn shown(args: &[&str]) -> Vec<String> {
    args.iter()
        .map(|a| match a.char_indices().nth(60) {
            Some((i, _)) => format!("{}...", &a[..i]),
            None => a.to_string(),
        })
        .collect()
}

/// `amqpeek ARGS` run to its end (killed, and the test failed, when it is still running after
/// 10 s: what should have been refused was not); its exit status and stderr.
fn refused_within(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes: a long message must not fill the pipe and stall the child.
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "amqpeek {:?} was not refused: still running after 10 s",
                shown(args)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), reader.join().unwrap())
}

/// Asserts `amqpeek ARGS` exits 2 at once with a message containing each of `says`.
fn assert_refused(args: &[&str], says: &[&str]) {
    let (code, err) = refused_within(args);
    let args = shown(args);
    // The message's end, for the test's own message: a refused value may be echoed at length.
    let tail: String = err
        .chars()
        .rev()
        .take(500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(code, Some(2), "amqpeek {args:?}: ...{tail}");
    for s in says {
        assert!(
            err.contains(s),
            "amqpeek {args:?} should say {s:?}: ...{tail}"
        );
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_run_of_negations_past_the_limit_is_refused_naming_it_not_a_crash() {
    let cap = capture_path("amqp091-lapin.jsonl");
    let deepest = format!("{}name:open", "!".repeat(16));
    let (code, err) =
        refused_within(&["replay", "--no-tui", "--quiet", "--filter", &deepest, &cap]);
    assert_eq!(code, Some(0), "{err}");
    let hostile = format!("{}x", "!".repeat(20_000));
    for cmd in ["replay", "stats"] {
        assert_refused(&[cmd, "--filter", &hostile, &cap], &["at most 16"]);
    }
}

#[test]
fn numbers_outside_their_range_are_refused_and_the_limits_taken() {
    let cap = capture_path("amqp091-lapin.jsonl");
    // The limits themselves are taken.
    let (mut proxy, _stderr, _addr) = start_proxy(
        &[
            "--no-tui",
            "--handshake-timeout",
            "86400",
            "--idle-timeout",
            "86400",
            "--connect-timeout",
            "86400",
            "--max-connections",
            "1",
            "--jobs",
            "256",
        ],
        Stdio::null(),
    );
    proxy.kill().unwrap();
    proxy.wait().unwrap();
    for filter in [
        "delivery-tag:18446744073709551615",
        "delivery-tag:0x0102030405060708090a0b",
        "handle:4294967295",
        "channel:65535",
    ] {
        let (code, err) = refused_within(&["replay", "--quiet", "--filter", filter, &cap]);
        assert_eq!(code, Some(0), "--filter {filter}: {err}");
    }
    let listen = ["proxy", "--no-tui", "--listen", "127.0.0.1:0"];
    // `--flag=value`: a value may start with `-`.
    let proxy_with = |flag: &str, value: &str| {
        let mut a: Vec<String> = listen.iter().map(|a| a.to_string()).collect();
        a.push(format!("{flag}={value}"));
        a
    };
    for (flag, value, says) in [
        ("--handshake-timeout", "1e20", "86400"),
        ("--idle-timeout", "1e20", "86400"),
        ("--connect-timeout", "1e20", "86400"),
        ("--idle-timeout", "nan", "86400"),
        ("--handshake-timeout", "-1", "86400"),
        ("--max-connections", "0", "at least 1"),
        ("--jobs", "100000", "1 to 256"),
        ("--jobs", "4294967296", "1 to 256"),
    ] {
        let args = proxy_with(flag, value);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_refused(&args, &[flag, says]);
    }
    for jobs_cmd in ["replay", "check", "stats"] {
        assert_refused(&[jobs_cmd, "--jobs", "257", &cap], &["1 to 256"]);
    }
    for (filter, says) in [
        (
            "delivery-tag:18446744073709551616",
            "0..=18446744073709551615",
        ),
        ("handle:-1", "0..=4294967295"),
        ("handle:4294967296..5000000000", "0..=4294967295"),
        ("channel:99999999999", "0..=65535"),
        ("conn:18446744073709551616", "0..=18446744073709551615"),
    ] {
        assert_refused(
            &["replay", "--filter", filter, &cap],
            &["out of range", says],
        );
        assert_refused(
            &["stats", "--filter", filter, &cap],
            &["out of range", says],
        );
    }
}

/// A settings file of each kind no settings file is: a FIFO, a directory, a file over 16 MiB
/// (sparse), a character device; what each is called in the message.
fn not_settings(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("settings.fifo");
    mkfifo(&fifo);
    let big = dir.join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((16 << 20) + 1)
        .unwrap();
    vec![
        (fifo, "a FIFO, not a regular file"),
        (dir.to_path_buf(), "a directory, not a regular file"),
        (big, "larger than 16 MiB"),
        (
            PathBuf::from("/dev/zero"),
            "a character device, not a regular file",
        ),
    ]
}

#[test]
fn settings_files_that_are_no_regular_file_or_too_large_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_path("amqp091-lapin.jsonl");
    let listen = ["proxy", "--no-tui", "--listen", "127.0.0.1:0"];
    for (path, what) in not_settings(dir.path()) {
        let p = s(&path);
        let says = [p, what];
        assert_refused(&["check", "--config", p, &cap], &says);
        assert_refused(&["check", "--baseline", p, &cap], &says);
        let mut gated = listen.to_vec();
        gated.extend(["--fail-on", "error", "--baseline", p]);
        assert_refused(&gated, &says);
        let mut ca = listen.to_vec();
        ca.extend(["--upstream-tls", "--ca", p]);
        assert_refused(&ca, &says);
        let mut cert = listen.to_vec();
        cert.extend(["--listen-tls", "--cert", p, "--key", p]);
        assert_refused(&cert, &says);
    }
}

#[test]
fn an_output_fifo_nobody_reads_is_refused_and_one_being_read_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_path("amqp091-lapin.jsonl");
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    let f = s(&fifo);
    let says = [f, "a FIFO no program reads"];
    assert_refused(&["replay", "--quiet", "--jsonl", f, &cap], &says);
    assert_refused(&["replay", "--quiet", "--pcap", f, &cap], &says);
    assert_refused(&["check", "-o", f, &cap], &says);
    assert_refused(&["stats", "-o", f, &cap], &says);
    assert_refused(&["check", "--write-baseline", f, &cap], &says);
    let proxy = ["proxy", "--no-tui", "--listen", "127.0.0.1:0"];
    assert_refused(&[&proxy[..], &["--jsonl", f]].concat(), &says);
    let keylog = ["--upstream-tls", "--insecure", "--keylog", f];
    assert_refused(&[&proxy[..], &keylog].concat(), &says);
    // With a reader (Wireshark's `-i FIFO`), the capture goes into it.
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(reader_path).unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, err) = refused_within(&["replay", "--quiet", "--pcap", f, &cap]);
        if code == Some(0) {
            break;
        }
        // The reader thread may not have opened its end yet.
        assert!(err.contains("no program reads"), "{err}");
        assert!(
            Instant::now() < deadline,
            "the reader never opened the FIFO"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = reader.join().unwrap();
    assert_eq!(
        got.get(..4),
        Some(&[0x0a, 0x0d, 0x0d, 0x0a][..]),
        "a pcapng"
    );
}

#[test]
fn outputs_that_are_one_file_through_a_dangling_symlink_or_the_capture_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_path("amqp091-lapin.jsonl");
    let x = dir.path().join("x.cap");
    let l1 = dir.path().join("l1");
    let l2 = dir.path().join("l2");
    // Relative links, resolved from the link's folder, not the current one.
    std::os::unix::fs::symlink("x.cap", &l1).unwrap();
    std::os::unix::fs::symlink("l1", &l2).unwrap();
    for link in [&l1, &l2] {
        assert_refused(
            &[
                "replay",
                "--quiet",
                "--jsonl",
                s(&x),
                "--pcap",
                s(link),
                &cap,
            ],
            &["same file", s(&x), s(link)],
        );
        assert!(!x.exists(), "nothing may be written when refused");
    }
    // The TLS key log is an output like the captures.
    let tls = ["--upstream-tls", "--insecure", "--keylog", s(&l2)];
    let proxy = [
        "proxy",
        "--no-tui",
        "--listen",
        "127.0.0.1:0",
        "--jsonl",
        s(&x),
    ];
    assert_refused(&[&proxy[..], &tls].concat(), &["same file", "--keylog"]);
    assert!(!x.exists(), "nothing may be written when refused");
    // The baseline over the capture checked, or over the verdict.
    let copy = dir.path().join("copy.jsonl");
    std::fs::copy(&cap, &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    assert_refused(
        &["check", s(&copy), "--write-baseline", s(&copy)],
        &["--write-baseline", "capture being read"],
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        before,
        "the capture is intact"
    );
    assert_refused(
        &["check", &cap, "-o", s(&x), "--write-baseline", s(&l1)],
        &["same file"],
    );
    let (code, err) = refused_within(&["check", &cap, "--write-baseline", s(&l2)]);
    assert_eq!(code, Some(0), "a baseline through links is written: {err}");
    assert!(
        std::fs::read_to_string(&x)
            .unwrap()
            .contains("amqpeek-baseline")
    );
}
