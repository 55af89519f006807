//! A half-close is written where it happened. A client sends its protocol header and
//! shuts its side down (FIN); the server reads to the end and only then sends, a few frames
//! over a while, and closes. No AMQP client library half-closes, so both ends are plain
//! sockets speaking crafted AMQP 0-9-1 bytes through the real `amqpeek proxy`.
//!
//! tshark, with no options, must show the client's FIN before the server's later data in the
//! proxy's pcapng, and in the pcapngs `replay` writes from that pcapng and from the proxy's
//! JSONL (which records each FIN as a `fin` event); all three the same packet for packet. The
//! upstream listens on a port other than 5672: tshark dissects the AMQP all the same.

mod capture_common;
mod cli_common;
mod support;
mod wait;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use capture_common::{require_tshark, tshark};

/// AMQP 0-9-1 protocol header.
const HEADER: &[u8] = b"AMQP\x00\x00\x09\x01";
/// A 0-9-1 heartbeat frame.
const HEARTBEAT: &[u8] = &[8, 0, 0, 0, 0, 0, 0, 0xce];
/// Frames the server sends after the client's FIN.
const LATER: usize = 3;

/// An upstream that reads its one client to the end, then sends [`LATER`] heartbeats 30 ms
/// apart and closes; its thread gives back what it read.
fn half_close_upstream() -> (std::net::SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    assert_ne!(addr.port(), 5672);
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        for _ in 0..LATER {
            std::thread::sleep(Duration::from_millis(30));
            s.write_all(HEARTBEAT).unwrap();
        }
        got
    });
    (addr, server)
}

/// Every packet of `file` as tshark sees it: (sent by the client, FIN, payload length).
fn packets(file: &Path, client_port: u16) -> Vec<(bool, bool, usize)> {
    let out = tshark(&[
        "-r",
        file.to_str().unwrap(),
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-e",
        "tcp.srcport",
        "-e",
        "tcp.flags.fin",
        "-e",
        "tcp.len",
    ]);
    out.lines()
        .map(|l| {
            let c: Vec<&str> = l.split('|').collect();
            (
                c[0].parse::<u16>().unwrap() == client_port,
                c[1] == "1" || c[1] == "True",
                c[2].parse().unwrap(),
            )
        })
        .collect()
}

/// The client's FIN comes before each of the server's data packets, which tshark dissects as
/// AMQP, and TCP analysis finds nothing wrong; returns the packets.
fn assert_fin_first(file: &Path, client_port: u16) -> Vec<(bool, bool, usize)> {
    let what = file.display();
    let pk = packets(file, client_port);
    let client_fin = pk
        .iter()
        .position(|&(c, fin, _)| c && fin)
        .unwrap_or_else(|| panic!("{what}: no FIN from the client: {pk:?}"));
    let server_data: Vec<usize> = (0..pk.len()).filter(|&i| !pk[i].0 && pk[i].2 > 0).collect();
    assert_eq!(server_data.len(), LATER, "{what}: {pk:?}");
    assert!(
        server_data.iter().all(|&i| i > client_fin),
        "{what}: the client's FIN (packet {}) comes before the server's later data (packets {:?}): {pk:?}",
        client_fin + 1,
        server_data.iter().map(|i| i + 1).collect::<Vec<_>>()
    );
    let server_fin = pk.iter().position(|&(c, fin, _)| !c && fin);
    assert!(
        server_fin > server_data.last().copied(),
        "{what}: the server's FIN after its data: {pk:?}"
    );
    let amqp = tshark(&["-r", file.to_str().unwrap(), "-Y", "amqp"]);
    assert_eq!(amqp.lines().count(), LATER, "{what}: AMQP frames\n{amqp}");
    let flagged = tshark(&["-r", file.to_str().unwrap(), "-Y", "tcp.analysis.flags"]);
    assert_eq!(flagged, "", "{what}: TCP analysis flags");
    pk
}

#[test]
fn a_half_close_is_written_where_it_happened() {
    if !require_tshark("a_half_close_is_written_where_it_happened") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (pcap, jsonl) = (
        dir.path().join("live.pcapng"),
        dir.path().join("live.jsonl"),
    );
    let (upstream, server) = half_close_upstream();
    let upstream = upstream.to_string();
    let (mut proxy, _stderr, addr) = cli_common::start_proxy(
        &[
            "--no-tui",
            "-q",
            "--upstream",
            &upstream,
            "--pcap",
            pcap.to_str().unwrap(),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ],
        Stdio::null(),
    );

    let mut client = TcpStream::connect(&addr).unwrap();
    let client_port = client.local_addr().unwrap().port();
    client.write_all(HEADER).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let mut back = Vec::new();
    client.read_to_end(&mut back).unwrap();
    drop(client);
    assert_eq!(server.join().unwrap(), HEADER, "relayed to the upstream");
    assert_eq!(back, HEARTBEAT.repeat(LATER), "relayed back after the FIN");
    wait::until("the close in the JSONL", Duration::from_secs(20), || {
        let text = std::fs::read_to_string(&jsonl).unwrap_or_default();
        text.contains(r#""event":"close""#).then_some(())
    });
    let st = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(proxy.wait().unwrap().success());

    // The JSONL: each direction's end, where it happened.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |p: &dyn Fn(&serde_json::Value) -> bool| lines.iter().position(p);
    let c2s_fin = at(&|l| l["event"] == "fin" && l["dir"] == "c2s").expect("a c2s fin");
    assert_eq!(lines[c2s_fin]["offset"], HEADER.len());
    let s2c_fin = at(&|l| l["event"] == "fin" && l["dir"] == "s2c").expect("a s2c fin");
    assert_eq!(lines[s2c_fin]["offset"], HEARTBEAT.len() * LATER);
    let first_s2c = at(&|l| l["event"] == "frame" && l["dir"] == "s2c").expect("s2c frames");
    let close = at(&|l| l["event"] == "close").unwrap();
    assert!(c2s_fin < first_s2c && s2c_fin < close, "{lines:#?}");

    let live = assert_fin_first(&pcap, client_port);
    // The same from the pcapng read back, and from the JSONL.
    for (from, to) in [(&pcap, "from-pcapng.pcapng"), (&jsonl, "from-jsonl.pcapng")] {
        let out = dir.path().join(to);
        let st = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
            .arg("replay")
            .arg(from)
            .arg("--pcap")
            .arg(&out)
            .args(["--no-tui", "-q"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "replay {}", from.display());
        assert_eq!(assert_fin_first(&out, client_port), live, "{to}");
    }
}
