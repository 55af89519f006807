//! Relay benchmark: amqpeek (decoding on; decoding + the text trace, as `amqpeek proxy --no-tui`
//! prints it; as the TUI alone, which skims what it cannot keep up with; decoding + JSONL
//! capture) against a plain
//! `tokio::io::copy_bidirectional` relay and a direct connection, in the same run, alternating.
//!
//! Workloads: spec-correct AMQP 1.0 connections (header, open, begin, attach, credit from the
//! server, closing frames), so the inspector decodes and tracks state as for real traffic and
//! reports nothing (asserted):
//! - 1 MiB messages, one settled transfer frame each (throughput, client to server);
//! - a flood of small settled transfers (throughput);
//! - round trips of one small unsettled transfer and the server's accepting disposition
//!   (latency).
//!
//! With `--metrics` (docs/metrics.md): the same decoding as `amqpeek proxy` runs it (no state
//! published), against that plus the metrics' sink, the state it reads, and the endpoint
//! scraped every second.
//!
//! With `--no-diagnoses` (docs/diagnoses.md): the same proxy with its diagnoser off, against
//! the proxy as it runs by default (diagnoses on).
//!
//! Run: `cargo bench --bench relay` (env `ROUNDS`, default 5; `METRICS_ONLY=1` runs only the
//! direct, plain relay and the two `--metrics` paths; `DIAGNOSES_ONLY=1` the direct, plain
//! relay, the proxy and the proxy with `--no-diagnoses`; `ONLY=PATH` the direct, plain relay
//! and that one path, e.g. `ONLY='amqpeek --no-diagnoses'`, to measure one path's CPU time
//! with `perf stat`; `RTT_ONLY=1` only the round trips). Prints medians and the ratios
//! amqpeek / plain relay.

/// The allocator the `amqpeek` binary uses, so the in-process proxy runs as shipped.
#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use amqpeek::event::{Event, EventKind};
use amqpeek::pipeline::Sink;
use amqpeek::proxy::BoxSink;
use amqpeek::sinks::stats_feed::StatsFeed;
use amqpeek::sinks::{JsonOptions, JsonlSink, TraceSink};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/mixes.rs"]
mod mixes;

#[path = "support/relays.rs"]
mod relays;
use relays::{amqpeek_relay, plain_relay};

#[path = "support/flood.rs"]
mod flood;
use flood::{counting_server, throughput};

/// Decodes (the Inspector runs) but writes nothing; counts the violations it is handed (the
/// traffic is spec-correct, so any is a bug in the benchmark or the tracker).
struct NullSink(Arc<AtomicU64>);
impl Sink for NullSink {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if let EventKind::Violation(v) = &ev.kind {
            // The round-trip connections end by dropping the socket after their last trip,
            // without closing frames: that one finding is the benchmark client's, expected.
            if v.rule == "amqp10.connection.closed-without-close" && v.dir == amqpeek::Dir::C2S {
                return Ok(());
            }
            eprintln!("unexpected violation: {v:?}");
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        std::hint::black_box(ev);
        Ok(())
    }
}

/// A [`NullSink`] standing for the TUI: it can do without frames, so the inspection skims
/// what it cannot keep up with instead of making the relay wait; counts the frames it got.
struct LiveSink(NullSink, Arc<AtomicU64>);
impl Sink for LiveSink {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if let EventKind::Frame(_) = &ev.kind {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
        self.0.event(ev)
    }
    fn needs_every_frame(&self) -> bool {
        false
    }
}

/// How the benchmark's `amqpeek proxy` is configured beyond its defaults.
#[derive(Clone, Copy)]
enum ProxyMode {
    /// As `amqpeek proxy` without the TUI: no state published, diagnoses on.
    Default,
    /// `--metrics`: the metrics' sink, the state published, and the endpoint served and
    /// scraped every second for the whole run.
    Metrics,
    /// `--no-diagnoses`: the diagnoser does not run.
    NoDiagnoses,
}

