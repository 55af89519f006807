//! Writes the capture the per-frame instruction gate (`tools/instructions.sh`) runs
//! `amqpeek check` on: spec-correct AMQP 0-9-1 and AMQP 1.0 conversations of small messages
//! (the generator of `benches/capture.rs`), and prints the number of AMQP frames in it.
//!
//!     cargo run --example gate_capture -- OUT.pcapng [TRANSFERS]   # default 20000

#[path = "../benches/support/conversations.rs"]
mod conversations;

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: gate_capture OUT.pcapng [TRANSFERS]");
        std::process::exit(2);
    };
    let transfers: u64 = match args.next().map(|a| a.parse()) {
        None => 20_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("TRANSFERS: {e}");
            std::process::exit(2);
        }
    };
    let done = conversations::write(
        &path,
        &conversations::SMALL,
        conversations::Stop::Transfers(transfers),
    );
    eprintln!(
        "{}: {} connections, {} transfers, {} frames, {} bytes",
        path.display(),
        done.conns,
        done.transfers,
        done.frames,
        done.bytes
    );
    println!("{}", done.frames);
}
