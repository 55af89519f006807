//! Masking fails closed: every frame that could carry a credential, well-formed or broken the
//! ways peers and attackers break them, goes through `amqpeek proxy` (to a scripted local
//! upstream), and the secret is searched in every output: the trace and `-vv` diagnostics, the
//! JSONL and pcapng captures, `replay` and `check` (text, JSON, JUnit) of both captures, a
//! pcapng-to-JSONL conversion, and `decode` of the probe's bytes. It is searched as text, as
//! hex (plain and spaced, both cases) and as base64 at every alignment. The pipeline's events
//! (what the TUI shows: frames, fields, hex of raw and relayed bytes, violations) are searched
//! the same way. With `--show-secrets` the secret does show, so the search can fail.

mod cli_common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use amqpeek::codec::amqp10::{
    Described, Descriptor, Str, Symbol, Value, described_list, encode_frame,
};
use amqpeek::event::{Dir, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use base64::Engine;
use bytes::Bytes;
use cli_common::start_proxy;

/// The secret every probe carries.
const SECRET: &[u8] = b"Zq8-Pw-sekrit-77";

const SASL_HDR: &[u8] = b"AMQP\x03\x01\x00\x00";
const AMQP_HDR: &[u8] = b"AMQP\x00\x01\x00\x00";
const HDR_091: &[u8] = b"AMQP\x00\x00\x09\x01";

/// One probe: what the client sends (all of it, then EOF) and what the server answers at once.
struct Probe {
    name: &'static str,
    client: Vec<u8>,
    server: Vec<u8>,
}

fn sym(x: &str) -> Value {
    Value::Symbol(Symbol(Str::from(x)))
}
fn st(x: &str) -> Value {
    Value::String(Str::from(x))
}
fn bin(x: &[u8]) -> Value {
    Value::Binary(Bytes::copy_from_slice(x))
}
fn described(code: u64, v: Value) -> Value {
    Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value: v,
    }))
}
fn plain() -> Vec<u8> {
    [&b"\0guest\0"[..], SECRET].concat()
}
fn plain_str() -> String {
    String::from_utf8(plain()).unwrap()
}

// ---- AMQP 0-9-1 -------------------------------------------------------------------------

fn shortstr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}
fn longstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}
fn frame091(ftype: u8, ch: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![ftype];
    f.extend_from_slice(&ch.to_be_bytes());
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(payload);
    f.push(0xCE);
    f
}

/// A start-ok payload (class 10, method 11) with `props` as client-properties (connection_name)
/// and `response`; returns the payload and where the response's length field is.
fn start_ok(connection_name: &str, response: &[u8]) -> (Vec<u8>, usize) {
    let mut p = vec![0, 10, 0, 11];
    let mut table = Vec::new();
    shortstr(&mut table, b"connection_name");
    table.push(b'S');
    longstr(&mut table, connection_name.as_bytes());
    longstr(&mut p, &table);
    shortstr(&mut p, b"PLAIN");
    let at = p.len();
    longstr(&mut p, response);
    shortstr(&mut p, b"en_US");
    (p, at)
}

fn server_start() -> Vec<u8> {
    // connection.start: version 0-9, empty properties, mechanisms, locales.
    let mut p = vec![0, 10, 0, 10, 0, 9];
    longstr(&mut p, b"");
    longstr(&mut p, b"PLAIN AMQPLAIN");
    longstr(&mut p, b"en_US");
    frame091(1, 0, &p)
}

fn probe091(name: &'static str, frames: Vec<u8>) -> Probe {
    Probe {
        name,
        client: [HDR_091, &frames].concat(),
        server: server_start(),
    }
}