/// amqpeek's proxy to `target` as `amqpeek proxy` configures it without the TUI, in `mode`.
async fn proxy_relay(target: SocketAddr, mut sinks: Vec<BoxSink>, mode: ProxyMode) -> SocketAddr {
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), target);
    let metrics = matches!(mode, ProxyMode::Metrics);
    config.inspect.emit_state = metrics;
    config.inspect.diagnoses = !matches!(mode, ProxyMode::NoDiagnoses);
    if metrics {
        let m = Arc::new(amqpeek::metrics::Metrics::new(None).with_probe(config.probe.clone()));
        sinks.push(Box::new(m.sink()));
        let listener = amqpeek::metrics::serve::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let at = listener.local_addr().unwrap();
        tokio::spawn(amqpeek::metrics::serve::serve(listener, m));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if let Ok(mut s) = TcpStream::connect(at).await {
                    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").await;
                    let mut body = Vec::new();
                    let _ = s.read_to_end(&mut body).await;
                    std::hint::black_box(body);
                }
            }
        });
    }
    let p = amqpeek::proxy::Proxy::bind(config).await.unwrap();
    let addr = p.local_addr().unwrap();
    tokio::spawn(p.run(sinks, std::future::pending()));
    addr
}

/// The AMQP 1.0 peer of the round trips: after the opening frames, answers every (unsettled,
/// fixed-size) transfer with a disposition accepting it.
async fn accepting_server(transfer_len: usize, credit: u32) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let open_len = mixes::amqp10_client_open().len();
    let server_open = mixes::amqp10_server_open(credit);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let server_open = server_open.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; open_len.max(transfer_len)];
                if s.read_exact(&mut buf[..open_len]).await.is_err() {
                    return;
                }
                let _ = s.write_all(&server_open).await;
                let mut id = 0u32;
                while s.read_exact(&mut buf[..transfer_len]).await.is_ok() {
                    if s.write_all(&mixes::amqp10_accept(id)).await.is_err() {
                        return;
                    }
                    id += 1;
                }
            });
        }
    });
    addr
}

/// Mean round-trip time of one small unsettled transfer and the disposition settling it.
async fn round_trip(addr: SocketAddr, trips: usize) -> Duration {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&mixes::amqp10_client_open()).await.unwrap();
    let mut back = vec![0u8; mixes::amqp10_server_open(RTT_CREDIT).len()];
    s.read_exact(&mut back).await.unwrap();
    let mut buf = Vec::new();
    let start = Instant::now();
    for i in 0..trips as u32 {
        let frame = mixes::amqp10_transfer_with(i, false, &RTT_PAYLOAD);
        let answer = mixes::amqp10_accept(i);
        s.write_all(&frame).await.unwrap();
        buf.resize(answer.len(), 0);
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, answer);
    }
    start.elapsed() / trips as u32
}

