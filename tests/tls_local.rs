//! TLS without a broker: AMQP's TLS upgrade terminated on both legs (the inspector sees the
//! plaintext inside), upstream certificate failures reported in plain words, and `$cbs`
//! put-token tokens masked in JSONL and pcapng unless secrets are shown.

mod common;
mod support;
mod tls_common;

use std::time::Duration;

use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::proxy::BoxSink;
use amqpeek::proxy::tls::TlsOptions;
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use base64::Engine;
use common::{SharedBuf, start_proxy_with};
use tls_common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HDR_10: &[u8; 8] = b"AMQP\x00\x01\x00\x00";
const HDR_TLS: &[u8; 8] = b"AMQP\x02\x01\x00\x00";

fn s(t: &str) -> Value {
    Value::String(t.into())
}

fn described(code: u64, value: Value) -> Value {
    use amqpeek::codec::amqp10::{Described, Descriptor};
    Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value,
    }))
}

fn open_frame(id: &str) -> Vec<u8> {
    encode_frame(0, 0, Some(&described_list(0x10, vec![s(id)])), &[]).unwrap()
}

fn close_reasons(events: &[Event]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Close(c) => Some((e.conn, c.reason.to_string())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_tls_upgrade_is_terminated_on_both_legs_and_inspected_inside() {
    let pki = pki();
    // A broker that speaks AMQP's TLS upgrade: echo the TLS header, TLS, then answer the AMQP
    // header and an open.
    let broker = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let broker_addr = broker.local_addr().unwrap();
    let acc = acceptor(&pki);
    let broker_task = tokio::spawn(async move {
        let (mut tcp, _) = broker.accept().await.unwrap();
        let mut h = [0u8; 8];
        tcp.read_exact(&mut h).await.unwrap();
        assert_eq!(&h, HDR_TLS);
        tcp.write_all(HDR_TLS).await.unwrap();
        let mut tls = acc.accept(tcp).await.unwrap();
        tls.read_exact(&mut h).await.unwrap();
        assert_eq!(&h, HDR_10);
        let mut open = vec![0u8; open_frame("client").len()];
        tls.read_exact(&mut open).await.unwrap();
        assert_eq!(open, open_frame("client"));
        tls.write_all(HDR_10).await.unwrap();
        tls.write_all(&open_frame("broker")).await.unwrap();
        tls.flush().await.unwrap();
        let mut rest = Vec::new();
        let _ = tls.read_to_end(&mut rest).await;
    });
    let config = tls_config(
        broker_addr,
        "localhost",
        TlsOptions {
            ca: Some(pki.ca.clone()),
            cert: Some(pki.cert.clone()),
            key: Some(pki.key.clone()),
            ..Default::default()
        },
    );
    let proxy = start_proxy_with(config, vec![]).await;

    let mut tcp = TcpStream::connect(proxy.addr).await.unwrap();
    tcp.write_all(HDR_TLS).await.unwrap();
    let mut h = [0u8; 8];
    tcp.read_exact(&mut h).await.unwrap();
    assert_eq!(&h, HDR_TLS, "the broker's TLS header is relayed");
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector(&pki.ca).connect(name, tcp).await.unwrap();
    tls.write_all(HDR_10).await.unwrap();
    tls.write_all(&open_frame("client")).await.unwrap();
    tls.flush().await.unwrap();
    tls.read_exact(&mut h).await.unwrap();
    assert_eq!(&h, HDR_10);
    let mut open = vec![0u8; open_frame("broker").len()];
    tls.read_exact(&mut open).await.unwrap();
    assert_eq!(open, open_frame("broker"));
    tls.shutdown().await.unwrap();
    drop(tls);
    tokio::time::timeout(Duration::from_secs(10), broker_task)
        .await
        .unwrap()
        .unwrap();
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;

    for dir in [Dir::C2S, Dir::S2C] {
        let seen: Vec<(String, u64)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Header {
                    dir: d,
                    offset,
                    header,
                    ..
                } if *d == dir => Some((header.proto_name().to_owned(), *offset)),
                EventKind::Frame(f) if f.dir == dir => Some((f.frame.name().to_owned(), f.offset)),
                _ => None,
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("amqp-tls".to_owned(), 0),
                ("amqp-1.0".to_owned(), 8),
                ("open".to_owned(), 16)
            ],
            "{dir:?}"
        );
        // The capture's bytes are the plaintext, contiguous from the TLS header on.
        let data = common::data_of(&events, 1, dir);
        assert_eq!(&data[..16], [&HDR_TLS[..], &HDR_10[..]].concat());
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Violation(v) if v.rule.id.starts_with("codec."))),
        "no decoding trouble: {events:?}"
    );
    let reasons = close_reasons(&events);
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].1.starts_with("client closed"), "{reasons:?}");
}

