//! Diagnoses in the outputs, through the built binary: crafted AMQP 1.0 conversations (a
//! receiver that attaches and never grants credit, and the same shape with credit granted)
//! written as the pipeline writes captures (JSONL and pcapng), then `check` (text, JSON,
//! JUnit) and `stats` (text, JSON) of them: the Diagnoses section lists each diagnosis with
//! its id, connection, scope, times, evidence frames, cause and what to do; it fails `check`
//! only when `--fail-on-diagnosis` names it; wire strings in it are escaped; the JSONL and the
//! pcapng of one conversation give the same diagnoses, and the same as the run that wrote
//! them. Live: a proxy between a client and a server that fall silent writes the diagnosis
//! to its JSONL capture while the connection is still open, and fails its verdict when
//! `--fail-on-diagnosis` names it.

mod cli_common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use amqpeek::capture::SourceEvent;
use amqpeek::event::{Chunk, Dir, Timestamp};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use bytes::Bytes;
use serde_json::Value;

/// Minimal AMQP 1.0 encoders.
mod a10 {
    pub fn null() -> Vec<u8> {
        vec![0x40]
    }
    pub fn boolean(b: bool) -> Vec<u8> {
        vec![if b { 0x41 } else { 0x42 }]
    }
    pub fn uint(n: u32) -> Vec<u8> {
        let mut v = vec![0x70];
        v.extend_from_slice(&n.to_be_bytes());
        v
    }
    pub fn str8(s: &[u8]) -> Vec<u8> {
        let mut v = vec![0xa1, s.len() as u8];
        v.extend_from_slice(s);
        v
    }
    pub fn list(items: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = items.concat();
        let mut v = vec![0xd0];
        v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        v.extend_from_slice(&(items.len() as u32).to_be_bytes());
        v.extend_from_slice(&body);
        v
    }
    pub fn described(code: u8, body: Vec<u8>) -> Vec<u8> {
        let mut v = vec![0x00, 0x53, code];
        v.extend_from_slice(&body);
        v
    }
    pub fn frame(channel: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(&[2, 0]);
        v.extend_from_slice(&channel.to_be_bytes());
        v.extend_from_slice(body);
        v
    }
    pub fn open(container: &str) -> Vec<u8> {
        frame(0, &described(0x10, list(&[str8(container.as_bytes())])))
    }
    pub fn begin(channel: u16) -> Vec<u8> {
        frame(
            channel,
            &described(0x11, list(&[null(), uint(0), uint(100), uint(100)])),
        )
    }
    pub fn begin_reply(channel: u16, remote: u16) -> Vec<u8> {
        let mut remote_channel = vec![0x60];
        remote_channel.extend_from_slice(&remote.to_be_bytes());
        frame(
            channel,
            &described(0x11, list(&[remote_channel, uint(0), uint(100), uint(100)])),
        )
    }
    /// A receiver (`receiver`) or sender attach of link `name`, handle 0.
    pub fn attach(name: &[u8], receiver: bool) -> Vec<u8> {
        let source = described(0x28, list(&[str8(b"q")]));
        let target = described(0x29, list(&[str8(b"q")]));
        let mut fields = vec![
            str8(name),
            uint(0),
            boolean(receiver),
            null(),
            null(),
            source,
            target,
        ];
        if !receiver {
            fields.extend([null(), null(), uint(0)]);
        }
        frame(0, &described(0x12, list(&fields)))
    }
    /// The receiver's flow granting `credit` on handle 0.
    pub fn flow(credit: u32) -> Vec<u8> {
        let fields = [
            uint(0),
            uint(100),
            uint(0),
            uint(100),
            uint(0),
            uint(0),
            uint(credit),
        ];
        frame(0, &described(0x13, list(&fields)))
    }
    pub const HEADER: &[u8] = b"AMQP\x00\x01\x00\x00";
    pub const EMPTY: &[u8] = &[0, 0, 0, 8, 2, 0, 0, 0];
}

/// 2025-11-29T12:00:00Z, in µs.
const T0: i64 = 1_764_417_600_000_000;
const SEC: i64 = 1_000_000;

/// One connection's bytes: (µs after [`T0`], direction, bytes).
type Conv = Vec<(i64, Dir, Vec<u8>)>;