fn probes_091() -> Vec<Probe> {
    let (ok, len_at) = start_ok("app", &plain());
    let with_len = |delta: i64| {
        let mut p = ok.clone();
        let n = u32::from_be_bytes(p[len_at..len_at + 4].try_into().unwrap()) as i64 + delta;
        p[len_at..len_at + 4].copy_from_slice(&(n as u32).to_be_bytes());
        frame091(1, 0, &p)
    };
    let mut bad_end = frame091(1, 0, &ok);
    *bad_end.last_mut().unwrap() = 0x00;
    let mut trailing = ok.clone();
    trailing.extend_from_slice(b"xyz");
    let mut huge = frame091(1, 0, &ok);
    huge[3..7].copy_from_slice(&u32::MAX.to_be_bytes());
    let whole = frame091(1, 0, &ok);
    let mut secure_ok = vec![0, 10, 0, 21];
    longstr(&mut secure_ok, SECRET);
    let mut secure_bad = frame091(1, 0, &secure_ok);
    *secure_bad.last_mut().unwrap() = 0x01;
    let mut update = vec![0, 10, 0, 70];
    longstr(&mut update, SECRET);
    shortstr(&mut update, b"rotated");
    let mut update_trailing = update.clone();
    update_trailing.extend_from_slice(b"\x00\x00");
    let url = format!(
        "amqp://guest:{}@broker:5672/vh",
        std::str::from_utf8(SECRET).unwrap()
    );
    let (named, _) = start_ok(&url, b"\0guest\0guest");
    // A publish whose body holds an amqps URL.
    let mut publish = vec![0, 60, 0, 40, 0, 0];
    shortstr(&mut publish, b"");
    shortstr(&mut publish, b"q");
    publish.push(0);
    let body = format!(
        "connect to amqps://svc:{}@mq.example/",
        std::str::from_utf8(SECRET).unwrap()
    );
    let mut header = vec![0, 60, 0, 0];
    header.extend_from_slice(&(body.len() as u64).to_be_bytes());
    header.extend_from_slice(&[0, 0]);
    let publish = [
        frame091(1, 1, &publish),
        frame091(2, 1, &header),
        frame091(3, 1, body.as_bytes()),
    ]
    .concat();
    vec![
        probe091("0-9-1 start-ok", whole.clone()),
        probe091("0-9-1 start-ok, bad frame-end", bad_end),
        probe091("0-9-1 start-ok, response length +1", with_len(1)),
        probe091("0-9-1 start-ok, response length -3", with_len(-3)),
        probe091(
            "0-9-1 start-ok, response length 0xFFFFFFFF",
            with_len(0xFFFF_FFFF - plain().len() as i64),
        ),
        probe091("0-9-1 start-ok, trailing bytes", frame091(1, 0, &trailing)),
        probe091("0-9-1 start-ok, frame size 0xFFFFFFFF", huge),
        probe091(
            "0-9-1 start-ok, cut short at close",
            whole[..whole.len() - 1].to_vec(),
        ),
        probe091("0-9-1 secure-ok, bad frame-end", secure_bad),
        probe091("0-9-1 update-secret", frame091(1, 0, &update)),
        probe091(
            "0-9-1 update-secret, trailing bytes",
            frame091(1, 0, &update_trailing),
        ),
        probe091("0-9-1 connection_name URL", frame091(1, 0, &named)),
        probe091("0-9-1 body URL", publish),
    ]
}

// ---- AMQP 1.0 ---------------------------------------------------------------------------

fn server_sasl() -> Vec<u8> {
    let mechs = described_list(
        0x40,
        vec![Value::Array(Box::new(amqpeek::codec::amqp10::Array {
            descriptor: None,
            kind: amqpeek::codec::amqp10::Kind::Symbol,
            items: vec![sym("PLAIN")],
        }))],
    );
    [SASL_HDR, &encode_frame(1, 0, Some(&mechs), &[]).unwrap()].concat()
}

fn probe10(name: &'static str, frames: Vec<u8>) -> Probe {
    Probe {
        name,
        client: [SASL_HDR, &frames].concat(),
        server: server_sasl(),
    }
}

fn init(fields: Vec<Value>, frame_type: u8) -> Vec<u8> {
    encode_frame(frame_type, 0, Some(&described_list(0x41, fields)), &[]).unwrap()
}

