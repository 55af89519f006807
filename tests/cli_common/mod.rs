//! Shared helpers for the tests that run the built `amqpeek` binary: the shipped captures'
//! paths, starting it with piped stdio, a child's output as a stream of lines, and a proxy
//! with its listening address.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc::{self, Receiver};

/// The path of a capture shipped in `captures/`.
pub fn capture_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name)
        .display()
        .to_string()
}

/// The lines of `out` (a child's stdout), as they come, read on a thread of their own.
pub fn lines_of(out: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The address `amqpeek proxy` says it listens on, read from its stderr.
pub fn proxy_addr(stderr: &mut impl BufRead) -> String {
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "proxy exited early"
        );
        if let Some(rest) = line.split("listening on ").nth(1) {
            return rest.split(',').next().unwrap().trim().to_string();
        }
    }
}

/// `amqpeek ARGS` with stdin, stdout and stderr piped.
pub fn spawn_piped(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `amqpeek proxy --listen 127.0.0.1:0 ARGS` (no colour, default diagnostics) with its stdout
/// going to `stdout`, once it listens: the child, its stderr (keep it open: the proxy reports
/// its shutdown there) and the address it listens on.
pub fn start_proxy(args: &[&str], stdout: Stdio) -> (Child, BufReader<ChildStderr>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["proxy", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = proxy_addr(&mut stderr);
    (child, stderr, addr)
}

/// An upstream that echoes every connection's bytes back.
pub fn echo_upstream() -> std::net::SocketAddr {
    use std::io::Write;
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = upstream.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in upstream.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// Run the built `amqpeek` with `args` (no colour, stdin closed) and wait for its output.
pub fn amqpeek(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A finding as `check --format json` gives it: rule, conn, dir, offset of the first
/// occurrence, count.
pub type Found = (String, u64, String, u64, u64);

/// The findings of a `check --format json` document.
pub fn findings_in(doc: &serde_json::Value) -> Vec<Found> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["conn"].as_u64().unwrap(),
                f["dir"].as_str().unwrap().to_string(),
                f["first"]["offset"].as_u64().unwrap(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect()
}