/// The opening of an AMQP 1.0 connection in which the client attaches link `name` as its
/// receiver and the broker as its sender, 1 ms apart; `granted`: the client's flow grants
/// credit 10 right after.
fn attached(name: &[u8], granted: bool) -> Conv {
    let mut frames = vec![
        (Dir::C2S, a10::HEADER.to_vec()),
        (Dir::S2C, a10::HEADER.to_vec()),
        (Dir::C2S, a10::open("client")),
        (Dir::S2C, a10::open("broker")),
        (Dir::C2S, a10::begin(0)),
        (Dir::S2C, a10::begin_reply(0, 0)),
        (Dir::C2S, a10::attach(name, true)),
        (Dir::S2C, a10::attach(name, false)),
    ];
    if granted {
        frames.push((Dir::C2S, a10::flow(10)));
    }
    frames
        .into_iter()
        .enumerate()
        .map(|(i, (d, b))| (i as i64 * 1000, d, b))
        .collect()
}

/// [`attached`], then both ends send an empty frame every second until `secs` s.
fn stalled(name: &[u8], granted: bool, secs: i64) -> Conv {
    let mut conv = attached(name, granted);
    for s in 1..=secs {
        conv.push((s * SEC, Dir::C2S, a10::EMPTY.to_vec()));
        conv.push((s * SEC + 500, Dir::S2C, a10::EMPTY.to_vec()));
    }
    conv
}

/// The source events of connections 1, 2, ... (`convs`), each connecting at [`T0`], their
/// chunks in time order; open at the capture's end.
fn source(convs: &[Conv]) -> Vec<SourceEvent> {
    let mut evs = Vec::new();
    for (i, _) in convs.iter().enumerate() {
        evs.push(SourceEvent::Connect {
            conn: i as u64 + 1,
            ts: Timestamp(T0),
            client: format!("127.0.0.1:{}", 40001 + i).parse().unwrap(),
            server: "127.0.0.1:5672".parse().unwrap(),
        });
    }
    let mut chunks: Vec<(i64, u64, Dir, &Vec<u8>)> = convs
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.iter().map(move |(t, d, b)| (*t, i as u64 + 1, *d, b)))
        .collect();
    chunks.sort_by_key(|c| (c.0, c.1));
    for (t, conn, dir, b) in chunks {
        evs.push(SourceEvent::Chunk(Chunk {
            conn,
            dir,
            ts: Timestamp(T0 + 1 + t),
            bytes: Bytes::from(b.clone()),
        }));
    }
    evs
}

/// The conversations run through the pipeline as the proxy runs it, written as a JSONL and a
/// pcapng capture into `dir`.
fn captures(dir: &Path, convs: &[Conv]) -> (PathBuf, PathBuf) {
    let mut jsonl = JsonlSink::new(Vec::new(), JsonOptions::default());
    let mut pcap = PcapngSink::new(Vec::new()).unwrap();
    let opts = InspectOptions {
        emit_data: true,
        ..InspectOptions::DEFAULT
    };
    amqpeek::replay::run(source(convs), opts, &mut [&mut jsonl, &mut pcap]).unwrap();
    jsonl.flush().unwrap();
    let (j, p) = (dir.join("cap.jsonl"), dir.join("cap.pcapng"));
    std::fs::write(&j, jsonl.into_inner()).unwrap();
    std::fs::write(&p, pcap.into_inner().unwrap()).unwrap();
    (j, p)
}

/// `amqpeek ARGS`: exit code, stdout, stderr.
fn amqpeek(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `check --format json` of `capture` (with `extra` flags): its document.
fn check_json(capture: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["check", path(capture), "--format", "json"];
    args.extend_from_slice(extra);
    let (_, out, err) = amqpeek(&args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"))
}

/// What identifies a diagnosis across sources: id, connection, scope, name, since, when it
/// became one, its evidence frames.
fn identities(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} conn {} {} {} since {} at {} evidence {}",
                d["id"], d["conn"], d["scope"], d["name"], d["since"], d["at"], d["evidence"]
            )
        })
        .collect()
}

