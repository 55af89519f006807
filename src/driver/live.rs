//! The driver live: the proxy's relays are the source. Inspection runs on `jobs` worker
//! threads, each connection on one of them (dealt in turn as connections open), fed through
//! its own queue budget (see `driver/queue.rs`). When a sink renders (the trace, JSONL), each
//! worker hands what its inspection makes to its own rendering stage, a second thread that
//! renders it for the sinks and writes it (see `driver/render_stage.rs`); otherwise the worker
//! writes its events itself. The stages take turns writing to the sinks.
//!
//! ```text
//! relay #1 ─┐ per worker FIFO, per connection budget
//! relay #3 ─┴─▶ worker 0: Router (inspectors) ─▶ stage 0: renderers ─┐ one at a time
//! relay #2 ───▶ worker 1: Router (inspectors) ─▶ stage 1: renderers ─┴─▶ SinkSet (one error policy)
//! ```
//!
//! A worker takes its queue in batches and hands over its events at the end of a source
//! event's, up to a thousand at a time, and at the end of each batch, when the stage flushes the
//! sinks. So per connection, the sinks get everything in the order it happened; across
//! connections, each message's output stays together, in the order the stages wrote them (one
//! worker's connections in the order their relays queued them). Decoding and rendering run on
//! every worker and stage at once; only the writing takes turns.
//!
//! Backpressure falls only on the connection that causes it: a relay waits only for its own
//! connection's budget, which comes back chunk by chunk as their events are written. Sinks
//! that are behind (a slow disk) hold up the stages waiting for their turn, and their workers; then each
//! connection waits only once its own budget is spent. When no sink needs
//! every frame (the TUI alone) and a worker falls behind (see `Backlog`), it skims chunks
//! ([`crate::pipeline::Inspector::skim`]) until it has caught up, so the relay never waits for
//! decoding.
//!
//! Time is an input too: a stall is frames that do not come. A worker whose queue has been
//! empty for [`TICK_QUIET`] ticks its connections' clocks ([`Router::tick`], at most once a
//! [`TICK_EVERY`]; it parks no longer than that while it has connections open), so a
//! diagnosis of a silent connection starts, and reaches the captures, while the silence
//! lasts. The relay never waits for it. A diagnosis starts at the time its condition held
//! its threshold, whichever tick noticed it: the proxy's captures, checked later, give the
//! same diagnoses.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::queue::Permit;
use super::render_stage::{RenderStage, stage};
use super::router::Router;
use super::sinks::{Part, SinkSet};
use crate::capture::SourceEvent;
use crate::event::{CloseReason, Timestamp};
use crate::pipeline::{InspectOptions, Sink};

/// A sink of the proxy (the workers take turns writing to it).
pub type BoxSink = Box<dyn Sink + Send>;

/// What a relay queues for inspection: a source event, and for a chunk its share of the
/// connection's queue budget, given back when the chunk has been inspected (`None` for the few
/// bytes read while setting TLS up).
#[derive(Debug)]
pub struct Queued {
    /// The event.
    pub ev: SourceEvent,
    /// The budget it holds.
    pub permit: Option<Permit>,
}

/// The sending end of one worker's queue.
pub type WorkerTx = mpsc::UnboundedSender<Queued>;

/// Most messages a worker takes off its queue at once.
const MAX_BATCH: usize = 512;
/// How long a worker sleeps between polls while traffic flows (the most a trace line or
/// capture record lags behind the relay, plus processing).
const POLL_INTERVAL: Duration = Duration::from_millis(1);

/// Empty polls before a worker parks until the next message.
const IDLE_POLLS: u32 = 200;

/// How often, at most, a worker ticks its connections' clocks ([`Router::tick`]): a
/// diagnosis of a silent connection starts within this much of being due.
const TICK_EVERY: Duration = Duration::from_secs(1);

