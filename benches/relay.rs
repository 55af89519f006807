//! Relay benchmark: amqpeek (decoding on; decoding + JSONL capture) against a plain
//! `tokio::io::copy_bidirectional` relay and a direct connection, in the same run, alternating.
//!
//! Workloads (AMQP 1.0 traffic built from literal bytes):
//! - 1 MiB messages, one transfer frame each (throughput, client to server);
//! - a flood of small transfers (throughput);
//! - round trips of one small transfer through an echo server (latency).
//!
//! Run: `cargo bench --bench relay` (env `ROUNDS`, default 5). Prints medians and the ratios
//! amqpeek / plain relay.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use amqpeek::event::Event;
use amqpeek::pipeline::Sink;
use amqpeek::proxy::{BoxSink, Proxy, ProxyConfig};
use amqpeek::sinks::{JsonOptions, JsonlSink};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Decodes (the Inspector runs) but writes nothing.
struct NullSink;
impl Sink for NullSink {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        std::hint::black_box(ev);
        Ok(())
    }
}

/// An AMQP 1.0 transfer frame on channel 0 carrying `payload` as one data section.
fn transfer(delivery_id: u32, payload: &[u8]) -> Vec<u8> {
    let mut perf = vec![0x00, 0x53, 0x14]; // described: transfer
    let tag = delivery_id.to_be_bytes();
    let mut fields = vec![0x43]; // handle: uint0
    fields.push(0x70); // delivery-id: uint
    fields.extend_from_slice(&delivery_id.to_be_bytes());
    fields.extend_from_slice(&[0xa0, 4]); // delivery-tag: vbin8
    fields.extend_from_slice(&tag);
    fields.push(0x43); // message-format: uint0
    fields.push(0x41); // settled: true
    perf.push(0xc0); // list8
    perf.push((fields.len() + 1) as u8);
    perf.push(5);
    perf.extend_from_slice(&fields);
    let mut section = vec![0x00, 0x53, 0x75, 0xb0]; // data, vbin32
    section.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    let size = 8 + perf.len() + section.len() + payload.len();
    let mut f = Vec::with_capacity(size);
    f.extend_from_slice(&(size as u32).to_be_bytes());
    f.extend_from_slice(&[2, 0, 0, 0]);
    f.extend_from_slice(&perf);
    f.extend_from_slice(&section);
    f.extend_from_slice(payload);
    f
}

fn stream(messages: usize, payload: usize) -> Vec<u8> {
    let body = vec![0x5a; payload];
    let mut s = b"AMQP\x00\x01\x00\x00".to_vec();
    for i in 0..messages {
        s.extend_from_slice(&transfer(i as u32, &body));
    }
    s
}

/// Reads to EOF, answers with the byte count, closes.
async fn counting_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 256 * 1024];
                let mut total = 0u64;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n as u64,
                    }
                }
                let _ = s.write_all(&total.to_be_bytes()).await;
            });
        }
    });
    addr
}

async fn echo_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

async fn plain_relay(target: SocketAddr) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            tokio::spawn(async move {
                let Ok(mut u) = TcpStream::connect(target).await else {
                    return;
                };
                let _ = c.set_nodelay(true);
                let _ = u.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut c, &mut u).await;
            });
        }
    });
    addr
}

async fn amqpeek_relay(target: SocketAddr, sinks: Vec<BoxSink>) -> SocketAddr {
    let p = Proxy::bind(ProxyConfig::new("127.0.0.1:0".parse().unwrap(), target))
        .await
        .unwrap();
    let addr = p.local_addr().unwrap();
    tokio::spawn(p.run(sinks, std::future::pending()));
    addr
}

/// Send `data`, half-close, wait for the server's count: bytes per second.
async fn throughput(addr: SocketAddr, data: &[u8]) -> f64 {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(data).await.unwrap();
    s.shutdown().await.unwrap();
    let mut n = [0u8; 8];
    s.read_exact(&mut n).await.unwrap();
    assert_eq!(
        u64::from_be_bytes(n),
        data.len() as u64,
        "every byte relayed"
    );
    data.len() as f64 / start.elapsed().as_secs_f64()
}

/// Mean round-trip time of one small transfer through an echo server.
async fn round_trip(addr: SocketAddr, trips: usize) -> Duration {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let hdr = b"AMQP\x00\x01\x00\x00";
    s.write_all(hdr).await.unwrap();
    let mut back = [0u8; 8];
    s.read_exact(&mut back).await.unwrap();
    let frame = transfer(1, &[0x5a; 32]);
    let mut buf = vec![0u8; frame.len()];
    let start = Instant::now();
    for _ in 0..trips {
        s.write_all(&frame).await.unwrap();
        s.read_exact(&mut buf).await.unwrap();
    }
    start.elapsed() / trips as u32
}

