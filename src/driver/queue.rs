//! The queue from a relay to its inspection worker, with back-pressure per connection.
//!
//! The connections of one worker share its unbounded FIFO (so the worker sees each of its
//! connections' messages in the order they happened), but the bytes a connection may have
//! waiting in it are bounded by that connection's own budget (`ConnQueue`). A connection that
//! floods the inspection waits for its own budget only: a quiet neighbour always finds room in
//! its own, and is never held up, as Envoy's per-connection watermarks do it. In all, the queues
//! hold at most one budget per open connection (and `--max-connections` bounds those).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::live::{Queued, WorkerTx};
use crate::capture::SourceEvent;

/// A new queue (for tests; the proxy's come from [`crate::driver::live::Live::queue`]).
#[cfg(test)]
fn channel() -> (WorkerTx, tokio::sync::mpsc::UnboundedReceiver<Queued>) {
    tokio::sync::mpsc::unbounded_channel()
}

/// Bytes of one connection queued and not yet inspected, given back when the inspection side
/// drops the chunk that holds it.
#[derive(Debug)]
pub struct Permit(OwnedSemaphorePermit);

impl Permit {
    /// The bytes of budget it holds.
    pub fn bytes(&self) -> usize {
        self.0.num_permits()
    }
}

/// One connection's end of the queue: its messages go to the shared FIFO, its chunks only
/// while its budget of queued bytes lasts.
#[derive(Debug)]
pub(crate) struct ConnQueue {
    tx: WorkerTx,
    budget: Arc<Semaphore>,
    /// The budget in bytes (a chunk larger than this takes all of it).
    limit: usize,
}

impl ConnQueue {
    /// A connection's end of `tx`, allowed `limit` bytes waiting at once.
    pub(crate) fn new(tx: WorkerTx, limit: usize) -> Self {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        ConnQueue {
            tx,
            budget: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    fn permits(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.clamp(1, self.limit)).unwrap_or(u32::MAX)
    }

    /// Budget for a chunk of `bytes`, if the connection has that much left now.
    pub(crate) fn try_reserve(&self, bytes: usize) -> Option<Permit> {
        let n = self.permits(bytes);
        self.budget
            .clone()
            .try_acquire_many_owned(n)
            .ok()
            .map(Permit)
    }

    /// Budget for a chunk of `bytes`, once the inspection side has taken enough of this
    /// connection's earlier chunks.
    pub(crate) async fn reserve(&self, bytes: usize) -> Option<Permit> {
        let n = self.permits(bytes);
        self.budget
            .clone()
            .acquire_many_owned(n)
            .await
            .ok()
            .map(Permit)
    }

    /// Queue `ev`, holding `permit` of the budget until it is inspected (never waits: chunks
    /// wait for their budget before this).
    pub(crate) fn send(&self, ev: SourceEvent, permit: Option<Permit>) {
        // The inspection side gone means the proxy is stopping: nothing left to tell it.
        let _ = self.tx.send(Queued { ev, permit });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_connection_spending_its_budget_leaves_the_others_theirs() {
        let (tx, _rx) = channel();
        let busy = ConnQueue::new(tx.clone(), 100);
        let quiet = ConnQueue::new(tx, 100);
        let held = busy.try_reserve(100).expect("the whole budget");
        assert!(busy.try_reserve(1).is_none(), "busy must wait");
        assert!(quiet.try_reserve(100).is_some(), "quiet has its own");
        drop(held);
        assert!(busy.try_reserve(60).is_some(), "given back when inspected");
    }

    #[tokio::test]
    async fn a_chunk_larger_than_the_budget_takes_all_of_it() {
        let (tx, _rx) = channel();
        let q = ConnQueue::new(tx, 10);
        let p = q.reserve(1_000).await.expect("capped at the budget");
        assert!(q.try_reserve(1).is_none());
        drop(p);
        assert!(q.try_reserve(10).is_some());
    }
}
