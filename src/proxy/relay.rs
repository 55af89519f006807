//! One relayed connection: connect upstream, then pump bytes both ways until both directions
//! end, propagating half-close (FIN) and reset (RST).
//!
//! Each read goes into a buffer of its own, is frozen into `Bytes`, and the same `Bytes` (no
//! copy) is written to the peer and handed to the inspection queue: queued first when the queue
//! has room (so the inspector sees cause before effect across directions), else written first
//! and queued after. The queue may delay the next read (back-pressure), never the write of the
//! current chunk. This module must never decode,
//! format or log per chunk: that is the inspection side's job.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::{InspectMsg, ProxyConfig};
use crate::event::{ConnId, Dir, Timestamp};

/// How one direction ended.
#[derive(Debug)]
enum End {
    /// The source sent FIN; it was passed on.
    Eof,
    /// Reading the source failed (typically a reset).
    ReadFailed(io::Error),
    /// Writing to the destination failed (typically a reset by that peer).
    WriteFailed(io::Error),
    /// The connection was cut (the other direction failed, or the proxy is stopping).
    Killed,
}

/// Relay one accepted client connection to the upstream, reporting to `inspect` (when
/// inspecting) and stopping early when `stop` turns true.
pub(crate) async fn connection(
    conn: ConnId,
    client: TcpStream,
    client_addr: SocketAddr,
    config: Arc<ProxyConfig>,
    inspect: Option<mpsc::Sender<InspectMsg>>,
    mut stop: watch::Receiver<bool>,
) {
    let opened = Timestamp::now();
    let _ = client.set_nodelay(true);
    let connected =
        tokio::time::timeout(config.connect_timeout, TcpStream::connect(config.upstream)).await;
    if let Some(tx) = &inspect {
        let _ = tx
            .send(InspectMsg::Open {
                conn,
                ts: opened,
                client: client_addr,
                upstream: config.upstream,
            })
            .await;
    }
    let upstream = match connected {
        Ok(Ok(s)) => s,
        failed => {
            let reason = match failed {
                Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    format!("upstream refused: {e}")
                }
                Ok(Err(e)) => format!("upstream unreachable: {e}"),
                _ => format!(
                    "upstream unreachable: no answer within {:?}",
                    config.connect_timeout
                ),
            };
            tracing::warn!("#{conn} {client_addr}: {reason}");
            drop(client);
            close(&inspect, conn, reason).await;
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    tracing::debug!("#{conn} {client_addr} => {}", config.upstream);

    let (kill, _) = watch::channel(false);
    let order = tokio::sync::Mutex::new(());
    let shared = Shared {
        conn,
        size: config.read_buffer.max(1),
        inspect: &inspect,
        order: &order,
        kill: &kill,
    };
    let ((c2s, c2s_at), (s2c, s2c_at)) = {
        let both = async {
            tokio::join!(
                pump(&client, &upstream, Dir::C2S, &shared),
                pump(&upstream, &client, Dir::S2C, &shared),
            )
        };
        let mut both = std::pin::pin!(both);
        tokio::select! {
            r = &mut both => r,
            _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                kill.send_replace(true);
                both.await
            }
        }
    };
    let reason = reason(c2s, c2s_at, s2c, s2c_at);
    tracing::debug!("#{conn} {client_addr}: {reason}");
    drop(client);
    drop(upstream);
    close(&inspect, conn, reason).await;
}

async fn close(inspect: &Option<mpsc::Sender<InspectMsg>>, conn: ConnId, reason: String) {
    if let Some(tx) = inspect {
        let _ = tx
            .send(InspectMsg::Close {
                conn,
                ts: Timestamp::now(),
                reason,
            })
            .await;
    }
}

/// The close reason in plain words: a failure wins over a clean end (naming the clean end
/// first when it came first, e.g. `client closed, then upstream reset: ...`), else who closed
/// first.
fn reason(c2s: End, c2s_at: Instant, s2c: End, s2c_at: Instant) -> String {
    fn failure(e: &io::Error, whose: &str) -> String {
        match e.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                format!("{whose} reset: {e}")
            }
            _ => format!("{whose} error: {e}"),
        }
    }
    let failed = match (&c2s, &s2c) {
        (End::ReadFailed(e), _) | (_, End::WriteFailed(e)) => Some(failure(e, "client")),
        (End::WriteFailed(e), _) | (_, End::ReadFailed(e)) => Some(failure(e, "upstream")),
        _ => None,
    };
    if let Some(failed) = failed {
        let clean_first = match (&c2s, &s2c) {
            (End::Eof, _) if c2s_at <= s2c_at => Some("client closed"),
            (_, End::Eof) if s2c_at <= c2s_at => Some("upstream closed"),
            _ => None,
        };
        return match clean_first {
            Some(clean) => format!("{clean}, then {failed}"),
            None => failed,
        };
    }
    match (c2s, s2c) {
        (End::Eof, End::Eof) if c2s_at <= s2c_at => "client closed".into(),
        (End::Eof, End::Eof) => "upstream closed".into(),
        _ => "proxy stopped".into(),
    }
}

/// Cut the connection: every socket resets its peer on drop, both pumps stop.
fn cut(a: &TcpStream, b: &TcpStream, kill: &watch::Sender<bool>) {
    let _ = a.set_zero_linger();
    let _ = b.set_zero_linger();
    kill.send_replace(true);
}

