//! `amqpeek check` on every core.
//!
//! A capture's connections are independent (one [`Inspector`](crate::pipeline::Inspector)
//! each), so the calling thread reads the capture (block parsing and TCP reassembly: the fast
//! part) and deals each connection's source events to one of N - 1 worker threads, each a
//! [`Router`] of its own. The calling thread is the N-th worker: a new connection stays with
//! it when every worker thread already has plenty waiting, so the reader replays instead of
//! waiting for room, and N threads keep N cores busy. A worker keeps only what the verdict
//! needs: connection and frame counts, and its connections' findings. Findings are per
//! connection, and each connection is replayed by one thread in capture order, so joining the
//! workers' reports gives the single-threaded verdict whatever the number of threads and
//! however the connections were dealt.
//!
//! Memory stays bounded: events travel in batches over bounded channels, and the reader waits
//! when a worker is behind (see `driver/deal.rs`).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, sync_channel};

use std::collections::HashSet;

use super::ReplayStats;
use crate::capture::SourceEvent;
use crate::driver::deal::{Dealer, QUEUE_BATCHES, ToWorker};
use crate::driver::{CAPTURE_ENDED, Router};
use crate::event::{ConnId, Event, Timestamp};
use crate::pipeline::InspectOptions;
use crate::verdict::CheckReport;

/// Work waiting at every worker thread (payload bytes, roughly) above which the reader keeps a
/// new connection for itself: enough that the workers stay busy while the reader replays it.
const LOCAL_AT: usize = 1024 * 1024;

/// What `check` asks of the inspectors: no bytes held, no state snapshots, credentials
/// masked, the default inspection budget.
const CHECK_OPTIONS: InspectOptions = InspectOptions {
    emit_data: false,
    emit_state: false,
    ..InspectOptions::DEFAULT
};

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
    check_within(source, jobs, CHECK_OPTIONS.inspect_memory)
}

/// [`check`], each connection's inspection holding at most `inspect_memory` bytes
/// (`--inspect-memory`).
pub fn check_within(
    source: impl IntoIterator<Item = SourceEvent>,
    jobs: NonZeroUsize,
    inspect_memory: usize,
) -> CheckRun {
    check_with(
        source,
        jobs,
        InspectOptions {
            inspect_memory,
            ..CHECK_OPTIONS
        },
    )
}

/// What a check takes of `opts`: the rest, with no bytes held and no state snapshots (a check
/// reads neither; a snapshot per batch of a connection with N links open costs O(N), so
/// making them would turn a capture of many links quadratic).
fn for_check(opts: InspectOptions) -> InspectOptions {
    InspectOptions {
        emit_data: false,
        emit_state: false,
        ..opts
    }
}

/// [`check_within`] with `opts` (their `emit_data` and `emit_state` are ignored: a check needs
/// no bytes and no snapshots), for diagnosis thresholds other than the catalog's.
pub fn check_with(
    source: impl IntoIterator<Item = SourceEvent>,
    jobs: NonZeroUsize,
    opts: InspectOptions,
) -> CheckRun {
    let opts = for_check(opts);
    if jobs.get() == 1 {
        sequential(source, opts)
    } else {
        parallel(source, opts, jobs, LOCAL_AT)
    }
}

/// One thread: every source event through one [`Router`] into the report.
fn sequential(source: impl IntoIterator<Item = SourceEvent>, opts: InspectOptions) -> CheckRun {
    let mut report = CheckReport::new();
    let mut replayer = Router::new(opts);
    let mut out = Vec::with_capacity(4096);
    for ev in source {
        replayer.feed(ev, &mut out);
        for e in out.drain(..) {
            report.tally(&e);
        }
    }
    replayer.finish_at(replayer.last_ts(), CAPTURE_ENDED, &mut out);
    for e in out.drain(..) {
        report.tally(&e);
    }
    CheckRun {
        report,
        stats: replayer.stats().clone(),
        jobs: NonZeroUsize::MIN,
    }
}

/// What one worker found: its connections' findings (each connection is inspected by one
/// worker, in capture order, so its findings are the single-threaded run's).
#[derive(Default)]
struct Shard {
    stats: ReplayStats,
    report: CheckReport,
}

impl Shard {
    /// Keep what the report needs of the events a source event produced; empties `out`.
    fn take(&mut self, out: &mut Vec<Event>) {
        for e in out.drain(..) {
            self.report.tally(&e);
        }
    }
}

/// A worker: replays the batches it is given until told the capture ended.
fn work(rx: Receiver<ToWorker>, load: &AtomicUsize, opts: InspectOptions) -> Shard {
    let mut replayer = Router::new(opts);
    let mut shard = Shard::default();
    let mut out = Vec::with_capacity(256);
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWorker::Batch(batch) => {
                for (_, ev) in batch.events {
                    replayer.feed(ev, &mut out);
                    shard.take(&mut out);
                }
                load.fetch_sub(batch.weight, Ordering::Relaxed);
            }
            ToWorker::End(ts) => {
                replayer.finish_at(ts, CAPTURE_ENDED, &mut out);
                shard.take(&mut out);
                break;
            }
        }
    }
    shard.stats = replayer.stats().clone();
    shard
}

