//! The AMQP 1.0 flood the relay benchmark and `examples/proxy_flood.rs` push through a relay:
//! the server that counts what arrives, and one flood's throughput. Included with `#[path]`
//! beside `mixes.rs` (as `mod mixes`); not a benchmark target of its own.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::mixes;

/// Bytes the counting server read on its last connection.
pub static COUNTED: AtomicU64 = AtomicU64::new(0);

/// The AMQP 1.0 peer of a flood: reads the client's opening frames, answers with its own
/// (granting `credit`), reads to EOF counting bytes, answers the client's closing frames, closes.
pub async fn counting_server(credit: u32) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let open_len = mixes::amqp10_client_open().len();
    let server_open = mixes::amqp10_server_open(credit);
    let server_close = mixes::amqp10_closing();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let (server_open, server_close) = (server_open.clone(), server_close.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 256 * 1024];
                if s.read_exact(&mut buf[..open_len]).await.is_err() {
                    return;
                }
                let mut total = open_len as u64;
                let _ = s.write_all(&server_open).await;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n as u64,
                    }
                }
                COUNTED.store(total, Ordering::SeqCst);
                let _ = s.write_all(&server_close).await;
            });
        }
    });
    addr
}

/// Run one flood through `addr` to the counting server: open, wait for the server's credit,
/// send every transfer and the closing frames, half-close, read the server's closing frames.
/// Bytes per second.
pub async fn throughput(addr: SocketAddr, flood: &mixes::Flood) -> f64 {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let open_len = mixes::amqp10_client_open().len();
    s.write_all(&flood.client[..open_len]).await.unwrap();
    let mut back = vec![0u8; flood.server_open.len()];
    s.read_exact(&mut back).await.unwrap();
    s.write_all(&flood.client[open_len..]).await.unwrap();
    s.shutdown().await.unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).await.unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(rest, flood.server_close, "the server's closing frames");
    assert_eq!(
        COUNTED.load(Ordering::SeqCst),
        flood.client.len() as u64,
        "every byte relayed"
    );
    (flood.client.len() + flood.server_open.len() + rest.len()) as f64 / secs
}
