//! `amqpeek wrap -- COMMAND`: the proxy on a free port around one command, as CI runs it. The
//! command sees the proxy's address in its environment; the exit status is the command's when
//! it failed, else the verdict's; the verdict is printed on stderr; SIGINT reaches the command.
//!
//! The tests that relay traffic wrap this test binary playing the client of
//! `examples/demo_amqp091` against RabbitMQ at 127.0.0.1:5672 (guest/guest): without the broker they
//! FAIL when env `CI` is set, otherwise they are skipped with a note.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const RULE: &str = "amqp091.basic.unknown-delivery-tag";

/// `amqpeek ARGS` run to the end (no colour, default diagnostics).
fn amqpeek(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether RabbitMQ answers at 127.0.0.1:5672; unreachable with `CI` set is a failure.
fn broker() -> bool {
    let addr: SocketAddr = "127.0.0.1:5672".parse().unwrap();
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "RabbitMQ at {addr}: {e} (CI is set)"
            );
            eprintln!("skipped: no RabbitMQ at {addr} ({e})");
            false
        }
    }
}

/// The demo client (`examples/demo_amqp091.rs`), compiled into this test binary so the wrapped
/// command needs no other build.
#[path = "../examples/demo_amqp091.rs"]
mod demo_client;

/// Set in the wrapped command's environment: `demo_client_role` then plays the client, and
/// its value `bad-ack` makes it ack a tag the broker never sent.
const DEMO_ROLE: &str = "AMQPEEK_TEST_DEMO_CLIENT";

/// Not a test of its own: when this binary is the command `wrap` runs (env `DEMO_ROLE` set),
/// it runs the demo client against the proxy at `$AMQPEEK_LISTEN` and fails if the client does.
#[test]
fn demo_client_role() {
    let Some(mode) = std::env::var_os(DEMO_ROLE) else {
        return;
    };
    let listen = std::env::var("AMQPEEK_LISTEN").expect("wrap sets AMQPEEK_LISTEN");
    let uri = format!("amqp://guest:guest@{listen}/%2f");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(demo_client::exercise(&uri, mode == "bad-ack"))
        .unwrap_or_else(|e| panic!("demo client against {uri}: {e}"));
}

/// `wrap EXTRA -- THIS_TEST_BINARY demo_client_role`, the client acking a bad tag when `bad_ack`.
fn wrap_demo(extra: &[&str], bad_ack: bool) -> Output {
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    let mut args = vec!["wrap", "-q"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "--",
        me,
        "demo_client_role",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ]);
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(&args)
        .env("NO_COLOR", "1")
        .env(DEMO_ROLE, if bad_ack { "bad-ack" } else { "clean" })
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_command_is_told_where_the_proxy_listens() {
    let out = amqpeek(&[
        "wrap",
        "-q",
        "--",
        "sh",
        "-c",
        "test -n \"$AMQPEEK_PORT\" && test \"$AMQPEEK_LISTEN\" = \"127.0.0.1:$AMQPEEK_PORT\" \
         && test \"$AMQP_URL\" = \"amqp://127.0.0.1:$AMQPEEK_PORT\"",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("PASS (--fail-on error)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_failing_command_gives_its_own_status() {
    let out = amqpeek(&["wrap", "-q", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited with status 7"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_capture_on_stdout_is_refused() {
    let out = amqpeek(&["wrap", "--jsonl", "-", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--jsonl -: the command's output goes to stdout"),
        "{err}"
    );
}

#[test]
fn clean_traffic_passes() {
    if !broker() {
        return;
    }
    let out = wrap_demo(&[], false);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("PASS (--fail-on error): 1 connection(s)"),
        "{err}"
    );
}

#[test]
fn a_violation_fails_the_gate_naming_the_rule() {
    if !broker() {
        return;
    }
    let out = wrap_demo(&[], true);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("FAIL: 1 rule(s) at or above error"), "{err}");
    assert!(err.contains(RULE), "{err}");
}

#[test]
fn the_jsonl_written_gives_check_the_same_verdict() {
    if !broker() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("amqpeek-wrap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jsonl = dir.join("bad-ack.jsonl");
    let jsonl_s = jsonl.to_str().unwrap();
    let out = wrap_demo(&["--jsonl", jsonl_s], true);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let checked = amqpeek(&["check", jsonl_s]);
    let report = String::from_utf8_lossy(&checked.stdout);
    assert_eq!(
        checked.status.code(),
        Some(1),
        "{report}{}",
        stderr(&checked)
    );
    assert!(report.contains(RULE), "{report}");
    // The same failing rules, as both print them on stderr.
    let failing = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("  error ") || l.contains("FAIL:"))
            .map(|l| l.split(';').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(failing(&stderr(&out)), failing(&stderr(&checked)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_stops_the_command_and_the_proxy() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["wrap", "-q", "--", "sleep", "30"])
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "wrap exited early");
    }
    // Give the command a moment to start after the proxy listens.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "wrap still running 10 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("ended by signal 2"), "{rest}");
}