/// Start a TLS-terminating proxy in front of a silent TCP server, and a proxy under test in
/// front of it with `opts`; connect a plain client and return the close reasons of both.
async fn failed_upstream_handshake(pki: &Pki, sni: &str, opts: TlsOptions) -> (String, String) {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let tls_end = start_proxy_with(listen_tls(silent_addr, pki), vec![]).await;
    let under_test = start_proxy_with(tls_config(tls_end.addr, sni, opts), vec![]).await;
    let mut client = TcpStream::connect(under_test.addr).await.unwrap();
    client.write_all(HDR_10).await.unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(10), client.read(&mut buf))
        .await
        .expect("the client is closed, not left hanging");
    assert!(matches!(read, Ok(0) | Err(_)), "client got bytes: {read:?}");
    under_test.wait_closed(1).await;
    tls_end.wait_closed(1).await;
    let (_, ev) = under_test.stop().await;
    let (_, ev_end) = tls_end.stop().await;
    (
        close_reasons(&ev).remove(0).1,
        close_reasons(&ev_end).remove(0).1,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_certificate_failures_close_the_client_with_plain_words() {
    let pki = pki();
    // Name mismatch: the certificate is for localhost/127.0.0.1.
    let (reason, far) = failed_upstream_handshake(
        &pki,
        "wrong.example",
        TlsOptions {
            upstream_tls: true,
            ca: Some(pki.ca.clone()),
            ..Default::default()
        },
    )
    .await;
    assert!(
        reason.starts_with("upstream TLS handshake failed: ")
            && reason.contains("not valid for name \"wrong.example\""),
        "{reason}"
    );
    assert!(far.starts_with("client TLS handshake failed: "), "{far}");

    // Unknown issuer: the test CA is not trusted.
    let (reason, _) = failed_upstream_handshake(
        &pki,
        "localhost",
        TlsOptions {
            upstream_tls: true,
            ..Default::default()
        },
    )
    .await;
    assert!(
        reason.starts_with("upstream TLS handshake failed: ")
            && reason.contains("invalid peer certificate"),
        "{reason}"
    );

    // --insecure gets through the same certificate, with a warning on the connection.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let tls_end = start_proxy_with(listen_tls(silent_addr, &pki), vec![]).await;
    let insecure = TlsOptions {
        upstream_tls: true,
        insecure: true,
        ..Default::default()
    };
    let under_test =
        start_proxy_with(tls_config(tls_end.addr, "wrong.example", insecure), vec![]).await;
    let mut client = TcpStream::connect(under_test.addr).await.unwrap();
    client.write_all(HDR_10).await.unwrap();
    // The far end received the header through TLS.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !tls_end
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e.kind, EventKind::Header { .. }))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "header never got through"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The silent server never closes; stopping the proxy ends the connection.
    drop(client);
    let (_, ev) = under_test.stop().await;
    let _ = tls_end.stop().await;
    assert!(
        ev.iter()
            .any(|e| matches!(&e.kind, EventKind::Violation(v) if v.rule == "proxy.tls.insecure")),
        "insecure warning on the connection"
    );
}

/// A `$cbs` conversation: header, open, begin, attach to `$cbs`, a put-token transfer.
fn cbs_request(token: &str) -> Vec<u8> {
    let mut out = HDR_10.to_vec();
    out.extend(open_frame("cbs-client"));
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
            s("cbs-sender"),
            Value::Uint(0),
            Value::Bool(false),
            Value::Null,
            Value::Null,
            described(0x28, Value::List(vec![s("cbs-reply")])),
            described(0x29, Value::List(vec![s("$cbs")])),
        ],
    );
    out.extend(encode_frame(0, 0, Some(&attach), &[]).unwrap());
    let transfer = described_list(
        0x14,
        vec![
            Value::Uint(0),
            Value::Uint(0),
            Value::Binary(bytes::Bytes::from_static(b"\x01")),
            Value::Uint(0),
            Value::Bool(false),
        ],
    );
    let mut payload = Vec::new();
    described(
        0x74,
        Value::Map(vec![
            (s("operation"), s("put-token")),
            (s("type"), s("servicebus.windows.net:sastoken")),
            (s("name"), s("amqp://ns.servicebus.windows.net/orders")),
            (s("expiration"), Value::Timestamp(1_900_000_000_000)),
        ]),
    )
    .encode(&mut payload)
    .unwrap();
    described(0x77, s(token)).encode(&mut payload).unwrap();
    out.extend(encode_frame(0, 0, Some(&transfer), &payload).unwrap());
    out
}