/// The 1.0 part after SASL: header, open, begin, attach (source address `address`), and the
/// transfers of one message `payload` cut into `parts` pieces.
fn after_sasl(address: &str, payload: &[u8], parts: usize) -> Vec<u8> {
    let mut out = AMQP_HDR.to_vec();
    let open = described_list(0x10, vec![st("c")]);
    out.extend(encode_frame(0, 0, Some(&open), &[]).unwrap());
    let begin = described_list(
        0x11,
        vec![
            Value::Null,
            Value::Uint(0),
            Value::Uint(100),
            Value::Uint(100),
        ],
    );
    out.extend(encode_frame(0, 0, Some(&begin), &[]).unwrap());
    let attach = described_list(
        0x12,
        vec![
            st("link"),
            Value::Uint(0),
            Value::Bool(false),
            Value::Null,
            Value::Null,
            described(0x28, Value::List(vec![st(address)])),
            described(0x29, Value::List(vec![st("$cbs")])),
        ],
    );
    out.extend(encode_frame(0, 0, Some(&attach), &[]).unwrap());
    let step = payload.len().div_ceil(parts);
    let pieces: Vec<&[u8]> = payload.chunks(step).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let first = i == 0;
        let t = described_list(
            0x14,
            vec![
                Value::Uint(0),
                if first { Value::Uint(0) } else { Value::Null },
                if first { bin(b"\x01") } else { Value::Null },
                if first { Value::Uint(0) } else { Value::Null },
                Value::Bool(false),
                Value::Bool(i + 1 < pieces.len()),
            ],
        );
        out.extend(encode_frame(0, 0, Some(&t), piece).unwrap());
    }
    out
}

fn put_token(token: &str) -> Vec<u8> {
    let mut payload = Vec::new();
    described(
        0x74,
        Value::Map(vec![
            (st("operation"), st("put-token")),
            (st("type"), st("jwt")),
            (st("name"), st("amqp://ns.example/orders")),
            (st("expiration"), Value::Timestamp(1_900_000_000_000)),
        ]),
    )
    .encode(&mut payload)
    .unwrap();
    described(0x77, st(token)).encode(&mut payload).unwrap();
    payload
}

/// [`put_token`] after a message-annotations section holding `pad` bytes.
fn padded_put_token(token: &str, pad: usize) -> Vec<u8> {
    let mut payload = Vec::new();
    described(
        0x72,
        Value::Map(vec![(sym("x-opt-pad"), bin(&vec![0x2e; pad]))]),
    )
    .encode(&mut payload)
    .unwrap();
    payload.extend(put_token(token));
    payload
}

fn probes_10() -> Vec<Probe> {
    let good = init(vec![sym("PLAIN"), bin(&plain()), st("host")], 1);
    let mut one_short = good.clone();
    let n = u32::from_be_bytes(one_short[..4].try_into().unwrap()) - 1;
    one_short[..4].copy_from_slice(&n.to_be_bytes());
    let outcome = encode_frame(
        1,
        0,
        Some(&described_list(0x44, vec![Value::Ubyte(0)])),
        &[],
    )
    .unwrap();
    let secret = std::str::from_utf8(SECRET).unwrap();
    // The token holds the secret whole in every transfer it is split over.
    let token = secret.repeat(6);
    let body = {
        let mut p = Vec::new();
        described(0x77, st(&format!("use amqp://app:{secret}@mq/vh")))
            .encode(&mut p)
            .unwrap();
        p
    };
    vec![
        probe10("1.0 sasl-init", good.clone()),
        probe10(
            "1.0 sasl-init, extra field",
            init(
                vec![sym("PLAIN"), bin(b"\0guest\0x"), st("host"), bin(SECRET)],
                1,
            ),
        ),
        probe10(
            "1.0 sasl-init, response typed as string",
            init(vec![sym("PLAIN"), st(&plain_str())], 1),
        ),
        probe10(
            "1.0 sasl-init in a type-0 frame",
            init(vec![sym("PLAIN"), bin(&plain())], 0),
        ),
        probe10("1.0 sasl-init, size one short", one_short),
        probe10(
            "1.0 sasl-init, cut short at close",
            good[..good.len() - 2].to_vec(),
        ),
        probe10(
            "1.0 sasl-response",
            encode_frame(1, 0, Some(&described_list(0x43, vec![bin(SECRET)])), &[]).unwrap(),
        ),
        probe10(
            "1.0 put-token, one transfer",
            [
                good.clone(),
                outcome.clone(),
                after_sasl("q", &put_token(secret), 1),
            ]
            .concat(),
        ),
        probe10(
            // A message larger than what is kept of its metadata (`--max-body` and 16 KiB):
            // its application-properties lie past what the message holds.
            "1.0 put-token after 24 KiB of message-annotations, one transfer",
            [
                good.clone(),
                outcome.clone(),
                after_sasl("q", &padded_put_token(secret, 24 * 1024), 1),
            ]
            .concat(),
        ),
        probe10(
            "1.0 put-token over 3 transfers",
            [
                good.clone(),
                outcome.clone(),
                after_sasl("q", &put_token(&token), 3),
            ]
            .concat(),
        ),
        probe10(
            "1.0 put-token over 9 transfers",
            [
                good.clone(),
                outcome.clone(),
                after_sasl("q", &put_token(&token), 9),
            ]
            .concat(),
        ),
        probe10(
            "1.0 address URL",
            [
                good.clone(),
                outcome.clone(),
                after_sasl(&format!("amqps://u:{secret}@h/q"), &put_token("t"), 1),
            ]
            .concat(),
        ),
        probe10(
            "1.0 body URL",
            [good, outcome, after_sasl("q", &body, 1)].concat(),
        ),
    ]
}