/// How long a worker's queue must have been empty before it ticks, and how far behind the
/// clock the tick reads: a chunk read before the tick's time has been queued by then (a relay
/// stamps a chunk as it reads it, and queues it right away, or as soon as its connection's
/// budget is back, which draining the queue gave back), so a tick does not run ahead of a
/// frame that would have cleared the condition, unless that relay was kept from running for
/// this long. Under a flood that never leaves the queue empty that long, silent connections
/// are ticked at the next lull (their own frames tick them anyway).
const TICK_QUIET: Duration = Duration::from_millis(20);

/// How long a message may wait in the queue before the inspection counts as behind.
const MAX_LAG: Duration = Duration::from_millis(10);

/// Shortest stretch of skimming once the inspection fell behind.
const SKIM_AT_LEAST: Duration = Duration::from_millis(250);

/// Whether a worker is behind the relay: a message waited [`MAX_LAG`] or more, or an eighth
/// of the queue (at least 8 messages) was waiting. Once behind, it stays so for at least
/// [`SKIM_AT_LEAST`] and until messages wait less than a quarter of that lag again. The hold
/// keeps a flood from being decoded in bursts between skims: decoding what a live view cannot
/// show anyway would only take CPU from the relay. A burst of messages that is handled at once
/// (many connections speaking together) is not lag.
#[derive(Debug)]
struct Backlog {
    capacity: usize,
    behind_until: Option<Instant>,
}

impl Backlog {
    /// `lag`: how long the message at hand waited; `queued`: how many messages were queued from
    /// it on.
    fn behind(&mut self, lag: Duration, queued: usize, now: Instant) -> bool {
        if lag >= MAX_LAG || queued >= (self.capacity / 8).max(8) {
            self.behind_until = Some(now + SKIM_AT_LEAST);
        } else if lag < MAX_LAG / 4 && self.behind_until.is_some_and(|t| now >= t) {
            self.behind_until = None;
        }
        self.behind_until.is_some()
    }
}

/// The inspection side of a running proxy.
#[derive(Debug)]
pub struct Live {
    txs: Vec<WorkerTx>,
    /// The workers, and their rendering stages.
    workers: Vec<tokio::task::JoinHandle<()>>,
    sinks: Arc<Mutex<SinkSet<'static>>>,
}

impl Live {
    /// Start `jobs` workers writing to `sinks`. `capacity`: how many queued messages
    /// count as a worker falling behind (an eighth of it), for skimming.
    pub fn start(
        sinks: Vec<BoxSink>,
        opts: InspectOptions,
        jobs: NonZeroUsize,
        capacity: usize,
    ) -> Live {
        let sinks = SinkSet::new(sinks, "the relay");
        let may_skim = sinks.may_skim();
        let parts: Vec<Part> = (0..jobs.get()).map(|_| sinks.part()).collect();
        let sinks = Arc::new(Mutex::new(sinks));
        let mut txs = Vec::with_capacity(jobs.get());
        let mut workers = Vec::with_capacity(2 * jobs.get());
        for part in parts {
            let (tx, rx) = mpsc::unbounded_channel();
            txs.push(tx);
            let (render, stage_thread) = stage(part, sinks.clone());
            if let Some(t) = stage_thread {
                workers.push(tokio::task::spawn_blocking(move || t.run()));
            }
            let worker = Worker {
                router: Router::new(opts.clone()).containing_panics(),
                render,
                may_skim,
                backlog: Backlog {
                    capacity: capacity.max(1),
                    behind_until: None,
                },
            };
            workers.push(tokio::task::spawn_blocking(move || worker.run(rx)));
        }
        Live {
            txs,
            workers,
            sinks,
        }
    }

    /// The queue of the worker that inspects connection `conn` (connections are dealt to the
    /// workers in turn).
    pub fn queue(&self, conn: crate::event::ConnId) -> WorkerTx {
        self.txs[(conn as usize) % self.txs.len()].clone()
    }

    /// Once every relay is gone: let the workers close what is still open and write it, then
    /// flush and drop the sinks. Returns what made sinks fail (a capture that could
    /// not be written: its error names it), each reported once on stderr when it happened.
    pub async fn finish(self) -> std::io::Result<Vec<String>> {
        drop(self.txs);
        for w in self.workers {
            w.await.map_err(std::io::Error::other)?;
        }
        let sinks = Arc::try_unwrap(self.sinks)
            .map_err(|_| std::io::Error::other("an inspection worker still holds the sinks"))?;
        Ok(sinks
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_failures())
    }
}