/// The connections the calling thread replays itself.
struct Local {
    replayer: Router,
    shard: Shard,
    conns: HashSet<ConnId>,
    out: Vec<Event>,
}

impl Local {
    fn feed(&mut self, ev: SourceEvent) {
        if let SourceEvent::Close { conn, .. } = &ev {
            self.conns.remove(conn);
        }
        self.replayer.feed(ev, &mut self.out);
        self.shard.take(&mut self.out);
    }

    fn finish(mut self, ts: Timestamp) -> Shard {
        self.replayer.finish_at(ts, CAPTURE_ENDED, &mut self.out);
        self.shard.take(&mut self.out);
        self.shard.stats = self.replayer.stats().clone();
        self.shard
    }
}

/// `jobs - 1` worker threads fed by the calling thread, which replays its own share too: the
/// new connections that arrive while every worker has at least `local_at` waiting.
fn parallel(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    local_at: usize,
) -> CheckRun {
    let loads: Vec<AtomicUsize> = (1..jobs.get()).map(|_| AtomicUsize::new(0)).collect();
    let (shards, read_errors) = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(loads.len());
        let mut workers = Vec::with_capacity(loads.len());
        for load in &loads {
            let (tx, rx) = sync_channel(QUEUE_BATCHES);
            txs.push(tx);
            let opts = opts.clone();
            workers.push(scope.spawn(move || work(rx, load, opts)));
        }
        let mut dealer = Dealer::new(txs, &loads);
        let mut local = Local {
            replayer: Router::new(opts.clone()),
            shard: Shard::default(),
            conns: HashSet::new(),
            out: Vec::with_capacity(256),
        };
        let mut read_errors = Vec::new();
        // The time the single-threaded replayer would close still-open connections at.
        let mut last_ts = Timestamp(0);
        for (seq, ev) in source.into_iter().enumerate() {
            if let Some(ts) = ev.ts() {
                last_ts = ts;
            }
            match ev.conn() {
                Some(conn) => {
                    let here = local.conns.contains(&conn)
                        || (!dealer.knows(conn)
                            && dealer.least_load() >= local_at
                            && local.conns.insert(conn));
                    if here {
                        local.feed(ev);
                    } else if dealer.deal(seq as u64, conn, ev).is_err() {
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
        // The workers' channels close here; a worker that is gone is noticed when joined.
        match dealer.send_round() {
            Ok(_) => dealer.end(last_ts),
            Err(_) => drop(dealer),
        }
        let mut shards: Vec<Shard> = workers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        shards.push(local.finish(last_ts));
        (shards, read_errors)
    });
    merge(shards, read_errors, jobs)
}

/// The report and statistics of the workers' shards.
fn merge(shards: Vec<Shard>, read_errors: Vec<(u64, String)>, jobs: NonZeroUsize) -> CheckRun {
    let mut stats = ReplayStats::default();
    let mut report = CheckReport::new();
    for s in shards {
        stats.add(&s.stats);
        report.absorb(s.report);
    }
    stats.read_errors = read_errors;
    CheckRun {
        report,
        stats,
        jobs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Format;

    /// Connections 1..=n interleaved, each with a protocol header then a frame size below 8
    /// (framing lost: one violation each), some closed, and a read error in the middle.
    fn events(n: u64) -> Vec<SourceEvent> {
        crate::driver::test_events::interleaved(n, |_| b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03")
    }

    #[test]
    fn any_number_of_jobs_gives_the_single_threaded_report() {
        let one = check(events(40), NonZeroUsize::MIN);
        assert_eq!(one.stats.connections, 40);
        assert_eq!(one.report.totals().0, 40);
        assert_eq!(one.report.findings().len(), 40);
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
    fn the_readers_own_share_changes_nothing() {
        let one = check(events(40), NonZeroUsize::MIN);
        let text = |r: &CheckRun| {
            r.report
                .render(Format::Json, "x", crate::event::Severity::Info)
        };
        // 0: the reader keeps every connection; MAX: it keeps none; in between, some.
        for local_at in [0, 1, 100, 300, usize::MAX] {
            for jobs in [2, 3] {
                let many = parallel(
                    events(40),
                    CHECK_OPTIONS,
                    NonZeroUsize::new(jobs).unwrap(),
                    local_at,
                );
                assert_eq!(many.stats, one.stats, "jobs {jobs}, local_at {local_at}");
                assert_eq!(text(&many), text(&one), "jobs {jobs}, local_at {local_at}");
            }
        }
    }

    #[test]
    fn an_empty_source_gives_an_empty_report() {
        let run = check(Vec::new(), NonZeroUsize::new(2).unwrap());
        assert_eq!(run.stats, ReplayStats::default());
        assert!(run.report.findings().is_empty());
    }
}

#[cfg(test)]
mod check_option_tests {
    use super::*;

    #[test]
    fn a_check_makes_no_snapshots_and_holds_no_bytes_whatever_it_is_given() {
        let given = InspectOptions {
            emit_data: true,
            emit_state: true,
            ..InspectOptions::DEFAULT
        };
        let memory = given.inspect_memory;
        let used = for_check(given);
        assert!(!used.emit_state && !used.emit_data);
        assert_eq!(used.inspect_memory, memory);
    }
}
