//! The driver over a capture: every source event through a [`Router`] into the run's
//! [`SinkSet`], on one thread or on `jobs` worker threads.
//!
//! With several threads, a reader thread deals the capture's connections to worker threads
//! (see `deal.rs`), each a [`Router`] of its own that also renders the bytes of the sinks that
//! render (JSONL, the trace: a line depends on its event alone), so the expensive part runs in
//! parallel. The calling thread is the sequencer: it follows the reader's routes round by
//! round, takes each source event's piece of output from the worker that made it, and writes
//! it to the sinks in capture order. Any sink works (pcapng, the verdict, the TUI take the
//! events themselves), and every sink gets exactly what the single-threaded run gives it,
//! whatever the number of threads.
//!
//! A sink whose result is per connection (the verdict) needs no sequencing: [`run_sharded`]
//! has each thread keep its own [`Shard`] of it, joined at the end (see `offline/shards.rs`).
//! Both share the reader and the workers.
//!
//! Memory stays bounded: every channel is bounded, and the sequencer only ever waits for the
//! output of events already sent to a worker.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::deal::{Dealer, QUEUE_BATCHES, Route, ToWorker};
use super::router::{CAPTURE_ENDED, Router};
use super::sinks::{Output, Part, SinkSet};
use super::{Finished, Stats};
use crate::capture::SourceEvent;
use crate::event::{ConnId, Event, Timestamp};
use crate::pipeline::{InspectOptions, Sink};

mod shards;
pub use shards::{LOCAL_AT, Shard, run_sharded, run_sharded_at};

/// How many events are handed to the sinks between flushes on one thread.
const BATCH: usize = 4096;
/// Bytes of a sink's rendered batch kept for the next batch (a batch of small frames renders
/// to well under this; one of large frames may not, and gives its buffer back).
const KEEP_BATCH_BYTES: usize = 4 << 20;

/// When the sinks are written and flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// In batches (a file: as fast as it goes).
    Batched,
    /// After every source event (a capture read as it is being made, from a pipe): the output
    /// keeps up with the capture however slowly it comes. One thread.
    AsItComes,
}

/// Replay every source event into `sinks` with `jobs` threads (1, or [`Pace::AsItComes`]: on
/// the calling thread, no threads started). What the sinks get does not depend on `jobs`.
///
/// A sink that fails is reported once on stderr, dropped, and the replay goes on with the
/// others (see [`SinkSet`]); it stops early only when every sink is gone. A panic in a thread
/// (a bug) is resumed on the calling thread.
pub fn run<'a, S>(
    source: S,
    opts: InspectOptions,
    sinks: Vec<Box<dyn Sink + Send + 'a>>,
    jobs: NonZeroUsize,
    pace: Pace,
) -> Finished
where
    S: IntoIterator<Item = SourceEvent>,
    S::IntoIter: Send,
{
    let mut sinks = SinkSet::new(sinks, "the replay");
    let stats = if jobs.get() == 1 || pace == Pace::AsItComes {
        let batch = match pace {
            Pace::Batched => BATCH,
            Pace::AsItComes => 1,
        };
        sequential(source, opts, &mut sinks, batch)
    } else {
        parallel(source.into_iter(), opts, jobs, &mut sinks)
    };
    Finished {
        stats,
        sink_failures: sinks.into_failures(),
    }
}

/// One thread: feed, and write and flush every `batch` events (with the state of every
/// connection as of then).
fn sequential(
    source: impl IntoIterator<Item = SourceEvent>,
    opts: InspectOptions,
    sinks: &mut SinkSet<'_>,
    batch: usize,
) -> Stats {
    let mut router = Router::new(opts);
    let mut part = sinks.part();
    let mut events = Vec::with_capacity(batch.min(BATCH));
    let mut out = Output::default();
    for ev in source {
        router.feed(ev, &mut events);
        if events.len() >= batch {
            router.publish_states(&mut events);
            part.take(&mut events, &mut out);
            sinks.write_all(&out);
            sinks.flush();
            out.recycle(KEEP_BATCH_BYTES);
            if sinks.all_gone() {
                return router.stats().clone();
            }
        }
    }
    router.finish_at(router.last_ts(), CAPTURE_ENDED, &mut events);
    part.take(&mut events, &mut out);
    sinks.write_all(&out);
    sinks.flush();
    router.stats().clone()
}

/// What a worker sends the sequencer.
enum FromWorker {
    /// The output of one batch, a piece per source event.
    Batch(Output),
    /// The output of the connections still open at the end, a piece per connection (these).
    End(Output, Vec<ConnId>),
}