/// One inspection worker: the inspectors of its connections, and its end of the stage that
/// renders and writes what they make (see `driver::render_stage`).
struct Worker {
    router: Router,
    render: RenderStage,
    may_skim: bool,
    backlog: Backlog,
}

impl Worker {
    /// Inspect until every relay is gone, then close the connections still open.
    fn run(mut self, mut rx: mpsc::UnboundedReceiver<Queued>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut polls = 0u32;
        let mut last_message = Instant::now();
        let mut last_tick = Instant::now();
        loop {
            let park_for = self.router.has_open().then_some(TICK_EVERY);
            let render = &mut self.render;
            let waited = next_batch(&mut rx, &mut batch, &mut polls, park_for, &mut || {
                // Going idle: what the last burst grew goes back (see `driver::reclaim`).
                render.release_spare();
                super::reclaim::before_long_wait();
            });
            match waited {
                Waited::Gone => break,
                Waited::Quiet => {
                    let now = Instant::now();
                    if now - last_message >= TICK_QUIET && now - last_tick >= TICK_EVERY {
                        last_tick = now;
                        self.tick();
                    }
                    continue;
                }
                Waited::Batch => {}
            }
            let waiting = rx.len();
            let taken = batch.len();
            for (i, Queued { ev, permit }) in batch.drain(..).enumerate() {
                let skim = self.may_skim && matches!(ev, SourceEvent::Chunk(_)) && {
                    let ts = ev.ts().unwrap_or_else(Timestamp::now);
                    let lag = Timestamp::now().0.saturating_sub(ts.0).max(0) as u64;
                    self.backlog.behind(
                        Duration::from_micros(lag),
                        taken - i + waiting,
                        Instant::now(),
                    )
                };
                self.router.feed_skimming(ev, skim, self.render.events());
                // Inspected: the connection's budget is given back once its events are written.
                self.render.hold(permit);
                self.render.end_of_message();
            }
            // The batch is done: what it changed is shown as of its last frame, and the bytes
            // of incomplete frames reach the captures too.
            self.router.publish_states(self.render.events());
            self.router
                .flush_data(Timestamp::now(), self.render.events());
            self.render.hand_over(true);
            last_message = Instant::now();
        }
        self.router.finish_at(
            Timestamp::now(),
            CloseReason::ProxyStopped,
            self.render.events(),
        );
        self.render.hand_over(true);
    }

    /// The clock ticks: what became due on a silent connection starts now, and reaches the
    /// sinks (flushed: a capture shows a stall while it lasts). The time read is
    /// [`TICK_QUIET`] behind the clock.
    fn tick(&mut self) {
        let behind = TICK_QUIET.as_micros() as i64;
        let now = Timestamp(Timestamp::now().0.saturating_sub(behind));
        self.router.tick(now, self.render.events());
        if !self.render.events().is_empty() {
            self.render.hand_over(true);
        }
    }
}

/// What waiting for the queue gave.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    /// Messages, in the batch.
    Batch,
    /// Nothing yet (one poll, or a park that timed out): time to tick the clock, maybe.
    Quiet,
    /// Every sender is gone.
    Gone,
}

