//! Offline replay: drive the same pipeline the proxy drives, from a capture file.
//!
//! `capture::open` yields [`SourceEvent`]s; the driver ([`crate::driver::offline`]) gives each
//! connection an [`Inspector`](crate::pipeline::Inspector) exactly as a live connection gets,
//! and the resulting events go to the sinks. A bug reproduced from a capture is the same bug.
//!
//! [`parallel`] runs `amqpeek check` on the same driver, the verdict a sharded sink. [`export`] and [`pager`] are the
//! TUI's effects that run the pipeline, executed here for it (the binary gives them to the
//! UI's event loop): an export of rows, masked; the re-runs that bring back a window of a
//! capture file's rows.

pub mod export;
pub mod pager;
pub mod parallel;

use std::num::NonZeroUsize;

use crate::capture::SourceEvent;
use crate::driver::offline::{self, Pace};
use crate::pipeline::{InspectOptions, Sink};

pub use crate::driver::Stats as ReplayStats;

/// Replay every source event into `sinks` on the calling thread; flushes per batch and at the
/// end. A sink that fails is dropped (the others go on) and its error returned at the end.
pub fn run(
    source: impl IntoIterator<Item = SourceEvent, IntoIter: Send>,
    opts: InspectOptions,
    sinks: &mut [&mut (dyn Sink + Send)],
) -> std::io::Result<ReplayStats> {
    let boxed = sinks
        .iter_mut()
        .map(|s| -> Box<dyn Sink + Send + '_> { Box::new(&mut **s) })
        .collect();
    let done = offline::run(source, opts, boxed, NonZeroUsize::MIN, Pace::Batched);
    match done.sink_failures.into_iter().next() {
        Some(e) => Err(std::io::Error::other(e)),
        None => Ok(done.stats),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chunk, Dir, Timestamp};
    use crate::verdict::CheckReport;
    use bytes::Bytes;

    #[test]
    fn replays_a_connection_through_the_inspector_into_sinks() {
        let client = "127.0.0.1:40000".parse().unwrap();
        let server = "127.0.0.1:5672".parse().unwrap();
        let mut c2s = b"AMQP\x00\x01\x00\x00".to_vec();
        c2s.extend_from_slice(&[0, 0, 0, 3]); // a frame size below 8: framing lost
        let events = vec![
            SourceEvent::Connect {
                conn: 1,
                ts: Timestamp(1),
                client,
                server,
            },
            SourceEvent::Chunk(Chunk {
                conn: 1,
                dir: Dir::C2S,
                ts: Timestamp(2),
                bytes: Bytes::from(c2s),
            }),
            SourceEvent::Error {
                file_offset: 99,
                message: "truncated".into(),
            },
        ];
        let mut report = CheckReport::new();
        let stats = run(events, InspectOptions::default(), &mut [&mut report]).unwrap();
        assert_eq!(stats.connections, 1);
        assert_eq!(stats.bytes, 12);
        assert_eq!(stats.read_errors, vec![(99, "truncated".to_string())]);
        assert!(!stats.nothing_readable());
        let findings = report.findings();
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule, "codec.undecodable-stream");
        assert_eq!(findings[0].first().offset, 8);
        assert_eq!(report.totals().0, 1);
    }
}
