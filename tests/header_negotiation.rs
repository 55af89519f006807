//! The protocol header negotiation through the proxy: a client may ask for any protocol
//! (AMQP 1.0 §2.2); what is judged is the server's answer. RabbitMQ (127.0.0.1:5672) answers
//! every header it does not speak with one it does and closes the socket, which is clean, live
//! and in both captures; a scripted broker that refuses and then goes on is reported.

mod common;
mod support;
mod tls_common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::codec::ProtocolHeader;
use amqpeek::codec::amqp10::{Value, described_list, encode_frame};
use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::proxy::{BoxSink, ProxyConfig};
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use amqpeek::verdict::CheckReport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HTLS: &[u8] = b"AMQP\x02\x01\x00\x00";
const HSASL: &[u8] = b"AMQP\x03\x01\x00\x00";
const H10: &[u8] = b"AMQP\x00\x01\x00\x00";
const H091: &[u8] = b"AMQP\x00\x00\x09\x01";

/// (side, rule, occurrences) of every finding.
type Found = Vec<(String, String, u64)>;

fn found(report: &CheckReport) -> Found {
    let mut v: Found = report
        .findings()
        .iter()
        .map(|f| (f.dir.as_str().to_string(), f.rule.clone(), f.count))
        .collect();
    v.sort();
    v
}

/// `check` of a capture file.
fn check(path: &Path) -> Found {
    let source = capture::open(path, CaptureOptions::default()).unwrap();
    let mut report = CheckReport::new();
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: false,
        ..InspectOptions::default()
    };
    amqpeek::replay::run(source, opts, &mut [&mut report]).unwrap();
    found(&report)
}

/// What one client saw and what amqpeek made of it.
struct Probe {
    /// The bytes the server answered with.
    answer: Vec<u8>,
    /// The headers each side sent, as the inspection saw them.
    headers: Vec<(Dir, ProtocolHeader)>,
    /// The live verdict; `check` of the JSONL and of the pcapng agree with it.
    found: Found,
}

/// Send `hello` through a proxy with `config` and read the answer until the server closes
/// (or, for a server that accepts and waits, for a second), then close.
async fn probe(config: ProxyConfig, hello: &[u8]) -> Probe {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, pcap) = (dir.path().join("c.jsonl"), dir.path().join("c.pcapng"));
    let sinks: Vec<BoxSink> = vec![
        Box::new(JsonlSink::new(
            std::io::BufWriter::new(std::fs::File::create(&jsonl).unwrap()),
            JsonOptions::default(),
        )),
        Box::new(PcapngSink::create(&pcap).unwrap()),
    ];
    let proxy = common::start_proxy_with(config, sinks).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(hello).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(1), c.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => break, // closed, reset, or waiting for more than a header
        }
    }
    drop(c);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let mut report = CheckReport::new();
    for e in &events {
        report.event(e).unwrap();
    }
    let live = found(&report);
    assert_eq!(check(&jsonl), live, "check of the JSONL");
    assert_eq!(check(&pcap), live, "check of the pcapng");
    Probe {
        answer,
        headers: headers(&events),
        found: live,
    }
}

fn headers(events: &[Event]) -> Vec<(Dir, ProtocolHeader)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Header { dir, header, .. } => Some((*dir, *header)),
            _ => None,
        })
        .collect()
}

fn plain(upstream: SocketAddr) -> ProxyConfig {
    ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream)
}

