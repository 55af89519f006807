//! Waiting for an observable signal instead of sleeping: poll a condition until it holds, with a
//! deadline that fails loudly; and a probe that proves a packet capture is running (and has
//! written everything sent before it) by finding a marker payload in the capture.
#![allow(dead_code)]

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// Polls `f` every 10 ms until it gives `Some`, and returns that; panics naming `what` when
/// `within` passes first.
pub fn until<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A loopback listener whose port a capture filter includes: each [`Probe::mark`] sends a
/// distinct payload to it, which shows in the capture once the capture has caught up.
pub struct Probe {
    listener: TcpListener,
    sent: std::cell::Cell<u32>,
}

impl Probe {
    pub fn new() -> Probe {
        Probe {
            listener: TcpListener::bind("127.0.0.1:0").unwrap(),
            sent: std::cell::Cell::new(0),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap()
    }

    /// Sends `bytes` on a fresh connection, in one segment.
    pub fn send_raw(&self, bytes: &[u8]) {
        let mut s = TcpStream::connect(self.addr()).unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(bytes).unwrap();
    }

    /// Sends a fresh marker (`prefix` then a counter) in one segment and returns it.
    pub fn send(&self, prefix: &[u8]) -> Vec<u8> {
        let n = self.sent.get() + 1;
        self.sent.set(n);
        let mut marker = prefix.to_vec();
        marker.extend_from_slice(format!("amqpeek-probe-{}-{n}", self.addr().port()).as_bytes());
        self.send_raw(&marker);
        marker
    }

    /// Marks the capture written to `file` and waits until the marker is in it: from then on
    /// the capture is running, and holds every packet sent before this call. Resends the
    /// marker while waiting, since the first may precede the capture's start.
    pub fn mark_file(&self, file: &Path, within: Duration) {
        let deadline = Instant::now() + within;
        let mut markers = Vec::new();
        loop {
            markers.push(self.send(b""));
            let resend = Instant::now() + Duration::from_millis(500);
            while Instant::now() < resend {
                let data = std::fs::read(file).unwrap_or_default();
                if markers
                    .iter()
                    .any(|m| data.windows(m.len()).any(|w| w == m.as_slice()))
                {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                Instant::now() < deadline,
                "the capture in {} never showed the probe's marker",
                file.display()
            );
        }
    }
}
