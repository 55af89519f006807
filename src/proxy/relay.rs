//! One relayed connection: connect upstream (and do TLS where configured: see `upgrade.rs`
//! for the TLS upgrade and handshakes, `tls.rs` for the configuration), then
//! pump bytes both ways until both directions end, propagating half-close (FIN, and TLS
//! close_notify: the inspection side is told of each direction's end where it happened) and
//! reset (RST).
//!
//! The pumps work over any `AsyncRead`/`AsyncWrite` halves, so plain TCP and TLS legs share
//! them. Each read goes into a buffer of its own, is frozen into `Bytes`, and the same `Bytes` (no
//! copy) is written to the peer and handed to the inspection queue: queued first when the queue
//! has room (so the inspector sees cause before effect across directions), else written first
//! and queued after. The queue may delay the next read (back-pressure), never the write of the
//! current chunk. On a TLS leg the inspector sees the plaintext. This module must never decode,
//! format or log per chunk: that is the inspection side's job.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::ProxyConfig;
use super::limits::{Activity, watchdog};
use super::probe::RelayProbe;
use crate::capture::SourceEvent;
use crate::driver::live::WorkerTx;
use crate::driver::queue::ConnQueue;
use crate::event::{Chunk, CloseReason, ConnId, Dir, Timestamp};

/// How one direction ended.
#[derive(Debug)]
enum End {
    /// The source sent FIN (or TLS close_notify); it was passed on.
    Eof,
    /// Reading the source failed (typically a reset).
    ReadFailed(io::Error),
    /// Writing to the destination failed (typically a reset by that peer).
    WriteFailed(io::Error),
    /// The connection was cut (the other direction failed, or the proxy is stopping).
    Killed,
}

/// Anything a leg can be: a TCP stream, or TLS over one.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

type BoxRead = Box<dyn LegRead>;

/// A leg's read half, which can say when a read would find something without being given a
/// buffer: an idle connection then holds no read buffer while it waits.
trait LegRead: AsyncRead + Send + Unpin {
    /// Ready when a read may find data, EOF or an error; always ready where that is unknown.
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

impl LegRead for tokio::net::tcp::OwnedReadHalf {
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.as_ref().poll_read_ready(cx)
    }
}

impl LegRead for tokio::io::ReadHalf<Box<dyn Stream>> {
    /// TLS: the socket being readable says nothing certain about plaintext; read at once.
    fn poll_read_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// One leg of a connection once set up.
pub(super) enum Leg {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS (either side) over TCP.
    Tls(Box<dyn Stream>),
}

impl Leg {
    fn split(self) -> (BoxRead, BoxWrite) {
        match self {
            Leg::Tcp(s) => {
                let (r, w) = s.into_split();
                (Box::new(r), Box::new(TcpWrite(Some(w))))
            }
            Leg::Tls(s) => {
                let (r, w) = tokio::io::split(s);
                (Box::new(r), Box::new(w))
            }
        }
    }
}

/// A TCP write half that does not send FIN when dropped (tokio's does): a cut connection must
/// reset its peers, and a FIN first would let them see a clean end.
struct TcpWrite(Option<tokio::net::tcp::OwnedWriteHalf>);

impl TcpWrite {
    fn half(&mut self) -> Pin<&mut tokio::net::tcp::OwnedWriteHalf> {
        match self.0.as_mut() {
            Some(w) => Pin::new(w),
            // Only `drop` takes it out.
            None => unreachable!("write half used after drop"),
        }
    }
}

impl AsyncWrite for TcpWrite {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.half().poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.half().poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.half().poll_shutdown(cx)
    }
}

impl Drop for TcpWrite {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            w.forget();
        }
    }
}