/// Let an inspection side that is still catching up (up to a queue's worth of chunks) finish
/// before the next measurement starts.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(700)).await;
}

/// Small transfers per run.
const SMALL: usize = 1_000_000;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it:
    // then one small round only, as a smoke test that every path still relays.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let rounds: usize = if smoke {
        1
    } else {
        std::env::var("ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(5)
    };
    // `RTT_ONLY=1` skips the throughput workloads.
    let rtt_only = std::env::var_os("RTT_ONLY").is_some();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let counting = counting_server().await;
        let echo = echo_server().await;
        let dir = tempfile::tempdir().unwrap();
        let jsonl = |name: &str| -> Vec<BoxSink> {
            let f = std::fs::File::create(dir.path().join(name)).unwrap();
            vec![Box::new(JsonlSink::new(
                io::BufWriter::with_capacity(256 * 1024, f),
                JsonOptions::default(),
            ))]
        };
        let null = || -> Vec<BoxSink> { vec![Box::new(NullSink)] };
        let targets: Vec<(&str, SocketAddr, SocketAddr)> = vec![
            ("direct", counting, echo),
            (
                "plain relay",
                plain_relay(counting).await,
                plain_relay(echo).await,
            ),
            (
                "amqpeek no inspection",
                amqpeek_relay(counting, vec![]).await,
                amqpeek_relay(echo, vec![]).await,
            ),
            (
                "amqpeek decode",
                amqpeek_relay(counting, null()).await,
                amqpeek_relay(echo, null()).await,
            ),
            (
                "amqpeek decode+jsonl",
                amqpeek_relay(counting, jsonl("t.jsonl")).await,
                amqpeek_relay(echo, jsonl("e.jsonl")).await,
            ),
        ];
        let (big_n, small_n, rtt_n) = if smoke {
            (4, 2_000, 20)
        } else {
            (256, SMALL, 2000)
        };
        let big = stream(big_n, 1 << 20);
        let small = stream(small_n, 32);
        println!(
            "workloads: {} MiB of 1 MiB transfers; {} small transfers ({} MiB); {} rounds",
            big.len() >> 20,
            small_n,
            small.len() >> 20,
            rounds
        );
        let n = targets.len();
        let mut big_tp = vec![Vec::new(); n];
        let mut small_tp = vec![Vec::new(); n];
        let mut rtt = vec![Vec::new(); n];
        // Warm up every path once.
        for (_, c, e) in &targets {
            throughput(*c, &small[..small.len() / 10]).await;
            round_trip(*e, rtt_n.min(100)).await;
        }
        for round in 0..rounds {
            for (i, (_, c, e)) in targets.iter().enumerate() {
                if !rtt_only {
                    big_tp[i].push(throughput(*c, &big).await);
                    settle().await;
                    small_tp[i].push(throughput(*c, &small).await);
                    settle().await;
                } else {
                    big_tp[i].push(1.0);
                    small_tp[i].push(1.0);
                }
                rtt[i].push(round_trip(*e, rtt_n).await.as_secs_f64() * 1e6);
                settle().await;
            }
            eprintln!("round {} done", round + 1);
        }
        let mb = |x: f64| x / (1 << 20) as f64;
        let med: Vec<(f64, f64, f64)> = (0..n)
            .map(|i| {
                (
                    median(&mut big_tp[i]),
                    median(&mut small_tp[i]),
                    median(&mut rtt[i]),
                )
            })
            .collect();
        println!(
            "{:<22} {:>14} {:>16} {:>12}",
            "path", "1MiB MiB/s", "small MiB/s", "rtt µs"
        );
        for (i, (name, _, _)) in targets.iter().enumerate() {
            println!(
                "{:<22} {:>14.0} {:>16.0} {:>12.1}",
                name,
                mb(med[i].0),
                mb(med[i].1),
                med[i].2
            );
        }
        let plain = med[1];
        for i in 2..n {
            println!(
                "{} / plain relay: 1MiB throughput {:.2}x, small throughput {:.2}x, rtt {:.2}x",
                targets[i].0,
                med[i].0 / plain.0,
                med[i].1 / plain.1,
                med[i].2 / plain.2
            );
        }
    });
}
