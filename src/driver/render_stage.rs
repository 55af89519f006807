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

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use super::queue::Permit;
use super::sinks::{Output, Part, SinkSet};
use crate::event::Event;

/// Runs that may wait between the worker and its stage.
const HANDOFFS: usize = 4;

/// Events gathered before they are handed over without waiting for the end of the batch: few
/// enough that they are still in the cache when the stage renders them.
const RUN_EVENTS: usize = 256;

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
    tx: SyncSender<Handoff>,
    /// Emptied runs, back from the stage to be filled again.
    spare: Receiver<Vec<Event>>,
    /// The run being gathered.
    events: Vec<Event>,
    /// The queue budget of the run being gathered, and its bytes.
    permits: Vec<Permit>,
    held: usize,
}

/// The stage's own side: renders and writes on its thread.
pub(super) struct StageThread {
    rx: Receiver<Handoff>,
    back: Sender<Vec<Event>>,
    part: Part,
    sinks: Arc<Mutex<SinkSet<'static>>>,
}

/// A rendering stage writing to `sinks` with `part`'s renderers: the worker's end, and the
/// thread's side, to be run with [`StageThread::run`].
pub(super) fn stage(part: Part, sinks: Arc<Mutex<SinkSet<'static>>>) -> (RenderStage, StageThread) {
    let (tx, rx) = mpsc::sync_channel(HANDOFFS);
    let (back, spare) = mpsc::channel();
    (
        RenderStage {
            tx,
            spare,
            events: Vec::new(),
            permits: Vec::new(),
            held: 0,
        },
        StageThread {
            rx,
            back,
            part,
            sinks,
        },
    )
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

    /// One source event's events are in: hand the run over if it is long enough, or holds
    /// enough of the relays' budget.
    pub(super) fn end_of_message(&mut self) {
        if self.events.len() >= RUN_EVENTS || self.held >= RUN_BYTES {
            self.hand_over(false);
        }
    }

    /// Hand over what is gathered (if anything, or if `flush`), the sinks flushed after it
    /// when `flush`. Waits while [`HANDOFFS`] runs wait already.
    pub(super) fn hand_over(&mut self, flush: bool) {
        if self.events.is_empty() && self.permits.is_empty() && !flush {
            return;
        }
        let next = self.spare.try_recv().unwrap_or_default();
        let events = std::mem::replace(&mut self.events, next);
        let permits = std::mem::take(&mut self.permits);
        self.held = 0;
        // A stage that is gone panicked; its worker's join reports it. Until then, what
        // cannot be written is dropped, its budget with it.
        let _ = self.tx.send(Handoff::Events {
            events,
            permits,
            flush,
        });
    }

    /// About to wait for traffic: both stages let go of what the last burst grew.
    pub(super) fn release_spare(&mut self) {
        self.events.shrink_to(KEEP_EVENTS);
        while self.spare.try_recv().is_ok() {}
        let _ = self.tx.send(Handoff::Release);
    }
}

impl StageThread {
    /// Render and write every run handed over, until the worker's end is gone.
    pub(super) fn run(mut self) {
        let mut out = Output::default();
        while let Ok(handoff) = self.rx.recv() {
            match handoff {
                Handoff::Events {
                    mut events,
                    permits,
                    flush,
                } => {
                    self.part.take(&mut events, &mut out);
                    self.write(&mut out, flush);
                    // Written: the connections' budget is given back.
                    drop(permits);
                    events.shrink_to(KEEP_EVENTS);
                    let _ = self.back.send(events);
                }
                Handoff::Release => {
                    out.release_spare();
                    self.part.release_spare();
                    super::reclaim::before_long_wait();
                }
            }
        }
    }

    /// Write `out` to the sinks (waiting for this stage's turn), and `flush` them; empties it.
    fn write(&self, out: &mut Output, flush: bool) {
        if !out.is_empty() || flush {
            // A panic of a sink elsewhere leaves the sinks usable: each failure is its own.
            let mut sinks = self.sinks.lock().unwrap_or_else(|p| p.into_inner());
            sinks.write_all(out);
            if flush {
                sinks.flush();
            }
        }
        out.clear();
    }
}