#[test]
fn a_receiver_that_never_grants_credit_is_listed_and_check_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, pcapng) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    // The pcapng ends its connections with FINs (its reader then sees them closed), the JSONL
    // with `capture ended`: the diagnosis still held then.
    let (code, text, err) = amqpeek(&["check", path(&pcapng)]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.contains("(scope closed; held 39.99"), "{text}");
    let (code, text, err) = amqpeek(&["check", path(&jsonl)]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(
        text.contains("\nDiagnoses (why a flow is stuck): 1 (amqp10.link.no-credit 1); none fails"),
        "{text}"
    );
    assert!(
        text.contains("        amqp10.link.no-credit conn 1 link \"orders\" s2c\n"),
        "{text}"
    );
    // Since the broker's attach (the second one, s2c), a diagnosis 30 s later, still held 40 s
    // after the attach.
    let attach_s2c = [
        a10::HEADER.len(),
        a10::open("broker").len(),
        a10::begin_reply(0, 0).len(),
    ]
    .iter()
    .sum::<usize>();
    assert!(
        text.contains(&format!(
            "since 2025-11-29T12:00:00.007001Z (frame s2c @{attach_s2c}), a diagnosis from \
             2025-11-29T12:00:30.007001Z\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("still held at the end of the capture (held 39.99"),
        "{text}"
    );
    assert!(
        text.contains("likely cause: the receiving application"),
        "{text}"
    );
    assert!(text.contains("to do: grant credit"), "{text}");
    assert!(
        text.contains(&format!("evidence: s2c @{attach_s2c}\n")),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with("-> PASS (fail-on error)"),
        "{text}"
    );
}

#[test]
fn fail_on_diagnosis_fails_check_and_makes_a_junit_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pcapng) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    let named = ["--fail-on-diagnosis", "amqp10.link.no-credit"];
    let (code, text, err) = amqpeek(&[&["check", path(&pcapng)][..], &named].concat());
    assert_eq!(code, 1, "{text}{err}");
    assert!(text.contains("(fails: --fail-on-diagnosis)"), "{text}");
    assert!(text.contains("1 fail the verdict"), "{text}");
    assert!(
        text.trim_end().ends_with("-> FAIL (fail-on error)"),
        "{text}"
    );
    assert!(err.contains("amqp10.link.no-credit"), "{err}");
    // Another id named: the diagnosis is listed, and passes.
    let other = ["--fail-on-diagnosis", "amqp10.link.credit-exhausted"];
    let (code, text, _) = amqpeek(&[&["check", path(&pcapng)][..], &other].concat());
    assert_eq!(code, 0, "{text}");

    let junit = |extra: &[&str]| {
        let args = [&["check", path(&pcapng), "--format", "junit"][..], extra].concat();
        let (code, xml, _) = amqpeek(&args);
        let case = xml
            .split("<testcase ")
            .find(|c| c.starts_with("name=\"amqp10.link.no-credit\""))
            .unwrap_or_else(|| panic!("no case for the diagnosis: {xml}"))
            .split("</testcase>")
            .next()
            .unwrap()
            .to_string();
        (code, xml, case)
    };
    let (code, xml, case) = junit(&named);
    assert_eq!(code, 1);
    assert!(xml.contains("diagnoses\""), "a suite of diagnoses: {xml}");
    assert!(case.contains("classname=\"amqpeek.diagnoses\""), "{case}");
    assert!(case.contains("<failure "), "{case}");
    assert!(case.contains("1 diagnosis (--fail-on-diagnosis)"), "{case}");
    assert!(case.contains("link &quot;orders&quot; s2c"), "{case}");
    let (code, xml, case) = junit(&[]);
    assert_eq!(code, 0);
    assert!(!case.contains("<failure"), "{case}");
    assert!(
        case.contains("<system-out>amqp10.link.no-credit conn 1"),
        "{case}"
    );
    assert_eq!(xml.matches("<failure").count(), 0, "{xml}");
}

#[test]
fn check_json_has_each_diagnosis_with_its_scope_times_and_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, _) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    let doc = check_json(&jsonl, &[]);
    assert_eq!(doc["verdict"], "pass");
    let ds = &doc["diagnoses"];
    assert_eq!(ds["total"], 1, "{ds}");
    assert_eq!(ds["failing"], 0);
    assert_eq!(ds["by_id"]["amqp10.link.no-credit"], 1);
    let d = &ds["list"][0];
    assert_eq!(d["id"], "amqp10.link.no-credit");
    assert_eq!(d["conn"], 1);
    assert_eq!(d["scope"], "link");
    assert_eq!(d["name"], "link \"orders\" s2c");
    assert_eq!(d["since"], "2025-11-29T12:00:00.007001Z");
    assert_eq!(d["at"], "2025-11-29T12:00:30.007001Z");
    assert_eq!(d["still_active"], true);
    assert_eq!(d["ended"], "capture ended");
    assert_eq!(d["until"], Value::Null);
    assert_eq!(d["evidence"][0]["dir"], "s2c");
    assert!(d["evidence"][0]["offset"].as_u64().unwrap() > 0);
    assert!(d["cause"].as_str().unwrap().contains("never asked"));
    assert!(d["todo"].as_str().unwrap().contains("grant credit"));
    assert_eq!(d["fails"], false);
    let doc = check_json(&jsonl, &["--fail-on-diagnosis", "all"]);
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["diagnoses"]["failing"], 1);
    assert_eq!(doc["diagnoses"]["list"][0]["fails"], true);
}

