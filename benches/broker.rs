//! Broker-realistic benchmark: a real client (lapin, AMQP 0-9-1) publishing with publisher
//! confirms to RabbitMQ on 127.0.0.1:5672 while a consumer on the same connection receives and
//! acks every message, through each path in the same run, alternating: direct, a plain
//! `tokio::io::copy_bidirectional` relay, amqpeek decoding, and amqpeek decoding with a JSONL
//! capture. This is the "JSONL at a broker-realistic rate" comparison of the proxy issue.
//!
//! Run: `cargo bench --bench broker` (env `ROUNDS`, default 5; `MESSAGES`, default 20000;
//! `BODY`, bytes per message, default 1024). Under `cargo test` it runs one small round as a
//! smoke test; without a broker it skips, unless `CI` is set, where it fails.

/// The allocator the `amqpeek` binary uses, so the in-process proxy runs as shipped.
#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::io::{self, BufWriter};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use amqpeek::event::{Event, EventKind};
use amqpeek::pipeline::Sink;
use amqpeek::proxy::BoxSink;
use amqpeek::sinks::{JsonOptions, JsonlSink};
use lapin::message::DeliveryResult;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tokio::net::TcpStream;

#[path = "support/relays.rs"]
mod relays;
use relays::{amqpeek_relay, plain_relay};

const BROKER: &str = "127.0.0.1:5672";

/// Counts frames and violations; writes nothing.
struct CountingSink {
    frames: Arc<AtomicU64>,
    violations: Arc<AtomicU64>,
}

impl Sink for CountingSink {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        match &ev.kind {
            EventKind::Frame(_) => {
                self.frames.fetch_add(1, Ordering::Relaxed);
            }
            EventKind::Violation(v) => {
                eprintln!("violation: {} {}", v.rule, v.message);
                self.violations.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Publish `n` messages of `body` bytes with confirms on one channel while a consumer on
/// another channel of the same connection acks them; messages per second (both done).
async fn publish_consume(addr: SocketAddr, n: usize, body: &[u8], round: usize) -> f64 {
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let start = Instant::now();
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .expect("connect");
    let pubch = conn.create_channel().await.unwrap();
    let subch = conn.create_channel().await.unwrap();
    let queue = format!("amqpeek-bench-{}-{round}", addr.port());
    pubch
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    pubch
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    subch.basic_qos(500, Default::default()).await.unwrap();
    let consumer = subch
        .basic_consume(
            queue.as_str().into(),
            "bench".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    consumer.set_delegate(move |d: DeliveryResult| {
        // Send before returning: the returned futures may run concurrently.
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    let consume = tokio::spawn(async move {
        let mut got = 0usize;
        while got < n {
            let d = rx.recv().await.expect("delivery");
            d.ack(BasicAckOptions::default()).await.unwrap();
            got += 1;
        }
        got
    });
    let mut confirms = Vec::with_capacity(n);
    for _ in 0..n {
        confirms.push(
            pubch
                .basic_publish(
                    "".into(),
                    queue.as_str().into(),
                    BasicPublishOptions::default(),
                    body,
                    BasicProperties::default(),
                )
                .await
                .unwrap(),
        );
    }
    for c in confirms {
        assert!(
            c.await.unwrap().is_ack(),
            "the broker confirmed every message"
        );
    }
    assert_eq!(consume.await.unwrap(), n, "every message consumed");
    let rate = n as f64 / start.elapsed().as_secs_f64();
    conn.close(200, "bench done".into()).await.unwrap();
    rate
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let rounds = if smoke { 1 } else { env("ROUNDS", 5) };
    let messages = if smoke { 200 } else { env("MESSAGES", 20_000) };
    let body = vec![0x5a; env("BODY", 1024)];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let broker: SocketAddr = BROKER.parse().unwrap();
        if TcpStream::connect(broker).await.is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "RabbitMQ is not listening on {BROKER} (CI is set: the broker must be there)"
            );
            eprintln!("skipped: RabbitMQ is not listening on {BROKER}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let frames = Arc::new(AtomicU64::new(0));
        let violations = Arc::new(AtomicU64::new(0));
        let counting = || -> Vec<BoxSink> {
            vec![Box::new(CountingSink {
                frames: frames.clone(),
                violations: violations.clone(),
            })]
        };
        let jsonl_path = dir.path().join("broker.jsonl");
        let jsonl = JsonlSink::new(
            BufWriter::with_capacity(256 * 1024, std::fs::File::create(&jsonl_path).unwrap()),
            JsonOptions::default(),
        );
        let targets: Vec<(&str, SocketAddr)> = vec![
            ("direct", broker),
            ("plain relay", plain_relay(broker).await),
            ("amqpeek decode", amqpeek_relay(broker, counting()).await),
            (
                "amqpeek decode+jsonl",
                amqpeek_relay(broker, vec![Box::new(jsonl)]).await,
            ),
        ];
        println!(
            "workload: lapin publishes {messages} messages of {} bytes with confirms, a \
             consumer acks them; {rounds} rounds",
            body.len()
        );
        let mut rates = vec![Vec::new(); targets.len()];
        for round in 0..rounds {
            for (i, (_, addr)) in targets.iter().enumerate() {
                rates[i].push(publish_consume(*addr, messages, &body, round).await);
            }
            eprintln!("round {} done", round + 1);
        }
        // The inspection thread finishes what was queued.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        println!("{:<22} {:>12}", "path", "messages/s");
        let med: Vec<f64> = rates.iter_mut().map(|r| median(r)).collect();
        for (i, (name, _)) in targets.iter().enumerate() {
            println!("{:<22} {:>12.0}", name, med[i]);
        }
        for i in 2..targets.len() {
            println!(
                "{} / plain relay: {:.2}x (rounds: {:?})",
                targets[i].0,
                med[i] / med[1],
                rates[i].iter().map(|r| r.round()).collect::<Vec<_>>()
            );
        }
        let decoded = frames.load(Ordering::Relaxed);
        // Per message at least basic.publish + header + body, and basic.deliver + header +
        // body + basic.ack, plus the confirms.
        assert!(
            decoded >= (rounds * messages * 7) as u64,
            "the decoding path saw every frame ({decoded})"
        );
        assert_eq!(
            violations.load(Ordering::Relaxed),
            0,
            "lapin and RabbitMQ traffic is clean"
        );
        let lines = std::fs::read_to_string(&jsonl_path)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"name\":\"basic.publish\""))
            .count();
        assert_eq!(
            lines,
            rounds * messages,
            "the JSONL capture holds every publish"
        );
    });
}
