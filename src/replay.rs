//! Offline replay: drive the same pipeline the proxy drives, from a capture file.
//!
//! `capture::open` yields [`SourceEvent`]s; each connection gets an [`Inspector`]
//! exactly as a live connection does, and the resulting [`Event`]s go to the sinks. A bug
//! reproduced from a capture is the same bug.
//!
//! [`parallel`] runs `amqpeek check` over several threads, one [`Replayer`] per thread;
//! [`ordered`] does the same for a replay into outputs that need capture order (JSONL, trace).

mod deal;
pub mod ordered;
pub mod parallel;

use std::collections::HashMap;

use crate::capture::SourceEvent;
use crate::event::{ConnId, Event, EventKind, Timestamp};
use crate::pipeline::{InspectOptions, Inspector, Sink};

/// How many events are handed to the sinks between flushes.
const BATCH: usize = 4096;

/// What a replay saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Connections seen.
    pub connections: u64,
    /// Frames decoded.
    pub frames: u64,
    /// Bytes replayed (both directions).
    pub bytes: u64,
    /// Violations reported.
    pub violations: u64,
    /// Where and why reading stopped or skipped (file offset, message).
    pub read_errors: Vec<(u64, String)>,
}

impl ReplayStats {
    /// True when the capture yielded nothing usable at all (the `check` exit status 2 case).
    pub fn nothing_readable(&self) -> bool {
        self.connections == 0 && self.bytes == 0 && !self.read_errors.is_empty()
    }
}

/// Drives inspectors from source events; usable incrementally (e.g. by the TUI feeder).
#[derive(Debug)]
pub struct Replayer {
    opts: InspectOptions,
    inspectors: HashMap<ConnId, Inspector>,
    /// Connections that connected and have had no bytes yet: only their number is kept (an
    /// inspector is made at their first bytes, or to close them), so a capture of a million
    /// connects costs a set of numbers, not a million inspectors.
    idle: std::collections::HashSet<ConnId>,
    stats: ReplayStats,
    last_ts: Timestamp,
}

impl Replayer {
    /// A replayer whose inspectors use `opts`.
    pub fn new(opts: InspectOptions) -> Self {
        Replayer {
            opts,
            inspectors: HashMap::new(),
            idle: Default::default(),
            stats: ReplayStats::default(),
            last_ts: Timestamp(0),
        }
    }

    /// What has been seen so far.
    pub fn stats(&self) -> &ReplayStats {
        &self.stats
    }

    /// The inspector of a live connection (for state display).
    pub fn inspector(&self, conn: ConnId) -> Option<&Inspector> {
        self.inspectors.get(&conn)
    }

    fn inspector_mut(&mut self, conn: ConnId) -> &mut Inspector {
        let opts = &self.opts;
        self.idle.remove(&conn);
        self.inspectors
            .entry(conn)
            .or_insert_with(|| Inspector::new(conn, opts.clone()))
    }

    /// The inspector of `conn` to close it with, if it connected (one made now for a connection
    /// that had no bytes).
    fn take_inspector(&mut self, conn: ConnId) -> Option<Inspector> {
        match self.inspectors.remove(&conn) {
            Some(insp) => Some(insp),
            None => self
                .idle
                .remove(&conn)
                .then(|| Inspector::new(conn, self.opts.clone())),
        }
    }