#[test]
fn a_healthy_link_of_the_same_shape_has_no_diagnoses() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, pcapng) = captures(dir.path(), &[stalled(b"orders", true, 40)]);
    for capture in [&jsonl, &pcapng] {
        let (code, text, _) = amqpeek(&["check", path(capture), "--fail-on-diagnosis", "all"]);
        assert_eq!(code, 0, "{text}");
        assert!(!text.contains("Diagnoses"), "{text}");
        let doc = check_json(capture, &[]);
        assert_eq!(doc["diagnoses"]["total"], 0, "{doc}");
        assert_eq!(doc["diagnoses"]["list"], serde_json::json!([]));
        let (_, stats, _) = amqpeek(&["stats", path(capture)]);
        assert!(!stats.contains("Diagnoses"), "{stats}");
    }
}

#[test]
fn stats_text_and_json_show_the_diagnoses() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pcapng) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    let (code, text, err) = amqpeek(&["stats", path(&pcapng)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("\nDiagnoses (why a flow is stuck): 1 (amqp10.link.no-credit 1)"),
        "{text}"
    );
    assert!(
        text.contains("  amqp10.link.no-credit conn 1 link \"orders\" s2c\n"),
        "{text}"
    );
    assert!(text.contains("      to do: grant credit"), "{text}");
    let (_, json, _) = amqpeek(&["stats", path(&pcapng), "--format", "json"]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let d = &doc["diagnoses"]["list"][0];
    assert_eq!(d["id"], "amqp10.link.no-credit");
    assert_eq!(d["name"], "link \"orders\" s2c");
    assert_eq!(d["at"], "2025-11-29T12:00:30.007001Z");
    // The threshold as `check` takes it.
    let (_, json, err) = amqpeek(&[
        "stats",
        path(&pcapng),
        "--format",
        "json",
        "--diagnosis-threshold",
        "amqp10.link.no-credit=5",
    ]);
    let doc: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(
        doc["diagnoses"]["list"][0]["at"],
        "2025-11-29T12:00:05.007001Z"
    );
}

#[test]
fn check_of_the_jsonl_and_of_the_pcapng_list_the_same_diagnoses_as_the_run_that_wrote_them() {
    let dir = tempfile::tempdir().unwrap();
    // Two stalled links on two connections, one of them cut at 31 s (the capture goes on).
    let (jsonl, pcapng) = captures(
        dir.path(),
        &[
            stalled(b"orders", false, 40),
            stalled(b"events", false, 31),
            stalled(b"fine", true, 35),
        ],
    );
    let from_jsonl = check_json(&jsonl, &[]);
    let from_pcapng = check_json(&pcapng, &[]);
    let (a, b) = (
        identities(&from_jsonl["diagnoses"]["list"]),
        identities(&from_pcapng["diagnoses"]["list"]),
    );
    assert_eq!(a.len(), 2, "{a:#?}");
    assert_eq!(a, b);
    // Read back, a JSONL's own diagnosis records count nothing twice.
    assert_eq!(from_jsonl["diagnoses"]["total"], 2);
    // The run that wrote the captures recorded the same starts.
    let written: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "diagnosis" && r["phase"] == "start")
        .collect();
    let mut written: Vec<String> = written
        .iter()
        .map(|d| {
            format!(
                "{} conn {} {} {} since {} at {} evidence {}",
                d["id"], d["conn"], d["scope"], d["name"], d["since"], d["at"], d["evidence"]
            )
        })
        .collect();
    written.sort();
    let mut listed = a.clone();
    listed.sort();
    assert_eq!(written, listed);
}

