//! A run whose sink keeps shards: each thread keeps its own [`Shard`] of what the sink needs
//! of its connections' events, and the shards are joined at the end. No output is sequenced,
//! so nothing waits for capture order: a sink whose result is per connection (the verdict of
//! `check`) gets the single-threaded result whatever the number of threads.
//!
//! With `jobs` threads, the reader deals connections to `jobs - 1` worker threads and is the
//! `jobs`-th itself: a new connection stays with it when every worker already has plenty
//! waiting, so the reader inspects instead of waiting for room, and `jobs` threads keep `jobs`
//! cores busy. With one thread there is no dealing at all: every source event goes through
//! one [`Router`] straight into the shard.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::sync_channel;

use super::{Collect, Own, join, read, work};
use crate::capture::SourceEvent;
use crate::driver::Stats;
use crate::driver::deal::{Dealer, QUEUE_BATCHES};
use crate::driver::router::{CAPTURE_ENDED, Router};
use crate::event::{ConnId, Event, Timestamp};
use crate::pipeline::InspectOptions;

/// Work waiting at every worker thread (payload bytes, roughly) above which the reader keeps a
/// new connection for itself: enough that the workers stay busy while the reader inspects it.
pub const LOCAL_AT: usize = 1024 * 1024;

/// What one thread keeps of its connections' events for a sharded sink. Each connection is
/// inspected by one thread, in capture order, so a shard holds exactly what the
/// single-threaded run gives for those connections; [`Shard::absorb`] must therefore give the
/// same whatever the order the shards are joined in and however the connections were dealt.
pub trait Shard: Default + Send {
    /// Take the events one source event made (emptied).
    fn take(&mut self, events: &mut Vec<Event>);
    /// Join another thread's shard into this one.
    fn absorb(&mut self, other: Self);
}

/// A worker's shard, kept to the end.
struct Keep<S>(S);

impl<S: Shard> Collect for Keep<S> {
    fn take(&mut self, events: &mut Vec<Event>) {
        self.0.take(events);
    }
    fn batch_done(&mut self) -> bool {
        true
    }
    fn end(&mut self, events: &mut Vec<Event>) {
        self.0.take(events);
    }
}

/// The connections the reading thread inspects itself.
struct Local<S> {
    router: Router,
    shard: S,
    conns: HashSet<ConnId>,
    out: Vec<Event>,
    local_at: usize,
}

impl<S: Shard> Own for Local<S> {
    fn keeps(&mut self, conn: ConnId, dealer: &Dealer<'_>) -> bool {
        self.conns.contains(&conn)
            || (!dealer.knows(conn)
                && dealer.least_load() >= self.local_at
                && self.conns.insert(conn))
    }

    fn feed(&mut self, ev: SourceEvent) {
        if let SourceEvent::Close { conn, .. } = &ev {
            self.conns.remove(conn);
        }
        self.router.feed(ev, &mut self.out);
        self.shard.take(&mut self.out);
    }
}

/// Inspect every source event with `jobs` threads (1: on the calling thread, no threads
/// started) into shards of `S`, joined. What it returns does not depend on `jobs`.
///
/// A panic in a worker (a bug) is resumed on the calling thread, as it would have happened
/// there with one thread.
pub fn run_sharded<S: Shard>(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    jobs: NonZeroUsize,
) -> (S, Stats) {
    run_sharded_at(source, opts, jobs, LOCAL_AT)
}

/// [`run_sharded`], the reader keeping a new connection when every worker has at least
/// `local_at` waiting.
pub fn run_sharded_at<S: Shard>(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    local_at: usize,
) -> (S, Stats) {
    if jobs.get() == 1 {
        sequential(source, opts)
    } else {
        parallel(source, opts, jobs, local_at)
    }
}

/// One thread: every source event through one [`Router`] into the shard.
fn sequential<S: Shard>(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
) -> (S, Stats) {
    let mut shard = S::default();
    let mut router = Router::new(opts);
    let mut out = Vec::with_capacity(4096);
    for ev in source {
        router.feed(ev, &mut out);
        shard.take(&mut out);
    }
    router.finish_at(router.last_ts(), CAPTURE_ENDED, &mut out);
    shard.take(&mut out);
    (shard, router.stats().clone())
}

