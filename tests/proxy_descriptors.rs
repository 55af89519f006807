//! Each relayed connection costs the proxy exactly two file descriptors (client and upstream
//! sockets): connections the proxy can hold under `ulimit -n` are half the limit. Alone in its
//! test binary so that no other test opens descriptors while it counts.

mod common;
mod support;

use std::time::Duration;

use common::start_proxy;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The descriptor count once it has stopped changing: the same over 20 reads 5 ms apart
/// (within 10 s, or the test fails).
async fn settled_descriptors() -> usize {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let (mut last, mut same) = (open_descriptors(), 0);
    while same < 20 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the descriptor count never settled"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = open_descriptors();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_connection_costs_the_proxy_two_descriptors() {
    const N: usize = 64;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    let (held_tx, mut held_rx) = tokio::sync::mpsc::channel(N);
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            held_tx.send(s).await.unwrap();
        }
    });
    let proxy = start_proxy(up, vec![]).await;
    // Warm up: the runtime's and the inspection thread's own descriptors exist before counting.
    let mut warm = TcpStream::connect(proxy.addr).await.unwrap();
    warm.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
    let warm_up = held_rx.recv().await.unwrap();

    let before = settled_descriptors().await;
    let mut clients = Vec::new();
    let mut upstreams = Vec::new();
    for _ in 0..N {
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        c.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
        clients.push(c);
        upstreams.push(
            tokio::time::timeout(Duration::from_secs(10), held_rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let added = settled_descriptors().await - before;
    // This test's own client and upstream ends: 2 per connection; the proxy's: 2 more.
    assert!(
        added <= 4 * N + 4,
        "{N} connections added {added} descriptors: the proxy takes {} per connection, not 2",
        (added - 2 * N) as f64 / N as f64
    );
    assert!(
        added >= 4 * N,
        "{N} connections added only {added} descriptors"
    );
    drop((clients, upstreams, warm, warm_up));
    proxy.stop().await;
}
