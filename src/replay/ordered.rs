//! `amqpeek replay` into outputs that need capture order (JSONL, the text trace), on every core.
//!
//! As for `check` ([`super::parallel`]), a reader thread deals the capture's connections to
//! worker threads, each a [`Replayer`] of its own (see `replay/deal.rs`). A worker also turns its
//! events into the outputs' bytes (a JSONL line or a trace line depends on its event alone), so
//! the expensive part runs in parallel too. The calling thread is the sequencer: it follows the
//! reader's routes round by round, takes each event's bytes from the worker that made them, and
//! writes them in capture order. Every output is byte for byte what the single-threaded replay
//! writes, whatever the number of threads.
//!
//! Memory stays bounded: every channel is bounded, and the sequencer only ever waits for the
//! bytes of events already sent to a worker.

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::deal::{Dealer, QUEUE_BATCHES, Route, ToWorker};
use super::{ReplayStats, Replayer};
use crate::capture::SourceEvent;
use crate::event::{ConnId, Event, Timestamp};
use crate::pipeline::{InspectOptions, Sink};
use crate::sinks::{JsonOptions, JsonlSink, TraceSink};

/// What an output holds.
#[derive(Clone, Debug)]
pub enum Render {
    /// amqpeek JSONL (as [`JsonlSink`] writes it).
    Jsonl(JsonOptions),
    /// The text trace (as [`TraceSink`] writes it).
    Trace,
}

/// One output of a replay: what it holds, and where its bytes go.
pub struct Output<'a> {
    /// What it holds.
    pub render: Render,
    /// Where it goes (a buffered writer: it gets many small writes, and is flushed per round).
    pub out: &'a mut dyn Write,
}

/// Replay every source event into `outputs` with `jobs` worker threads (1: on the calling
/// thread, no threads started, exactly [`super::run`]). The outputs and the statistics do not
/// depend on `jobs`. Stops at the first write error.
///
/// A panic in a thread (a bug) is resumed on the calling thread.
pub fn replay<S>(
    source: S,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    outputs: &mut [Output<'_>],
) -> io::Result<ReplayStats>
where
    S: IntoIterator<Item = SourceEvent>,
    S::IntoIter: Send,
{
    if jobs.get() == 1 {
        let mut sinks: Vec<Box<dyn Sink + '_>> = outputs
            .iter_mut()
            .map(|o| -> Box<dyn Sink + '_> {
                match &o.render {
                    Render::Jsonl(j) => Box::new(JsonlSink::new(&mut *o.out, *j)),
                    Render::Trace => Box::new(TraceSink::new(&mut *o.out)),
                }
            })
            .collect();
        let mut refs: Vec<&mut dyn Sink> = sinks.iter_mut().map(|s| &mut **s as _).collect();
        return super::run(source, opts, &mut refs);
    }
    parallel(source.into_iter(), opts, jobs, outputs)
}

/// A worker's renderer of one output, writing to memory.
// One or two per worker: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Renderer {
    Jsonl(JsonlSink<Vec<u8>>),
    Trace(TraceSink<Vec<u8>>),
}

impl Renderer {
    fn new(render: &Render) -> Self {
        match render {
            Render::Jsonl(o) => Renderer::Jsonl(JsonlSink::new(Vec::new(), *o)),
            Render::Trace => Renderer::Trace(TraceSink::new(Vec::new())),
        }
    }

    fn event(&mut self, ev: &Event) -> io::Result<()> {
        match self {
            Renderer::Jsonl(s) => s.event(ev),
            Renderer::Trace(s) => s.event(ev),
        }
    }

    fn buf(&mut self) -> &mut Vec<u8> {
        match self {
            Renderer::Jsonl(s) => s.get_mut(),
            Renderer::Trace(s) => s.get_mut(),
        }
    }
}

/// Bytes a worker made: one buffer per output, and for each of its `pieces` (the events of a
/// batch, or the connections closed at the end) where its bytes end in each buffer
/// (`ends[piece * outputs + output]`).
struct Rendered {
    bufs: Vec<Vec<u8>>,
    ends: Vec<usize>,
    pieces: usize,
}

