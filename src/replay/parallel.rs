//! `amqpeek check` on every core.
//!
//! A capture's connections are independent (one [`Inspector`](crate::pipeline::Inspector)
//! each), so the calling thread reads the capture (block parsing and TCP reassembly: the fast
//! part) and deals each connection's source events to one of N worker threads, each a
//! [`Replayer`] of its own. A worker keeps only what the verdict needs: connection and frame
//! counts, and the violations, each keyed by where the single-threaded run would have produced
//! it (source event number, connection, position). Sorting by those keys puts the violations
//! back in the single-threaded order, so the verdict and the statistics are the same whatever
//! the number of threads and however the connections were dealt.
//!
//! Memory stays bounded: events travel in batches over bounded channels, and the reader waits
//! when a worker is behind. A new connection goes to the worker with the least work queued.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::{ReplayStats, Replayer};
use crate::capture::SourceEvent;
use crate::event::{ConnId, Event, EventKind, Timestamp, Violation};
use crate::pipeline::InspectOptions;
use crate::sinks::check::CheckReport;

/// Events per batch at most.
const BATCH_EVENTS: usize = 512;
/// Weight (payload bytes plus [`EVENT_WEIGHT`] per event) at which a batch is sent.
const BATCH_WEIGHT: usize = 256 * 1024;
/// What an event weighs besides its payload bytes.
const EVENT_WEIGHT: usize = 64;
/// Batches queued per worker before the reader waits: with [`BATCH_WEIGHT`], about 4 MB of
/// capture per worker, enough to keep every worker busy on a capture whose connections come
/// one after another.
const QUEUE_BATCHES: usize = 16;
/// The source event number given to what the end of the capture produces (after every event).
const AT_END: u64 = u64::MAX;

/// What `check` asks of the inspectors: no bytes held, credentials masked.
const CHECK_OPTIONS: InspectOptions = InspectOptions {
    show_secrets: false,
    emit_data: false,
};

/// Where the single-threaded run produces an event: (source event number, connection, position
/// among the events that source event produced).
type Key = (u64, ConnId, u64);

/// The threads `check` uses unless told otherwise: the available parallelism, at least 1.
pub fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// What a check of a capture found.
#[derive(Debug)]
pub struct CheckRun {
    /// The verdict.
    pub report: CheckReport,
    /// Connections, frames, bytes, violations and read errors.
    pub stats: ReplayStats,
    /// Worker threads used (1: everything on the calling thread).
    pub jobs: NonZeroUsize,
}

/// Check every connection of `source` with `jobs` worker threads (1: on the calling thread,
/// no threads started). The result does not depend on `jobs`.
///
/// A panic in a worker (a bug) is resumed on the calling thread, as it would have happened
/// there with one thread.
pub fn check(source: impl IntoIterator<Item = SourceEvent>, jobs: NonZeroUsize) -> CheckRun {
    if jobs.get() == 1 {
        sequential(source)
    } else {
        parallel(source, jobs)
    }
}

/// One thread: every source event through one [`Replayer`] into the report.
fn sequential(source: impl IntoIterator<Item = SourceEvent>) -> CheckRun {
    let mut report = CheckReport::new();
    let mut replayer = Replayer::new(CHECK_OPTIONS);
    let mut out = Vec::with_capacity(4096);
    for ev in source {
        replayer.feed(ev, &mut out);
        for e in out.drain(..) {
            report.tally(&e);
        }
    }
    replayer.finish(&mut out);
    for e in out.drain(..) {
        report.tally(&e);
    }
    CheckRun {
        report,
        stats: replayer.stats().clone(),
        jobs: NonZeroUsize::MIN,
    }
}

/// Source events for one worker, with their numbers in the capture.
#[derive(Default)]
struct Batch {
    events: Vec<(u64, SourceEvent)>,
    weight: usize,
}

/// What the reader sends a worker.
enum ToWorker {
    /// Events of the worker's connections, in capture order.
    Batch(Batch),
    /// The capture ended at this time: close what is still open, and stop.
    End(Timestamp),
}

/// What one worker found.
#[derive(Default)]
struct Shard {
    stats: ReplayStats,
    connections: u64,
    frames: u64,
    /// Violations with their keys (increasing) and times (RFC 3339).
    violations: Vec<(Key, String, Violation)>,
}

