//! The proxy protecting itself: a client that never sends its protocol header is closed after
//! `--handshake-timeout`, a silent connection after `--idle-timeout`, and at
//! `--max-connections` the listener stops accepting (clients wait in the backlog) until a
//! connection closes. Local peers only: the upstream is an echo server in this process.

mod common;
mod support;

use std::net::SocketAddr;
use std::time::Duration;

use amqpeek::event::{Event, EventKind};
use amqpeek::proxy::ProxyConfig;
use amqpeek::proxy::limits::Deadlines;
use common::{Running, start_proxy_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The AMQP 0-9-1 protocol header.
const HEADER: &[u8] = b"AMQP\x00\x00\x09\x01";

/// An upstream that echoes every byte back, for as many connections as come.
async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn proxy(deadlines: Deadlines, max_connections: usize) -> Running {
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), echo_upstream().await);
    config.deadlines = deadlines;
    config.max_connections = max_connections;
    start_proxy_with(config, Vec::new()).await
}

fn close_reason(events: &[Event], conn: u64) -> Option<String> {
    events
        .iter()
        .filter(|e| e.conn == conn)
        .find_map(|e| match &e.kind {
            EventKind::Close(c) => Some(c.reason.to_string()),
            _ => None,
        })
}

/// The connections that connected, by number (the inspection workers may tell connections
/// in any order across connections).
fn connected(events: &[Event]) -> Vec<u64> {
    let mut conns: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Connect { .. }))
        .map(|e| e.conn)
        .collect();
    conns.sort_unstable();
    conns
}

/// Read until the proxy closes the connection; what was read.
async fn read_to_close(client: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), client.read_to_end(&mut got))
        .await
        .expect("the proxy closes the connection")
        .expect("closed with FIN, not reset");
    got
}

#[tokio::test]
async fn a_client_that_sends_no_header_is_closed_with_the_reason() {
    let running = proxy(
        Deadlines {
            handshake: Some(Duration::from_millis(300)),
            idle: None,
        },
        usize::MAX,
    )
    .await;
    // Three bytes of a header, then silence: still no protocol header.
    let mut client = TcpStream::connect(running.addr).await.unwrap();
    client.write_all(&HEADER[..3]).await.unwrap();
    assert_eq!(read_to_close(&mut client).await, &HEADER[..3]);
    running.wait_closed(1).await;
    let (_, events) = running.stop().await;
    assert_eq!(
        close_reason(&events, 1).unwrap(),
        "handshake timeout: the client sent no protocol header within 0.3s"
    );
}

#[tokio::test]
async fn a_client_that_sent_its_header_is_not_closed_by_the_handshake_deadline() {
    let running = proxy(
        Deadlines {
            handshake: Some(Duration::from_millis(200)),
            idle: Some(Duration::from_millis(1500)),
        },
        usize::MAX,
    )
    .await;
    let mut client = TcpStream::connect(running.addr).await.unwrap();
    client.write_all(HEADER).await.unwrap();
    // The idle deadline closes it in the end; the handshake deadline must not have first.
    assert_eq!(read_to_close(&mut client).await, HEADER);
    running.wait_closed(1).await;
    let (_, events) = running.stop().await;
    assert_eq!(
        close_reason(&events, 1).unwrap(),
        "idle timeout: no bytes either way for 1.5s"
    );
}

#[tokio::test]
async fn at_max_connections_the_next_client_waits_until_one_closes() {
    let running = proxy(Deadlines::default(), 2).await;
    let mut first = TcpStream::connect(running.addr).await.unwrap();
    let mut second = TcpStream::connect(running.addr).await.unwrap();
    for c in [&mut first, &mut second] {
        c.write_all(HEADER).await.unwrap();
        let mut echo = [0u8; 8];
        c.read_exact(&mut echo).await.unwrap();
    }
    // The third completes TCP's handshake in the kernel's backlog but is not accepted: its
    // header is not relayed while two connections are open.
    let mut third = TcpStream::connect(running.addr).await.unwrap();
    third.write_all(HEADER).await.unwrap();
    let mut echo = [0u8; 8];
    let waited = tokio::time::timeout(Duration::from_millis(500), third.read_exact(&mut echo));
    assert!(
        waited.await.is_err(),
        "the third client was relayed at the limit"
    );
    assert_eq!(connected(&running.events.lock().unwrap()), vec![1, 2]);
    // One closes: the third is accepted and relayed, neither reset nor refused.
    drop(first);
    running.wait_closed(1).await;
    tokio::time::timeout(Duration::from_secs(10), third.read_exact(&mut echo))
        .await
        .expect("the waiting client is relayed once a connection closed")
        .unwrap();
    assert_eq!(echo, HEADER);
    drop((second, third));
    running.wait_closed(3).await;
    let (summary, events) = running.stop().await;
    assert_eq!(summary.connections, 3);
    assert_eq!(connected(&events), vec![1, 2, 3]);
}