/// The broker's side: header, open, a CBS response transfer.
fn cbs_response() -> Vec<u8> {
    let mut out = HDR_10.to_vec();
    out.extend(open_frame("cbs-broker"));
    let transfer = described_list(
        0x14,
        vec![
            Value::Uint(0),
            Value::Uint(0),
            Value::Binary(bytes::Bytes::from_static(b"\x02")),
            Value::Uint(0),
            Value::Bool(true),
        ],
    );
    let mut payload = Vec::new();
    described(
        0x74,
        Value::Map(vec![
            (s("status-code"), Value::Int(202)),
            (s("status-description"), s("Accepted")),
        ]),
    )
    .encode(&mut payload)
    .unwrap();
    out.extend(encode_frame(0, 0, Some(&transfer), &payload).unwrap());
    out
}

/// Relay a CBS conversation through the proxy; return (JSONL text, pcapng bytes).
async fn cbs_through_proxy(token: &str, show_secrets: bool) -> (String, Vec<u8>) {
    let broker = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let broker_addr = broker.local_addr().unwrap();
    let request_len = cbs_request(token).len();
    tokio::spawn(async move {
        let (mut s, _) = broker.accept().await.unwrap();
        let mut got = vec![0u8; request_len];
        s.read_exact(&mut got).await.unwrap();
        s.write_all(&cbs_response()).await.unwrap();
        let _ = s.read_to_end(&mut got).await;
    });
    let jsonl = SharedBuf::default();
    let pcap = SharedBuf::default();
    let sinks: Vec<BoxSink> = vec![
        Box::new(JsonlSink::new(jsonl.clone(), JsonOptions::default())),
        Box::new(PcapngSink::new(pcap.clone()).unwrap()),
    ];
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker_addr);
    config.inspect.show_secrets = show_secrets;
    let proxy = start_proxy_with(config, sinks).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&cbs_request(token)).await.unwrap();
    let mut reply = vec![0u8; cbs_response().len()];
    c.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply, cbs_response());
    drop(c);
    proxy.wait_closed(1).await;
    let _ = proxy.stop().await;
    let text = String::from_utf8(jsonl.0.lock().unwrap().clone()).unwrap();
    let pcap = pcap.0.lock().unwrap().clone();
    (text, pcap)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cbs_put_token_is_summarised_and_its_token_masked_everywhere() {
    let token = "SharedAccessSignature sr=amqp%3A%2F%2Fns.servicebus.windows.net%2Forders&sig=Zm9vYmFyc2VjcmV0&se=1900000000&skn=RootManageSharedAccessKey";
    let (text, pcap) = cbs_through_proxy(token, false).await;
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The token appears nowhere: not in the text, not in any raw field, not in the pcap.
    assert!(!text.contains("sig="), "token in JSONL");
    let b64 = base64::engine::general_purpose::STANDARD;
    for l in &lines {
        if let Some(raw) = l["raw"].as_str() {
            let raw = b64.decode(raw).unwrap();
            assert!(!contains(&raw, token.as_bytes()), "token in a raw field");
            assert!(!contains(&raw, b"sig="), "part of the token in a raw field");
        }
    }
    assert!(!contains(&pcap, b"sig="), "token in the pcapng");
    assert!(!pcap.is_empty());
    // The request is recognised, and its body shows the mask at the token's length.
    let request = lines
        .iter()
        .find(|l| l["dir"] == "c2s" && l["name"] == "transfer")
        .expect("put-token transfer");
    let msg = &request["message"];
    assert_eq!(msg["cbs"]["operation"], "put-token");
    assert_eq!(msg["cbs"]["type"], "servicebus.windows.net:sastoken");
    assert_eq!(
        msg["cbs"]["name"],
        "amqp://ns.servicebus.windows.net/orders"
    );
    assert_eq!(msg["amqp-value"], "*".repeat(token.len()));
    let response = lines
        .iter()
        .find(|l| l["dir"] == "s2c" && l["name"] == "transfer")
        .expect("response transfer");
    assert_eq!(response["message"]["cbs"]["status-code"], 202);
    assert_eq!(response["message"]["cbs"]["status-description"], "Accepted");

    // --show-secrets shows it.
    let (text, pcap) = cbs_through_proxy(token, true).await;
    assert!(text.contains(token), "token shown with show_secrets");
    assert!(contains(&pcap, token.as_bytes()));
}

/// `amqpeek proxy --listen-tls` with `--key` naming a file that is not a key, or no file:
/// status 2 at once, and the message names the file.
#[test]
fn a_bad_key_file_is_a_clear_error() {
    let pki = pki();
    let garbage = pki.dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a key\n").unwrap();
    let missing = pki.dir.path().join("missing.pem");
    for (key, says) in [(&garbage, "no items found"), (&missing, "No such file")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_amqpeek"))
            .args([
                "proxy",
                "--no-tui",
                "--listen",
                "127.0.0.1:0",
                "--listen-tls",
            ])
            .arg("--cert")
            .arg(&pki.cert)
            .arg("--key")
            .arg(key)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&key.display().to_string()) && err.contains(says),
            "{err}"
        );
    }
}