/// What the reader sends the sequencer.
pub(super) enum ToSequencer {
    /// A round was dealt.
    Round(Route),
    /// The capture ended; every worker was told.
    End,
}

/// What a worker does with the events it makes: pieces of the sinks' output sent on per batch
/// to the sequencer (a run into sinks), or a shard kept to the end (see `shards.rs`).
pub(super) trait Collect {
    /// Take the events one source event made (emptied).
    fn take(&mut self, events: &mut Vec<Event>);
    /// A batch is done; false when no one waits for its output any more.
    fn batch_done(&mut self) -> bool;
    /// Take what the end of the capture closed (emptied), in increasing connection order.
    fn end(&mut self, events: &mut Vec<Event>);
}

/// A worker's part of a run into sinks: the output of each batch, for the sequencer.
struct Pieces {
    part: Part,
    out: Output,
    tx: SyncSender<FromWorker>,
    /// Outputs the sequencer has written, emptied, for the next batches (their buffers grown
    /// already).
    spare: Receiver<Output>,
}

impl Collect for Pieces {
    fn take(&mut self, events: &mut Vec<Event>) {
        self.part.take(events, &mut self.out);
    }

    fn batch_done(&mut self) -> bool {
        let next = self.spare.try_recv().unwrap_or_default();
        let out = std::mem::replace(&mut self.out, next);
        self.tx.send(FromWorker::Batch(out)).is_ok()
    }

    fn end(&mut self, events: &mut Vec<Event>) {
        // Connections in increasing order, each one piece.
        let (mut out, mut conns) = (Output::default(), Vec::new());
        let mut all = std::mem::take(events);
        for group in all.chunk_by(|a: &Event, b: &Event| a.conn == b.conn) {
            conns.push(group[0].conn);
            self.part.take(&mut group.to_vec(), &mut out);
        }
        all.clear();
        let _ = self.tx.send(FromWorker::End(out, conns));
    }
}

/// A worker: routes the batches it is given into `collect`, until told the capture ended.
pub(super) fn work(
    rx: Receiver<ToWorker>,
    load: &AtomicUsize,
    opts: InspectOptions,
    collect: &mut impl Collect,
) -> Stats {
    let mut router = Router::new(opts);
    let mut events = Vec::with_capacity(256);
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWorker::Batch(batch) => {
                for (_, ev) in batch.events {
                    router.feed(ev, &mut events);
                    collect.take(&mut events);
                }
                load.fetch_sub(batch.weight, Ordering::Relaxed);
                if !collect.batch_done() {
                    break;
                }
            }
            ToWorker::End(ts) => {
                router.finish_at(ts, CAPTURE_ENDED, &mut events);
                collect.end(&mut events);
                break;
            }
        }
    }
    router.stats().clone()
}

