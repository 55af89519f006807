//! Live-broker scaffolding shared by the tests: whether RabbitMQ on 127.0.0.1:5672 answers
//! (an unreachable broker FAILS when env `CI` is set, otherwise the test skips with a note), and
//! a recording TCP relay that keeps every chunk it relays as (direction, time, bytes), in
//! arrival order, per connection.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use amqpeek::event::{Dir, Timestamp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub const BROKER: &str = "127.0.0.1:5672";

/// The broker address, parsed.
pub fn broker_addr() -> SocketAddr {
    BROKER.parse().expect("broker address")
}

/// Whether the broker answers. Panics when it does not and CI is set; otherwise prints a skip
/// note and returns false.
pub async fn broker_or_skip() -> bool {
    let up = matches!(
        tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(BROKER)).await,
        Ok(Ok(_))
    );
    if !up {
        if std::env::var_os("CI").is_some() {
            panic!("RabbitMQ is not reachable on {BROKER} and CI is set");
        }
        eprintln!("note: RabbitMQ not reachable on {BROKER}; skipping");
    }
    up
}

/// One relayed read: its direction, when it arrived, and its bytes.
pub type Chunk = (Dir, Timestamp, Vec<u8>);

/// The bytes of one direction, concatenated in order.
pub fn bytes_of(chunks: &[Chunk], dir: Dir) -> Vec<u8> {
    chunks
        .iter()
        .filter(|c| c.0 == dir)
        .flat_map(|c| c.2.iter().copied())
        .collect()
}

/// One relayed connection as recorded.
#[derive(Clone, Debug)]
pub struct Recording {
    pub client: SocketAddr,
    pub upstream: SocketAddr,
    pub chunks: Vec<Chunk>,
}

impl Recording {
    /// The bytes relayed in `dir`.
    pub fn bytes(&self, dir: Dir) -> Vec<u8> {
        bytes_of(&self.chunks, dir)
    }

    /// (client to server, server to client).
    pub fn split(&self) -> (Vec<u8>, Vec<u8>) {
        (self.bytes(Dir::C2S), self.bytes(Dir::S2C))
    }
}

type Log = Arc<Mutex<Vec<Chunk>>>;

/// A lock that a panic elsewhere cannot poison into a second panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Copy `from` to `to`, recording each read; at EOF (or an error) shut `to`'s write side down,
/// so a half-close reaches the other peer.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, dir: Dir, log: Log) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        lock(&log).push((dir, Timestamp::now(), buf[..n].to_vec()));
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

struct Conn {
    client: SocketAddr,
    /// Set once connected upstream.
    upstream: Option<SocketAddr>,
    log: Log,
    /// `None` while relaying; then `Ok` once both directions ended, or why it never started.
    outcome: Option<Result<(), String>>,
}

impl Conn {
    fn recording(&self) -> Recording {
        Recording {
            client: self.client,
            upstream: self.upstream.expect("connected upstream"),
            chunks: lock(&self.log).clone(),
        }
    }
}

/// A recording relay from a fresh local port to a target; every accepted connection is relayed
/// (concurrently) and recorded. Dropping it stops accepting.
pub struct Relay {
    pub addr: SocketAddr,
    conns: Arc<Mutex<Vec<Conn>>>,
    accept: JoinHandle<()>,
}

impl Relay {
    /// A relay to the broker.
    pub async fn start() -> Relay {
        Relay::to(broker_addr()).await
    }

    /// A relay to `target`.
    pub async fn to(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let addr = listener.local_addr().expect("relay address");
        let conns: Arc<Mutex<Vec<Conn>>> = Arc::default();
        let table = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, client_addr)) = listener.accept().await {
                let log = Log::default();
                let i = {
                    let mut t = lock(&table);
                    t.push(Conn {
                        client: client_addr,
                        upstream: None,
                        log: log.clone(),
                        outcome: None,
                    });
                    t.len() - 1
                };
                let table = table.clone();
                tokio::spawn(async move {
                    let outcome = match TcpStream::connect(target).await {
                        Ok(upstream) => {
                            lock(&table)[i].upstream = Some(upstream.peer_addr().unwrap_or(target));
                            let _ = client.set_nodelay(true);
                            let _ = upstream.set_nodelay(true);
                            let (cr, cw) = client.into_split();
                            let (ur, uw) = upstream.into_split();
                            tokio::join!(
                                pump(cr, uw, Dir::C2S, log.clone()),
                                pump(ur, cw, Dir::S2C, log)
                            );
                            Ok(())
                        }
                        Err(e) => Err(format!("relay could not connect to {target}: {e}")),
                    };
                    lock(&table)[i].outcome = Some(outcome);
                });
            }
        });
        Relay {
            addr,
            conns,
            accept,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The chunks of the first connection recorded so far (empty before it arrives).
    pub fn chunks_so_far(&self) -> Vec<Chunk> {
        lock(&self.conns)
            .first()
            .map(|c| lock(&c.log).clone())
            .unwrap_or_default()
    }

    /// Every connection that has ended both ways so far, in accept order.
    pub fn ended(&self) -> Vec<Recording> {
        lock(&self.conns)
            .iter()
            .filter(|c| matches!(c.outcome, Some(Ok(()))))
            .map(Conn::recording)
            .collect()
    }

    /// Wait until the first `conns` connections have ended both ways: their recordings, in
    /// accept order, or why not (not all ended `within`, or one could not reach the target).
    pub async fn wait(&self, conns: usize, within: Duration) -> Result<Vec<Recording>, String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            {
                let t = lock(&self.conns);
                if t.len() >= conns && t[..conns].iter().all(|c| c.outcome.is_some()) {
                    return t[..conns]
                        .iter()
                        .map(|c| c.outcome.clone().expect("ended").map(|()| c.recording()))
                        .collect();
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "relay: {conns} connection(s) did not end within {within:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// [`Relay::wait`], panicking when it fails.
    pub async fn finish(&self, conns: usize, within: Duration) -> Vec<Recording> {
        self.wait(conns, within)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The recording of the one connection, once it ended (panics after `within`).
    pub async fn finish_one(&self, within: Duration) -> Recording {
        self.finish(1, within).await.remove(0)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Consume `n` deliveries of `queue` on `ch` (consumer tag `tag`, empty: the broker's), sorted by
/// delivery-tag; the consumer is returned to keep it alive.
pub async fn collect(
    ch: &lapin::Channel,
    queue: &str,
    tag: &str,
    no_ack: bool,
    n: usize,
) -> (lapin::Consumer, Vec<lapin::message::Delivery>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = ch
        .basic_consume(
            queue.into(),
            tag.into(),
            lapin::options::BasicConsumeOptions {
                no_ack,
                ..Default::default()
            },
            lapin::types::FieldTable::default(),
        )
        .await
        .unwrap();
    consumer.set_delegate(move |d: lapin::message::DeliveryResult| {
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    let mut got = Vec::new();
    for _ in 0..n {
        let d = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("delivery in time")
            .unwrap();
        got.push(d);
    }
    got.sort_by_key(|d| d.delivery_tag);
    (consumer, got)
}
