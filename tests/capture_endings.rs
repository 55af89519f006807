//! How a TCP conversation ended reads the same from every source: the relay's JSONL, the
//! relay's pcapng and a kernel capture of the same run (dumpcap on the loopback) give `check`
//! the same findings.
//!
//! The case where they parted: a client sends FIN without a close frame and RabbitMQ answers
//! it with RST (it does so to a FIN on an open AMQP 1.0 connection). The relay sees the client
//! close first (`client closed, then upstream reset: ...`), and so must a reader of the
//! packets: the client's FIN came first, the RST acknowledges it. No client library leaves
//! that way, so the client is a plain socket sending frames built with amqpeek's encoder; the
//! broker, the proxy and the captures are real. Needs the broker and dumpcap; with `CI` set, a
//! missing one fails the test.

mod cli_common;
mod kernel_capture;
mod support;
mod wait;

use std::collections::BTreeSet;

use kernel_capture::{findings, start_dumpcap};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use amqpeek::codec::amqp10::{Str, Symbol, Value, described_list, encode_frame};

const SASL: &[u8] = b"AMQP\x03\x01\x00\x00";
const AMQP: &[u8] = b"AMQP\x00\x01\x00\x00";

fn frame(frame_type: u8, body: Value) -> Vec<u8> {
    encode_frame(frame_type, 0, Some(&body), &[]).unwrap()
}

/// Reads `n` bytes, then one frame (its size first).
fn read_frame_after(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut head = vec![0u8; n + 4];
    s.read_exact(&mut head).unwrap();
    let size = u32::from_be_bytes(head[n..].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; size.saturating_sub(4)];
    s.read_exact(&mut rest).unwrap();
    head.extend(rest);
    head
}

/// Through the proxy at `addr`: SASL PLAIN, the AMQP header and open, each answered by the
/// broker; then FIN with no close frame. Returns how the socket ended (RabbitMQ resets).
fn leave_with_a_fin(addr: &str) -> std::io::Result<usize> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(SASL).unwrap();
    read_frame_after(&mut s, SASL.len()); // sasl-mechanisms
    let sym = |x: &str| Value::Symbol(Symbol(Str::from(x)));
    let init = described_list(
        0x41,
        vec![sym("PLAIN"), Value::Binary(b"\0guest\0guest"[..].into())],
    );
    s.write_all(&frame(1, init)).unwrap();
    read_frame_after(&mut s, 0); // sasl-outcome
    let open = described_list(
        0x10,
        vec![
            Value::String(Str::from("fin-then-reset")),
            Value::String(Str::from("localhost")),
        ],
    );
    let mut hello = AMQP.to_vec();
    hello.extend(frame(0, open));
    s.write_all(&hello).unwrap();
    read_frame_after(&mut s, AMQP.len()); // the broker's open
    s.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fin_answered_by_a_reset_blames_the_client_in_every_source() {
    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (pcap, jsonl, kernel) = (
        dir.path().join("relay.pcapng"),
        dir.path().join("relay.jsonl"),
        dir.path().join("kernel.pcapng"),
    );
    let (mut proxy, _stderr, addr) = cli_common::start_proxy(
        &[
            "--no-tui",
            "-q",
            "--upstream",
            support::BROKER,
            "--pcap",
            pcap.to_str().unwrap(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let probe = wait::Probe::new();
    let Some(mut dumpcap) = start_dumpcap(port, &probe, &kernel) else {
        let _ = proxy.kill();
        let _ = proxy.wait();
        return;
    };

    let ended = leave_with_a_fin(&addr);
    let closed = wait::until("the close in the JSONL", Duration::from_secs(20), || {
        let text = std::fs::read_to_string(&jsonl).unwrap_or_default();
        text.lines()
            .find(|l| l.contains(r#""event":"close""#))
            .map(str::to_owned)
    });
    probe.mark_file(&kernel, Duration::from_secs(20));
    for child in [&proxy, &dumpcap] {
        let st = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
    proxy.wait().unwrap();
    dumpcap.wait().unwrap();
    assert!(
        closed.contains("client closed, then upstream reset"),
        "RabbitMQ resets on the client's FIN ({ended:?}): {closed}"
    );

    let want = BTreeSet::from([(
        "amqp10.connection.closed-without-close".to_owned(),
        "c2s".to_owned(),
    )]);
    for file in [&jsonl, &pcap, &kernel] {
        assert_eq!(findings(file), want, "{}", file.display());
    }
}
