//! The second stage of a live inspection worker: rendering what the worker's inspection made
//! (trace lines, JSONL records) and writing it to the sinks, on a thread of its own. Under a
//! flood on one connection, decoding and rendering then run on two cores at once, and the
//! lossless relay is paced by the slower of the two instead of by their sum.
//!
//! ```text
//! relay ─▶ worker: Router (inspectors) ─▶ handoffs (at most HANDOFFS) ─▶ stage: renderers ─▶ SinkSet
//!   ▲                                                                                 │
//!   └──────────── the connection's queue budget, given back once written ─────────────┘
//! ```
//!
//! The worker hands its events over in runs ([`Handoff`]), always at the end of what one source
//! event made, so each message's output still reaches the sinks in one piece, and per
//! connection in the order it happened. The queue budget of the chunks the events came from
//! travels with them and is given back once they are written: a connection's budget bounds
//! what waits in both stages together, and a slow sink makes only the relays whose chunks it
//! holds wait, as before. At most [`HANDOFFS`] runs wait between the stages; beyond that the
//! worker waits for the stage.
//!
//! Only sinks that render are worth a thread: when none does (pcapng, the verdict, the TUI's
//! feed take events, and do little with each), a thread's wake-ups and the frees of events made
//! on another thread cost more than the writing, so the worker writes each source event's events
//! itself, as soon as they are made ([`RenderStage`] inline).

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use super::queue::Permit;
use super::sinks::{Output, Part, SinkSet};
use crate::event::Event;

/// Runs that may wait between the worker and its stage.
const HANDOFFS: usize = 4;

/// Events gathered before they are handed over without waiting for the end of the batch: a
/// handoff that wakes the stage costs about as much as rendering a few hundred events, so runs
/// are long (for small frames, [`RUN_BYTES`] of budget comes first).
const RUN_EVENTS: usize = 1024;

/// Queue budget a run may hold before it is handed over without waiting for the end of the
/// batch: the budget comes back only once the run is written, so a run of large chunks goes
/// over a chunk or two at a time, and the relay reads on meanwhile.
const RUN_BYTES: usize = 64 * 1024;

/// Events an emptied run keeps room for when it comes back to the worker to be filled again.
const KEEP_EVENTS: usize = 1024;

/// What the worker hands its stage.
enum Handoff {
    /// Events to render and write, and the budget they hold; `flush`: flush the sinks after.
    Events {
        events: Vec<Event>,
        permits: Vec<Permit>,
        flush: bool,
    },
    /// The worker is about to wait for traffic: let go of what the last burst grew.
    Release,
}

/// The worker's end of its rendering stage: where its inspection puts the events it makes.
pub(super) struct RenderStage {
    to: To,
    /// The run being gathered.
    events: Vec<Event>,
    /// The queue budget of the run being gathered, and its bytes.
    permits: Vec<Permit>,
    held: usize,
    /// A run went to the thread without a flush after it: the next flush asked for must reach
    /// the sinks even when nothing more is gathered.
    unflushed: bool,
}

/// Where a worker's runs go.
enum To {
    /// To the stage's thread; emptied runs come back on `spare` to be filled again.
    Thread {
        tx: SyncSender<Handoff>,
        spare: Receiver<Vec<Event>>,
    },
    /// Written by the worker itself, one source event's events at a time.
    Inline(Writer),
}

/// The stage's own side: renders and writes on its thread.
pub(super) struct StageThread {
    rx: Receiver<Handoff>,
    back: Sender<Vec<Event>>,
    writer: Writer,
}

/// Renders runs with a part of the sinks' renderers and writes them, taking turns with the
/// other workers' writers.
struct Writer {
    part: Part,
    sinks: Arc<Mutex<SinkSet<'static>>>,
    out: Output,
}

/// A rendering stage writing to `sinks` with `part`'s renderers: the worker's end, and, when a
/// sink renders, the thread's side, to be run with [`StageThread::run`].
pub(super) fn stage(
    part: Part,
    sinks: Arc<Mutex<SinkSet<'static>>>,
) -> (RenderStage, Option<StageThread>) {
    let threaded = part.renders();
    let writer = Writer {
        part,
        sinks,
        out: Output::default(),
    };
    let (to, thread) = if threaded {
        let (tx, rx) = mpsc::sync_channel(HANDOFFS);
        let (back, spare) = mpsc::channel();
        (
            To::Thread { tx, spare },
            Some(StageThread { rx, back, writer }),
        )
    } else {
        (To::Inline(writer), None)
    };
    let stage = RenderStage {
        to,
        events: Vec::new(),
        permits: Vec::new(),
        held: 0,
        unflushed: false,
    };
    (stage, thread)
}

impl RenderStage {
    /// Where the inspection puts the events it makes (handed over by [`Self::end_of_message`]
    /// or [`Self::hand_over`]).
    pub(super) fn events(&mut self) -> &mut Vec<Event> {
        &mut self.events
    }

    /// The queue budget of the source event just inspected: kept until its events are written.
    pub(super) fn hold(&mut self, permit: Option<Permit>) {
        if let Some(permit) = permit {
            self.held += permit.bytes();
            self.permits.push(permit);
        }
    }

    /// One source event's events are in: written at once inline; handed to the thread if the
    /// run is long enough, or holds enough of the relays' budget.
    pub(super) fn end_of_message(&mut self) {
        let due = match self.to {
            To::Inline(_) => true,
            To::Thread { .. } => self.events.len() >= RUN_EVENTS || self.held >= RUN_BYTES,
        };
        if due {
            self.hand_over(false);
        }
    }

