//! Shared helpers for the tests that run the built `amqpeek` binary: the shipped captures'
//! paths, a child's output as a stream of lines, and the proxy's listening address.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
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