/// The connections the reading thread inspects itself instead of dealing them (a sharded
/// run's reader takes a share; a run into sinks keeps none, see [`NoShare`]).
pub(super) trait Own {
    /// Whether this thread inspects `conn` (its next event) itself.
    fn keeps(&mut self, conn: ConnId, dealer: &Dealer<'_>) -> bool;
    /// Inspect one source event of a connection it keeps.
    fn feed(&mut self, ev: SourceEvent);
}

/// The reader keeps no connection: every one is dealt.
pub(super) struct NoShare;

impl Own for NoShare {
    fn keeps(&mut self, _: ConnId, _: &Dealer<'_>) -> bool {
        false
    }
    fn feed(&mut self, _: SourceEvent) {}
}

/// The reader: deals the source to the workers (but the connections `own` keeps) and tells
/// `routes` each round's route, then [`ToSequencer::End`] once every worker was told the
/// capture ended; `routes` returning false stops it. Returns the read errors and the time of
/// the last source event (the time still-open connections are closed at).
pub(super) fn read(
    source: impl Iterator<Item = SourceEvent>,
    mut dealer: Dealer<'_>,
    own: &mut impl Own,
    mut routes: impl FnMut(ToSequencer) -> bool,
) -> (Vec<(u64, String)>, Timestamp) {
    let mut read_errors = Vec::new();
    let mut last_ts = Timestamp(0);
    for (seq, ev) in source.enumerate() {
        if let Some(ts) = ev.ts() {
            last_ts = ts;
        }
        match ev.conn() {
            Some(conn) if own.keeps(conn, &dealer) => own.feed(ev),
            Some(conn) => match dealer.deal(seq as u64, conn, ev) {
                Ok(None) => {}
                Ok(Some(route)) => {
                    if !routes(ToSequencer::Round(route)) {
                        return (read_errors, last_ts);
                    }
                }
                Err(_) => return (read_errors, last_ts),
            },
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
    if let Ok(route) = dealer.send_round() {
        if !route.is_empty() && !routes(ToSequencer::Round(route)) {
            return (read_errors, last_ts);
        }
        dealer.end(last_ts);
        routes(ToSequencer::End);
    }
    (read_errors, last_ts)
}

/// Where the sequencer is in one worker's output.
struct Cursor {
    out: Output,
    /// Pieces written so far.
    next: usize,
}

/// A thread stopped without finishing (it panicked; joining it tells).
struct Gone;

/// The sequencer: writes the workers' output in capture order, round by round. Stops early
/// (returning) when every sink is gone.
fn sequence(
    routes: Receiver<ToSequencer>,
    from: Vec<(Receiver<FromWorker>, SyncSender<Output>)>,
    sinks: &mut SinkSet<'_>,
) -> Result<(), Gone> {
    let mut cursors: Vec<Option<Cursor>> = from.iter().map(|_| None).collect();
    let (from, spares): (Vec<_>, Vec<_>) = from.into_iter().unzip();
    while let Ok(msg) = routes.recv() {
        let route = match msg {
            ToSequencer::Round(route) => route,
            ToSequencer::End => return end(&from, sinks),
        };
        for (w, mut count) in route {
            while count > 0 {
                let cursor = match &mut cursors[w] {
                    Some(c) if c.next < c.out.pieces() => c,
                    slot => {
                        // The worker's last output, all written, goes back to it emptied.
                        if let Some(Cursor { mut out, .. }) = slot.take() {
                            out.recycle(KEEP_BATCH_BYTES);
                            let _ = spares[w].try_send(out);
                        }
                        match from[w].recv() {
                            Ok(FromWorker::Batch(out)) => slot.insert(Cursor { out, next: 0 }),
                            Ok(FromWorker::End(..)) | Err(_) => return Err(Gone),
                        }
                    }
                };
                let n = count.min(cursor.out.pieces() - cursor.next);
                if n == 0 {
                    // A batch with fewer pieces than its events: cannot happen.
                    return Err(Gone);
                }
                sinks.write(&cursor.out, cursor.next..cursor.next + n);
                cursor.next += n;
                count -= n;
            }
        }
        sinks.flush();
        if sinks.all_gone() {
            return Ok(());
        }
    }
    Err(Gone)
}

/// What the end of the capture closed, in connection order across workers.
fn end(from: &[Receiver<FromWorker>], sinks: &mut SinkSet<'_>) -> Result<(), Gone> {
    let mut pieces: Vec<(ConnId, usize, usize)> = Vec::new();
    let mut ends = Vec::with_capacity(from.len());
    for (w, rx) in from.iter().enumerate() {
        match rx.recv() {
            Ok(FromWorker::End(out, conns)) => {
                pieces.extend(conns.iter().enumerate().map(|(i, &c)| (c, w, i)));
                ends.push(out);
            }
            Ok(FromWorker::Batch(_)) | Err(_) => return Err(Gone),
        }
    }
    pieces.sort_unstable();
    for (_, w, i) in pieces {
        sinks.write(&ends[w], i..i + 1);
    }
    sinks.flush();
    Ok(())
}

/// A thread's result; its panic goes on in the calling thread.
pub(super) fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// `jobs` workers, a reader thread, and the calling thread as the sequencer.
fn parallel(
    source: impl Iterator<Item = SourceEvent> + Send,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    sinks: &mut SinkSet<'_>,
) -> Stats {
    let loads: Vec<AtomicUsize> = (0..jobs.get()).map(|_| AtomicUsize::new(0)).collect();
    let (stopped, read_errors, shards) = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(loads.len());
        let mut froms = Vec::with_capacity(loads.len());
        let mut workers = Vec::with_capacity(loads.len());
        for load in &loads {
            let (tx, rx) = sync_channel(QUEUE_BATCHES);
            let (back_tx, back_rx) = sync_channel(QUEUE_BATCHES);
            // One emptied output waiting per worker is all it takes per batch; more would
            // only hold memory.
            let (spare_tx, spare_rx) = sync_channel(1);
            let mut pieces = Pieces {
                part: sinks.part(),
                out: Output::default(),
                tx: back_tx,
                spare: spare_rx,
            };
            let opts = opts.clone();
            workers.push(scope.spawn(move || work(rx, load, opts, &mut pieces)));
            txs.push(tx);
            froms.push((back_rx, spare_tx));
        }
        let dealer = Dealer::new(txs, &loads);
        let (route_tx, route_rx) = sync_channel(QUEUE_BATCHES * loads.len());
        let reader =
            scope.spawn(move || read(source, dealer, &mut NoShare, |m| route_tx.send(m).is_ok()).0);
        // Returning drops the receivers: a thread still sending then stops.
        let stopped = sequence(route_rx, froms, sinks).err();
        let read_errors = join(reader);
        let shards: Vec<Stats> = workers.into_iter().map(join).collect();
        (stopped, read_errors, shards)
    });
    if stopped.is_some() {
        // Every thread was joined without a panic, yet one stopped early: a bug.
        tracing::error!("a replay thread stopped early");
    }
    let mut stats = Stats {
        read_errors,
        ..Stats::default()
    };
    for s in shards {
        stats.add(&s);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sinks::{JsonOptions, JsonlSink, TraceSink};
    use std::io::{self, Write};

    /// Connections 1..=n interleaved: a protocol header each, then a frame size below 8 on
    /// the even ones (a violation), a read error, and every third closed.
    fn events(n: u64) -> Vec<SourceEvent> {
        crate::driver::test_events::interleaved(n, |conn| {
            if conn % 2 == 0 {
                b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03"
            } else {
                b"AMQP\x00\x00\x09\x01"
            }
        })
    }

    /// Keeps the events it is given, as their debug text.
    struct Keep<'a>(&'a mut Vec<String>);

    impl Sink for Keep<'_> {
        fn event(&mut self, ev: &Event) -> io::Result<()> {
            self.0.push(format!("{ev:?}"));
            Ok(())
        }
    }

