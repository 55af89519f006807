//! Fairness benchmark: the round-trip latency of a quiet connection while a neighbour floods,
//! through amqpeek with each kind of lossless consumer (none, JSONL, pcapng, a `--fail-on`
//! counter) and through a plain `copy_bidirectional` relay, in one run.
//!
//! Both connections are spec-correct AMQP 1.0 (header, open, begin, attach, credit). The quiet
//! one then sends empty frames (heartbeats) one at a time and the server echoes each: 2,000
//! pings, reported as p50, p99 and max. Meanwhile the flooding one sends settled 32-byte
//! transfers as fast as the relay takes them, so its inspection falls behind and its relay
//! waits for its own queue budget.
//!
//! Run: `cargo bench --bench fairness` (env `PINGS`, default 2,000).

#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use amqpeek::proxy::BoxSink;
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use amqpeek::verdict::CheckReport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/mixes.rs"]
mod mixes;

#[path = "support/relays.rs"]
mod relays;
use relays::{amqpeek_relay, plain_relay};

/// An AMQP 1.0 empty frame (a heartbeat): size 8, doff 2, type 0, channel 0.
const PING: [u8; 8] = [0, 0, 0, 8, 2, 0, 0, 0];

/// The peer of both connections: answers the client's opening frames; then echoes a
/// connection whose first frame is an empty one (the pinger) and reads and drops any other
/// (the flood) to EOF.
async fn server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let open_len = mixes::amqp10_client_open().len();
    let server_open = mixes::amqp10_server_open(mixes::FLOOD_CREDIT);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let server_open = server_open.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 256 * 1024];
                if s.read_exact(&mut buf[..open_len]).await.is_err()
                    || s.write_all(&server_open).await.is_err()
                    || s.read_exact(&mut buf[..8]).await.is_err()
                {
                    return;
                }
                if buf[..8] == PING {
                    let _ = s.write_all(&PING).await;
                    while s.read_exact(&mut buf[..8]).await.is_ok() {
                        if s.write_all(&buf[..8]).await.is_err() {
                            return;
                        }
                    }
                } else {
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Open a connection through `addr` and wait for the server's opening frames.
async fn opened(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&mixes::amqp10_client_open()).await.unwrap();
    let mut back = vec![0u8; mixes::amqp10_server_open(mixes::FLOOD_CREDIT).len()];
    s.read_exact(&mut back).await.unwrap();
    s
}

/// Each ping's round trip, while a flood of settled transfers runs on another connection
/// through the same relay, from before the first ping until after the last.
async fn pings_under_flood(addr: SocketAddr, pings: usize) -> Vec<Duration> {
    let mut flooder = opened(addr).await;
    let mut pinger = opened(addr).await;
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let flooding = tokio::spawn(async move {
        let body = [0x5a; 32];
        let mut id = 0u32;
        let mut batch = Vec::new();
        let mut sent = 0u64;
        while !*stopped.borrow_and_update() {
            batch.clear();
            for _ in 0..FLOOD_BATCH {
                batch.extend_from_slice(&mixes::amqp10_transfer(id, &body));
                id += 1;
            }
            flooder.write_all(&batch).await.unwrap();
            sent += FLOOD_BATCH as u64;
        }
        flooder.shutdown().await.unwrap();
        sent
    });
    // Let the flood get going, so the pings meet it at full speed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut times = Vec::with_capacity(pings);
    let mut buf = [0u8; 8];
    for _ in 0..pings {
        let start = Instant::now();
        pinger.write_all(&PING).await.unwrap();
        pinger.read_exact(&mut buf).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(buf, PING);
    }
    stop.send_replace(true);
    let transfers = flooding.await.unwrap();
    eprintln!("  ({transfers} transfers flooded meanwhile)");
    times
}

/// Transfers the flooder writes at a time.
const FLOOD_BATCH: usize = 2_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The lossless consumers to compare, each writing where the proxy would.
fn sinks(kind: &str, dir: &std::path::Path) -> Vec<BoxSink> {
    let file = |name: &str| std::io::BufWriter::new(std::fs::File::create(dir.join(name)).unwrap());
    match kind {
        "none" => Vec::new(),
        "--jsonl" => vec![Box::new(JsonlSink::new(
            file("c.jsonl"),
            JsonOptions::default(),
        ))],
        "--pcap" => vec![Box::new(PcapngSink::new(file("c.pcapng")).unwrap())],
        // What `--fail-on` adds: the verdict's report, which sees every violation.
        "--fail-on" => vec![Box::new(CheckReport::new())],
        _ => unreachable!(),
    }
}

fn main() {
    // As the binary: no transparent huge pages (driver/reclaim.rs).
    amqpeek::driver::reclaim::disable_transparent_huge_pages();
    // `cargo test --all-targets` runs bench binaries without `--bench`: nothing to measure.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let pings = env_usize("PINGS", 2_000);
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("ping round trip on one connection while another floods ({pings} pings)");
    println!("{:<22} {:>10} {:>10} {:>10}", "relay", "p50", "p99", "max");
    rt.block_on(async {
        let upstream = server().await;
        let mut relays = vec![("plain relay".to_owned(), plain_relay(upstream).await)];
        for kind in ["none", "--jsonl", "--pcap", "--fail-on"] {
            let addr = amqpeek_relay(upstream, sinks(kind, dir.path())).await;
            relays.push((format!("amqpeek {kind}"), addr));
        }
        for (name, addr) in relays {
            let mut t = pings_under_flood(addr, pings).await;
            t.sort();
            println!(
                "{name:<22} {:>10.1?} {:>10.1?} {:>10.1?}",
                percentile(&t, 0.5),
                percentile(&t, 0.99),
                t[t.len() - 1]
            );
            // Let the inspection finish the flood before the next relay is measured.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    });
}