/// Relay one accepted client connection to the upstream, reporting to `inspect` (when
/// inspecting) and stopping early when `stop` turns true.
pub(crate) async fn connection(
    conn: ConnId,
    client: TcpStream,
    client_addr: SocketAddr,
    config: Arc<ProxyConfig>,
    inspect: Option<WorkerTx>,
    mut stop: watch::Receiver<bool>,
) {
    let inspect = inspect.map(|tx| ConnQueue::new(tx, config.conn_queue_bytes));
    let opened = Timestamp::now();
    let activity = Activity::new(tokio::time::Instant::now());
    let deadlines = config.deadlines;
    let _ = client.set_nodelay(true);
    let connected =
        tokio::time::timeout(config.connect_timeout, TcpStream::connect(config.upstream)).await;
    config.probe.connected(matches!(connected, Ok(Ok(_))));
    if let Some(q) = &inspect {
        q.send(
            SourceEvent::Connect {
                conn,
                ts: opened,
                client: client_addr,
                server: config.upstream,
            },
            None,
        );
    }
    let upstream = match connected {
        Ok(Ok(s)) => s,
        failed => {
            let reason = connect_failure(failed, config.connect_timeout);
            tracing::warn!("#{conn} {client_addr}: {reason}");
            drop(client);
            close(&inspect, conn, reason).await;
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    tracing::debug!("#{conn} {client_addr} => {}", config.upstream);

    // Both sockets' descriptors, to reset them (zero linger) whatever wraps them. Not
    // duplicated: a second descriptor per socket would double the proxy's descriptors per
    // connection (4 instead of 2) and halve how many connections fit under `ulimit -n`.
    let sockets = Resetter::new(&client, &upstream);
    let legs = match config.tls.as_ref() {
        None => Ok((Leg::Tcp(client), Leg::Tcp(upstream))),
        Some(tls) => {
            let setup = super::upgrade::establish(conn, client, upstream, tls, &inspect, &activity);
            tokio::select! {
                r = setup => r,
                reason = watchdog(deadlines, &activity) => Err(reason),
                _ = async { let _ = stop.wait_for(|s| *s).await; } => Err(CloseReason::ProxyStopped),
            }
        }
    };
    let (client, upstream) = match legs {
        Ok(legs) => legs,
        Err(reason) => {
            tracing::warn!("#{conn} {client_addr}: {reason}");
            close(&inspect, conn, reason).await;
            return;
        }
    };
    let (mut client_r, mut client_w) = client.split();
    let (mut upstream_r, mut upstream_w) = upstream.split();

    let (kill, _) = watch::channel(false);
    let order = tokio::sync::Mutex::new(());
    let shared = Shared {
        conn,
        size: config.read_buffer.max(1),
        inspect: &inspect,
        order: &order,
        kill: &kill,
        sockets: &sockets,
        activity: &activity,
        probe: &config.probe,
    };
    let mut timed_out = None;
    let ((c2s, c2s_at), (s2c, s2c_at)) = {
        let both = async {
            tokio::join!(
                pump(&mut client_r, &mut upstream_w, Dir::C2S, &shared),
                pump(&mut upstream_r, &mut client_w, Dir::S2C, &shared),
            )
        };
        let mut both = std::pin::pin!(both);
        tokio::select! {
            r = &mut both => r,
            _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                kill.send_replace(true);
                both.await
            }
            // A deadline passed: both sockets are closed (FIN, not reset: nothing failed).
            r = watchdog(deadlines, &activity) => {
                timed_out = Some(r);
                kill.send_replace(true);
                both.await
            }
        }
    };
    let reason = timed_out.unwrap_or_else(|| reason(c2s, c2s_at, s2c, s2c_at));
    tracing::debug!("#{conn} {client_addr}: {reason}");
    drop((client_r, client_w, upstream_r, upstream_w));
    close(&inspect, conn, reason).await;
}

/// Why connecting to the upstream failed (`failed`: an error, or no answer within `timeout`).
fn connect_failure(
    failed: Result<io::Result<TcpStream>, tokio::time::error::Elapsed>,
    timeout: std::time::Duration,
) -> CloseReason {
    match failed {
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
            CloseReason::Refused(e.to_string())
        }
        Ok(Err(e)) => CloseReason::Unreachable(e.to_string()),
        _ => CloseReason::Unreachable(format!("no answer within {timeout:?}")),
    }
}

