//! The Health pane's model: the diagnoses the pipeline published (why a flow is stuck), the
//! active ones first (held longest first), then the ended ones (latest ended first, at most
//! [`MAX_ENDED`]); and what Enter on one does (its evidence frame in the frame list).
//!
//! A diagnosis arrives twice ([`EventKind::Diagnosis`](crate::event::EventKind)): when it
//! starts (`ended` is `None`) and when it ends; the two share [`Diagnosis::key`]. Its age is
//! the app's clock ([`App::now`]: the wall clock's ticks live, the latest event offline) less
//! its start, so the list ticks without reading a clock while it draws.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::event::{CloseInfo, CloseReason, ConnId, Diagnosis, EndWhy, Ended, FrameRef, Timestamp};

use super::app::{App, ListState, Pane};

/// Ended diagnoses kept, at most (older ones are dropped and counted).
pub const MAX_ENDED: usize = 1000;

/// Active diagnoses kept, at most: the pipeline bounds them per connection; this bounds the
/// sum should ends go missing (events the UI dropped while behind).
pub const MAX_ACTIVE: usize = 10_000;

/// One diagnosis as the pane lists it.
#[derive(Clone, Debug)]
pub struct HealthEntry {
    /// The diagnosis (its latest event: the start while it holds, else the end).
    pub diagnosis: Arc<Diagnosis>,
    /// The frame-list row of its first evidence frame, when that row was kept as it arrived.
    pub evidence_seq: Option<u64>,
}

/// Owned identity of a diagnosis (see [`Diagnosis::key`]), to keep the cursor on it.
type Key = (&'static str, ConnId, String, Timestamp);

fn key_of(d: &Diagnosis) -> Key {
    (d.check.id, d.conn, d.name.clone(), d.since)
}

/// Every diagnosis the pane lists (see the module doc), and its cursor.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// Active diagnoses, the one held longest first.
    pub active: Vec<HealthEntry>,
    /// Ended diagnoses, the latest ended first.
    pub ended: VecDeque<HealthEntry>,
    /// Ended diagnoses dropped to stay within [`MAX_ENDED`] (and active ones past
    /// [`MAX_ACTIVE`]).
    pub dropped: u64,
    /// The pane's cursor over `active` then `ended`.
    pub list: ListState,
}

impl Health {
    /// Entries listed: the active, then the ended.
    pub fn len(&self) -> usize {
        self.active.len() + self.ended.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th entry of the list.
    pub fn get(&self, i: usize) -> Option<&HealthEntry> {
        match i.checked_sub(self.active.len()) {
            None => self.active.get(i),
            Some(j) => self.ended.get(j),
        }
    }

    /// The entry under the cursor.
    pub fn selected(&self) -> Option<&HealthEntry> {
        self.get(self.list.selected)
    }

    fn position(&self, key: &Key) -> Option<usize> {
        let same = |e: &HealthEntry| {
            let d = &e.diagnosis;
            (d.check.id, d.conn, d.name.as_str(), d.since) == (key.0, key.1, key.2.as_str(), key.3)
        };
        match self.active.iter().position(same) {
            Some(i) => Some(i),
            None => self
                .ended
                .iter()
                .position(same)
                .map(|j| self.active.len() + j),
        }
    }

    /// Take one diagnosis event, `seq` its evidence row if known; the cursor stays on its
    /// entry.
    pub fn take(&mut self, d: Arc<Diagnosis>, seq: Option<u64>) {
        let cursor = self.selected().map(|e| key_of(&e.diagnosis));
        let key = key_of(&d);
        let was = self
            .active
            .iter()
            .position(|e| key_of(&e.diagnosis) == key)
            .map(|i| self.active.remove(i));
        let evidence_seq = was.and_then(|e| e.evidence_seq).or(seq);
        let entry = HealthEntry {
            diagnosis: d,
            evidence_seq,
        };
        if entry.diagnosis.ended.is_some() {
            self.push_ended(entry);
        } else {
            let at = self
                .active
                .partition_point(|e| e.diagnosis.since <= entry.diagnosis.since);
            self.active.insert(at, entry);
            if self.active.len() > MAX_ACTIVE {
                // The latest to start goes: the ones held longest matter most.
                self.active.pop();
                self.dropped += 1;
            }
        }
        if let Some(i) = cursor.and_then(|k| self.position(&k)) {
            self.list.selected = i;
        }
    }

    fn push_ended(&mut self, entry: HealthEntry) {
        self.ended.push_front(entry);
        while self.ended.len() > MAX_ENDED {
            self.ended.pop_back();
            self.dropped += 1;
        }
    }

    /// Connection `conn` closed: diagnoses of it still active (their end events were
    /// dropped on the way) end with it.
    pub fn closed(&mut self, conn: ConnId, ts: Timestamp, info: &CloseInfo) {
        if !self.active.iter().any(|e| e.diagnosis.conn == conn) {
            return;
        }
        let why = match info.reason {
            CloseReason::CaptureEnded | CloseReason::ProxyStopped => EndWhy::CaptureEnded,
            _ => EndWhy::ScopeClosed,
        };
        let ending: Vec<HealthEntry> = self
            .active
            .iter()
            .filter(|e| e.diagnosis.conn == conn)
            .cloned()
            .collect();
        for e in ending {
            let mut d = (*e.diagnosis).clone();
            d.ended = Some(Ended {
                ts,
                frame: None,
                why,
            });
            self.take(Arc::new(d), e.evidence_seq);
        }
    }
}

impl App {
    /// A diagnosis started or ended on `conn`.
    pub(super) fn diagnosis(&mut self, conn: ConnId, d: Arc<Diagnosis>) {
        let seq = d.evidence.first().and_then(|f| self.evidence_row(conn, *f));
        self.health.take(d, seq);
        let h = self.page(Pane::Health);
        self.health.list.clamp(self.health.len(), h);
    }

    /// The kept row of frame `f` of `conn`, the latest at its direction and offset.
    fn evidence_row(&self, conn: ConnId, f: FrameRef) -> Option<u64> {
        self.model
            .conns
            .get(&conn)?
            .rows
            .iter()
            .rev()
            .find(|r| r.dir == Some(f.dir) && r.offset == f.offset)
            .map(|r| r.seq)
    }

    /// Enter in the Health pane: select the selected diagnosis's first evidence frame.
    pub(super) fn jump_to_evidence(&mut self) {
        let Some(e) = self.health.selected().cloned() else {
            return;
        };
        let d = &e.diagnosis;
        let Some(f) = d.evidence.first().copied() else {
            self.message = Some(format!("{} names no evidence frame", d.check.id));
            return;
        };
        let seq = self.evidence_row(d.conn, f).or(e.evidence_seq);
        if let Some(seq) = seq.filter(|s| self.model.pages() && *s >= self.model.reachable_from()) {
            // Kept or not: the whole capture is reachable.
            self.reach(d.conn, seq);
            return;
        }
        match seq.filter(|s| self.row(d.conn, *s).is_some()) {
            Some(seq) => self.select_frame(d.conn, seq),
            None => {
                self.message = Some(format!(
                    "the evidence frame at {} offset {} is no longer in memory",
                    f.dir.as_str(),
                    f.offset
                ))
            }
        }
    }
}