/// What a worker sends the sequencer.
enum FromWorker {
    /// The bytes of one batch's events.
    Batch(Rendered),
    /// The bytes of the connections still open at the end, one piece per connection (these).
    End(Rendered, Vec<ConnId>),
    /// An output could not be rendered.
    Failed(io::Error),
}

/// What the reader sends the sequencer.
enum ToSequencer {
    /// A round was dealt.
    Round(Route),
    /// The capture ended; every worker was told.
    End,
}

/// Why the sequencer stopped early.
enum Stop {
    /// Writing (or rendering) failed.
    Io(io::Error),
    /// The reader or a worker stopped without finishing (it panicked).
    Gone,
}

/// Feed `ev`'s events to every renderer.
fn render_all(renderers: &mut [Renderer], events: &[Event]) -> io::Result<()> {
    for r in renderers.iter_mut() {
        for e in events {
            r.event(e)?;
        }
    }
    Ok(())
}

fn mark_ends(renderers: &mut [Renderer], ends: &mut Vec<usize>) {
    for r in renderers.iter_mut() {
        ends.push(r.buf().len());
    }
}

fn take_bufs(renderers: &mut [Renderer]) -> Vec<Vec<u8>> {
    renderers
        .iter_mut()
        .map(|r| std::mem::take(r.buf()))
        .collect()
}

/// A worker: replays and renders the batches it is given until told the capture ended.
fn work(
    rx: Receiver<ToWorker>,
    tx: SyncSender<FromWorker>,
    load: &AtomicUsize,
    opts: InspectOptions,
    renders: &[Render],
) -> ReplayStats {
    let mut replayer = Replayer::new(opts);
    let mut renderers: Vec<Renderer> = renders.iter().map(Renderer::new).collect();
    let mut out = Vec::with_capacity(256);
    while let Ok(msg) = rx.recv() {
        let reply = match msg {
            ToWorker::Batch(batch) => {
                let pieces = batch.events.len();
                let mut ends = Vec::with_capacity(pieces * renderers.len());
                let mut result = Ok(());
                for (_, ev) in batch.events {
                    replayer.feed(ev, &mut out);
                    result = result.and_then(|_| render_all(&mut renderers, &out));
                    out.clear();
                    mark_ends(&mut renderers, &mut ends);
                }
                load.fetch_sub(batch.weight, Ordering::Relaxed);
                match result {
                    Ok(()) => FromWorker::Batch(Rendered {
                        bufs: take_bufs(&mut renderers),
                        ends,
                        pieces,
                    }),
                    Err(e) => FromWorker::Failed(e),
                }
            }
            ToWorker::End(ts) => {
                replayer.finish_at(ts, &mut out);
                // Connections in increasing order, each one piece.
                let (mut conns, mut ends) = (Vec::new(), Vec::new());
                let mut result = Ok(());
                for group in out.chunk_by(|a, b| a.conn == b.conn) {
                    conns.push(group[0].conn);
                    result = result.and_then(|_| render_all(&mut renderers, group));
                    mark_ends(&mut renderers, &mut ends);
                }
                out.clear();
                let reply = match result {
                    Ok(()) => FromWorker::End(
                        Rendered {
                            bufs: take_bufs(&mut renderers),
                            ends,
                            pieces: conns.len(),
                        },
                        conns,
                    ),
                    Err(e) => FromWorker::Failed(e),
                };
                let _ = tx.send(reply);
                break;
            }
        };
        let failed = matches!(reply, FromWorker::Failed(_));
        if tx.send(reply).is_err() || failed {
            break;
        }
    }
    replayer.stats().clone()
}