/// Tell the inspection side `ev`, when inspecting.
pub(super) async fn send(inspect: &Option<ConnQueue>, ev: SourceEvent) {
    if let Some(q) = inspect {
        q.send(ev, None);
    }
}

async fn close(inspect: &Option<ConnQueue>, conn: ConnId, reason: CloseReason) {
    send(
        inspect,
        SourceEvent::Close {
            conn,
            ts: Timestamp::now(),
            reason,
        },
    )
    .await;
}

/// Why the connection ended: a failure wins over a clean end (naming the clean end first
/// when it came first, e.g. `client closed, then upstream reset: ...`), else who closed first.
fn reason(c2s: End, c2s_at: Instant, s2c: End, s2c_at: Instant) -> CloseReason {
    let failed = match (&c2s, &s2c) {
        (End::ReadFailed(e), _) | (_, End::WriteFailed(e)) => {
            Some(CloseReason::failed(Dir::C2S, e))
        }
        (End::WriteFailed(e), _) | (_, End::ReadFailed(e)) => {
            Some(CloseReason::failed(Dir::S2C, e))
        }
        _ => None,
    };
    if let Some(mut failed) = failed {
        if let CloseReason::Failed { clean_first, .. } = &mut failed {
            *clean_first = match (&c2s, &s2c) {
                (End::Eof, _) if c2s_at <= s2c_at => Some(Dir::C2S),
                (_, End::Eof) if s2c_at <= c2s_at => Some(Dir::S2C),
                _ => None,
            };
        }
        return failed;
    }
    match (c2s, s2c) {
        (End::Eof, End::Eof) if c2s_at <= s2c_at => CloseReason::Closed { first: Dir::C2S },
        (End::Eof, End::Eof) => CloseReason::Closed { first: Dir::S2C },
        _ => CloseReason::ProxyStopped,
    }
}

/// Cut the connection: every socket resets its peer when closed, both pumps stop.
fn cut(sockets: &Resetter, kill: &watch::Sender<bool>) {
    sockets.arm();
    kill.send_replace(true);
}

/// The client and upstream sockets' descriptors, borrowed (not duplicated) from the streams the
/// legs own, so that a failure on either leg can make both close with a reset.
///
/// Only used while the legs are alive: `cut` is only called from a pump, which holds its
/// halves, and `connection` drops the halves only after both pumps returned.
struct Resetter {
    fds: [std::os::fd::RawFd; 2],
}

impl Resetter {
    fn new(client: &TcpStream, upstream: &TcpStream) -> Self {
        use std::os::fd::AsRawFd;
        Resetter {
            fds: [client.as_raw_fd(), upstream.as_raw_fd()],
        }
    }

    /// Zero linger on both sockets: their close sends RST instead of FIN.
    fn arm(&self) {
        for &fd in &self.fds {
            // SAFETY: the descriptor belongs to a stream that the calling pump's halves keep
            // open (see the type's comment), so it is open and refers to that socket.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            let _ = socket2::SockRef::from(&fd).set_linger(Some(Duration::ZERO));
        }
    }
}

/// What both directions of one connection share.
struct Shared<'a> {
    conn: ConnId,
    /// Largest read.
    size: usize,
    inspect: &'a Option<ConnQueue>,
    /// Keeps queued chunks in causal order across directions (see `pump`).
    order: &'a tokio::sync::Mutex<()>,
    /// Cuts both directions.
    kill: &'a watch::Sender<bool>,
    /// Client and upstream sockets, to reset them.
    sockets: &'a Resetter,
    /// Where the pumps record what passed, for the handshake and idle deadlines.
    activity: &'a Activity,
    /// Where the pumps add up how long they waited for their queue's budget.
    probe: &'a RelayProbe,
}

