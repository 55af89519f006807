//! Writes a capture of one AMQP 1.0 connection with many links attached and never detached,
//! and many unsettled deliveries: the workload that shows whether `amqpeek check` looks links
//! and deliveries up by key (linear) or scans them per frame (quadratic).
//!
//!     cargo run --release --example many_links -- OUT.pcapng LINKS [DELIVERIES [LAG]]
//!
//! LAG: the broker settles each delivery once LAG later ones are sent (default: never).
//! Then: `/usr/bin/time -v target/release/amqpeek check OUT.pcapng --jobs 1`.

#[path = "../benches/support/conversations.rs"]
mod conversations;

use std::path::PathBuf;

fn number(arg: Option<String>, what: &str) -> Option<u32> {
    let arg = arg?;
    match arg.parse() {
        Ok(n) => Some(n),
        Err(e) => {
            eprintln!("{what}: {e}");
            std::process::exit(2);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: many_links OUT.pcapng LINKS [DELIVERIES [LAG]]");
        std::process::exit(2);
    };
    let shape = conversations::ManyLinks {
        links: number(args.next(), "LINKS").unwrap_or(10_000),
        deliveries: number(args.next(), "DELIVERIES").unwrap_or(0),
        settle_lag: number(args.next(), "LAG"),
    };
    let done = conversations::write_links(&path, &shape);
    eprintln!(
        "{}: {} links, {} transfers, {} frames, {} bytes",
        path.display(),
        shape.links,
        done.transfers,
        done.frames,
        done.bytes
    );
}