/// Wait for the next messages and take up to [`MAX_BATCH`] of them. While traffic flows, the
/// queue is polled on a short timer instead of parking: a parked receiver makes every relay
/// `send` pay a thread wake-up (a syscall and a context switch per chunk). After `IDLE_POLLS`
/// empty polls (`polls` counts them across calls), it parks until the next message, or for
/// `park_for` at most (the worker's connections have clocks to tick); `before_park` runs
/// before the first park after traffic. Each empty poll and each park that times out returns
/// [`Waited::Quiet`].
fn next_batch(
    rx: &mut mpsc::UnboundedReceiver<Queued>,
    batch: &mut Vec<Queued>,
    polls: &mut u32,
    park_for: Option<Duration>,
    before_park: &mut dyn FnMut(),
) -> Waited {
    match rx.try_recv() {
        Ok(m) => batch.push(m),
        Err(mpsc::error::TryRecvError::Disconnected) => return Waited::Gone,
        Err(mpsc::error::TryRecvError::Empty) if *polls < IDLE_POLLS => {
            *polls += 1;
            std::thread::sleep(POLL_INTERVAL);
            return Waited::Quiet;
        }
        Err(mpsc::error::TryRecvError::Empty) => {
            if *polls == IDLE_POLLS {
                *polls += 1;
                before_park();
            }
            match park(rx, park_for) {
                Parked::Got(m) => batch.push(m),
                Parked::TimedOut => return Waited::Quiet,
                Parked::Gone => return Waited::Gone,
            }
        }
    }
    *polls = 0;
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(m) => batch.push(m),
            Err(_) => break,
        }
    }
    Waited::Batch
}

/// What a park gave.
enum Parked {
    Got(Queued),
    TimedOut,
    Gone,
}

