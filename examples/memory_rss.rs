//! Resident memory of the proxy while large frames and large messages pass through it with
//! `--jsonl --pcap` (both captures lossless), and after their connections close.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example memory_rss -- target/release/amqpeek frames   # 6 x 250 MiB frames
//! cargo run --release --example memory_rss -- target/release/amqpeek messages # 8 x 60 MiB messages
//! ```
//!
//! An upstream in this process reads and discards; the clients (one thread each, all at once)
//! send an AMQP 1.0 header and then either one transfer frame of 250 MiB (`frames`) or a 60 MiB
//! message in 240 transfers of 256 KiB (`messages`). Prints the proxy's RSS before, its peak
//! (VmHWM) and its RSS once the last connection closed and the captures stopped growing. The captures go to the
//! temporary directory and are removed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A transfer frame header (doff 2, channel 0) with `more`, for `payload` bytes after it.
fn transfer(more: bool, delivery_id: u32, payload: usize) -> Vec<u8> {
    // @transfer [handle=0, delivery-id, delivery-tag=b"t", message-format=0, settled=true, more]
    let mut perf = vec![0x00, 0x53, 0x14, 0xc0, 0, 6, 0x43, 0x70];
    perf.extend_from_slice(&delivery_id.to_be_bytes());
    perf.extend_from_slice(&[0xa0, 1, b't', 0x43, 0x41, if more { 0x41 } else { 0x42 }]);
    perf[4] = (perf.len() - 5) as u8;
    let size = (8 + perf.len() + payload) as u32;
    let mut out = size.to_be_bytes().to_vec();
    out.extend_from_slice(&[2, 0, 0, 0]);
    out.extend_from_slice(&perf);
    out
}

fn send(addr: &str, frames: bool, id: u32) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(b"AMQP\x00\x01\x00\x00").unwrap();
    let block = vec![b'x'; 1 << 20];
    if frames {
        let total = 250usize << 20;
        c.write_all(&transfer(false, id, total)).unwrap();
        for _ in 0..250 {
            c.write_all(&block).unwrap();
        }
    } else {
        let part = 256usize << 10;
        for i in 0..240 {
            c.write_all(&transfer(i < 239, id, part)).unwrap();
            c.write_all(&block[..part]).unwrap();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: memory_rss <amqpeek> frames|messages");
    let frames = args.get(2).map(String::as_str) != Some("messages");
    let n = if frames { 6 } else { 8 };
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = upstream.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in upstream.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = vec![0u8; 1 << 16];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    let dir = std::env::temp_dir();
    let (jsonl, pcap) = (
        dir.join("amqpeek-rss.jsonl"),
        dir.join("amqpeek-rss.pcapng"),
    );
    let mut proxy = Command::new(bin)
        .args([
            "proxy",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &up,
        ])
        .arg("--jsonl")
        .arg(&jsonl)
        .arg("--pcap")
        .arg(&pcap)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(proxy.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "proxy exited");
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split(',').next().unwrap().trim().to_string();
        }
    };
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
    });
    std::thread::sleep(Duration::from_millis(500));
    let pid = proxy.id();
    let before = status_kib(pid, "VmRSS:");
    let t = std::time::Instant::now();
    let clients: Vec<_> = (0..n)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || send(&addr, frames, i))
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let sent = t.elapsed();
    // Closed: wait until the captures stop growing (the inspection has caught up).
    let size = || std::fs::metadata(&jsonl).map_or(0, |m| m.len());
    let mut last = size();
    loop {
        std::thread::sleep(Duration::from_secs(2));
        let now = size();
        if now == last {
            break;
        }
        last = now;
    }
    let peak = status_kib(pid, "VmHWM:");
    let after = status_kib(pid, "VmRSS:");
    let what = if frames {
        "6 connections x one 250 MiB frame"
    } else {
        "8 connections x one 60 MiB message (240 transfers)"
    };
    println!(
        "{what}, --jsonl --pcap; sent in {:.1} s",
        sent.as_secs_f64()
    );
    println!(
        "proxy RSS before {} MiB, peak {} MiB (growth {} MiB), after close {} MiB",
        before >> 10,
        peak >> 10,
        (peak - before) >> 10,
        after >> 10
    );
    // What stays after close, by kind: heap (anonymous, and of it in huge pages) and the
    // binary's own pages (file-backed: its code paged in).
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let huge_kib: u64 = rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    println!(
        "after close: anonymous {} MiB ({} MiB of it in transparent huge pages), file-backed {} MiB",
        status_kib(pid, "RssAnon:") >> 10,
        huge_kib >> 10,
        status_kib(pid, "RssFile:") >> 10
    );
    let _ = proxy.kill();
    let _ = proxy.wait();
    let _ = std::fs::remove_file(jsonl);
    let _ = std::fs::remove_file(pcap);
}
