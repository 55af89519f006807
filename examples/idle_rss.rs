//! Resident memory of the proxy with many idle connections open through it.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example idle_rss -- target/release/amqpeek 9900
//! ```
//!
//! Starts an upstream that accepts and holds connections (a child process), the proxy binary
//! (`--quiet --jsonl`, so an Inspector per connection is live), opens N client connections that
//! each send an AMQP 0-9-1 protocol header and then stay idle, and reports the proxy's VmRSS
//! before and after.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn holder() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    println!("{}", l.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    let mut held = Vec::new();
    for s in l.incoming() {
        match s {
            Ok(s) => held.push(s),
            Err(e) => eprintln!("holder: {e}"),
        }
    }
}

fn main() {
    // This process, the holder and the proxy each hold one descriptor per connection (the
    // proxy two): raise the soft limit to the hard one for all three (the proxy also does it
    // itself).
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1024);
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("holder") {
        return holder();
    }
    let bin = args
        .get(1)
        .expect("usage: idle_rss <path to amqpeek> [connections]");
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(9900);
    assert!(
        2 * n as u64 + 64 <= limit,
        "{n} connections need {} open files in the proxy; the hard limit is {limit}",
        2 * n + 64
    );

    let mut holder = Command::new(std::env::current_exe().unwrap())
        .arg("holder")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let upstream = line.trim().to_string();

    let capture = std::env::temp_dir().join("amqpeek-idle-rss.jsonl");
    let mut proxy = Command::new(bin)
        .args(["proxy", "--quiet", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(&upstream)
        .arg("--jsonl")
        .arg(&capture)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(proxy.stderr.take().unwrap());
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
    let before = rss_kib(proxy.id());
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = TcpStream::connect(&addr)
            .unwrap_or_else(|e| panic!("connection {i}: {e} (raise ulimit -n)"));
        c.write_all(b"AMQP\x00\x00\x09\x01").unwrap();
        clients.push(c);
    }
    std::thread::sleep(Duration::from_secs(3));
    let after = rss_kib(proxy.id());
    println!("connections: {n}");
    println!("proxy RSS before: {before} KiB, with connections open: {after} KiB");
    println!(
        "per connection: {:.1} KiB",
        (after.saturating_sub(before)) as f64 / n as f64
    );
    drop(clients);
    let _ = proxy.kill();
    let _ = holder.kill();
    let _ = proxy.wait();
    let _ = holder.wait();
    let _ = std::fs::remove_file(capture);
}
