//! How fast the live view keeps up without skimming: an in-process proxy whose sinks are the
//! terminal UI's feed and its spool (as `amqpeek proxy` runs without captures), the feed
//! drained into the UI's model on a thread of its own as the UI's event loop does, and a lapin client publishing to RabbitMQ
//! through it at a fixed rate for a few seconds, for each rate given. For each rate it prints
//! the frames decoded, the frames skimmed (passed over undecoded) and the events the view
//! dropped because it was behind.
//!
//!     cargo run --release --example live_rate -- [BROKER] [SECONDS] [RATE...]
//!
//! BROKER defaults to 127.0.0.1:5672, SECONDS to 5, the rates (messages per second; each is a
//! publish method, a content header and a body frame) to 1000 2000 5000 10000 20000.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use amqpeek::event::EventKind;
use amqpeek::proxy::{Proxy, ProxyConfig};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

/// What one run at one rate came to.
#[derive(Debug, Default)]
struct Outcome {
    frames: u64,
    skimmed: u64,
    dropped: u64,
}

async fn publish(addr: SocketAddr, rate: u64, seconds: u64) {
    let url = format!("amqp://guest:guest@{addr}/%2f");
    let conn = Connection::connect(&url, ConnectionProperties::default())
        .await
        .expect("connect through the proxy");
    let ch = conn.create_channel().await.unwrap();
    let queue = format!("amqpeek-live-rate-{}", std::process::id());
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), 100.into());
    let options = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    ch.queue_declare(queue.clone().into(), options, args)
        .await
        .unwrap();
    let start = Instant::now();
    let total = rate * seconds;
    let body = [b'x'; 64];
    for i in 0..total {
        // Paced in steps of a millisecond's worth of messages.
        let due = start + Duration::from_nanos(i * 1_000_000_000 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            tokio::time::sleep(wait).await;
        }
        // No confirms are asked for: the confirm the publish returns is not awaited.
        drop(
            ch.basic_publish(
                "".into(),
                queue.clone().into(),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default(),
            )
            .await
            .unwrap(),
        );
    }
    conn.close(200, "done".into()).await.unwrap();
}

fn run(broker: SocketAddr, rate: u64, seconds: u64) -> Outcome {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (feed, rx) = amqpeek::tui::channel(amqpeek::tui::DEFAULT_CAPACITY);
    let done = Arc::new(AtomicBool::new(false));
    let ui_done = done.clone();
    // The UI's side: drain the feed into the model, as the event loop does between redraws.
    let ui = std::thread::spawn(move || {
        let mut app = App::new(TuiOptions::default(), (160, 45));
        let mut out = Outcome::default();
        loop {
            let Some(events) = rx.drain(100_000) else {
                break;
            };
            for e in events {
                if let AppEvent::Pipeline(ev) = &e {
                    match &ev.kind {
                        EventKind::Frame(_) => out.frames += 1,
                        EventKind::Gap { reason, .. } if reason.starts_with("skimmed:") => {
                            out.skimmed += reason
                                .split_once('(')
                                .and_then(|(_, n)| n.split(' ').next()?.parse().ok())
                                .unwrap_or(0);
                        }
                        _ => {}
                    }
                }
                app.handle(e);
            }
            if ui_done.load(Ordering::Relaxed) && rx.drain(0).is_none_or(|e| e.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1000 / amqpeek::tui::MAX_FPS));
        }
        out.dropped = rx.dropped();
        out
    });
    rt.block_on(async {
        let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
        config.inspect.emit_data = true;
        config.inspect.emit_state = true;
        let proxy = Proxy::bind(config).await.unwrap();
        let addr = proxy.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let spool_opts = amqpeek::tui::spool::SpoolOptions {
            dir: None,
            size: amqpeek::tui::spool::DEFAULT_SPOOL_SIZE,
            max_body: 4096,
        };
        let spool = amqpeek::tui::spool::SpoolRing::create(&spool_opts, feed.clone()).unwrap();
        let sinks: Vec<amqpeek::proxy::BoxSink> = vec![Box::new(spool), Box::new(feed)];
        let handle = tokio::spawn(proxy.run(sinks, async {
            let _ = stopped.await;
        }));
        publish(addr, rate, seconds).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _ = stop.send(());
        let _ = handle.await;
    });
    done.store(true, Ordering::Relaxed);
    ui.join().unwrap()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let broker: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:5672".into())
        .parse()
        .expect("BROKER as host:port");
    let seconds: u64 = args.next().map_or(5, |s| s.parse().expect("SECONDS"));
    let mut rates: Vec<u64> = args.map(|r| r.parse().expect("RATE")).collect();
    if rates.is_empty() {
        rates = vec![1000, 2000, 5000, 10_000, 20_000];
    }
    println!("messages/s  frames/s  decoded  skimmed  dropped-from-view");
    for rate in rates {
        let o = run(broker, rate, seconds);
        println!(
            "{rate:>10}  {:>8}  {:>7}  {:>7}  {:>7}",
            (o.frames + o.skimmed) / seconds,
            o.frames,
            o.skimmed,
            o.dropped
        );
    }
}