fn probes() -> Vec<Probe> {
    let mut all = probes_091();
    all.extend(probes_10());
    all
}

// ---- searching ---------------------------------------------------------------------------

/// Every form of the secret an output could hold it in.
fn forms() -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("text".to_string(), SECRET.to_vec())];
    let hex = hex::encode(SECRET);
    let spaced: Vec<String> = SECRET.iter().map(|b| format!("{b:02x}")).collect();
    for (name, h) in [("hex", hex.clone()), ("spaced hex", spaced.join(" "))] {
        out.push((name.to_string(), h.clone().into_bytes()));
        out.push((format!("{name} (upper)"), h.to_uppercase().into_bytes()));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    for junk in 0..3usize {
        let mut v = vec![b'#'; junk];
        v.extend_from_slice(SECRET);
        let enc = b64.encode(&v);
        // Drop the characters that depend on the junk before and on what follows.
        let skip = (junk * 8).div_ceil(6) + 1;
        let stable = (junk + SECRET.len()) * 8 / 6 - 1;
        out.push((
            format!("base64 at alignment {junk}"),
            enc.as_bytes()[skip..stable].to_vec(),
        ));
    }
    out
}

/// The first form of the secret found in `hay`.
fn leak(hay: &[u8]) -> Option<String> {
    forms()
        .into_iter()
        .find(|(_, f)| hay.windows(f.len()).any(|w| w == &f[..]))
        .map(|(name, _)| name)
}

fn run(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    [out.stdout, out.stderr].concat()
}

/// An upstream that, per connection, sends the probe's server bytes, reads until EOF, closes.
fn scripted_upstream(scripts: Vec<Vec<u8>>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for script in scripts {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(&script).unwrap();
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    });
    addr
}

