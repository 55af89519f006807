//! The one driver: source events in, routed to one [`Inspector`](crate::pipeline::Inspector)
//! per connection ([`Router`]), the events they make out to the sinks ([`SinkSet`], with the one
//! sink-error policy). `proxy`, `replay` and `check` all run it; live and offline differ only
//! in the source and in how the output of several threads is ordered.
//!
//! ```text
//! Source (proxy relays | pcap/pcapng | JSONL) -> SourceEvent -> Router -> Event -> SinkSet
//! ```
//!
//! - [`live`]: the proxy's relays, inspected on worker threads by connection, each worker's
//!   events rendered and written by a stage on a thread of its own, the stages taking turns
//!   writing to the sinks (per connection: in order).
//! - [`offline`]: a capture, on one thread or dealt to worker threads by connection, the sinks
//!   written in capture order (byte for byte the single-threaded output); or, for a sink whose
//!   result is per connection (`check`'s verdict), each thread keeping its own
//!   [`offline::Shard`] of it, joined at the end. `replay`, `stats`, `check`, the exports and
//!   the pager's re-runs all run it.
//!
//! Sinks that render (JSONL, the trace: a line depends on its event alone) have their bytes
//! made on the workers, or live on their rendering stages ([`crate::pipeline::Render`]); the others (pcapng, the verdict, the TUI)
//! get the events, in order.

pub(crate) mod deal;
pub mod live;
pub mod offline;
pub mod queue;
pub mod reclaim;
mod render_stage;
mod router;
mod sinks;

pub use crate::capture::SourceEvent;
pub use router::{CAPTURE_ENDED, Router};
pub use sinks::{Output, Part, SinkSet};

/// What a run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections seen.
    pub connections: u64,
    /// Frames decoded.
    pub frames: u64,
    /// Bytes inspected (both directions).
    pub bytes: u64,
    /// Violations reported.
    pub violations: u64,
    /// Where and why reading stopped or skipped (file offset, message).
    pub read_errors: Vec<(u64, String)>,
}

impl Stats {
    /// True when the capture yielded nothing usable at all (the `check` exit status 2 case).
    pub fn nothing_readable(&self) -> bool {
        self.connections == 0 && self.bytes == 0 && !self.read_errors.is_empty()
    }

    /// Add another thread's counts (not its read errors: the reader keeps those).
    pub fn add(&mut self, other: &Stats) {
        self.connections += other.connections;
        self.frames += other.frames;
        self.bytes += other.bytes;
        self.violations += other.violations;
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Finished {
    /// What it saw.
    pub stats: Stats,
    /// Sinks that failed (each error names its flag and path), already reported on stderr: the
    /// run went on without them, and ends with exit status 2.
    pub sink_failures: Vec<String>,
}

/// Source events the driver's tests share.
#[cfg(test)]
pub(crate) mod test_events {
    use bytes::Bytes;

    use crate::capture::SourceEvent;
    use crate::event::{Chunk, Dir, Timestamp};

    /// Connections 1..=n interleaved: all connect, then each sends `bytes(conn)` client to
    /// server (a read error after connection n/2), then every third closes.
    pub(crate) fn interleaved(n: u64, bytes: impl Fn(u64) -> &'static [u8]) -> Vec<SourceEvent> {
        let client = "127.0.0.1:40000".parse().unwrap();
        let server = "127.0.0.1:5672".parse().unwrap();
        let mut evs = Vec::new();
        for conn in 1..=n {
            evs.push(SourceEvent::Connect {
                conn,
                ts: Timestamp(conn as i64),
                client,
                server,
            });
        }
        for conn in 1..=n {
            evs.push(SourceEvent::Chunk(Chunk {
                conn,
                dir: Dir::C2S,
                ts: Timestamp(100 + conn as i64),
                bytes: Bytes::from_static(bytes(conn)),
            }));
            if conn == n / 2 {
                evs.push(SourceEvent::Error {
                    file_offset: 99,
                    message: "bad record".into(),
                });
            }
        }
        for conn in (1..=n).filter(|c| c % 3 == 0) {
            evs.push(SourceEvent::Close {
                conn,
                ts: Timestamp(1000 + conn as i64),
                reason: crate::event::CloseReason::FinBothWays { first: None },
            });
        }
        evs
    }
}