/// Payload of a round-trip transfer.
const RTT_PAYLOAD: [u8; 32] = [0x5a; 32];
/// Credit the round-trip server grants (more than any run's trips).
const RTT_CREDIT: u32 = 1 << 20;

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
    // As the binary: no transparent huge pages (driver/reclaim.rs).
    amqpeek::driver::reclaim::disable_transparent_huge_pages();
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
    // As the binary's runtime: idle threads give their free pages back (driver/reclaim.rs).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_park(amqpeek::driver::reclaim::on_idle)
        .build()
        .unwrap();
    rt.block_on(async move {
        let (big_n, small_n, rtt_n) = if smoke {
            (4, 2_000, 20)
        } else {
            (256, SMALL, 2000)
        };
        let counting = counting_server(mixes::FLOOD_CREDIT).await;
        let echo = accepting_server(
            mixes::amqp10_transfer_with(0, false, &RTT_PAYLOAD).len(),
            RTT_CREDIT,
        )
        .await;
        let violations = Arc::new(AtomicU64::new(0));
        let dir = tempfile::tempdir().unwrap();
        let jsonl = |name: &str| -> Vec<BoxSink> {
            let f = std::fs::File::create(dir.path().join(name)).unwrap();
            vec![Box::new(JsonlSink::new(
                io::BufWriter::with_capacity(256 * 1024, f),
                JsonOptions::default(),
            ))]
        };
        let null = || -> Vec<BoxSink> { vec![Box::new(NullSink(violations.clone()))] };
        // As `amqpeek proxy --no-tui > /dev/null`: every frame's trace line made and dropped.
        let trace = || -> Vec<BoxSink> {
            vec![
                Box::new(TraceSink::new(io::sink())),
                Box::new(NullSink(violations.clone())),
            ]
        };
        let live_frames = Arc::new(AtomicU64::new(0));
        // As `amqpeek proxy` with its UI: the view's feed, and the statistics of its `S` pane.
        let live = || -> Vec<BoxSink> {
            vec![
                Box::new(StatsFeed::new(Box::new(|_| true))),
                Box::new(LiveSink(NullSink(violations.clone()), live_frames.clone())),
            ]
        };
        let mut targets: Vec<(&str, SocketAddr, SocketAddr)> = vec![
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
                "amqpeek decode+trace",
                amqpeek_relay(counting, trace()).await,
                amqpeek_relay(echo, trace()).await,
            ),
            (
                "amqpeek live view",
                amqpeek_relay(counting, live()).await,
                amqpeek_relay(echo, live()).await,
            ),
            (
                "amqpeek decode+jsonl",
                amqpeek_relay(counting, jsonl("t.jsonl")).await,
                amqpeek_relay(echo, jsonl("e.jsonl")).await,
            ),
            (
                "amqpeek as proxy",
                proxy_relay(counting, null(), ProxyMode::Default).await,
                proxy_relay(echo, null(), ProxyMode::Default).await,
            ),
            (
                "amqpeek --metrics",
                proxy_relay(counting, null(), ProxyMode::Metrics).await,
                proxy_relay(echo, null(), ProxyMode::Metrics).await,
            ),
            (
                "amqpeek --no-diagnoses",
                proxy_relay(counting, null(), ProxyMode::NoDiagnoses).await,
                proxy_relay(echo, null(), ProxyMode::NoDiagnoses).await,
            ),
        ];
        if std::env::var_os("METRICS_ONLY").is_some() {
            targets.retain(|(name, _, _)| {
                matches!(
                    *name,
                    "direct" | "plain relay" | "amqpeek as proxy" | "amqpeek --metrics"
                )
            });
        }
        if std::env::var_os("DIAGNOSES_ONLY").is_some() {
            targets.retain(|(name, _, _)| {
                matches!(
                    *name,
                    "direct" | "plain relay" | "amqpeek as proxy" | "amqpeek --no-diagnoses"
                )
            });
        }
        if let Ok(only) = std::env::var("ONLY") {
            targets.retain(|(name, _, _)| matches!(*name, "direct" | "plain relay") || *name == only);
        }
        let big = mixes::amqp10_flood(big_n, 1 << 20);
        let small = mixes::amqp10_flood(small_n, 32);
        let warm = mixes::amqp10_flood(small_n / 10, 32);
        println!(
            "workloads: {} MiB of 1 MiB transfers; {} small transfers ({} MiB); {} rounds",
            big.client.len() >> 20,
            small_n,
            small.client.len() >> 20,
            rounds
        );
        let n = targets.len();
        let mut big_tp = vec![Vec::new(); n];
        let mut small_tp = vec![Vec::new(); n];
        let mut rtt = vec![Vec::new(); n];
        // Warm up every path once.
        for (_, c, e) in &targets {
            throughput(*c, &warm).await;
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
        if let (Some(off), Some(on)) = (
            targets.iter().position(|t| t.0 == "amqpeek as proxy"),
            targets.iter().position(|t| t.0 == "amqpeek --metrics"),
        ) {
            println!(
                "--metrics on / off: 1MiB throughput {:.3}x, small throughput {:.3}x, rtt {:.3}x",
                med[on].0 / med[off].0,
                med[on].1 / med[off].1,
                med[on].2 / med[off].2
            );
        }
        if let (Some(on), Some(off)) = (
            targets.iter().position(|t| t.0 == "amqpeek as proxy"),
            targets.iter().position(|t| t.0 == "amqpeek --no-diagnoses"),
        ) {
            println!(
                "diagnoses on / off: 1MiB throughput {:.3}x, small throughput {:.3}x, rtt {:.3}x",
                med[on].0 / med[off].0,
                med[on].1 / med[off].1,
                med[on].2 / med[off].2
            );
        }
        if !rtt_only && targets.iter().any(|t| t.0 == "amqpeek live view") {
            // Transfers and dispositions offered to the live view's path (opening and closing
            // frames left out), against the frames it was handed decoded.
            let offered = (rounds * (big_n + small_n) + small_n / 10)
                + 2 * (rounds * rtt_n + rtt_n.min(100));
            let got = live_frames.load(Ordering::Relaxed);
            println!(
                "live view: {got} frames decoded of about {offered} relayed ({:.1}%); the rest skimmed",
                100.0 * got as f64 / offered as f64
            );
        }
        // Give the inspection threads time to finish the last run, then check the
        // decode-only paths saw a spec-correct conversation.
        settle().await;
        assert_eq!(
            violations.load(Ordering::Relaxed),
            0,
            "the benchmark traffic is spec-correct: the inspector must report nothing"
        );
    });
}
