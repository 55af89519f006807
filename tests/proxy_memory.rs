//! The proxy gives back the memory a burst took: after connections carrying large frames
//! close, its resident memory is back near where it started.
//!
//! The proxy runs as its own process (its RSS is what is measured), with both captures on, in
//! front of an upstream in this process that reads and discards. Four clients at once each send
//! a protocol header and one 32 MiB transfer frame.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A field of `/proc/<pid>/status`, as a number (kB for the sizes).
fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// One AMQP 1.0 transfer frame head (handle 0, settled) announcing `payload` bytes after it.
fn transfer_head(payload: usize) -> Vec<u8> {
    let perf = [
        0x00, 0x53, 0x14, 0xc0, 0x0b, 0x06, 0x43, 0x43, 0xa0, 0x01, b't', 0x43, 0x41, 0x42,
    ];
    let size = (8 + perf.len() + payload) as u32;
    let mut out = size.to_be_bytes().to_vec();
    out.extend_from_slice(&[2, 0, 0, 0]);
    out.extend_from_slice(&perf);
    out
}

/// The proxy process, killed when the test ends however it ends (a failed assertion must not
/// leave it running, holding the test's output open).
struct Proxy(std::process::Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn discarding_upstream() -> String {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = upstream.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut s in upstream.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[test]
#[cfg(target_os = "linux")]
fn after_a_burst_of_large_frames_closes_the_proxys_memory_is_back_near_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("burst.jsonl");
    let mut proxy = Proxy(
        Command::new(env!("CARGO_BIN_EXE_amqpeek"))
            .args(["proxy", "--quiet", "--listen", "127.0.0.1:0", "--upstream"])
            .arg(discarding_upstream())
            .arg("--jsonl")
            .arg(&jsonl)
            .arg("--pcap")
            .arg(dir.path().join("burst.pcapng"))
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = BufReader::new(proxy.0.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the proxy exited");
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split(',').next().unwrap().trim().to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let pid = proxy.0.id();
    // The kernel folds freed memory back into resident huge pages unless told not to.
    assert_eq!(
        status(pid, "THP_enabled:"),
        0,
        "transparent huge pages are on"
    );
    std::thread::sleep(Duration::from_millis(300));
    let before = status(pid, "VmRSS:");

    let frame = 32usize << 20;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(&addr).unwrap();
                c.write_all(b"AMQP\x00\x01\x00\x00").unwrap();
                c.write_all(&transfer_head(frame)).unwrap();
                let block = vec![b'x'; 1 << 20];
                for _ in 0..frame >> 20 {
                    c.write_all(&block).unwrap();
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    // Closed: wait until the JSONL holds the four closes (the inspection has caught up), then
    // for the workers to go idle and give back (they park after 200 ms without traffic).
    let closes = || {
        std::fs::read_to_string(&jsonl)
            .unwrap_or_default()
            .matches("\"event\":\"close\"")
            .count()
    };
    for _ in 0..600 {
        if closes() == 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        closes(),
        4,
        "the four connections' closes never reached the JSONL"
    );
    std::thread::sleep(Duration::from_secs(2));
    let peak = status(pid, "VmHWM:");
    let after = status(pid, "VmRSS:");
    drop(proxy);
    let (before, peak, after) = (before >> 10, peak >> 10, after >> 10);
    eprintln!("RSS before {before} MiB, peak {peak} MiB, after close {after} MiB");
    assert!(
        after <= before + 6,
        "after close the proxy holds {after} MiB, {} MiB more than before ({before} MiB; peak \
         {peak} MiB)",
        after.saturating_sub(before)
    );
}