/// What both directions of one connection share.
struct Shared<'a> {
    conn: ConnId,
    /// Largest read.
    size: usize,
    inspect: &'a Option<mpsc::Sender<InspectMsg>>,
    /// Keeps queued chunks in causal order across directions (see `pump`).
    order: &'a tokio::sync::Mutex<()>,
    /// Cuts both directions.
    kill: &'a watch::Sender<bool>,
}

/// Copy `from` to `to` until EOF, an error, or `kill`. Returns how it ended and when.
async fn pump(from: &TcpStream, to: &TcpStream, dir: Dir, shared: &Shared<'_>) -> (End, Instant) {
    let Shared {
        conn,
        size,
        inspect,
        order,
        kill,
    } = *shared;
    let mut killed = kill.subscribe();
    let mut buf = BytesMut::new();
    let mut want = START_READ.min(size);
    let end = loop {
        let bytes = match read_chunk(from, &mut buf, &mut want, size, &mut killed).await {
            Ok(bytes) => bytes,
            Err(end) => break end,
        };
        let ts = Timestamp::now();
        // Queue the chunk before writing it when the queue has room, so the inspection side
        // sees cause before effect across the two directions (a reply can only follow the
        // write). When the queue is full, write first and then wait for room: the wait may
        // delay the next read, never this write. `order` keeps the two directions' chunks in
        // causal order while one of them waits: whoever finds it taken writes first and queues
        // after the waiting chunk.
        let mut late = None;
        if let Some(tx) = inspect {
            let msg = InspectMsg::Chunk {
                conn,
                dir,
                ts,
                bytes: bytes.clone(),
            };
            match order.try_lock() {
                Ok(guard) => {
                    if let Err(mpsc::error::TrySendError::Full(msg)) = tx.try_send(msg) {
                        late = Some((msg, Some(guard)));
                    }
                }
                Err(_) => late = Some((msg, None)),
            }
        }
        if let Err(end) = write_all(to, &bytes, &mut killed).await {
            break end;
        }
        if let (Some(tx), Some((msg, guard))) = (inspect, late) {
            let _guard = match guard {
                Some(g) => g,
                None => order.lock().await,
            };
            let _ = tx.send(msg).await;
        }
    };
    match &end {
        // Half-close: pass the FIN on and keep the other direction flowing.
        End::Eof => {
            let _ = socket2::SockRef::from(to).shutdown(Shutdown::Write);
        }
        End::ReadFailed(_) | End::WriteFailed(_) => cut(from, to, kill),
        End::Killed => {}
    }
    (end, Instant::now())
}

/// Reads start this large and double (up to the configured read size) while they fill the
/// buffer; a connection that waits keeps at most this much buffer.
const START_READ: usize = 16 * 1024;

/// Below this much spare capacity a new buffer is taken instead of reading into the rest.
const MIN_READ: usize = 2048;

/// Read what is available and hand it out as `Bytes`.
///
/// Successive chunks are carved out of one allocation (`split` keeps the spare capacity), so
/// small messages cost no allocation each even while the inspector still holds earlier chunks.
/// The read size grows while reads fill the buffer (bulk transfer) and drops back when the
/// socket runs dry; an idle connection keeps at most `START_READ` bytes of buffer. Readiness
/// and `kill` are only awaited when a read would block.
async fn read_chunk(
    from: &TcpStream,
    buf: &mut BytesMut,
    want: &mut usize,
    size: usize,
    killed: &mut watch::Receiver<bool>,
) -> Result<Bytes, End> {
    loop {
        if buf.capacity() < MIN_READ {
            buf.reserve(*want);
        }
        let room = buf.capacity();
        match from.try_read_buf(buf) {
            Ok(0) => return Err(End::Eof),
            Ok(n) => {
                if n == room {
                    *want = (*want * 2).min(size);
                }
                return Ok(buf.split().freeze());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                *want = START_READ.min(size);
                if buf.capacity() > START_READ {
                    *buf = BytesMut::new();
                }
                tokio::select! {
                    biased;
                    _ = async { let _ = killed.wait_for(|k| *k).await; } => return Err(End::Killed),
                    ready = from.readable() => ready.map_err(End::ReadFailed)?,
                }
            }
            Err(e) => return Err(End::ReadFailed(e)),
        }
    }
}

/// Write all of `bytes`, trying at once and waiting for writability only when the socket's
/// send buffer is full.
async fn write_all(
    to: &TcpStream,
    mut bytes: &[u8],
    killed: &mut watch::Receiver<bool>,
) -> Result<(), End> {
    while !bytes.is_empty() {
        match to.try_write(bytes) {
            Ok(0) => return Err(End::WriteFailed(io::ErrorKind::WriteZero.into())),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tokio::select! {
                    biased;
                    _ = async { let _ = killed.wait_for(|k| *k).await; } => return Err(End::Killed),
                    ready = to.writable() => ready.map_err(End::WriteFailed)?,
                }
            }
            Err(e) => return Err(End::WriteFailed(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_failures_and_who_closed_first() {
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(1);
        let reset = || End::ReadFailed(io::ErrorKind::ConnectionReset.into());
        assert_eq!(reason(End::Eof, t0, End::Eof, t1), "client closed");
        assert_eq!(reason(End::Eof, t1, End::Eof, t0), "upstream closed");
        assert!(reason(reset(), t0, End::Killed, t1).starts_with("client reset: "));
        assert!(
            reason(End::Eof, t0, reset(), t1).starts_with("client closed, then upstream reset: ")
        );
        assert_eq!(reason(End::Killed, t0, End::Killed, t1), "proxy stopped");
    }
}
