//! Back-pressure falls only on the connection that causes it: while the inspection side is
//! stuck (a sink that does not return), a connection that floods stalls once its own queue
//! budget is spent, and a quiet neighbour keeps relaying round trips. When the sink returns,
//! both connections' bytes are inspected, every one of them.

mod common;
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use amqpeek::event::{Dir, Event};
use amqpeek::pipeline::Sink;
use amqpeek::proxy::ProxyConfig;
use common::{data_of, start_proxy_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A sink that blocks the inspection side while its gate is shut.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn shut(&self) {
        *self.0.0.lock().unwrap() = true;
    }
    fn open(&self) {
        *self.0.0.lock().unwrap() = false;
        self.0.1.notify_all();
    }
}

/// Opens the gate when dropped, so that a failing test does not leave the inspection thread
/// blocked (and the runtime waiting for it forever).
struct OpenOnDrop(Gate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl Sink for Gate {
    fn event(&mut self, _: &Event) -> std::io::Result<()> {
        let (shut, cv) = &*self.0;
        let mut guard = shut.lock().unwrap();
        while *guard {
            guard = cv.wait(guard).unwrap();
        }
        Ok(())
    }
}

/// An upstream that echoes every connection; counts the bytes of the first one.
async fn echo_upstream(first: Arc<AtomicU64>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut s, _)) = l.accept().await {
            let count = (n == 0).then(|| first.clone());
            n += 1;
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(k) = s.read(&mut buf).await {
                    if k == 0 || s.write_all(&buf[..k]).await.is_err() {
                        break;
                    }
                    if let Some(c) = &count {
                        c.fetch_add(k as u64, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    addr
}

/// Wait until `count` stops changing (the same over three looks 100 ms apart): the flooding
/// connection's relay waits for its budget.
async fn until_stalled(count: &AtomicU64, total: u64) -> u64 {
    let mut last = (u64::MAX, 0);
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = count.load(Ordering::SeqCst);
        last = if now == last.0 {
            (now, last.1 + 1)
        } else {
            (now, 0)
        };
        if last.1 >= 3 {
            assert!(
                now < total,
                "the flood was never held up: the gate did not block"
            );
            return now;
        }
    }
    panic!("the flooding connection never stalled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_connection_does_not_hold_up_a_quiet_one() {
    let flooded = Arc::new(AtomicU64::new(0));
    let up = echo_upstream(flooded.clone()).await;
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), up);
    config.read_buffer = 4096;
    config.queue_chunks = 8;
    config.conn_queue_bytes = 64 * 1024;

    let gate = Gate::default();
    let proxy = start_proxy_with(config, vec![Box::new(gate.clone())]).await;

    // The flooder: 8 MiB, its echo read back all along.
    let flood: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut a = TcpStream::connect(proxy.addr).await.unwrap();
    a.write_all(b"first").await.unwrap();
    let mut first = [0u8; 5];
    a.read_exact(&mut first).await.unwrap();
    gate.shut();
    let _reopen = OpenOnDrop(gate.clone());
    let (mut ar, mut aw) = a.into_split();
    let total = flood.len() as u64;
    let writer = tokio::spawn({
        let flood = flood.clone();
        async move {
            aw.write_all(&flood).await.unwrap();
            aw.shutdown().await.unwrap();
        }
    });
    let reader = tokio::spawn(async move {
        let mut back = Vec::new();
        ar.read_to_end(&mut back).await.unwrap();
        back
    });
    let stalled_at = until_stalled(&flooded, total).await;

    // The quiet one: 50 round trips while the inspection side is still stuck.
    let mut b = TcpStream::connect(proxy.addr).await.unwrap();
    b.set_nodelay(true).unwrap();
    let mut buf = [0u8; 16];
    for i in 0..50u32 {
        let ping = format!("ping {i:>10}\n");
        b.write_all(ping.as_bytes()).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), b.read_exact(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("round trip {i} of the quiet connection held up"))
            .unwrap();
        assert_eq!(&buf, ping.as_bytes());
    }
    assert_eq!(
        flooded.load(Ordering::SeqCst),
        stalled_at,
        "the flood stayed held while the quiet connection relayed"
    );

    gate.open();
    writer.await.unwrap();
    let back = tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .unwrap()
        .unwrap();
    assert!(back == flood, "the flood relayed unchanged");
    drop(b);
    proxy.wait_closed(1).await;
    proxy.wait_closed(2).await;
    let (_, events) = proxy.stop().await;
    let mut a_sent = b"first".to_vec();
    a_sent.extend_from_slice(&flood);
    assert!(
        data_of(&events, 1, Dir::C2S) == a_sent,
        "every flood byte inspected"
    );
    assert_eq!(data_of(&events, 2, Dir::C2S).len(), 50 * 16);
}

/// A sink whose lines are rendered on the inspection workers (as JSONL's are), where the
/// rendering of connection 1's events waits while its gate is shut: connection 1's worker is
/// stuck, as a worker busy with a flood is.
struct StuckRender(Gate);

/// The rendering half of [`StuckRender`].
struct StuckLines(Gate);

impl Sink for StuckRender {
    fn event(&mut self, _: &Event) -> std::io::Result<()> {
        Ok(())
    }
    fn renderer(&self) -> Option<Box<dyn amqpeek::pipeline::Render>> {
        Some(Box::new(StuckLines(self.0.clone())))
    }
    fn write_rendered(&mut self, _: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

impl amqpeek::pipeline::Render for StuckLines {
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
        if ev.conn == 1 {
            let _ = self.0.event(ev);
        }
        out.push(b'.');
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_whose_inspection_is_stuck_does_not_hold_up_the_others_inspection() {
    let up = echo_upstream(Arc::new(AtomicU64::new(0))).await;
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), up);
    // Connections are dealt to the workers in turn: #1 and #2 are inspected on different ones.
    config.jobs = std::num::NonZeroUsize::new(2).unwrap();
    let gate = Gate::default();
    gate.shut();
    let _reopen = OpenOnDrop(gate.clone());
    let proxy = start_proxy_with(config, vec![Box::new(StuckRender(gate.clone()))]).await;

    let mut a = TcpStream::connect(proxy.addr).await.unwrap();
    a.write_all(b"stuck").await.unwrap();
    let mut b = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = [0u8; 16];
    for i in 0..20u32 {
        let ping = format!("ping {i:>10}\n");
        b.write_all(ping.as_bytes()).await.unwrap();
        b.read_exact(&mut buf).await.unwrap();
    }
    drop(b);
    // #2's close reaches the sinks while #1's worker is still stuck on its first event.
    proxy.wait_closed(2).await;
    assert_eq!(
        data_of(&proxy.events.lock().unwrap(), 2, Dir::C2S).len(),
        20 * 16
    );
    assert!(
        !proxy.events.lock().unwrap().iter().any(|e| e.conn == 1),
        "#1's inspection was held"
    );

    gate.open();
    drop(a);
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    assert_eq!(data_of(&events, 1, Dir::C2S), b"stuck");
}