fn rules(f: &[(&str, &str, u64)]) -> Found {
    f.iter()
        .map(|(s, r, n)| (s.to_string(), r.to_string(), *n))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_answering_headers_it_does_not_speak_is_clean() {
    let Some(broker) = common::broker().await else {
        return;
    };
    let hello_tls = [&[0x16u8, 3, 1, 0, 0x2e, 1][..], &[0; 46]].concat();
    // (what the client sends, what RabbitMQ answers with before it closes, the verdict)
    let cases: Vec<(&str, Vec<u8>, &[u8], Found)> = vec![
        // The TLS upgrade on a plain listener: RabbitMQ wants SASL.
        ("TLS header", HTLS.to_vec(), HSASL, vec![]),
        (
            "AMQP 0 1 0 1",
            b"AMQP\x00\x01\x00\x01".to_vec(),
            H091,
            vec![],
        ),
        (
            "AMQP 0 0 9 0",
            b"AMQP\x00\x00\x09\x00".to_vec(),
            H091,
            vec![],
        ),
        // Not a header: the client breaks §2.2, RabbitMQ answers correctly.
        (
            "HTTP",
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            H091,
            rules(&[("c2s", "codec.undecodable-stream", 1)]),
        ),
        // TLS on a plain port: not decoded (it could be AMQPS), RabbitMQ answers correctly.
        (
            "TLS ClientHello",
            hello_tls,
            H091,
            rules(&[("c2s", "codec.not-decoded", 1)]),
        ),
    ];
    for (what, hello, want_answer, want) in cases {
        let p = probe(plain(broker), &hello).await;
        assert_eq!(p.answer, want_answer, "{what}: RabbitMQ's answer");
        assert_eq!(p.found, want, "{what}");
        assert_eq!(
            p.headers.iter().filter(|(d, _)| *d == Dir::S2C).count(),
            1,
            "{what}: {:?}",
            p.headers
        );
    }
    // AMQP 0-9: RabbitMQ accepts it with a connection.start (no header), which is not decoded
    // and not judged.
    let p = probe(plain(broker), b"AMQP\x01\x01\x00\x09").await;
    assert_eq!(p.answer[0], 1, "a method frame: {:?}", p.answer);
    assert_eq!(p.found, vec![], "AMQP 0-9");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_refusing_the_tls_upgrade_the_proxy_would_terminate_is_clean() {
    let Some(broker) = common::broker().await else {
        return;
    };
    // With certificate material the proxy answers the TLS header itself toward the client only
    // once the broker accepted it; RabbitMQ's plain listener refuses it with its SASL header.
    let pki = tls_common::pki();
    let config = tls_common::tls_config(
        broker,
        "127.0.0.1",
        amqpeek::proxy::tls::TlsOptions {
            cert: Some(pki.cert.clone()),
            key: Some(pki.key.clone()),
            ..Default::default()
        },
    );
    let p = probe(config, HTLS).await;
    assert_eq!(p.answer, HSASL);
    assert_eq!(
        p.headers,
        [
            (Dir::C2S, ProtocolHeader::Amqp10Tls),
            (Dir::S2C, ProtocolHeader::Amqp10Sasl)
        ]
    );
    assert_eq!(p.found, vec![]);
}

/// A broker that answers any header with `answer` and then closes.
async fn scripted(answer: Vec<u8>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut h = [0u8; 8];
        s.read_exact(&mut h).await.unwrap();
        s.write_all(&answer).await.unwrap();
        s.shutdown().await.unwrap();
        let _ = s.read_to_end(&mut Vec::new()).await;
    });
    addr
}

fn perf(code: u64, fields: Vec<Value>) -> Vec<u8> {
    encode_frame(0, 0, Some(&described_list(code, fields)), &[]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_refuses_a_header_and_goes_on_is_reported() {
    let open = perf(0x10, vec![Value::String("broker".into())]);
    let close = perf(0x18, vec![]);
    // A plain 1.0 client to a broker that wants SASL: it says so, then sends a second header,
    // an open and a close instead of closing the socket.
    let answer = [HSASL, H10, &open, &close].concat();
    let p = probe(plain(scripted(answer.clone()).await), H10).await;
    assert_eq!(p.answer, answer);
    assert_eq!(
        p.found,
        rules(&[("s2c", "header.data-after-refusal", 3)]),
        "the header, the open and the close"
    );
    // Its clean counterpart: the SASL header alone.
    let p = probe(plain(scripted(HSASL.to_vec()).await), H10).await;
    assert_eq!(p.found, vec![]);
    // The TLS upgrade without certificate material (relayed as bytes): refused with the plain
    // header, then an open.
    let answer = [H10, &open].concat();
    let p = probe(plain(scripted(answer).await), HTLS).await;
    assert_eq!(p.found, rules(&[("s2c", "header.data-after-refusal", 1)]));
    // A 0-9-1 client refused by a 1.0 broker that then opens anyway.
    let answer = [H10, &open].concat();
    let p = probe(plain(scripted(answer).await), H091).await;
    assert_eq!(p.found, rules(&[("s2c", "header.data-after-refusal", 1)]));
}