/// Copy `from` to `to` until EOF, an error, or `kill`. Returns how it ended and when.
async fn pump(
    from: &mut BoxRead,
    to: &mut BoxWrite,
    dir: Dir,
    shared: &Shared<'_>,
) -> (End, Instant) {
    let Shared {
        conn,
        size,
        inspect,
        order,
        kill,
        sockets,
        activity,
        probe,
    } = *shared;
    let mut killed = kill.subscribe();
    let mut buf = BytesMut::new();
    let mut want = START_READ.min(size);
    let end = loop {
        let bytes = match read_chunk(from, &mut buf, &mut want, size, &mut killed).await {
            Ok(bytes) => bytes,
            Err(end) => break end,
        };
        activity.passed(bytes.len(), dir == Dir::C2S);
        let ts = Timestamp::now();
        // Queue the chunk before writing it when this connection's budget has room, so the
        // inspection side sees cause before effect across the two directions (a reply can only
        // follow the write). When the budget is spent, write first and then wait for it: the
        // wait may delay this connection's next read, never this write, and never another
        // connection (each has its own budget). `order` keeps the two directions' chunks in
        // causal order while one of them waits: whoever finds it taken writes first and queues
        // after the waiting chunk.
        let mut late = None;
        if let Some(q) = inspect {
            match order.try_lock() {
                Ok(guard) => match q.try_reserve(bytes.len()) {
                    Some(permit) => q.send(chunk(conn, dir, ts, &bytes), Some(permit)),
                    None => late = Some(Some(guard)),
                },
                Err(_) => late = Some(None),
            }
        }
        if let Err(end) = write_all(to, &bytes, &mut killed).await {
            break end;
        }
        if let (Some(q), Some(guard)) = (inspect, late) {
            let waiting = Instant::now();
            let _guard = match guard {
                Some(g) => g,
                None => order.lock().await,
            };
            if let Some(permit) = q.reserve(bytes.len()).await {
                q.send(chunk(conn, dir, ts, &bytes), Some(permit));
            }
            probe.waited(waiting.elapsed());
        }
    };
    match &end {
        // Half-close: pass the FIN (after TLS close_notify) on and keep the other direction
        // flowing. The inspection side is told in causal order, as a chunk is: before the FIN
        // is passed on unless the other direction is waiting to queue a chunk, then after.
        End::Eof => {
            let fin = || SourceEvent::Fin {
                conn,
                dir,
                ts: Timestamp::now(),
            };
            let mut late = false;
            if let Some(q) = inspect {
                match order.try_lock() {
                    Ok(_guard) => q.send(fin(), None),
                    Err(_) => late = true,
                }
            }
            tokio::select! {
                biased;
                _ = async { let _ = killed.wait_for(|k| *k).await; } => {}
                _ = to.shutdown() => {}
            }
            if let (Some(q), true) = (inspect, late) {
                let _guard = order.lock().await;
                q.send(fin(), None);
            }
        }
        End::ReadFailed(_) | End::WriteFailed(_) => cut(sockets, kill),
        End::Killed => {}
    }
    (end, Instant::now())
}

/// The source event of a chunk of relayed bytes (shared with the write: no copy).
fn chunk(conn: ConnId, dir: Dir, ts: Timestamp, bytes: &Bytes) -> SourceEvent {
    SourceEvent::Chunk(Chunk {
        conn,
        dir,
        ts,
        bytes: bytes.clone(),
    })
}

/// Reads start this large and double (up to the configured read size) while they fill the
/// buffer.
const START_READ: usize = 16 * 1024;

/// Below this much spare capacity a new buffer is taken instead of reading into the rest.
const MIN_READ: usize = 2048;

