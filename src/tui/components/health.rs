//! The Health pane's model: the diagnoses the pipeline published (why a flow is stuck), the
//! active ones first (held longest first), then the ended ones (latest ended first, at most
//! [`MAX_ENDED`]); and what Enter on one does (its evidence frame in the frame list).
//!
//! A diagnosis arrives twice ([`EventKind::Diagnosis`](crate::event::EventKind)): when it
//! starts (`ended` is `None`) and when it ends; the two share [`Diagnosis::key`]. Its age is
//! the app's clock (`Model::now`: the wall clock's ticks live, the latest event offline) less
//! its start, so the list ticks without reading a clock while it draws.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::event::{CloseInfo, CloseReason, ConnId, Diagnosis, EndWhy, Ended, Timestamp};

use super::super::model::Model;
use super::cursor::Cursor;
use super::{Ctx, Outcome, go_to_frame};
use crate::tui::input::Action;

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
    active: Vec<HealthEntry>,
    /// Ended diagnoses, the latest ended first.
    ended: VecDeque<HealthEntry>,
    /// Ended diagnoses dropped to stay within [`MAX_ENDED`] (and active ones past
    /// [`MAX_ACTIVE`]).
    dropped: u64,
    /// The pane's cursor over `active` then `ended`.
    cursor: Cursor,
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
        self.get(self.cursor.selected())
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
            self.cursor.select(i);
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

impl Health {
    /// Active diagnoses, the one held longest first.
    pub fn active(&self) -> &[HealthEntry] {
        &self.active
    }

    /// Ended diagnoses, the latest ended first.
    pub fn ended(&self) -> &VecDeque<HealthEntry> {
        &self.ended
    }

    /// Diagnoses dropped to stay within [`MAX_ENDED`] and [`MAX_ACTIVE`].
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The pane's cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// The pane's cursor, to scroll the pane sideways.
    pub(in crate::tui) fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    /// Keep the cursor within the list and its `page` rows.
    pub fn clamp(&mut self, page: usize) {
        self.cursor.clamp(self.len(), page);
    }

    /// Move the cursor by `delta` entries in a `page`-row pane.
    pub fn move_by(&mut self, delta: isize, page: usize) {
        self.cursor.move_by(delta, self.len(), page);
    }

    /// A diagnosis started or ended on `conn`: its first evidence frame's row is looked up
    /// among the rows `model` keeps.
    pub fn diagnosis(&mut self, model: &Model, conn: ConnId, d: Arc<Diagnosis>) {
        let seq = d.evidence.first().and_then(|f| model.kept_row_of(conn, *f));
        self.take(d, seq);
    }

    /// A key while the pane has the focus: moves, and Enter, which selects the selected
    /// diagnosis's first evidence frame.
    pub fn handle_key(&mut self, a: Action, ctx: &Ctx) -> Outcome {
        if self.cursor.step(a, self.len(), ctx.page).is_some() {
            return Outcome::Moved;
        }
        match a {
            Action::Enter => self.jump(ctx.model),
            _ => Outcome::Ignored,
        }
    }

    /// The selected diagnosis's first evidence frame: reached when the capture can bring it
    /// back, else selected when kept.
    fn jump(&self, model: &Model) -> Outcome {
        let Some(e) = self.selected() else {
            return Outcome::Consumed;
        };
        let d = &e.diagnosis;
        let Some(f) = d.evidence.first().copied() else {
            return Outcome::Message(format!("{} names no evidence frame", d.check.id));
        };
        let seq = model.kept_row_of(d.conn, f).or(e.evidence_seq);
        go_to_frame(model, d.conn, seq, f, "the evidence frame")
    }
}
