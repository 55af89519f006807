//! Dealing a capture's source events to worker threads, for [`super::offline`] (replay into
//! sinks, in capture order, or into a sharded sink).
//!
//! A connection's events always go to the same worker (its [`Inspector`] lives there); a new
//! connection goes to the worker with the least work waiting. Events travel in batches over
//! bounded channels (the reader waits when a worker is behind), grouped in rounds: every
//! worker's part of a round is sent before the next round starts, and the round's route (which
//! worker got each event, in capture order) is handed back, so that a sequencer waiting for a
//! round's outputs only ever waits for events already sent.
//!
//! [`Inspector`]: crate::pipeline::Inspector

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::SyncSender;

use crate::capture::SourceEvent;
use crate::event::{ConnId, Timestamp};

/// Events per round at most.
const ROUND_EVENTS: usize = 1024;
/// Weight (payload bytes plus [`EVENT_WEIGHT`] per event) at which a round is sent.
const ROUND_WEIGHT: usize = 256 * 1024;
/// What an event weighs besides its payload bytes.
const EVENT_WEIGHT: usize = 64;
/// Batches queued per worker before the reader waits: with rounds of 256 KB, up to about 4 MB
/// of capture per worker, enough to keep every worker busy on a capture whose connections come
/// one after another.
pub(crate) const QUEUE_BATCHES: usize = 16;

/// Source events for one worker, each with its number in the capture.
#[derive(Default)]
pub(crate) struct Batch {
    /// The events, in capture order.
    pub events: Vec<(u64, SourceEvent)>,
    /// Their weight.
    pub weight: usize,
}

/// What the reader sends a worker.
pub(crate) enum ToWorker {
    /// The worker's part of one round.
    Batch(Batch),
    /// The capture ended at this time: close what is still open, and stop.
    End(Timestamp),
}

/// Which worker got each event of a round, in capture order: (worker, how many in a row).
pub(crate) type Route = Vec<(usize, usize)>;

/// A worker stopped taking events (it panicked; joining it tells).
#[derive(Debug)]
pub(crate) struct Gone;

/// Deals source events to the workers.
pub(crate) struct Dealer<'a> {
    txs: Vec<SyncSender<ToWorker>>,
    /// Weight sent to each worker and not yet replayed (the worker subtracts what it is done
    /// with).
    loads: &'a [AtomicUsize],
    pending: Vec<Batch>,
    route: Route,
    round_events: usize,
    round_weight: usize,
    routes: HashMap<ConnId, usize>,
    /// The last connection routed and its worker (consecutive events are often one
    /// connection's).
    last: Option<(ConnId, usize)>,
}

impl<'a> Dealer<'a> {
    /// A dealer to the workers behind `txs`, whose loads are `loads` (one each).
    pub(crate) fn new(txs: Vec<SyncSender<ToWorker>>, loads: &'a [AtomicUsize]) -> Self {
        Dealer {
            pending: txs.iter().map(|_| Batch::default()).collect(),
            txs,
            loads,
            route: Vec::new(),
            round_events: 0,
            round_weight: 0,
            routes: HashMap::new(),
            last: None,
        }
    }

    /// The worker of `conn`; a new connection goes to the one with the least work waiting.
    fn worker_of(&mut self, conn: ConnId) -> usize {
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

    /// Whether `conn` is dealt to a worker (seen, and not closed since).
    pub(crate) fn knows(&self, conn: ConnId) -> bool {
        self.routes.contains_key(&conn)
    }

    /// The least work waiting at any worker: weight sent and not yet replayed, plus weight
    /// dealt and not yet sent.
    pub(crate) fn least_load(&self) -> usize {
        (0..self.txs.len())
            .map(|w| self.loads[w].load(Ordering::Relaxed) + self.pending[w].weight)
            .min()
            .unwrap_or(0)
    }

    /// Queue source event `seq` of connection `conn` for its worker. When that completes a
    /// round, sends it and returns its route.
    pub(crate) fn deal(
        &mut self,
        seq: u64,
        conn: ConnId,
        ev: SourceEvent,
    ) -> Result<Option<Route>, Gone> {
        let w = self.worker_of(conn);
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
        match self.route.last_mut() {
            Some((last, n)) if *last == w => *n += 1,
            _ => self.route.push((w, 1)),
        }
        let batch = &mut self.pending[w];
        if batch.events.capacity() == 0 {
            batch.events.reserve(ROUND_EVENTS / 4);
        }
        batch.events.push((seq, ev));
        batch.weight += weight;
        self.round_events += 1;
        self.round_weight += weight;
        if self.round_events >= ROUND_EVENTS || self.round_weight >= ROUND_WEIGHT {
            return self.send_round().map(Some);
        }
        Ok(None)
    }

    /// Send every worker its part of the round so far; returns the round's route (empty when
    /// nothing was dealt since the last round).
    pub(crate) fn send_round(&mut self) -> Result<Route, Gone> {
        for w in 0..self.txs.len() {
            let batch = std::mem::take(&mut self.pending[w]);
            if batch.events.is_empty() {
                continue;
            }
            self.loads[w].fetch_add(batch.weight, Ordering::Relaxed);
            self.txs[w].send(ToWorker::Batch(batch)).map_err(|_| Gone)?;
        }
        self.round_events = 0;
        self.round_weight = 0;
        Ok(std::mem::take(&mut self.route))
    }

    /// Tell every worker the capture ended at `last_ts` (after [`Dealer::send_round`]).
    pub(crate) fn end(self, last_ts: Timestamp) {
        for tx in &self.txs {
            // A worker that is gone is noticed when joined.
            let _ = tx.send(ToWorker::End(last_ts));
        }
    }
}