/// Read what is available and hand it out as `Bytes`.
///
/// Successive chunks are carved out of one allocation (`split` keeps the spare capacity), so
/// small messages cost no allocation each even while the inspector still holds earlier chunks.
/// The read size grows while reads fill the buffer (bulk transfer) and drops back after a
/// read that did not (the source ran dry); a connection waiting for data holds no buffer.
async fn read_chunk(
    from: &mut BoxRead,
    buf: &mut BytesMut,
    want: &mut usize,
    size: usize,
    killed: &mut watch::Receiver<bool>,
) -> Result<Bytes, End> {
    // Wait until there is something to read before holding a buffer for it: when the source
    // has run dry, the spare capacity is let go (chunks already handed out keep their part),
    // so a connection that waits holds no read buffer.
    let mut dry = false;
    let ready = std::future::poll_fn(|cx| {
        let ready = from.poll_read_ready(cx);
        if ready.is_pending() && !dry {
            dry = true;
            *buf = BytesMut::new();
        }
        ready
    });
    tokio::select! {
        biased;
        _ = async { let _ = killed.wait_for(|k| *k).await; } => return Err(End::Killed),
        // An error here is met again by the read.
        _ = ready => {}
    }
    if buf.capacity() < MIN_READ {
        buf.reserve(*want);
    }
    let room = buf.capacity();
    let read = tokio::select! {
        biased;
        _ = async { let _ = killed.wait_for(|k| *k).await; } => return Err(End::Killed),
        r = from.read_buf(buf) => r,
    };
    match read {
        Ok(0) => Err(End::Eof),
        Ok(n) => {
            if n == room {
                *want = (*want * 2).min(size);
            } else {
                *want = START_READ.min(size);
            }
            let bytes = buf.split().freeze();
            if n < room && buf.capacity() > START_READ {
                *buf = BytesMut::new();
            }
            Ok(bytes)
        }
        // A TLS peer that closes TCP without close_notify (common: RabbitMQ, many clients)
        // ends its stream like a FIN does.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(End::Eof),
        Err(e) => Err(End::ReadFailed(e)),
    }
}

/// Write all of `bytes` (and flush, so TLS records leave at once).
async fn write_all(
    to: &mut BoxWrite,
    bytes: &[u8],
    killed: &mut watch::Receiver<bool>,
) -> Result<(), End> {
    tokio::select! {
        biased;
        _ = async { let _ = killed.wait_for(|k| *k).await; } => Err(End::Killed),
        r = async {
            to.write_all(bytes).await?;
            to.flush().await
        } => r.map_err(End::WriteFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Failure;

    #[test]
    fn reasons_name_failures_and_who_closed_first() {
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(1);
        let reset = || End::ReadFailed(io::ErrorKind::ConnectionReset.into());
        let failed = |clean_first, by| CloseReason::Failed {
            clean_first,
            by,
            how: Failure::Reset,
            detail: io::Error::from(io::ErrorKind::ConnectionReset).to_string(),
        };
        assert_eq!(
            reason(End::Eof, t0, End::Eof, t1),
            CloseReason::Closed { first: Dir::C2S }
        );
        assert_eq!(
            reason(End::Eof, t1, End::Eof, t0),
            CloseReason::Closed { first: Dir::S2C }
        );
        assert_eq!(reason(reset(), t0, End::Killed, t1), failed(None, Dir::C2S));
        assert!(
            reason(reset(), t0, End::Killed, t1)
                .to_string()
                .starts_with("client reset: ")
        );
        assert_eq!(
            reason(End::Eof, t0, reset(), t1),
            failed(Some(Dir::C2S), Dir::S2C)
        );
        assert!(
            reason(End::Eof, t0, reset(), t1)
                .to_string()
                .starts_with("client closed, then upstream reset: ")
        );
        assert_eq!(
            reason(End::Killed, t0, End::Killed, t1),
            CloseReason::ProxyStopped
        );
    }
}
