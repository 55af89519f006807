//! The proxy's and replay's captures as the built binary writes them: lossless (the live
//! verdict, `check` of the JSONL and `check` of the pcapng agree: a 0-9-1 publish with a bad
//! frame-end sent to RabbitMQ, a client gone mid-frame), loud when
//! they cannot be written (exit status 2, the output named once, the relay going on), refused
//! when two outputs are one file or the capture read, and complete up to the last flush after
//! `kill -9`.

mod cli_common;

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_common::{echo_upstream, start_proxy};

fn signal(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// One violation: (conn, dir, rule, offset).
type Finding = (u64, String, String, u64);

/// The violations the proxy reported live, from its JSONL.
fn live_findings(jsonl: &Path) -> Vec<Finding> {
    let text = std::fs::read_to_string(jsonl).unwrap();
    let mut out: Vec<Finding> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "violation")
        .map(|v| {
            (
                v["conn"].as_u64().unwrap(),
                v["dir"].as_str().unwrap().to_string(),
                v["rule"].as_str().unwrap().to_string(),
                v["offset"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// `amqpeek check --format json` of a capture.
fn check_findings(capture: &Path) -> Vec<Finding> {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["check", "--format", "json", "--allow-empty"])
        .arg(capture)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "check {}: {}",
        capture.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    for f in doc["findings"].as_array().unwrap() {
        let occurrences = f["occurrences"].as_array().unwrap();
        assert_eq!(
            occurrences.len() as u64,
            f["count"].as_u64().unwrap(),
            "{f}"
        );
        for o in occurrences {
            found.push((
                f["conn"].as_u64().unwrap(),
                f["dir"].as_str().unwrap().to_string(),
                f["rule"].as_str().unwrap().to_string(),
                o["offset"].as_u64().unwrap(),
            ));
        }
    }
    found.sort();
    found
}

/// Run `client` against a proxy to `upstream` that writes both captures; stop the proxy with
/// SIGINT once the client is done. Returns the live verdict, after asserting that `check` of
/// the JSONL and of the pcapng give the same.
fn through_proxy(upstream: SocketAddr, client: impl FnOnce(&str)) -> Vec<Finding> {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("cap.jsonl");
    let pcap = dir.path().join("cap.pcapng");
    let up = upstream.to_string();
    let (mut child, _stderr, addr) = start_proxy(
        &[
            "--no-tui",
            "--quiet",
            "--upstream",
            &up,
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    client(&addr);
    signal("-INT", child.id());
    assert!(child.wait().unwrap().success());
    let live = live_findings(&jsonl);
    assert_eq!(check_findings(&jsonl), live, "check of the JSONL");
    assert_eq!(check_findings(&pcap), live, "check of the pcapng");
    live
}

fn rules(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.2.as_str()).collect()
}

/// Read everything until the peer closes (or resets).
fn drain(mut c: TcpStream) {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 4096];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

#[test]
fn a_client_gone_mid_frame_is_judged_the_same_from_both_captures() {
    let found = through_proxy(echo_upstream(), |addr| {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"AMQP\x00\x01\x00\x00").unwrap();
        let mut echoed = [0u8; 8];
        c.read_exact(&mut echoed).unwrap();
        // 6 bytes of a 20-byte frame, then the client is gone.
        c.write_all(&[0, 0, 0, 20, 2, 0]).unwrap();
        let mut cut = [0u8; 6];
        c.read_exact(&mut cut).unwrap();
        drop(c);
    });
    assert!(
        rules(&found).contains(&"codec.truncated-frame"),
        "{found:?}"
    );
}

/// A 0-9-1 frame: type, channel, payload, frame-end.
fn frame091(kind: u8, channel: u16, payload: &[u8], end: u8) -> Vec<u8> {
    let mut f = vec![kind];
    f.extend_from_slice(&channel.to_be_bytes());
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(payload);
    f.push(end);
    f
}

fn method(class: u16, method: u16, args: &[u8]) -> Vec<u8> {
    [&class.to_be_bytes()[..], &method.to_be_bytes(), args].concat()
}

fn shortstr(s: &str) -> Vec<u8> {
    [&[s.len() as u8][..], s.as_bytes()].concat()
}

fn longstr(s: &[u8]) -> Vec<u8> {
    [&(s.len() as u32).to_be_bytes()[..], s].concat()
}

/// Read one 0-9-1 frame: (type, payload).
fn read_frame(c: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 7];
    c.read_exact(&mut head).unwrap();
    let size = u32::from_be_bytes([head[3], head[4], head[5], head[6]]) as usize;
    let mut rest = vec![0u8; size + 1];
    c.read_exact(&mut rest).unwrap();
    rest.pop();
    (head[0], rest)
}

/// Read frames until the method `class.method` on any channel.
fn read_until(c: &mut TcpStream, class: u16, id: u16) -> Vec<u8> {
    loop {
        let (kind, payload) = read_frame(c);
        if kind == 1 && payload[..4] == method(class, id, &[])[..] {
            return payload;
        }
    }
}

#[test]
fn a_publish_with_a_bad_frame_end_to_rabbitmq_is_judged_the_same_from_both_captures() {
    let broker = "127.0.0.1:5672";
    if TcpStream::connect(broker).is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "RabbitMQ not reachable and CI is set"
        );
        eprintln!("SKIP: RabbitMQ not reachable on {broker}");
        return;
    }
    let found = through_proxy(broker.parse().unwrap(), |addr| {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(b"AMQP\x00\x00\x09\x01").unwrap();
        read_until(&mut c, 10, 10); // start
        let start_ok = [
            &[0u8, 0, 0, 0][..], // client-properties: {}
            &shortstr("PLAIN"),
            &longstr(b"\0guest\0guest"),
            &shortstr("en_US"),
        ]
        .concat();
        c.write_all(&frame091(1, 0, &method(10, 11, &start_ok), 0xce))
            .unwrap();
        let tune = read_until(&mut c, 10, 30);
        c.write_all(&frame091(1, 0, &method(10, 31, &tune[4..]), 0xce))
            .unwrap();
        let open = [&shortstr("/")[..], &shortstr(""), &[0]].concat();
        c.write_all(&frame091(1, 0, &method(10, 40, &open), 0xce))
            .unwrap();
        read_until(&mut c, 10, 41);
        c.write_all(&frame091(1, 1, &method(20, 10, &shortstr("")), 0xce))
            .unwrap();
        read_until(&mut c, 20, 11);
        // basic.publish to the default exchange, its frame-end broken; then its content.
        let publish = [&[0u8, 0][..], &shortstr(""), &shortstr("q"), &[0]].concat();
        let header = [&[0u8, 60, 0, 0][..], &5u64.to_be_bytes(), &[0, 0]].concat();
        let mut rest = frame091(1, 1, &method(60, 40, &publish), 0x00);
        rest.extend(frame091(2, 1, &header, 0xce));
        rest.extend(frame091(3, 1, b"hello", 0xce));
        c.write_all(&rest).unwrap();
        drain(c); // RabbitMQ closes the connection on the framing error
    });
    let r = rules(&found);
    assert!(r.contains(&"codec.malformed-frame"), "{found:?}");
    assert!(
        r.contains(&"amqp091.content.unexpected-header"),
        "{found:?}"
    );
}

#[test]
fn an_unwritable_capture_is_named_once_and_the_run_exits_2_while_the_relay_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("ok.pcapng");
    let up = echo_upstream().to_string();
    let (mut child, mut stderr, addr) = start_proxy(
        &[
            "--no-tui",
            "--quiet",
            "--fail-on",
            "error",
            "--upstream",
            &up,
            "--jsonl",
            "/dev/full",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    let mut c = TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // Many round trips: the JSONL fails at its first flush, the relay carries on.
    for i in 0..50u8 {
        let msg = [b'A', b'M', b'Q', b'P', 0, 0, 9, i];
        c.write_all(&msg).unwrap();
        let mut echoed = [0u8; 8];
        c.read_exact(&mut echoed).unwrap();
        assert_eq!(echoed, msg);
    }
    drop(c);
    signal("-INT", child.id());
    let status = child.wait().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(err.matches("--jsonl /dev/full").count(), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    // The other capture is complete.
    assert!(check_findings(&pcap).iter().all(|f| f.0 == 1));
}

#[test]
fn replay_into_an_unwritable_capture_exits_2_naming_it() {
    let capture = cli_common::capture_path("amqp10-fe2o3.jsonl");
    for flag in ["--jsonl", "--pcap"] {
        let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
            .args(["replay", &capture, "--no-tui", "--quiet", flag, "/dev/full"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert_eq!(
            err.matches(&format!("{flag} /dev/full")).count(),
            1,
            "{err}"
        );
    }
}

#[test]
fn replay_with_one_unwritable_capture_writes_the_other_whole_and_exits_2() {
    // One sink-error policy, live and offline: the failing output is named once, dropped,
    // and the replay goes on with the others (on one thread and on several).
    let dir = tempfile::tempdir().unwrap();
    // 100 copies of a shipped conversation, one after another: many batches, so the failing
    // output fails long before the end.
    let shipped = std::fs::read_to_string(cli_common::capture_path("amqp10-fe2o3.jsonl")).unwrap();
    let mut many = String::new();
    for conn in 1..=100u64 {
        for line in shipped.lines() {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["conn"] = conn.into();
            many.push_str(&v.to_string());
            many.push('\n');
        }
    }
    let capture = dir.path().join("many.jsonl");
    std::fs::write(&capture, many).unwrap();
    let want = check_findings(&capture);
    assert!(want.iter().any(|f| f.0 == 100), "{want:?}");
    let capture = capture.to_str().unwrap().to_string();
    for jobs in ["1", "2"] {
        let pcap = dir.path().join(format!("ok-{jobs}.pcapng"));
        let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
            .args(["replay", &capture, "--no-tui", "--quiet", "--jobs", jobs])
            .args(["--jsonl", "/dev/full", "--pcap"])
            .arg(&pcap)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--jobs {jobs}: {err}");
        assert_eq!(err.matches("--jsonl /dev/full").count(), 1, "{err}");
        let got = check_findings(&pcap);
        assert_eq!(got.len(), want.len(), "--jobs {jobs}: the pcapng is whole");
        assert!(got == want, "--jobs {jobs}: the pcapng's findings");
    }
}

#[test]
fn one_file_as_two_outputs_or_as_the_capture_read_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.jsonl");
    let original = std::fs::read(cli_common::capture_path("amqp10-fe2o3.jsonl")).unwrap();
    std::fs::write(&kept, &original).unwrap();
    let hard = dir.path().join("hard.pcapng");
    std::fs::hard_link(&kept, &hard).unwrap();
    let soft = dir.path().join("soft.pcapng");
    std::os::unix::fs::symlink(&kept, &soft).unwrap();
    let k = kept.to_str().unwrap();
    let new = dir.path().join("new.cap");
    let n = new.to_str().unwrap();
    let dotted = format!("{}/./new.cap", dir.path().display());
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "proxy",
            "--no-tui",
            "--jsonl",
            k,
            "--pcap",
            hard.to_str().unwrap(),
        ],
        vec!["proxy", "--no-tui", "--jsonl", n, "--pcap", &dotted],
        vec!["replay", k, "--no-tui", "--jsonl", k],
        vec!["replay", k, "--no-tui", "--pcap", soft.to_str().unwrap()],
        vec![
            "replay",
            soft.to_str().unwrap(),
            "--no-tui",
            "--jsonl",
            hard.to_str().unwrap(),
        ],
        vec!["check", k, "-o", hard.to_str().unwrap()],
    ];
    for args in cases {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_amqpeek"));
        cmd.args(&args);
        if args[0] == "proxy" {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        let (code, err) = exits_by_itself(cmd);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("same file") || err.contains("capture being read"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            original,
            "{args:?} wrote into it"
        );
        assert!(!new.exists(), "{args:?} created {n}");
    }
}

/// Run `cmd` to its end (killed, and the test failed, if it is still running after 20 s: a
/// proxy that was not refused); its exit status and stderr.
fn exits_by_itself(mut cmd: Command) -> (Option<i32>, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{cmd:?} was not refused: still running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

/// Wait (bounded) until `cond` holds of the file at `path`.
fn wait_for_file(path: &Path, what: &str, cond: impl Fn(&[u8]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let bytes = std::fs::read(path).unwrap_or_default();
        if cond(&bytes) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not in {}",
            path.display()
        );
        std::thread::yield_now();
    }
}

#[test]
fn after_kill_9_the_pcapng_holds_the_incomplete_frame_and_the_jsonl_parses() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("cap.jsonl");
    let pcap = dir.path().join("cap.pcapng");
    let up = echo_upstream().to_string();
    let (mut child, _stderr, addr) = start_proxy(
        &[
            "--no-tui",
            "--quiet",
            "--upstream",
            &up,
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    let mut c = TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // An AMQP 1.0 header, then most of a begin frame that never completes.
    let mut sent = b"AMQP\x00\x01\x00\x00".to_vec();
    sent.extend_from_slice(&[
        0, 0, 0, 0x40, 2, 0, 0, 0, 0x00, 0x53, 0x11, 0xc0, 0x10, 0x04,
    ]);
    sent.extend_from_slice(b"INCOMPLETE-FRAME");
    c.write_all(&sent).unwrap();
    let mut echoed = vec![0u8; sent.len()];
    c.read_exact(&mut echoed).unwrap();
    // The proxy flushes per batch: the held bytes reach the pcapng without the frame ending.
    wait_for_file(&pcap, "the incomplete frame", |b| {
        b.windows(16).filter(|w| *w == b"INCOMPLETE-FRAME").count() == 2
    });
    signal("-KILL", child.id());
    child.wait().unwrap();
    let text = std::fs::read(&jsonl).unwrap();
    let complete = text.rsplit_once_newline();
    for line in complete.lines() {
        serde_json::from_str::<serde_json::Value>(line.unwrap().as_str()).unwrap();
    }
    drop(c);
}

/// The complete lines of a file written up to a kill (a last, partial line is not one).
trait CompleteLines {
    fn rsplit_once_newline(&self) -> &[u8];
}

impl CompleteLines for Vec<u8> {
    fn rsplit_once_newline(&self) -> &[u8] {
        match self.iter().rposition(|&b| b == b'\n') {
            Some(i) => &self[..=i],
            None => &[],
        }
    }
}

#[test]
fn check_of_a_proxy_jsonl_with_no_connection_behaves_as_its_empty_pcapng() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("empty.jsonl");
    let pcap = dir.path().join("empty.pcapng");
    let (mut child, _stderr, _addr) = start_proxy(
        &[
            "--no-tui",
            "--quiet",
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    signal("-INT", child.id());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    for extra in [&[][..], &["--allow-empty"][..]] {
        let run = |capture: &Path| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_amqpeek"));
            cmd.arg("check").args(extra).arg(capture);
            let (code, err) = exits_by_itself(cmd);
            (code, err.replace(capture.to_str().unwrap(), "CAPTURE"))
        };
        assert_eq!(run(&jsonl), run(&pcap), "check {extra:?}");
    }
}