    /// Hand over what is gathered (if anything, or if `flush`), the sinks flushed after it
    /// when `flush`. Waits while [`HANDOFFS`] runs wait already.
    ///
    /// A run without events (the chunks of a large frame not complete yet) does not wake the
    /// thread: nothing of its chunks waits to be written, so their budget is given back here,
    /// as inline; a flush goes over only when a run went without one. Under a flood of large
    /// frames that is most chunks, and a wake-up for each cost more than the frames' rendering.
    pub(super) fn hand_over(&mut self, flush: bool) {
        if self.events.is_empty() && self.permits.is_empty() && !flush {
            return;
        }
        self.held = 0;
        if let To::Thread { .. } = self.to
            && self.events.is_empty()
        {
            self.permits.clear();
            if !(flush && self.unflushed) {
                return;
            }
        }
        if let To::Thread { .. } = self.to {
            self.unflushed = !flush;
        }
        match &mut self.to {
            To::Inline(writer) => {
                writer.write_run(&mut self.events, flush);
                // Written: the connection's budget is given back (the vector is kept).
                self.permits.clear();
            }
            To::Thread { tx, spare } => {
                let permits = std::mem::take(&mut self.permits);
                let next = spare.try_recv().unwrap_or_default();
                let events = std::mem::replace(&mut self.events, next);
                // A stage that is gone panicked; its join reports it. Until then, what cannot
                // be written is dropped, its budget with it.
                let _ = tx.send(Handoff::Events {
                    events,
                    permits,
                    flush,
                });
            }
        }
    }

    /// About to wait for traffic: both stages let go of what the last burst grew.
    pub(super) fn release_spare(&mut self) {
        self.events.shrink_to(KEEP_EVENTS);
        match &mut self.to {
            To::Inline(writer) => writer.release_spare(),
            To::Thread { tx, spare } => {
                while spare.try_recv().is_ok() {}
                let _ = tx.send(Handoff::Release);
            }
        }
    }
}

impl StageThread {
    /// Render and write every run handed over, until the worker's end is gone.
    pub(super) fn run(mut self) {
        while let Ok(handoff) = self.rx.recv() {
            match handoff {
                Handoff::Events {
                    mut events,
                    permits,
                    flush,
                } => {
                    self.writer.write_run(&mut events, flush);
                    // Written: the connections' budget is given back.
                    drop(permits);
                    events.shrink_to(KEEP_EVENTS);
                    let _ = self.back.send(events);
                }
                Handoff::Release => {
                    self.writer.release_spare();
                    super::reclaim::before_long_wait();
                }
            }
        }
    }
}

impl Writer {
    /// Render `events` (emptied) and write them, and `flush` the sinks.
    fn write_run(&mut self, events: &mut Vec<Event>, flush: bool) {
        self.part.take(events, &mut self.out);
        if !self.out.is_empty() || flush {
            // A panic of a sink elsewhere leaves the sinks usable: each failure is its own.
            let mut sinks = self.sinks.lock().unwrap_or_else(|p| p.into_inner());
            sinks.write_all(&self.out);
            if flush {
                sinks.flush();
            }
        }
        self.out.clear();
    }

    /// Let go of what a burst grew.
    fn release_spare(&mut self) {
        self.out.release_spare();
        self.part.release_spare();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::queue::ConnQueue;
    use crate::sinks::TraceSink;

    /// A threaded stage (a trace renders) whose thread is never run: what is handed over stays
    /// in its channel, so a budget given back can only have been given back by the worker's end.
    fn threaded() -> (RenderStage, StageThread) {
        let sinks = SinkSet::new(vec![Box::new(TraceSink::new(std::io::sink()))], "the test");
        let part = sinks.part();
        let (stage, thread) = stage(part, Arc::new(Mutex::new(sinks)));
        (
            stage,
            thread.expect("a trace renders: the stage has a thread"),
        )
    }

    #[tokio::test]
    async fn a_run_without_events_gives_its_budget_back_without_waking_the_thread() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let queue = ConnQueue::new(tx, 100);
        let (mut stage, thread) = threaded();
        // The chunks of a frame not complete yet: inspected, no event made.
        stage.hold(queue.try_reserve(100));
        stage.end_of_message();
        stage.hand_over(true);
        assert!(
            queue.try_reserve(100).is_some(),
            "the budget of chunks that made no event is back at once"
        );
        assert!(
            thread.rx.try_recv().is_err(),
            "nothing went to the thread: it is not woken for an empty run"
        );
    }

    #[tokio::test]
    async fn a_flush_still_reaches_the_thread_after_a_run_that_went_unflushed() {
        let (mut stage, thread) = threaded();
        let ev = Event {
            conn: 1,
            ts: crate::event::Timestamp(0),
            kind: crate::event::EventKind::Fin {
                dir: crate::event::Dir::C2S,
                offset: 0,
            },
        };
        stage.events().push(ev);
        stage.hand_over(false);
        stage.hand_over(true);
        stage.hand_over(true);
        let flushes: Vec<bool> = thread
            .rx
            .try_iter()
            .map(|h| match h {
                Handoff::Events { flush, .. } => flush,
                Handoff::Release => panic!("no release was asked for"),
            })
            .collect();
        assert_eq!(
            flushes,
            vec![false, true],
            "the run, then one flush for it; a second flush with nothing written in between goes nowhere"
        );
    }
}
