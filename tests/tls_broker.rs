//! TLS end to end with RabbitMQ: fe2o3-amqp through a proxy that talks TLS upstream to a second
//! (TLS-terminating) proxy in front of the broker (the inner one masks the SASL password, the
//! outer one runs with `show_secrets` and shows it); fe2o3 over TLS (`amqps`) to the built
//! binary with a generated certificate; and the key log decrypting the upstream leg in tshark.

mod common;
mod secrets;
mod support;
mod tls_common;
mod wait;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use amqpeek::event::{Event, EventKind};
use amqpeek::proxy::BoxSink;
use amqpeek::proxy::tls::TlsOptions;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use common::{SharedBuf, broker, start_proxy_with};
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::Value;
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use tls_common::*;

/// Send `bodies` to a fresh queue and receive them back over `connection`.
async fn exchange(mut connection: fe2o3_amqp::connection::ConnectionHandle<()>, tag: &str) {
    let queue = format!("/queue/amqpeek-tls-{tag}-{}", std::process::id());
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "tls-sender", queue.as_str())
        .await
        .unwrap();
    for i in 0..3 {
        let msg = Message::builder().value(format!("tls message {i}")).build();
        let outcome = sender.send(msg).await.unwrap();
        assert!(outcome.is_accepted(), "{outcome:?}");
    }
    let mut receiver = Receiver::attach(&mut session, "tls-receiver", queue.as_str())
        .await
        .unwrap();
    for i in 0..3 {
        let d = tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        receiver.accept(&d).await.unwrap();
        match d.body() {
            Body::Value(v) => assert_eq!(v.0, Value::String(format!("tls message {i}"))),
            other => panic!("{other:?}"),
        }
    }
    // RabbitMQ 3.10 and fe2o3 0.18 disagree on detach; teardown errors are not the point.
    let _ = receiver.close().await;
    let _ = sender.close().await;
    let _ = session.end().await;
    let _ = connection.close().await;
}