    /// Turn one source event into pipeline events appended to `out`.
    pub fn feed(&mut self, ev: SourceEvent, out: &mut Vec<Event>) {
        let start = out.len();
        if let Some(ts) = ev.ts() {
            self.last_ts = ts;
        }
        match ev {
            SourceEvent::Connect {
                conn,
                ts,
                client,
                server,
            } => {
                self.stats.connections += 1;
                if !self.inspectors.contains_key(&conn) {
                    self.idle.insert(conn);
                }
                out.push(Event {
                    conn,
                    ts,
                    kind: EventKind::Connect {
                        client,
                        upstream: server,
                    },
                });
            }
            SourceEvent::Chunk(c) => {
                self.stats.bytes += c.bytes.len() as u64;
                self.inspector_mut(c.conn).chunk(c.dir, c.ts, c.bytes, out);
            }
            SourceEvent::Gap {
                conn,
                ts,
                dir,
                offset,
                len,
                reason,
                resync,
            } => {
                self.inspector_mut(conn)
                    .gap(dir, ts, offset, len, reason, resync, out);
            }
            SourceEvent::Fin { conn, dir, ts } => {
                if let Some(insp) = self.inspectors.get_mut(&conn) {
                    insp.fin(dir, ts, out);
                }
            }
            SourceEvent::Close { conn, ts, reason } => {
                if let Some(mut insp) = self.take_inspector(conn) {
                    insp.close(ts, reason, out);
                }
            }
            SourceEvent::Error {
                file_offset,
                message,
            } => {
                self.stats.read_errors.push((file_offset, message));
            }
        }
        for e in &out[start..] {
            match e.kind {
                EventKind::Frame(_) => self.stats.frames += 1,
                EventKind::Violation(_) => self.stats.violations += 1,
                _ => {}
            }
        }
    }

    /// A `State` event for each connection whose state changed since its last one (see
    /// [`Inspector::publish_state`]), as of its latest bytes.
    pub fn publish_states(&mut self, out: &mut Vec<Event>) {
        for insp in self.inspectors.values_mut() {
            insp.publish_state(insp.latest_ts(), out);
        }
    }

    /// Close every connection still open (the capture ended), as of the last source event.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_at(self.last_ts, out);
    }

    /// Close every connection still open as of `ts`: the capture's last time, for a replayer
    /// that was fed only some of the capture's connections (one shard of a parallel run).
    pub fn finish_at(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        let mut conns: Vec<ConnId> = self.inspectors.keys().copied().collect();
        conns.extend(self.idle.iter().copied());
        conns.sort_unstable();
        for conn in conns {
            if let Some(mut insp) = self.take_inspector(conn) {
                let start = out.len();
                insp.close(ts, "capture ended with the connection open".into(), out);
                self.stats.violations += out[start..]
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::Violation(_)))
                    .count() as u64;
            }
        }
    }
}

/// Replay every source event into `sinks`; flushes per batch and at the end.
pub fn run(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    sinks: &mut [&mut dyn Sink],
) -> std::io::Result<ReplayStats> {
    run_batched(source, opts, sinks, BATCH)
}

/// As [`run`], for a capture read as it is being made (a pipe from `tcpdump -w -`): what each
/// source event produces goes to the sinks, flushed, before the next is read, so the output
/// keeps up with the capture however slowly it comes.
pub fn run_live(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    sinks: &mut [&mut dyn Sink],
) -> std::io::Result<ReplayStats> {
    run_batched(source, opts, sinks, 1)
}

fn run_batched(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    sinks: &mut [&mut dyn Sink],
    batch: usize,
) -> std::io::Result<ReplayStats> {
    let mut replayer = Replayer::new(opts);
    let mut out = Vec::with_capacity(batch.min(BATCH));
    for ev in source {
        replayer.feed(ev, &mut out);
        if out.len() >= batch {
            replayer.publish_states(&mut out);
            deliver(&mut out, sinks)?;
        }
    }
    replayer.finish(&mut out);
    deliver(&mut out, sinks)?;
    Ok(replayer.stats)
}

fn deliver(out: &mut Vec<Event>, sinks: &mut [&mut dyn Sink]) -> std::io::Result<()> {
    for sink in sinks.iter_mut() {
        for e in out.iter() {
            sink.event(e)?;
        }
        sink.flush()?;
    }
    out.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chunk, Dir};
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

/// Source events the parallel replay tests share.
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
                reason: "FIN both ways".into(),
            });
        }
        evs
    }
}