/// `jobs - 1` worker threads fed by the calling thread, which inspects its own share too.
fn parallel<S: Shard>(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    local_at: usize,
) -> (S, Stats) {
    let loads: Vec<AtomicUsize> = (1..jobs.get()).map(|_| AtomicUsize::new(0)).collect();
    let (shards, read_errors) = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(loads.len());
        let mut workers = Vec::with_capacity(loads.len());
        for load in &loads {
            let (tx, rx) = sync_channel(QUEUE_BATCHES);
            txs.push(tx);
            let opts = opts.clone();
            workers.push(scope.spawn(move || {
                let mut keep = Keep(S::default());
                let stats = work(rx, load, opts, &mut keep);
                (keep.0, stats)
            }));
        }
        let mut local = Local {
            router: Router::new(opts.clone()),
            shard: S::default(),
            conns: HashSet::new(),
            out: Vec::with_capacity(256),
            local_at,
        };
        let dealer = Dealer::new(txs, &loads);
        // The workers' channels close when it returns; a worker that is gone is noticed when
        // joined.
        let (read_errors, last_ts) = read(source.into_iter(), dealer, &mut local, |_| true);
        let mut shards: Vec<(S, Stats)> = workers.into_iter().map(join).collect();
        shards.push(finish(local, last_ts));
        (shards, read_errors)
    });
    merge(shards, read_errors)
}

/// The reader's own share, its connections still open closed at `ts`.
fn finish<S: Shard>(mut local: Local<S>, ts: Timestamp) -> (S, Stats) {
    local.router.finish_at(ts, CAPTURE_ENDED, &mut local.out);
    local.shard.take(&mut local.out);
    (local.shard, local.router.stats().clone())
}

/// The shards joined, and the threads' statistics with the reader's read errors.
fn merge<S: Shard>(shards: Vec<(S, Stats)>, read_errors: Vec<(u64, String)>) -> (S, Stats) {
    let mut stats = Stats::default();
    let mut joined = S::default();
    for (shard, s) in shards {
        stats.add(&s);
        joined.absorb(shard);
    }
    stats.read_errors = read_errors;
    (joined, stats)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Every event each connection made, as debug text.
    #[derive(Default)]
    struct PerConn(BTreeMap<ConnId, Vec<String>>);

    impl Shard for PerConn {
        fn take(&mut self, events: &mut Vec<Event>) {
            for e in events.drain(..) {
                self.0.entry(e.conn).or_default().push(format!("{e:?}"));
            }
        }
        fn absorb(&mut self, other: Self) {
            for (conn, evs) in other.0 {
                self.0.entry(conn).or_default().extend(evs);
            }
        }
    }

    fn events() -> Vec<SourceEvent> {
        crate::driver::test_events::interleaved(300, |conn| {
            if conn % 2 == 0 {
                b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03"
            } else {
                b"AMQP\x00\x00\x09\x01"
            }
        })
    }

    #[test]
    fn every_connection_gets_its_single_threaded_events_however_it_was_dealt() {
        let (PerConn(one), one_stats) =
            run_sharded::<PerConn>(events(), InspectOptions::default(), NonZeroUsize::MIN);
        assert_eq!(one.len(), 300);
        assert_eq!(one_stats.read_errors.len(), 1);
        // Every connection ends closed: by its own close or by the end of the capture.
        assert!(
            one.values()
                .all(|evs| evs.last().is_some_and(|e| e.contains("Close")))
        );
        // 0: the reader keeps every connection; MAX: it keeps none.
        for local_at in [0, 1, 300, usize::MAX] {
            for jobs in [2, 3, 8] {
                let jobs = NonZeroUsize::new(jobs).unwrap();
                let (PerConn(many), stats) =
                    run_sharded_at::<PerConn>(events(), InspectOptions::default(), jobs, local_at);
                assert_eq!(stats, one_stats, "jobs {jobs}, local_at {local_at}");
                assert!(
                    many == one,
                    "jobs {jobs}, local_at {local_at}: events differ"
                );
            }
        }
    }
}