/// The reader: deals the source to the workers and tells the sequencer each round's route.
/// Returns the read errors.
fn read(
    source: impl Iterator<Item = SourceEvent>,
    mut dealer: Dealer<'_>,
    tx: SyncSender<ToSequencer>,
) -> Vec<(u64, String)> {
    let mut read_errors = Vec::new();
    let mut last_ts = Timestamp(0);
    for (seq, ev) in source.enumerate() {
        if let Some(ts) = ev.ts() {
            last_ts = ts;
        }
        match ev.conn() {
            Some(conn) => match dealer.deal(seq as u64, conn, ev) {
                Ok(None) => {}
                Ok(Some(route)) => {
                    if tx.send(ToSequencer::Round(route)).is_err() {
                        return read_errors;
                    }
                }
                Err(_) => return read_errors,
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
        if !route.is_empty() && tx.send(ToSequencer::Round(route)).is_err() {
            return read_errors;
        }
        dealer.end(last_ts);
        let _ = tx.send(ToSequencer::End);
    }
    read_errors
}

/// Where the sequencer is in one worker's bytes.
struct Cursor {
    rendered: Rendered,
    /// Pieces written so far.
    next: usize,
}

impl Cursor {
    /// Write pieces `next..next + n` to the outputs.
    fn write(&mut self, n: usize, outputs: &mut [Output<'_>]) -> io::Result<()> {
        let k = outputs.len();
        for (i, o) in outputs.iter_mut().enumerate() {
            let start = match self.next {
                0 => 0,
                p => self.rendered.ends[(p - 1) * k + i],
            };
            let end = self.rendered.ends[(self.next + n - 1) * k + i];
            o.out.write_all(&self.rendered.bufs[i][start..end])?;
        }
        self.next += n;
        Ok(())
    }
}

/// The sequencer: writes the workers' bytes in capture order, round by round.
fn sequence(
    routes: Receiver<ToSequencer>,
    from: Vec<Receiver<FromWorker>>,
    outputs: &mut [Output<'_>],
) -> Result<(), Stop> {
    let k = outputs.len();
    let mut cursors: Vec<Option<Cursor>> = from.iter().map(|_| None).collect();
    while let Ok(msg) = routes.recv() {
        match msg {
            ToSequencer::Round(route) => {
                for (w, mut count) in route {
                    while count > 0 {
                        let cursor = match &mut cursors[w] {
                            Some(c) if c.next < c.rendered.pieces => c,
                            slot => match from[w].recv() {
                                Ok(FromWorker::Batch(rendered)) => {
                                    slot.insert(Cursor { rendered, next: 0 })
                                }
                                Ok(FromWorker::Failed(e)) => return Err(Stop::Io(e)),
                                Ok(FromWorker::End(..)) | Err(_) => return Err(Stop::Gone),
                            },
                        };
                        let n = count.min(cursor.rendered.pieces - cursor.next);
                        if n == 0 {
                            // A batch with fewer pieces than its events: cannot happen.
                            return Err(Stop::Gone);
                        }
                        if k > 0 {
                            cursor.write(n, outputs).map_err(Stop::Io)?;
                        } else {
                            cursor.next += n;
                        }
                        count -= n;
                    }
                }
                for o in outputs.iter_mut() {
                    o.out.flush().map_err(Stop::Io)?;
                }
            }
            ToSequencer::End => {
                // What the end of the capture closed, in connection order across workers.
                let mut pieces: Vec<(ConnId, usize, usize)> = Vec::new();
                let mut ends = Vec::with_capacity(from.len());
                for (w, rx) in from.iter().enumerate() {
                    match rx.recv() {
                        Ok(FromWorker::End(rendered, conns)) => {
                            pieces.extend(conns.iter().enumerate().map(|(i, &c)| (c, w, i)));
                            ends.push(Cursor { rendered, next: 0 });
                        }
                        Ok(FromWorker::Failed(e)) => return Err(Stop::Io(e)),
                        Ok(FromWorker::Batch(_)) | Err(_) => return Err(Stop::Gone),
                    }
                }
                pieces.sort_unstable();
                for (_, w, i) in pieces {
                    let cursor = &mut ends[w];
                    cursor.next = i;
                    if k > 0 {
                        cursor.write(1, outputs).map_err(Stop::Io)?;
                    }
                }
                for o in outputs.iter_mut() {
                    o.out.flush().map_err(Stop::Io)?;
                }
                return Ok(());
            }
        }
    }
    Err(Stop::Gone)
}

/// A thread's result; its panic goes on in the calling thread.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// `jobs` workers, a reader thread, and the calling thread as the sequencer.
fn parallel(
    source: impl Iterator<Item = SourceEvent> + Send,
    opts: InspectOptions,
    jobs: NonZeroUsize,
    outputs: &mut [Output<'_>],
) -> io::Result<ReplayStats> {
    let renders: Vec<Render> = outputs.iter().map(|o| o.render.clone()).collect();
    let loads: Vec<AtomicUsize> = (0..jobs.get()).map(|_| AtomicUsize::new(0)).collect();
    let (stopped, read_errors, shards) = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(loads.len());
        let mut froms = Vec::with_capacity(loads.len());
        let mut workers = Vec::with_capacity(loads.len());
        for load in &loads {
            let (tx, rx) = sync_channel(QUEUE_BATCHES);
            let (back_tx, back_rx) = sync_channel(QUEUE_BATCHES);
            let (renders, opts) = (&renders, opts.clone());
            workers.push(scope.spawn(move || work(rx, back_tx, load, opts, renders)));
            txs.push(tx);
            froms.push(back_rx);
        }
        let dealer = Dealer::new(txs, &loads);
        let (route_tx, route_rx) = sync_channel(QUEUE_BATCHES * loads.len());
        let reader = scope.spawn(move || read(source, dealer, route_tx));
        // Returning drops the receivers: a thread still sending then stops.
        let stopped = sequence(route_rx, froms, outputs).err();
        let read_errors = join(reader);
        let shards: Vec<ReplayStats> = workers.into_iter().map(join).collect();
        (stopped, read_errors, shards)
    });
    match stopped {
        Some(Stop::Io(e)) => return Err(e),
        Some(Stop::Gone) => return Err(io::Error::other("a replay thread stopped early")),
        None => {}
    }
    let mut stats = ReplayStats {
        read_errors,
        ..ReplayStats::default()
    };
    for s in shards {
        stats.connections += s.connections;
        stats.frames += s.frames;
        stats.bytes += s.bytes;
        stats.violations += s.violations;
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections 1..=n interleaved: a protocol header each, then a frame size below 8 on
    /// the even ones (a violation), a read error, and every third closed.
    fn events(n: u64) -> Vec<SourceEvent> {
        crate::replay::test_events::interleaved(n, |conn| {
            if conn % 2 == 0 {
                b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03"
            } else {
                b"AMQP\x00\x00\x09\x01"
            }
        })
    }

    fn run(jobs: usize) -> (ReplayStats, Vec<u8>, Vec<u8>) {
        let (mut jsonl, mut trace) = (Vec::new(), Vec::new());
        let mut outputs = [
            Output {
                render: Render::Jsonl(JsonOptions::default()),
                out: &mut jsonl,
            },
            Output {
                render: Render::Trace,
                out: &mut trace,
            },
        ];
        let stats = replay(
            events(3000),
            InspectOptions::default(),
            NonZeroUsize::new(jobs).unwrap(),
            &mut outputs,
        )
        .unwrap();
        (stats, jsonl, trace)
    }

    #[test]
    fn any_number_of_jobs_writes_the_single_threaded_bytes() {
        let one = run(1);
        assert_eq!(one.0.connections, 3000);
        assert_eq!(one.0.read_errors.len(), 1);
        assert!(one.1.len() > 100_000 && one.2.len() > 100_000);
        for jobs in [2, 3] {
            let many = run(jobs);
            assert_eq!(many.0, one.0, "jobs {jobs}");
            assert!(many.1 == one.1, "jobs {jobs}: JSONL differs");
            assert!(many.2 == one.2, "jobs {jobs}: trace differs");
        }
    }

    /// A writer that fails after `left` bytes.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_stops_the_replay_and_is_returned() {
        let mut out = Failing { left: 10_000 };
        let mut outputs = [Output {
            render: Render::Trace,
            out: &mut out,
        }];
        let err = replay(
            events(3000),
            InspectOptions::default(),
            NonZeroUsize::new(2).unwrap(),
            &mut outputs,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }

    #[test]
    fn no_outputs_still_counts() {
        let stats = replay(
            events(50),
            InspectOptions::default(),
            NonZeroUsize::new(2).unwrap(),
            &mut [],
        )
        .unwrap();
        assert_eq!(stats.connections, 50);
    }
}