impl Shard {
    /// Keep what the report needs of the events source event `seq` produced; empties `out`.
    fn take(&mut self, seq: u64, out: &mut Vec<Event>) {
        for (i, e) in out.drain(..).enumerate() {
            match e.kind {
                EventKind::Connect { .. } => self.connections += 1,
                EventKind::Frame(_) => self.frames += 1,
                EventKind::Violation(v) => {
                    self.violations
                        .push(((seq, e.conn, i as u64), e.ts.rfc3339(), v))
                }
                EventKind::Close(_)
                | EventKind::Header { .. }
                | EventKind::Data { .. }
                | EventKind::Gap { .. } => {}
            }
        }
    }
}

/// A worker: replays the batches it is given until told the capture ended.
fn work(rx: Receiver<ToWorker>, load: &AtomicUsize) -> Shard {
    let mut replayer = Replayer::new(CHECK_OPTIONS);
    let mut shard = Shard::default();
    let mut out = Vec::with_capacity(256);
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWorker::Batch(batch) => {
                for (seq, ev) in batch.events {
                    replayer.feed(ev, &mut out);
                    shard.take(seq, &mut out);
                }
                load.fetch_sub(batch.weight, Ordering::Relaxed);
            }
            ToWorker::End(ts) => {
                replayer.finish_at(ts, &mut out);
                shard.take(AT_END, &mut out);
                break;
            }
        }
    }
    shard.stats = replayer.stats().clone();
    shard
}

/// Deals source events to the workers, a connection's events always to the same one.
struct Dealer<'a> {
    txs: Vec<SyncSender<ToWorker>>,
    /// Weight sent to each worker and not yet replayed.
    loads: &'a [AtomicUsize],
    pending: Vec<Batch>,
    routes: HashMap<ConnId, usize>,
    /// The last connection routed and its worker (consecutive events are often one
    /// connection's).
    last: Option<(ConnId, usize)>,
}

impl<'a> Dealer<'a> {
    fn new(txs: Vec<SyncSender<ToWorker>>, loads: &'a [AtomicUsize]) -> Self {
        Dealer {
            pending: txs.iter().map(|_| Batch::default()).collect(),
            txs,
            loads,
            routes: HashMap::new(),
            last: None,
        }
    }

    /// The worker of `conn`; a new connection goes to the one with the least work waiting.
    fn route(&mut self, conn: ConnId) -> usize {
        if let Some((c, w)) = self.last
            && c == conn
        {
            return w;
        }
        let w = match self.routes.get(&conn) {
            Some(&w) => w,
            None => {
                let w = (0..self.txs.len())
                    .min_by_key(|&w| self.loads[w].load(Ordering::Relaxed) + self.pending[w].weight)
                    .unwrap_or(0);
                self.routes.insert(conn, w);
                w
            }
        };
        self.last = Some((conn, w));
        w
    }

    /// Queue source event `seq` of connection `conn` for its worker; false when the worker is
    /// gone (it panicked).
    fn deal(&mut self, seq: u64, conn: ConnId, ev: SourceEvent) -> bool {
        let w = self.route(conn);
        let weight = EVENT_WEIGHT
            + match &ev {
                SourceEvent::Chunk(c) => c.bytes.len(),
                _ => 0,
            };
        if matches!(ev, SourceEvent::Close { .. }) {
            // Its inspector is gone: should the connection number come back, it starts afresh,
            // on whichever worker.
            self.routes.remove(&conn);
            self.last = None;
        }
        let batch = &mut self.pending[w];
        if batch.events.capacity() == 0 {
            batch.events.reserve(BATCH_EVENTS);
        }
        batch.events.push((seq, ev));
        batch.weight += weight;
        if batch.events.len() >= BATCH_EVENTS || batch.weight >= BATCH_WEIGHT {
            return self.send(w);
        }
        true
    }

    /// Send worker `w` its pending batch; false when the worker is gone.
    fn send(&mut self, w: usize) -> bool {
        let batch = std::mem::take(&mut self.pending[w]);
        if batch.events.is_empty() {
            return true;
        }
        self.loads[w].fetch_add(batch.weight, Ordering::Relaxed);
        self.txs[w].send(ToWorker::Batch(batch)).is_ok()
    }