#[test]
fn a_condition_past_its_threshold_when_the_capture_ends_is_a_diagnosis() {
    let dir = tempfile::tempdir().unwrap();
    // Connection 1 falls silent after its attaches; connection 2 goes on until 31 s: the
    // capture's end (31 s) is past connection 1's threshold (30 s), with no frame of it after.
    let (jsonl, pcapng) = captures(
        dir.path(),
        &[attached(b"quiet", false), stalled(b"busy", true, 31)],
    );
    for (i, capture) in [&jsonl, &pcapng].into_iter().enumerate() {
        let doc = check_json(capture, &[]);
        let list = &doc["diagnoses"]["list"];
        assert_eq!(identities(list).len(), 1, "{doc}");
        assert_eq!(list[0]["conn"], 1);
        assert_eq!(list[0]["name"], "link \"quiet\" s2c");
        assert_eq!(list[0]["at"], "2025-11-29T12:00:30.007001Z");
        assert_eq!(list[0]["ended"], ["capture ended", "scope closed"][i]);
    }
}

#[test]
fn wire_strings_in_diagnoses_are_escaped_in_text_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "or\u{1b}]52;c;eA==\u{7}\n-> PASS\u{202e}ders".as_bytes();
    let (_, pcapng) = captures(dir.path(), &[stalled(hostile, false, 40)]);
    let forged = |s: &str| {
        s.chars()
            .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}')
            || s.lines().any(|l| l.starts_with("-> PASS"))
    };
    let (_, text, _) = amqpeek(&["check", path(&pcapng)]);
    assert!(text.contains("Diagnoses"), "{text}");
    assert!(!forged(&text), "{text:?}");
    assert!(
        text.contains("or\\x1b]52;c;eA==\\x07\\n-> PASS\\u{202e}ders"),
        "{text}"
    );
    let (_, stats, _) = amqpeek(&["stats", path(&pcapng)]);
    assert!(stats.contains("Diagnoses"), "{stats}");
    assert!(!forged(&stats), "{stats:?}");
    let (_, xml, _) = amqpeek(&["check", path(&pcapng), "--format", "junit"]);
    assert!(!forged(&xml), "{xml:?}");
    let doc = check_json(&pcapng, &[]);
    let name = doc["diagnoses"]["list"][0]["name"].as_str().unwrap();
    assert!(!forged(name), "{name:?}");
    assert_eq!(
        name,
        "link \"or\\x1b]52;c;eA==\\x07\\n-> PASS\\u{202e}ders\" s2c"
    );
}

/// Exactly `want` bytes from `stream`.
fn read_until(stream: &mut TcpStream, want: usize) -> Vec<u8> {
    let mut got = vec![0u8; want];
    stream.read_exact(&mut got).unwrap();
    got
}

/// A proxy (`amqpeek proxy --no-tui --quiet --jsonl DIR/live.jsonl` with `flags`) between a
/// client and a server that open a connection, a session and a receiver link, and then say
/// nothing: the proxy (and its stderr, kept open: it reports its shutdown there), the
/// client's socket, the server's thread and the capture's path.
struct LiveStall {
    proxy: std::process::Child,
    _stderr: std::io::BufReader<std::process::ChildStderr>,
    client: TcpStream,
    broker: std::thread::JoinHandle<()>,
    jsonl: PathBuf,
}

