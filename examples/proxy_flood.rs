//! Throughput of `amqpeek proxy --no-tui` as users run it (the binary, its text trace written
//! to /dev/null) against a plain `tokio::io::copy_bidirectional` relay, in one run, alternating
//! per round: the measurement to compare two builds of the binary on the same machine.
//!
//!     cargo run --release --example proxy_flood -- [--rounds N] [--payload BYTES] [--messages N] BIN[,ARG...] ...
//!
//! Each BIN is an `amqpeek` binary (for example `target/release/amqpeek` and a copy of an
//! older build), with more arguments after commas (`target/release/amqpeek,--no-diagnoses`);
//! each is started once as `BIN proxy --no-tui --listen 127.0.0.1:PORT --upstream SERVER ARG...`
//! with its standard output sent to /dev/null. The traffic is a flood of
//! settled AMQP 1.0 transfers (spec-correct, as `cargo bench --bench relay` sends: header,
//! open, begin, attach, the server's credit, the transfers, detach, end, close) to an
//! in-process server that counts the bytes. Defaults: 5 rounds, 1,000,000 transfers of a
//! 32-byte body. Prints each round and the medians, with each binary's ratio to the plain relay.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

#[path = "../benches/support/mixes.rs"]
mod mixes;

#[path = "../benches/support/flood.rs"]
mod flood;
use flood::{counting_server, throughput};

#[path = "../benches/support/relays.rs"]
mod relays;
use relays::plain_relay;

/// A free loopback port (bound, then released for the proxy to take).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("free port").port()
}

/// Start `spec` (a binary, then its extra arguments, comma-separated) as a proxy to
/// `upstream`; its address once it accepts connections.
async fn start_proxy(spec: &str, upstream: SocketAddr) -> (Child, SocketAddr) {
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port())
        .parse()
        .expect("address");
    let mut words = spec.split(',');
    let bin = words.next().unwrap_or_default();
    let child = Command::new(bin)
        .args(["proxy", "--no-tui", "--listen"])
        .arg(listen.to_string())
        .arg("--upstream")
        .arg(upstream.to_string())
        .args(words)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {bin}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(listen).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "{bin} does not listen on {listen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // That probe connection was a connection of its own; let the proxy finish with it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    (child, listen)
}

/// Run one flood through `addr`; MiB per second, start to the server's closing frames.
async fn mib_per_s(addr: SocketAddr, flood: &mixes::Flood) -> f64 {
    throughput(addr, flood).await / (1u64 << 20) as f64
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The command line: options, then the binaries.
struct Args {
    rounds: usize,
    payload: usize,
    messages: usize,
    bins: Vec<String>,
}

fn parse_args() -> Args {
    let mut args = Args {
        rounds: 5,
        payload: 32,
        messages: 1_000_000,
        bins: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match a.as_str() {
            "--rounds" => args.rounds = number("--rounds").max(1),
            "--payload" => args.payload = number("--payload"),
            "--messages" => args.messages = number("--messages").max(1),
            _ => args.bins.push(a),
        }
    }
    assert!(
        !args.bins.is_empty(),
        "usage: proxy_flood [--rounds N] [--payload BYTES] [--messages N] BIN[,ARG...] ..."
    );
    args
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let server = counting_server(u32::MAX).await;
        let mut targets = vec![("plain relay".to_string(), plain_relay(server).await)];
        let mut children = Vec::new();
        for bin in &args.bins {
            let (child, addr) = start_proxy(bin, server).await;
            children.push(child);
            targets.push((bin.clone(), addr));
        }
        let flood = mixes::amqp10_flood(args.messages, args.payload);
        let warm = mixes::amqp10_flood(args.messages / 10, args.payload);
        println!(
            "{} transfers of {} bytes ({} MiB), {} rounds",
            args.messages,
            args.payload,
            flood.client.len() >> 20,
            args.rounds
        );
        for (_, addr) in &targets {
            mib_per_s(*addr, &warm).await;
        }
        let mut rates = vec![Vec::new(); targets.len()];
        for round in 0..args.rounds {
            let mut line = format!("round {}:", round + 1);
            for (i, (_, addr)) in targets.iter().enumerate() {
                let r = mib_per_s(*addr, &flood).await;
                // Let a proxy that still writes its trace finish before the next one runs.
                tokio::time::sleep(Duration::from_millis(500)).await;
                line.push_str(&format!(" {r:.0}"));
                rates[i].push(r);
            }
            println!("{line} MiB/s");
        }
        let plain = median(&rates[0]);
        for ((name, _), r) in targets.iter().zip(&rates) {
            let m = median(r);
            println!(
                "{name}: median {m:.0} MiB/s, {:.3}x of the plain relay",
                m / plain
            );
        }
        for mut c in children {
            let _ = c.kill();
            let _ = c.wait();
        }
    });
}
