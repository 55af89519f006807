//! The relays the relay and broker benchmarks compare: a plain `copy_bidirectional` relay and
//! amqpeek's proxy in-process. Included with `#[path]`; not a benchmark target of its own.

#![allow(dead_code)]

use std::net::SocketAddr;

use amqpeek::proxy::{BoxSink, Proxy, ProxyConfig};
use tokio::net::{TcpListener, TcpStream};

/// A plain relay to `target` (tokio's `copy_bidirectional`, TCP_NODELAY on both legs); its
/// listening address.
pub async fn plain_relay(target: SocketAddr) -> SocketAddr {
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

/// amqpeek's proxy to `target` with `sinks` (none: the relay alone); its listening address.
/// Env: `JOBS=N` inspection workers (default: one per CPU), `QUEUE_BYTES=N` a connection's
/// queue budget (default: the proxy's).
pub async fn amqpeek_relay(target: SocketAddr, sinks: Vec<BoxSink>) -> SocketAddr {
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), target);
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
    };
    if let Some(jobs) = env("JOBS").and_then(std::num::NonZeroUsize::new) {
        config.jobs = jobs;
    }
    if let Some(bytes) = env("QUEUE_BYTES") {
        config.conn_queue_bytes = bytes;
    }
    let p = Proxy::bind(config).await.unwrap();
    let addr = p.local_addr().unwrap();
    tokio::spawn(p.run(sinks, std::future::pending()));
    addr
}