fn live_stall(dir: &Path, flags: &[&str]) -> LiveStall {
    // The server: answers the client's header, open, begin and receiver attach with its own,
    // then says nothing.
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = server.local_addr().unwrap().to_string();
    let client_bytes = [
        a10::HEADER.to_vec(),
        a10::open("client"),
        a10::begin(0),
        a10::attach(b"orders", true),
    ];
    let want: usize = client_bytes.iter().map(Vec::len).sum();
    let broker = std::thread::spawn(move || {
        let (mut s, _) = server.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        read_until(&mut s, want);
        for b in [
            a10::HEADER.to_vec(),
            a10::open("broker"),
            a10::begin_reply(0, 0),
            a10::attach(b"orders", false),
        ] {
            s.write_all(&b).unwrap();
        }
        // Held open until the client goes.
        let _ = s.read(&mut [0u8; 64]);
    });
    let jsonl = dir.join("live.jsonl");
    let mut args = vec![
        "--no-tui",
        "--quiet",
        "--upstream",
        &upstream,
        "--jsonl",
        path(&jsonl),
    ];
    args.extend_from_slice(flags);
    let (proxy, stderr, addr) = cli_common::start_proxy(&args, Stdio::null());
    let mut client = TcpStream::connect(&addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    client.write_all(&client_bytes.concat()).unwrap();
    let reply = [
        a10::HEADER.to_vec(),
        a10::open("broker"),
        a10::begin_reply(0, 0),
        a10::attach(b"orders", false),
    ]
    .concat();
    assert_eq!(read_until(&mut client, reply.len()), reply);
    LiveStall {
        proxy,
        _stderr: stderr,
        client,
        broker,
        jsonl,
    }
}

/// The records of the JSONL capture at `path` so far.
fn records_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// SIGINT to `proxy`; its exit code.
fn interrupt(mut proxy: std::process::Child) -> Option<i32> {
    let st = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    proxy.wait().unwrap().code()
}

#[test]
#[cfg(unix)]
fn a_live_stall_reaches_the_proxys_jsonl_while_the_connection_is_silent() {
    let dir = tempfile::tempdir().unwrap();
    let LiveStall {
        proxy,
        _stderr,
        client,
        broker,
        jsonl,
    } = live_stall(
        dir.path(),
        &[
            "--diagnosis-threshold",
            "amqp10.link.no-credit=1",
            "--fail-on-diagnosis",
            "amqp10.link.no-credit",
        ],
    );
    // Both silent now: within 3 s the diagnosis is in the capture, the connection still open.
    let deadline = Instant::now() + Duration::from_secs(3);
    let started = loop {
        let records = records_of(&jsonl);
        if let Some(d) = records
            .iter()
            .find(|r| r["event"] == "diagnosis" && r["phase"] == "start")
        {
            assert!(
                !records.iter().any(|r| r["event"] == "close"),
                "the connection is open"
            );
            break d.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no diagnosis in the proxy's capture within 3 s of silence: {records:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(started["id"], "amqp10.link.no-credit");
    assert_eq!(started["name"], "link \"orders\" s2c");
    drop(client);
    broker.join().unwrap();
    // Named by --fail-on-diagnosis: the proxy's verdict fails.
    assert_eq!(interrupt(proxy), Some(1));
    // The capture, checked with the same threshold, gives the same diagnosis once.
    let doc = check_json(
        &jsonl,
        &["--diagnosis-threshold", "amqp10.link.no-credit=1"],
    );
    let list = &doc["diagnoses"]["list"];
    assert_eq!(doc["diagnoses"]["total"], 1, "{doc}");
    assert_eq!(list[0]["id"], started["id"]);
    assert_eq!(list[0]["name"], started["name"]);
    assert_eq!(list[0]["since"], started["since"]);
    assert_eq!(list[0]["at"], started["at"]);
    assert_eq!(list[0]["evidence"], started["evidence"]);
}

/// `amqpeek ARGS` run in folder `cwd` (where it looks for `amqpeek.toml`): exit code, stdout,
/// stderr.
fn amqpeek_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The records of `amqpeek replay CAPTURE --jsonl OUT` (with `extra` flags), run in `cwd`.
fn replayed(cwd: &Path, capture: &Path, extra: &[&str]) -> Vec<Value> {
    let out = cwd.join("replayed.jsonl");
    let mut args = vec![
        "replay",
        path(capture),
        "--no-tui",
        "--quiet",
        "--jsonl",
        path(&out),
    ];
    args.extend_from_slice(extra);
    let (code, text, err) = amqpeek_in(cwd, &args);
    assert_eq!(code, 0, "{text}{err}");
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn no_diagnoses_and_the_config_key_make_none_and_leave_the_violations_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, pcapng) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    let bad_ack = PathBuf::from(cli_common::capture_path("amqp091-bad-ack.pcapng"));
    let off = dir.path().join("off");
    std::fs::create_dir(&off).unwrap();
    std::fs::write(off.join("amqpeek.toml"), "diagnoses = false\n").unwrap();
    let config = off.join("amqpeek.toml");
    let cfg = ["--config", path(&config)];
    for capture in [&jsonl, &pcapng, &bad_ack] {
        let on = check_json(capture, &[]);
        let stalled = capture != &bad_ack;
        if stalled {
            assert_eq!(on["diagnoses"]["total"], 1, "{on}");
        }
        for flags in [&["--no-diagnoses"][..], &cfg] {
            let doc = check_json(capture, flags);
            assert_eq!(doc["diagnoses"]["total"], 0, "{flags:?}: {doc}");
            assert_eq!(doc["diagnoses"]["list"], serde_json::json!([]));
            assert_eq!(
                cli_common::findings_in(&doc),
                cli_common::findings_in(&on),
                "{flags:?}"
            );
        }
        // `diagnoses = true` keeps them.
        std::fs::write(dir.path().join("on.toml"), "diagnoses = true\n").unwrap();
        let kept = check_json(capture, &["--config", path(&dir.path().join("on.toml"))]);
        assert_eq!(kept["diagnoses"]["total"], on["diagnoses"]["total"]);
    }
    assert!(
        !cli_common::findings_in(&check_json(&bad_ack, &["--no-diagnoses"])).is_empty(),
        "the shipped bad-ack capture has violations to compare"
    );

    // stats: the flag, and amqpeek.toml in the current folder.
    let (_, text, _) = amqpeek(&["stats", path(&pcapng)]);
    assert!(
        text.contains("\nDiagnoses (why a flow is stuck): 1"),
        "{text}"
    );
    let strip = |t: &str| t.split("\nDiagnoses").next().unwrap().to_string();
    for (cwd, flags) in [(dir.path(), &["--no-diagnoses"][..]), (off.as_path(), &[])] {
        let args = [&["stats", path(&pcapng)][..], flags].concat();
        let (code, plain, err) = amqpeek_in(cwd, &args);
        assert_eq!(code, 0, "{err}");
        assert!(!plain.contains("Diagnoses"), "{flags:?}: {plain}");
        assert_eq!(strip(&plain), strip(&text), "the statistics are the same");
    }

    // replay: no diagnosis records; every other record as with diagnoses.
    let others = |recs: Vec<Value>| -> Vec<Value> {
        recs.into_iter()
            .filter(|r| r["event"] != "diagnosis")
            .collect()
    };
    let with = replayed(dir.path(), &pcapng, &[]);
    assert!(with.iter().any(|r| r["event"] == "diagnosis"));
    for (cwd, flags) in [(dir.path(), &["--no-diagnoses"][..]), (off.as_path(), &[])] {
        let without = replayed(cwd, &pcapng, flags);
        assert!(
            !without.iter().any(|r| r["event"] == "diagnosis"),
            "{flags:?}"
        );
        assert_eq!(others(without), others(with.clone()), "{flags:?}");
    }
}

#[test]
fn fail_on_diagnosis_with_diagnoses_off_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pcapng) = captures(dir.path(), &[stalled(b"orders", false, 40)]);
    let named = ["--fail-on-diagnosis", "amqp10.link.no-credit"];
    let (code, text, err) =
        amqpeek(&[&["check", path(&pcapng), "--no-diagnoses"][..], &named].concat());
    assert_eq!(code, 2, "{text}{err}");
    assert!(err.contains("diagnoses are off"), "{err}");
    std::fs::write(
        dir.path().join("amqpeek.toml"),
        "diagnoses = false\nfail-on-diagnosis = [\"all\"]\n",
    )
    .unwrap();
    let (code, _, err) = amqpeek_in(dir.path(), &["check", path(&pcapng)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("amqpeek.toml"), "{err}");
}

#[test]
#[cfg(unix)]
fn a_proxy_with_no_diagnoses_writes_none_of_a_live_stall() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--no-diagnoses",
        "--diagnosis-threshold",
        "amqp10.link.no-credit=1",
    ];
    let LiveStall {
        proxy,
        _stderr,
        client,
        broker,
        jsonl,
    } = live_stall(dir.path(), &flags);
    // Three times the threshold of silence, the connection open: with diagnoses on the
    // diagnosis is in the capture by then (the test above).
    std::thread::sleep(Duration::from_secs(3));
    let records = records_of(&jsonl);
    assert!(
        records.iter().any(|r| r["event"] == "frame"),
        "the frames are captured: {records:#?}"
    );
    assert!(
        !records.iter().any(|r| r["event"] == "diagnosis"),
        "{records:#?}"
    );
    drop(client);
    broker.join().unwrap();
    assert_eq!(interrupt(proxy), Some(0));
    assert!(!records_of(&jsonl).iter().any(|r| r["event"] == "diagnosis"));
}