    fn replay(jobs: usize) -> (Stats, Vec<u8>, Vec<u8>, Vec<String>) {
        let (mut jsonl, mut trace, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![
            Box::new(JsonlSink::new(&mut jsonl, JsonOptions::default())),
            Box::new(TraceSink::new(&mut trace)),
            Box::new(Keep(&mut kept)),
        ];
        let done = run(
            events(3000),
            InspectOptions::default(),
            sinks,
            NonZeroUsize::new(jobs).unwrap(),
            Pace::Batched,
        );
        assert!(done.sink_failures.is_empty());
        (done.stats, jsonl, trace, kept)
    }

    #[test]
    fn any_number_of_jobs_gives_every_sink_the_single_threaded_output() {
        let one = replay(1);
        assert_eq!(one.0.connections, 3000);
        assert_eq!(one.0.read_errors.len(), 1);
        assert!(one.1.len() > 100_000 && one.2.len() > 100_000);
        // The event sink gets what the single thread gives it, but for state snapshots (a
        // single thread publishes them per batch).
        let no_state = |k: &[String]| -> Vec<String> {
            k.iter()
                .filter(|e| !e.contains("State("))
                .cloned()
                .collect()
        };
        for jobs in [2, 3] {
            let many = replay(jobs);
            assert_eq!(many.0, one.0, "jobs {jobs}");
            assert!(many.1 == one.1, "jobs {jobs}: JSONL differs");
            assert!(many.2 == one.2, "jobs {jobs}: trace differs");
            assert!(
                no_state(&many.3) == no_state(&one.3),
                "jobs {jobs}: events differ"
            );
        }
    }

    /// A writer that fails after `left` bytes.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::other("--jsonl x: disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_sink_is_dropped_and_named_while_the_others_get_everything() {
        for jobs in [1, 2] {
            let mut trace = Vec::new();
            let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![
                Box::new(TraceSink::new(Failing { left: 10_000 })),
                Box::new(TraceSink::new(&mut trace)),
            ];
            let done = run(
                events(3000),
                InspectOptions::default(),
                sinks,
                NonZeroUsize::new(jobs).unwrap(),
                Pace::Batched,
            );
            assert_eq!(done.sink_failures.len(), 1, "jobs {jobs}");
            assert!(done.sink_failures[0].starts_with("--jsonl x: disk full"));
            assert_eq!(done.stats.connections, 3000);
            assert_eq!(
                trace,
                replay(1).2,
                "jobs {jobs}: the other sink is complete"
            );
        }
    }

    #[test]
    fn no_sinks_still_counts() {
        let done = run(
            events(50),
            InspectOptions::default(),
            Vec::new(),
            NonZeroUsize::new(2).unwrap(),
            Pace::Batched,
        );
        assert_eq!(done.stats.connections, 50);
    }
}