fn frame_names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame(f) => Some(f.frame.name().to_owned()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fe2o3_through_tls_on_both_legs_is_decoded_by_both_proxies() {
    let Some(rabbit) = broker().await else { return };
    let pki = pki();
    let inner_jsonl = SharedBuf::default();
    let sinks: Vec<BoxSink> = vec![Box::new(JsonlSink::new(
        inner_jsonl.clone(),
        JsonOptions::default(),
    ))];
    let inner = start_proxy_with(listen_tls(rabbit, &pki), sinks).await;
    let outer_cfg = tls_config(
        inner.addr,
        "localhost",
        TlsOptions {
            upstream_tls: true,
            ca: Some(pki.ca.clone()),
            ..Default::default()
        },
    );
    let mut outer_cfg = outer_cfg;
    outer_cfg.inspect.show_secrets = true;
    let outer_jsonl = SharedBuf::default();
    let outer_sinks: Vec<BoxSink> = vec![Box::new(JsonlSink::new(
        outer_jsonl.clone(),
        JsonOptions::default(),
    ))];
    let outer = start_proxy_with(outer_cfg, outer_sinks).await;
    let url = format!("amqp://guest:guest@127.0.0.1:{}", outer.addr.port());
    let connection = Connection::open("amqpeek-tls", url.as_str()).await.unwrap();
    exchange(connection, "both").await;
    outer.wait_closed(1).await;
    inner.wait_closed(1).await;
    let (_, outer_events) = outer.stop().await;
    let _ = inner.stop().await;

    let names = frame_names(&outer_events);
    for want in [
        "sasl-init",
        "open",
        "begin",
        "attach",
        "transfer",
        "disposition",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "outer lacks {want}: {names:?}"
        );
    }
    let text = String::from_utf8(inner_jsonl.0.lock().unwrap().clone()).unwrap();
    let lines = json_lines(&text);
    let bodies: Vec<&str> = lines
        .iter()
        .filter(|l| l["event"] == "frame" && l["dir"] == "c2s")
        .filter_map(|l| l["message"]["amqp-value"].as_str())
        .collect();
    assert_eq!(bodies, ["tls message 0", "tls message 1", "tls message 2"]);
    let outer_text = String::from_utf8(outer_jsonl.0.lock().unwrap().clone()).unwrap();
    check_sasl_masking(&text, &outer_text);
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `sasl-init` frame of a JSONL capture, and its raw bytes.
fn sasl_init(text: &str) -> (serde_json::Value, Vec<u8>) {
    use base64::Engine;
    let init = json_lines(text)
        .into_iter()
        .find(|l| l["name"] == "sasl-init")
        .expect("sasl-init decoded");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(init["raw"].as_str().unwrap())
        .unwrap();
    (init, raw)
}

/// The inner proxy (decoding inside TLS, secrets masked) shows the mask in the decoded field
/// and in exactly the password's raw bytes, and the password nowhere; the outer one (with
/// `show_secrets`) shows the same frame unmasked.
fn check_sasl_masking(masked_text: &str, shown_text: &str) {
    let (masked, masked_raw) = sasl_init(masked_text);
    let (shown, shown_raw) = sasl_init(shown_text);
    assert_eq!(
        masked["fields"]["initial-response"],
        serde_json::json!({"binary": hex::encode(secrets::plain("guest", "*****"))}),
        "the decoded initial-response shows the mask"
    );
    assert_eq!(
        shown["fields"]["initial-response"],
        serde_json::json!({"binary": hex::encode(secrets::plain("guest", "guest"))}),
        "with show_secrets the decoded initial-response is the real one"
    );
    secrets::assert_exactly_password_masked(&masked_raw, &shown_raw, "guest", "guest", "raw");
    secrets::assert_no_password(masked_text, "guest", "guest", "the inner JSONL");
    secrets::assert_has_password(shown_text, "guest", "guest", "the show_secrets JSONL");
}

#[test]
#[cfg(unix)]
fn fe2o3_amqps_to_the_binary_with_a_generated_certificate() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if rt.block_on(broker()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("generated.pem");
    let jsonl = dir.path().join("cap.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["proxy", "--no-tui", "-q", "--listen", "127.0.0.1:0"])
        .args(["--upstream", "127.0.0.1:5672", "--listen-tls", "--cert-out"])
        .arg(&cert)
        .arg("--jsonl")
        .arg(&jsonl)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut said_cert = false;
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "proxy exited early"
        );
        said_cert |= line.contains(&cert.display().to_string());
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split(',').next().unwrap().trim().to_string();
        }
    };
    assert!(said_cert, "the generated certificate's path is printed");
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector(&cert).connect(name, tcp).await.unwrap();
        let connection = Connection::builder()
            .container_id("amqpeek-amqps")
            .scheme("amqp")
            .sasl_profile(fe2o3_amqp::sasl_profile::SaslProfile::Plain {
                username: "guest".into(),
                password: "guest".into(),
            })
            .open_with_stream(tls)
            .await
            .unwrap();
        exchange(connection, "amqps").await;
    });
    // The proxy has decoded the whole conversation once the connection's close is written.
    wait::until(
        "the close event in the JSONL",
        Duration::from_secs(20),
        || {
            let text = std::fs::read_to_string(&jsonl).unwrap_or_default();
            text.contains(r#""event":"close""#).then_some(())
        },
    );
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let bodies: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["event"] == "frame" && l["dir"] == "s2c")
        .filter_map(|l| l["message"]["amqp-value"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(bodies, ["tls message 0", "tls message 1", "tls message 2"]);
}

fn tshark_ok() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("CI is set and tshark is missing");
    }
    if !ok {
        eprintln!("note: tshark missing; skipping");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_log_decrypts_the_upstream_leg_in_tshark() {
    let Some(rabbit) = broker().await else { return };
    if !tshark_ok() {
        return;
    }
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let keylog = dir.join("keys.log");
    let cap = dir.join("upstream.pcapng");
    let inner = start_proxy_with(listen_tls(rabbit, &pki), vec![]).await;
    let port = inner.addr.port();
    let outer_cfg = tls_config(
        inner.addr,
        "localhost",
        TlsOptions {
            upstream_tls: true,
            ca: Some(pki.ca.clone()),
            keylog: Some(keylog.clone()),
            ..Default::default()
        },
    );
    let outer = start_proxy_with(outer_cfg, vec![]).await;

    let probe = wait::Probe::new();
    let filter = format!("tcp port {port} or tcp port {}", probe.addr().port());
    // Killed and waited for below, on every path that gets that far.
    #[allow(clippy::zombie_processes)]
    let mut tshark = Command::new("tshark")
        .args(["-i", "lo", "-f", &filter, "-w"])
        .arg(&cap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it captures.
    let mut err = BufReader::new(tshark.stderr.take().unwrap());
    let mut line = String::new();
    let capturing = loop {
        line.clear();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            break false;
        }
        if line.contains("Capturing on") {
            break true;
        }
    };
    if !capturing {
        let _ = tshark.wait();
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark cannot capture on lo and CI is set"
        );
        // Loopback capture is not possible here (no privilege): fall back to the key log alone.
        eprintln!("note: cannot capture on lo; checking the key log only");
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    if capturing {
        // dumpcap announces itself a moment before packets flow: wait until they do.
        probe.mark_file(&cap, Duration::from_secs(20));
    }

    let url = format!("amqp://guest:guest@127.0.0.1:{}", outer.addr.port());
    let connection = Connection::open("amqpeek-keylog", url.as_str())
        .await
        .unwrap();
    exchange(connection, "keylog").await;
    outer.wait_closed(1).await;
    let _ = outer.stop().await;
    let _ = inner.stop().await;

    let keys = std::fs::read_to_string(&keylog).unwrap();
    assert!(
        keys.lines()
            .any(|l| l.starts_with("CLIENT_TRAFFIC_SECRET_0 ")),
        "{keys}"
    );
    if !capturing {
        return;
    }
    // Everything relayed before the marker is in the file once the marker is.
    probe.mark_file(&cap, Duration::from_secs(20));
    let st = Command::new("kill")
        .args(["-INT", &tshark.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let _ = tshark.wait();
    let dissect = |with_keys: bool| {
        let mut cmd = Command::new("tshark");
        cmd.arg("-r").arg(&cap);
        cmd.args(["-d", &format!("tcp.port=={port},tls")]);
        cmd.args(["-d", &format!("tls.port=={port},amqp")]);
        if with_keys {
            cmd.arg("-o")
                .arg(format!("tls.keylog_file:{}", keylog.display()));
        }
        cmd.args(["-Y", "amqp"]);
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let decrypted = dissect(true);
    let without = dissect(false);
    eprintln!("tshark: {decrypted} AMQP packets with the key log, {without} without");
    assert!(decrypted >= 5, "tshark decrypted {decrypted} AMQP packets");
    assert_eq!(without, 0, "without the keys nothing is readable");
}

/// Lines tshark prints for `file` with display filter `filter` and no other option.
fn tshark_lines(file: &std::path::Path, filter: &str, field: &str) -> Vec<String> {
    tshark_lines_as(file, &[], filter, field)
}

/// [`tshark_lines`] with `decode_as` (`tcp.port==N,tls`: what tshark assumes of amqps' 5671).
fn tshark_lines_as(
    file: &std::path::Path,
    decode_as: &[String],
    filter: &str,
    field: &str,
) -> Vec<String> {
    let mut cmd = Command::new("tshark");
    for d in decode_as {
        cmd.args(["-d", d]);
    }
    let out = cmd
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", field])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The pcapng of a proxy whose upstream leg is TLS to an amqps port holds the plaintext, and
/// tshark dissects it as AMQP, not as TLS, even where it takes that port for TLS (as it does
/// 5671 with no options; here a free port, declared TLS with `-d`, so the test binds no fixed
/// port a local broker may hold): the server port is written as 5672, the real address is in
/// the SYN's comment, and amqpeek's own reader (so `check` and `replay` of the file) gives the
/// real address back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_legs_pcapng_is_dissected_as_amqp_by_tshark_where_its_port_means_tls() {
    let Some(rabbit) = broker().await else { return };
    if !tshark_ok() {
        return;
    }
    let pki = pki();
    // A TLS-terminating proxy in front of RabbitMQ stands for a broker's amqps port.
    let mut amqps = listen_tls(rabbit, &pki);
    amqps.listen = "127.0.0.1:0".parse().unwrap();
    let inner = start_proxy_with(amqps, vec![]).await;
    let amqps_addr = inner.addr;
    let as_tls = [format!("tcp.port=={},tls", amqps_addr.port())];
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("tls-leg.pcapng");
    let outer_cfg = tls_config(
        inner.addr,
        "localhost",
        TlsOptions {
            upstream_tls: true,
            ca: Some(pki.ca.clone()),
            ..Default::default()
        },
    );
    let sinks: Vec<BoxSink> = vec![Box::new(
        amqpeek::sinks::pcapng::PcapngSink::create(&cap).unwrap(),
    )];
    let outer = start_proxy_with(outer_cfg, sinks).await;
    let url = format!("amqp://guest:guest@127.0.0.1:{}", outer.addr.port());
    let connection = Connection::open("amqpeek-tls-pcapng", url.as_str())
        .await
        .unwrap();
    exchange(connection, "pcapng").await;
    outer.wait_closed(1).await;
    let (_, events) = outer.stop().await;
    let _ = inner.stop().await;
    let frames = frame_names(&events).len();

    let amqp = tshark_lines_as(&cap, &as_tls, "amqp", "frame.number");
    let tls = tshark_lines_as(&cap, &as_tls, "tls", "frame.number");
    eprintln!(
        "tshark: {} AMQP packets, {} TLS packets; {frames} frames decoded live",
        amqp.len(),
        tls.len()
    );
    assert_eq!(tls.len(), 0, "nothing in the plaintext is taken for TLS");
    assert!(amqp.len() >= 10, "tshark dissects AMQP: {amqp:?}");
    let ports = tshark_lines(
        &cap,
        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
        "tcp.dstport",
    );
    assert_eq!(ports, ["5672"], "the server port as written");
    let comments = tshark_lines(&cap, "frame.comment", "frame.comment");
    assert!(
        comments.iter().any(|c| c.contains(&amqps_addr.to_string())),
        "the SYN names the real server: {comments:?}"
    );

    let back: Vec<amqpeek::capture::SourceEvent> = amqpeek::capture::open(&cap, Default::default())
        .unwrap()
        .collect();
    let servers: Vec<std::net::SocketAddr> = back
        .iter()
        .filter_map(|e| match e {
            amqpeek::capture::SourceEvent::Connect { server, .. } => Some(*server),
            _ => None,
        })
        .collect();
    assert_eq!(
        servers,
        [amqps_addr],
        "read back with the real server address"
    );
}