/// Park until the next message, or for `limit` at most. The timed park waits on the runtime
/// the worker was spawned on (its timers); outside one, it waits for the message alone.
fn park(rx: &mut mpsc::UnboundedReceiver<Queued>, limit: Option<Duration>) -> Parked {
    let timed = limit.zip(tokio::runtime::Handle::try_current().ok());
    let got = match timed {
        Some((limit, rt)) => match rt.block_on(tokio::time::timeout(limit, rx.recv())) {
            Ok(got) => got,
            Err(_) => return Parked::TimedOut,
        },
        None => rx.blocking_recv(),
    };
    got.map_or(Parked::Gone, Parked::Got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chunk, Dir, Event, EventKind};
    use bytes::Bytes;
    use std::sync::{Arc, Mutex};

    /// Keeps every event it is given.
    struct Keep(Arc<Mutex<Vec<Event>>>);

    impl Sink for Keep {
        fn event(&mut self, ev: &Event) -> std::io::Result<()> {
            self.0.lock().unwrap().push(ev.clone());
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_end_of_a_batch_publishes_the_state_after_its_last_frame() {
        let t = |ms: i64| Timestamp(1_764_417_600_000_000 + ms * 1000);
        // AMQP 1.0: both headers and opens, then the client's begin 1 ms after the server's
        // open, too soon for the time throttle and without a new connection state name.
        let open = hex::decode("000000110200000000531 0c00401a10163".replace(' ', "")).unwrap();
        let begin =
            hex::decode("0000001a0200000000531 1c00d0440437000000064 7000000064".replace(' ', ""))
                .unwrap();
        let header = b"AMQP\x00\x01\x00\x00".to_vec();
        let events = Arc::new(Mutex::new(Vec::new()));
        let live = Live::start(
            vec![Box::new(Keep(events.clone()))],
            InspectOptions::default(),
            NonZeroUsize::new(2).unwrap(),
            64,
        );
        let tx = live.queue(1);
        let send = |ev| tx.send(Queued { ev, permit: None }).unwrap();
        send(SourceEvent::Connect {
            conn: 1,
            ts: t(0),
            client: "127.0.0.1:40000".parse().unwrap(),
            server: "127.0.0.1:5672".parse().unwrap(),
        });
        let chunks = [
            (Dir::C2S, header.clone()),
            (Dir::S2C, header),
            (Dir::C2S, open.clone()),
            (Dir::S2C, open),
            (Dir::C2S, begin),
        ];
        for (i, (dir, bytes)) in chunks.into_iter().enumerate() {
            send(SourceEvent::Chunk(Chunk {
                conn: 1,
                dir,
                ts: t(1 + i as i64),
                bytes: Bytes::from(bytes),
            }));
        }
        drop(tx);
        assert!(live.finish().await.unwrap().is_empty());
        let events = events.lock().unwrap();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.kind, EventKind::Violation(_))),
            "a clean conversation"
        );
        let sessions = |s: &crate::state::Snapshot| match &s.detail {
            crate::state::snapshot::Detail::Amqp10(a) => a.sessions.len(),
            _ => 0,
        };
        // The state with the begin's session, as of the begin, before the proxy stopped.
        let with_session: Vec<(Timestamp, usize)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::State(s) if sessions(s) == 1 => Some((e.ts, sessions(s))),
                _ => None,
            })
            .collect();
        assert_eq!(with_session, vec![(t(5), 1)]);
        assert!(
            matches!(events.last().unwrap().kind, EventKind::Close(_)),
            "closed when the proxy stopped"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_connections_diagnosis_starts_while_it_is_silent() {
        // AMQP 1.0: headers, opens, begins, the client's receiver attach and the broker's
        // sender attach of link "q"; then nothing, and no credit was ever granted.
        let h = |s: &str| Bytes::from(hex::decode(s).unwrap());
        let header = "414d515000010000";
        let open = "0000001102000000005310c00401a10163";
        let begin = "0000001a02000000005311c00d04404370000000647000000064";
        let begin_reply =
            "0000002602000000005311d00000001600000004600000700000000070000000647000000064";
        let attach_rcv = "0000003d02000000005312d00000002d00000007a101717000000000414040005328d00000000700000001a10171005329d00000000700000001a10171";
        let attach_snd = "0000004402000000005312d0000000340000000aa101717000000000424040005328d00000000700000001a10171005329d00000000700000001a1017140407000000000";
        let mut limits = crate::state::diagnose::Thresholds::new();
        limits.set("amqp10.link.no-credit", 0.2).unwrap();
        let opts = InspectOptions {
            diagnosis: Some(Arc::new(limits)),
            ..InspectOptions::default()
        };
        let events = Arc::new(Mutex::new(Vec::new()));
        let live = Live::start(
            vec![Box::new(Keep(events.clone()))],
            opts,
            NonZeroUsize::new(1).unwrap(),
            64,
        );
        let tx = live.queue(1);
        let send = |ev| tx.send(Queued { ev, permit: None }).unwrap();
        send(SourceEvent::Connect {
            conn: 1,
            ts: Timestamp::now(),
            client: "127.0.0.1:40000".parse().unwrap(),
            server: "127.0.0.1:5672".parse().unwrap(),
        });
        let chunks = [
            (Dir::C2S, header),
            (Dir::S2C, header),
            (Dir::C2S, open),
            (Dir::S2C, open),
            (Dir::C2S, begin),
            (Dir::S2C, begin_reply),
            (Dir::C2S, attach_rcv),
            (Dir::S2C, attach_snd),
        ];
        for (dir, bytes) in chunks {
            send(SourceEvent::Chunk(Chunk {
                conn: 1,
                dir,
                ts: Timestamp::now(),
                bytes: h(bytes),
            }));
        }
        let attached = Timestamp::now();
        let deadline = Instant::now() + Duration::from_secs(3);
        let started = loop {
            let found = events.lock().unwrap().iter().find_map(|e| match &e.kind {
                EventKind::Diagnosis(d) => Some(d.clone()),
                _ => None,
            });
            if let Some(d) = found {
                break d;
            }
            assert!(Instant::now() < deadline, "no diagnosis while silent");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(started.check.id, "amqp10.link.no-credit");
        assert!(
            started.ended.is_none(),
            "started, the connection still open"
        );
        // It started when its condition had held 0.2 s, not when the tick noticed it.
        assert_eq!(started.at.0, started.since.0 + 200_000);
        assert!(started.since <= attached);
        drop(tx);
        assert!(live.finish().await.unwrap().is_empty());
        let events = events.lock().unwrap();
        let diagnoses = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Diagnosis(_)))
            .count();
        assert_eq!(diagnoses, 2, "its start, and its end as the proxy stopped");
    }

    type Gate = Arc<(Mutex<bool>, std::sync::Condvar)>;

    /// Wait until `gate` is open.
    fn pass(gate: &Gate) {
        let (open, opened) = &**gate;
        let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = opened.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Holds every protocol header event until its gate opens: taking the events themselves,
    /// or (`renders`) the bytes a renderer made of them, as the trace and JSONL do.
    struct Held {
        gate: Gate,
        renders: bool,
    }

    /// Renders a protocol header event as one byte.
    struct HeaderByte;

    impl crate::pipeline::Render for HeaderByte {
        fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
            if matches!(ev.kind, EventKind::Header { .. }) {
                out.push(b'h');
            }
        }
    }

    impl Sink for Held {
        fn event(&mut self, ev: &Event) -> std::io::Result<()> {
            if matches!(ev.kind, EventKind::Header { .. }) {
                pass(&self.gate);
            }
            Ok(())
        }
        fn renderer(&self) -> Option<Box<dyn crate::pipeline::Render>> {
            self.renders
                .then(|| Box::new(HeaderByte) as Box<dyn crate::pipeline::Render>)
        }
        fn write_rendered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            if !bytes.is_empty() {
                pass(&self.gate);
            }
            Ok(())
        }
    }

    /// Opens a gate when dropped, so that a failing assertion does not leave a worker or its
    /// stage waiting (and the test runtime waiting for them).
    struct Opens(Gate);

    impl Drop for Opens {
        fn drop(&mut self) {
            *self.0.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            self.0.1.notify_all();
        }
    }

    /// A chunk whose events a [`Held`] sink holds keeps its connection's budget spent until
    /// the sink lets them through.
    async fn budget_comes_back_only_once_written(renders: bool) {
        let gate: Gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let opens = Opens(gate.clone());
        let live = Live::start(
            vec![Box::new(Held {
                gate: gate.clone(),
                renders,
            })],
            InspectOptions::default(),
            NonZeroUsize::new(1).unwrap(),
            64,
        );
        let q = super::super::queue::ConnQueue::new(live.queue(1), 100);
        let t = Timestamp(1_764_417_600_000_000);
        q.send(
            SourceEvent::Connect {
                conn: 1,
                ts: t,
                client: "127.0.0.1:40000".parse().unwrap(),
                server: "127.0.0.1:5672".parse().unwrap(),
            },
            None,
        );
        let header = Bytes::from_static(b"AMQP\x00\x00\x09\x01");
        let permit = q.try_reserve(100).expect("the whole budget, free");
        q.send(
            SourceEvent::Chunk(Chunk {
                conn: 1,
                dir: Dir::C2S,
                ts: t,
                bytes: header,
            }),
            Some(permit),
        );
        // Inspected long since, but its header event waits for the sink: the budget it holds
        // stays spent, so a slow sink holds back only the relay whose events it holds.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            q.try_reserve(1).is_none(),
            "the budget came back before the chunk's events were written (renders: {renders})"
        );
        drop(opens);
        let deadline = Instant::now() + Duration::from_secs(10);
        while q.try_reserve(1).is_none() {
            assert!(Instant::now() < deadline, "the budget never came back");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(q);
        assert!(live.finish().await.unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connections_budget_comes_back_only_once_its_events_are_written() {
        budget_comes_back_only_once_written(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connections_budget_comes_back_only_once_its_rendered_events_are_written() {
        budget_comes_back_only_once_written(true).await;
    }

    #[test]
    fn behind_from_a_lag_or_an_eighth_of_the_queue_for_at_least_the_hold() {
        let mut b = Backlog {
            capacity: 256,
            behind_until: None,
        };
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert!(
            !b.behind(ms(1), 31, t0),
            "a burst handled at once is not lag"
        );
        assert!(b.behind(MAX_LAG, 1, t0), "waited too long: behind");
        assert!(b.behind(ms(0), 1, t0 + ms(50)), "held");
        assert!(
            b.behind(MAX_LAG / 2, 1, t0 + SKIM_AT_LEAST),
            "still lagging"
        );
        assert!(
            !b.behind(ms(1), 1, t0 + SKIM_AT_LEAST),
            "caught up after the hold"
        );
        let t1 = t0 + SKIM_AT_LEAST;
        assert!(
            b.behind(ms(0), 32, t1),
            "an eighth of the queue waiting: behind"
        );
        assert!(b.behind(ms(0), 0, t1 + SKIM_AT_LEAST / 2), "held again");
    }
}