/// Every probe through one proxy run; returns the outputs of that run and of replaying and
/// checking its captures, by name.
fn through_proxy(dir: &Path, extra: &[&str]) -> Vec<(String, Vec<u8>)> {
    let probes = probes();
    let up = scripted_upstream(probes.iter().map(|p| p.server.clone()).collect());
    let jsonl = dir.join("cap.jsonl");
    let pcap = dir.join("cap.pcapng");
    let up = up.to_string();
    let mut args = vec![
        "--no-tui",
        "-vv",
        "--upstream",
        &up,
        "--jsonl",
        jsonl.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (child, mut stderr, addr) = start_proxy(&args, Stdio::piped());
    for p in &probes {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(&p.client).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        assert_eq!(got, p.server, "{}: relayed unchanged", p.name);
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let mut diag = Vec::new();
    stderr.read_to_end(&mut diag).unwrap();
    let (j, p) = (jsonl.to_str().unwrap(), pcap.to_str().unwrap());
    let conv = dir.join("conv.jsonl");
    let c = conv.to_str().unwrap();
    let mut outputs = vec![
        ("proxy trace".into(), out.stdout),
        ("proxy -vv stderr".into(), diag),
        ("JSONL".into(), std::fs::read(&jsonl).unwrap()),
        ("pcapng".into(), std::fs::read(&pcap).unwrap()),
    ];
    for cap in [j, p] {
        outputs.push((
            format!("replay {cap}"),
            run(&["replay", "--no-tui", "-vv", cap]),
        ));
        for format in ["text", "json", "junit"] {
            outputs.push((
                format!("check {cap} {format}"),
                run(&["check", cap, "--format", format]),
            ));
        }
    }
    run(&["replay", "--no-tui", "--quiet", p, "--jsonl", c]);
    outputs.push((
        "pcapng converted to JSONL".into(),
        std::fs::read(&conv).unwrap(),
    ));
    outputs
}

#[test]
fn no_probe_leaks_its_secret_through_the_proxy_or_its_captures() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = through_proxy(dir.path(), &[]);
    let mut leaks = Vec::new();
    for (name, bytes) in &outputs {
        assert!(
            !bytes.is_empty() || name.contains("stderr"),
            "{name} is empty"
        );
        if let Some(form) = leak(bytes) {
            leaks.push(format!("{name}: the secret as {form}"));
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
    // The JSONL holds every probe's connection.
    let jsonl = String::from_utf8(outputs[2].1.clone()).unwrap();
    let connects = jsonl
        .lines()
        .filter(|l| l.contains(r#""event":"connect""#))
        .count();
    assert_eq!(connects, probes().len());
}

#[test]
fn with_show_secrets_the_secret_does_show() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = through_proxy(dir.path(), &["--show-secrets"]);
    for name in ["JSONL", "pcapng"] {
        let (_, bytes) = outputs.iter().find(|(n, _)| n == name).unwrap();
        assert!(
            leak(bytes).is_some(),
            "{name}: the secret is shown with --show-secrets"
        );
    }
}

/// What the TUI and every sink receive: each event's debug form (raw and relayed bytes,
/// violations), and each frame's summary, fields and message as rendered.
fn pipeline_text(p: &Probe, show_secrets: bool) -> Vec<u8> {
    let opts = InspectOptions {
        show_secrets,
        emit_data: true,
        ..InspectOptions::DEFAULT
    };
    let mut insp = Inspector::new(1, opts);
    let mut out = Vec::new();
    insp.chunk(
        Dir::S2C,
        Timestamp(1),
        Bytes::from(p.server.clone()),
        &mut out,
    );
    // The client's bytes in two pieces, split inside the secret's frame.
    let cut = p.client.len() * 2 / 3;
    insp.chunk(
        Dir::C2S,
        Timestamp(2),
        Bytes::copy_from_slice(&p.client[..cut]),
        &mut out,
    );
    insp.chunk(
        Dir::C2S,
        Timestamp(3),
        Bytes::copy_from_slice(&p.client[cut..]),
        &mut out,
    );
    insp.close(Timestamp(4), "end".into(), &mut out);
    let mut text = Vec::new();
    for e in &out {
        text.extend(format!("{:?}\n", e.kind).into_bytes());
        match &e.kind {
            EventKind::Frame(f) => {
                text.extend(f.frame.summary().into_bytes());
                text.extend(f.frame.fields_json().to_string().into_bytes());
                text.extend(hex::encode(&f.raw).into_bytes());
                if let Some(Ok(m)) = &f.message {
                    text.extend(m.to_json(1 << 20).to_string().into_bytes());
                }
            }
            EventKind::Data { bytes, .. } => {
                text.extend_from_slice(bytes);
                text.extend(hex::encode(bytes).into_bytes());
            }
            _ => {}
        }
    }
    text
}

#[test]
fn no_probe_leaks_its_secret_into_the_pipeline_events() {
    let mut leaks = Vec::new();
    for p in probes() {
        if let Some(form) = leak(&pipeline_text(&p, false)) {
            leaks.push(format!("{}: the secret as {form}", p.name));
        }
        assert!(
            leak(&pipeline_text(&p, true)).is_some(),
            "{}: shown with show_secrets",
            p.name
        );
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
}

#[test]
fn decode_masks_every_probe_unless_told_not_to() {
    let mut leaks = Vec::new();
    for p in probes() {
        let h = hex::encode(&p.client);
        for flag in [None, Some("--json"), Some("--tree")] {
            let mut args = vec!["decode"];
            args.extend(flag);
            args.push(&h);
            if let Some(form) = leak(&run(&args)) {
                leaks.push(format!("{} ({flag:?}): the secret as {form}", p.name));
            }
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
    // A well-formed one shows its secret with --show-secrets.
    let good = &probes()[0];
    let shown = run(&[
        "decode",
        "--json",
        "--show-secrets",
        &hex::encode(&good.client),
    ]);
    assert!(
        leak(&shown).is_some(),
        "{}",
        String::from_utf8_lossy(&shown)
    );
}
