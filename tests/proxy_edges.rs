//! The relay against small local peers: upstream down, a client vanishing mid-frame, a
//! non-AMQP client, 1-byte writes, half-close and reset propagation.

mod common;
mod support;

use std::io::ErrorKind;
use std::time::Duration;

use amqpeek::codec::ProtocolHeader;
use amqpeek::event::{CloseReason, Dir, Event, EventKind, Failure};
use common::{data_of, start_proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

const T: Duration = Duration::from_secs(10);

fn close_of(events: &[Event], conn: u64) -> amqpeek::event::CloseInfo {
    events
        .iter()
        .filter(|e| e.conn == conn)
        .find_map(|e| match &e.kind {
            EventKind::Close(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no close event for #{conn}: {events:#?}"))
}

fn violations(events: &[Event], rule: &str) -> Vec<(Dir, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Violation(v) if v.rule == rule => Some((v.dir, v.offset)),
            _ => None,
        })
        .collect()
}

/// The connection ended in a reset by `by`, and says so (`client reset: ...`).
fn assert_reset_by(reason: &CloseReason, by: Dir) {
    assert!(
        matches!(reason, CloseReason::Failed { by: b, how: Failure::Reset, .. } if *b == by),
        "{reason}"
    );
    let who = if by == Dir::C2S { "client" } else { "upstream" };
    assert!(
        reason.to_string().starts_with(&format!("{who} reset: ")),
        "{reason}"
    );
}

/// What [`sink_upstream`] got and how its read ended.
type Sunk = oneshot::Receiver<(Vec<u8>, Option<ErrorKind>)>;

/// An upstream that accepts one connection, reads everything until EOF (or error), and
/// reports what it got plus how the read ended.
async fn sink_upstream() -> (std::net::SocketAddr, Sunk) {
    let (addr, rx, _) = sink_upstream_watched().await;
    (addr, rx)
}

/// [`sink_upstream`], also telling how many bytes it has received so far.
async fn sink_upstream_watched() -> (std::net::SocketAddr, Sunk, watch::Receiver<usize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    let (progress, watched) = watch::channel(0);
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let err = loop {
            match s.read(&mut buf).await {
                Ok(0) => break None,
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    let _ = progress.send(got.len());
                }
                Err(e) => break Some(e.kind()),
            }
        };
        let _ = tx.send((got, err));
    });
    (addr, rx, watched)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_down_closes_the_client_promptly_and_says_why() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let proxy = start_proxy(closed, vec![]).await;
    for _ in 0..2 {
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        let _ = c.write_all(b"AMQP\x00\x00\x09\x01").await;
        let mut buf = [0u8; 16];
        let r = tokio::time::timeout(T, c.read(&mut buf)).await.unwrap();
        assert!(matches!(r, Ok(0) | Err(_)), "client is closed: {r:?}");
    }
    proxy.wait_closed(2).await;
    let (summary, events) = proxy.stop().await;
    assert_eq!(summary.connections, 2, "the proxy kept serving");
    for conn in [1, 2] {
        assert!(events.iter().any(|e| e.conn == conn
            && matches!(e.kind, EventKind::Connect { upstream, .. } if upstream == closed)));
        let close = close_of(&events, conn);
        assert!(
            matches!(&close.reason, CloseReason::Refused(e) if e.contains("refused")),
            "{}",
            close.reason
        );
        assert!(close.reason.to_string().starts_with("upstream refused: "));
        assert_eq!((close.bytes_c2s, close.bytes_s2c), (0, 0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_vanishing_mid_frame_is_relayed_and_reported_truncated() {
    let (up, got) = sink_upstream().await;
    let proxy = start_proxy(up, vec![]).await;
    // 0-9-1 header, then the first 5 bytes of a method frame.
    let sent = b"AMQP\x00\x00\x09\x01\x01\x00\x00\x00\x00";
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(sent).await.unwrap();
    drop(c);
    let (bytes, err) = tokio::time::timeout(T, got).await.unwrap().unwrap();
    assert_eq!(bytes, sent, "upstream got every byte");
    assert_eq!(err, None, "upstream saw a clean EOF");
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    assert_eq!(
        violations(&events, "codec.truncated-frame"),
        vec![(Dir::C2S, 8)]
    );
    let close = close_of(&events, 1);
    assert_eq!(close.reason, "client closed");
    assert_eq!(close.bytes_c2s, sent.len() as u64);
    assert_eq!(data_of(&events, 1, Dir::C2S), sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_amqp_client_is_relayed_untouched_and_reported_undecodable() {
    // An echo upstream.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let (mut r, mut w) = s.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
        let _ = w.shutdown().await;
    });
    let proxy = start_proxy(up, vec![]).await;
    let req = b"GET / HTTP/1.1\r\nHost: example\r\nUser-Agent: test\r\n\r\n";
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(req).await.unwrap();
    c.shutdown().await.unwrap();
    let mut echoed = Vec::new();
    tokio::time::timeout(T, c.read_to_end(&mut echoed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(echoed, req);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let headers: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Header { dir, header, .. } => Some((*dir, *header)),
            _ => None,
        })
        .collect();
    assert_eq!(
        headers,
        vec![
            (Dir::C2S, ProtocolHeader::NotAmqp),
            (Dir::S2C, ProtocolHeader::NotAmqp)
        ]
    );
    let mut undecodable = violations(&events, "codec.undecodable-stream");
    undecodable.sort_by_key(|(d, _)| d.index());
    assert_eq!(undecodable.len(), 2, "{undecodable:?}");
    assert!(!events.iter().any(|e| matches!(e.kind, EventKind::Frame(_))));
    let close = close_of(&events, 1);
    assert_eq!(
        (close.bytes_c2s, close.bytes_s2c),
        (req.len() as u64, req.len() as u64)
    );
    assert_eq!(data_of(&events, 1, Dir::C2S), req);
    assert_eq!(data_of(&events, 1, Dir::S2C), req);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_sent_one_byte_at_a_time_arrives_whole_and_decodes_once() {
    let (up, got) = sink_upstream().await;
    let proxy = start_proxy(up, vec![]).await;
    // 0-9-1 header and two heartbeat frames.
    let mut sent = b"AMQP\x00\x00\x09\x01".to_vec();
    for _ in 0..2 {
        sent.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0xce]);
    }
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.set_nodelay(true).unwrap();
    for b in &sent {
        c.write_all(&[*b]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    c.shutdown().await.unwrap();
    let (bytes, _) = tokio::time::timeout(T, got).await.unwrap().unwrap();
    assert_eq!(bytes, sent);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    assert_eq!(data_of(&events, 1, Dir::C2S), sent);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Header { .. }))
            .count(),
        1
    );
    let frames: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame(f) => Some((f.offset, f.frame.name(), f.frame.channel())),
            _ => None,
        })
        .collect();
    assert_eq!(frames, vec![(8, "heartbeat", 0), (16, "heartbeat", 0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_close_reaches_upstream_and_its_reply_still_reaches_the_client() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap(); // returns only on EOF
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.write_all(b"reply after your FIN").await.unwrap();
        s.shutdown().await.unwrap();
        let _ = tx.send(got);
    });
    let proxy = start_proxy(up, vec![]).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
    c.shutdown().await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(T, c.read_to_end(&mut reply))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply, b"reply after your FIN");
    assert_eq!(rx.await.unwrap(), b"AMQP\x00\x00\x09\x01");
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let close = close_of(&events, 1);
    assert_eq!(close.reason, "client closed");
    assert_eq!((close.bytes_c2s, close.bytes_s2c), (8, 20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reset_resets_the_upstream() {
    let (up, got, mut received) = sink_upstream_watched().await;
    let proxy = start_proxy(up, vec![]).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
    // Reset only once the header is through, so the upstream sees both.
    tokio::time::timeout(T, received.wait_for(|&n| n == 8))
        .await
        .expect("the header reaches the upstream")
        .unwrap();
    c.set_zero_linger().unwrap();
    drop(c);
    let (bytes, err) = tokio::time::timeout(T, got).await.unwrap().unwrap();
    assert_eq!(bytes, b"AMQP\x00\x00\x09\x01");
    assert_eq!(err, Some(ErrorKind::ConnectionReset), "upstream got RST");
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let close = close_of(&events, 1);
    assert_reset_by(&close.reason, Dir::C2S);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_reset_resets_the_client() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    // The upstream resets once the client has its header.
    let (client_has_it, has_it) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = [0u8; 8];
        s.read_exact(&mut buf).await.unwrap();
        s.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
        let _ = has_it.await;
        s.set_zero_linger().unwrap();
        drop(s);
    });
    let proxy = start_proxy(up, vec![]).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
    let mut got = vec![0u8; 8];
    tokio::time::timeout(T, c.read_exact(&mut got))
        .await
        .expect("the upstream's header reaches the client")
        .unwrap();
    client_has_it.send(()).unwrap();
    let mut buf = [0u8; 64];
    let err = tokio::time::timeout(T, async {
        loop {
            match c.read(&mut buf).await {
                Ok(0) => break None,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break Some(e.kind()),
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(got, b"AMQP\x00\x00\x09\x01");
    assert_eq!(err, Some(ErrorKind::ConnectionReset), "client got RST");
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let close = close_of(&events, 1);
    assert_reset_by(&close.reason, Dir::S2C);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_connection_does_not_hold_up_another() {
    // Upstream 1 never reads; upstream 2 echoes. Both behind the same proxy port: the proxy
    // connects to one upstream, so use a tiny dispatcher: first connection stuck, then echo.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (stuck, _) = l.accept().await.unwrap();
        let _keep = stuck;
        let (mut s, _) = l.accept().await.unwrap();
        let (mut r, mut w) = s.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
        std::future::pending::<()>().await;
    });
    let proxy = start_proxy(up, vec![]).await;
    let mut stuck = TcpStream::connect(proxy.addr).await.unwrap();
    // Fill every buffer between the stuck client and the stuck upstream, counting what the
    // client got to write.
    let (written_tx, written) = watch::channel(0usize);
    let filler = tokio::spawn(async move {
        let blob = vec![b'x'; 1 << 16];
        let mut total = 0;
        while stuck.write_all(&blob).await.is_ok() {
            total += blob.len();
            let _ = written_tx.send(total);
        }
    });
    // Stuck: no write has completed for 200 ms (checked every 10 ms, within T).
    let stuck_at = {
        let deadline = tokio::time::Instant::now() + T;
        let (mut last, mut same) = (*written.borrow(), 0);
        while same < 20 || last == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the first connection never got stuck"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
            let now = *written.borrow();
            same = if now == last { same + 1 } else { 0 };
            last = now;
        }
        last
    };
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(5), c.read_exact(&mut buf))
        .await
        .expect("the second connection is served while the first is stuck")
        .unwrap();
    assert_eq!(&buf, b"ping");
    assert_eq!(
        *written.borrow(),
        stuck_at,
        "the first connection was still stuck while the second was served"
    );
    assert!(!filler.is_finished(), "the stuck writer is still blocked");
    filler.abort();
    drop(c);
    proxy.stop().await;
}

/// A sink that is slow on purpose.
struct SlowSink;
impl amqpeek::pipeline::Sink for SlowSink {
    fn event(&mut self, _: &Event) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::thread::sleep(Duration::from_millis(2));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_inspection_side_slows_the_relay_but_loses_nothing() {
    let (up, got) = sink_upstream().await;
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), up);
    config.conn_queue_bytes = 8192;
    config.read_buffer = 4096;
    let proxy = common::start_proxy_with(config, vec![Box::new(SlowSink)]).await;
    let sent: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&sent).await.unwrap();
    c.shutdown().await.unwrap();
    let (bytes, _) = tokio::time::timeout(Duration::from_secs(60), got)
        .await
        .unwrap()
        .unwrap();
    assert!(bytes == sent, "relayed unchanged");
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    assert!(
        data_of(&events, 1, Dir::C2S) == sent,
        "inspected every byte"
    );
    assert_eq!(close_of(&events, 1).bytes_c2s, sent.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_keeps_replies_after_their_requests() {
    // An echo upstream: every reply byte is caused by a request byte.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let (mut r, mut w) = s.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
    });
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), up);
    config.conn_queue_bytes = 16;
    let proxy = common::start_proxy_with(config, vec![Box::new(SlowSink)]).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.set_nodelay(true).unwrap();
    let mut buf = [0u8; 16];
    for i in 0..200u32 {
        let msg = format!("ping {i:>10}\n");
        c.write_all(msg.as_bytes()).await.unwrap();
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, msg.as_bytes());
    }
    drop(c);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let (mut sent, mut echoed) = (0usize, 0usize);
    for e in &events {
        if let EventKind::Data { dir, bytes, .. } = &e.kind {
            match dir {
                Dir::C2S => sent += bytes.len(),
                Dir::S2C => echoed += bytes.len(),
            }
            assert!(echoed <= sent, "a reply was inspected before its request");
        }
    }
    assert_eq!((sent, echoed), (3200, 3200));
}