    /// Send every pending batch, then the end of the capture.
    fn end(mut self, last_ts: Timestamp) {
        for w in 0..self.txs.len() {
            // A worker that is gone is noticed when joined.
            if self.send(w) {
                let _ = self.txs[w].send(ToWorker::End(last_ts));
            }
        }
    }
}

/// `jobs` workers fed by the calling thread.
fn parallel(source: impl IntoIterator<Item = SourceEvent>, jobs: NonZeroUsize) -> CheckRun {
    let loads: Vec<AtomicUsize> = (0..jobs.get()).map(|_| AtomicUsize::new(0)).collect();
    let (shards, read_errors) = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(loads.len());
        let mut workers = Vec::with_capacity(loads.len());
        for load in &loads {
            let (tx, rx) = sync_channel(QUEUE_BATCHES);
            txs.push(tx);
            workers.push(scope.spawn(move || work(rx, load)));
        }
        let mut dealer = Dealer::new(txs, &loads);
        let mut read_errors = Vec::new();
        // The time the single-threaded replayer would close still-open connections at.
        let mut last_ts = Timestamp(0);
        for (seq, ev) in source.into_iter().enumerate() {
            if let Some(ts) = ev.ts() {
                last_ts = ts;
            }
            match ev.conn() {
                Some(conn) => {
                    if !dealer.deal(seq as u64, conn, ev) {
                        break;
                    }
                }
                None => {
                    if let SourceEvent::Error {
                        file_offset,
                        message,
                    } = ev
                    {
                        read_errors.push((file_offset, message));
                    }
                }
            }
        }
        dealer.end(last_ts);
        let shards: Vec<Shard> = workers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (shards, read_errors)
    });
    merge(shards, read_errors, jobs)
}

/// The report and statistics of the workers' shards, violations in single-threaded order.
fn merge(shards: Vec<Shard>, read_errors: Vec<(u64, String)>, jobs: NonZeroUsize) -> CheckRun {
    let mut stats = ReplayStats::default();
    let mut report = CheckReport::new();
    let mut violations = Vec::new();
    for s in shards {
        stats.connections += s.stats.connections;
        stats.frames += s.stats.frames;
        stats.bytes += s.stats.bytes;
        stats.violations += s.stats.violations;
        report.add_totals(s.connections, s.frames);
        violations.extend(s.violations);
    }
    stats.read_errors = read_errors;
    // Keys are unique: one source event's events all went to one worker, and what the end
    // produced is keyed by connection, each open on one worker only.
    violations.sort_unstable_by_key(|(k, ..)| *k);
    for ((_, conn, _), ts, v) in &violations {
        report.record(*conn, ts.clone(), v);
    }
    CheckRun {
        report,
        stats,
        jobs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chunk, Dir};
    use crate::sinks::check::Format;
    use bytes::Bytes;

    /// Connections 1..=n interleaved, each with a protocol header then a frame size below 8
    /// (framing lost: one violation each), some closed, and a read error in the middle.
    fn events(n: u64) -> Vec<SourceEvent> {
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
                bytes: Bytes::from_static(b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03"),
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

    #[test]
    fn any_number_of_jobs_gives_the_single_threaded_report() {
        let one = check(events(40), NonZeroUsize::MIN);
        assert_eq!(one.stats.connections, 40);
        assert_eq!(one.report.totals().0, 40);
        assert_eq!(one.report.groups()[0].occurrences.len(), 40);
        let text = |r: &CheckRun| {
            r.report
                .render(Format::Json, "x", crate::event::Severity::Info)
        };
        for jobs in [2, 3, 8] {
            let many = check(events(40), NonZeroUsize::new(jobs).unwrap());
            assert_eq!(many.jobs.get(), jobs);
            assert_eq!(many.stats, one.stats, "jobs {jobs}");
            assert_eq!(text(&many), text(&one), "jobs {jobs}");
        }
    }

    #[test]
    fn an_empty_source_gives_an_empty_report() {
        let run = check(Vec::new(), NonZeroUsize::new(2).unwrap());
        assert_eq!(run.stats, ReplayStats::default());
        assert!(run.report.groups().is_empty());
    }
}
