//! The sink of a pager's re-run for the timeline (`mod.rs`): from the pipeline's events over
//! the whole capture, it keeps the followed link's or channel's frames around the one asked
//! (at most half the bound before it, the rest from it on) as [`Step`]s, and times their
//! deliveries with the protocols' own traffic accounting (`crate::protocol::Traffics`, the
//! pairing `amqpeek stats` uses) run over every frame of the connection, so a settlement far
//! from its delivery is found. A link's dispositions are the frames that settle its
//! deliveries (a `Note::Settled` of its flow).
//!
//! Once the bound is reached it keeps no more frames, and reads on only while a delivery it
//! keeps still awaits its settlement (until the connection's end at most). Memory: the steps
//! (no frame bytes), the numbering's few keys per connection, and the traffic accounting's
//! bounded maps; never the capture.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::browse::follow::{FollowRequest, Followed, Settlement, Step};
use crate::browse::numbering::{Numbering, Place};
use crate::capture::Stop;
use crate::event::{Event, EventKind, FrameEvent, Timestamp};
use crate::filter::LinkNames;
use crate::hash::HashSet;
use crate::protocol::Traffics;
use crate::stats::{At, Note};

use super::Cancel;

/// Keeps the followed frames around the one asked from a re-run's events.
pub(super) struct FollowSink {
    request: FollowRequest,
    /// Steps kept, at most.
    rows: usize,
    numbering: Numbering,
    links: LinkNames,
    traffic: Traffics,
    notes: Vec<Note>,
    steps: VecDeque<Step>,
    /// Kept steps before the one asked.
    before: usize,
    /// Kept steps that start a delivery not settled yet.
    awaiting: HashSet<u64>,
    /// Followed frames left out: before the first kept step, after the last.
    cut: (bool, bool),
    done: bool,
    stop: Stop,
    cancel: Cancel,
}

impl FollowSink {
    pub(super) fn new(
        request: FollowRequest,
        rows: usize,
        stop: Stop,
        cancel: Cancel,
    ) -> FollowSink {
        FollowSink {
            request,
            rows: rows.max(1),
            numbering: Numbering::default(),
            links: LinkNames::default(),
            traffic: Traffics::default(),
            notes: Vec::new(),
            steps: VecDeque::new(),
            before: 0,
            awaiting: HashSet::default(),
            cut: (false, false),
            done: false,
            stop,
            cancel,
        }
    }

    fn end(&mut self) {
        self.done = true;
        self.stop.stop();
    }

    /// No more steps are kept: the bound is reached with the one asked among them.
    fn full(&self) -> bool {
        self.steps.len() >= self.rows && self.steps.len() > self.before
    }

    pub(super) fn event(&mut self, e: &Event) {
        if self.done {
            return;
        }
        if self.cancel.cancelled() {
            self.end();
            return;
        }
        let place = self.numbering.place(e);
        if e.conn != self.request.follow.conn() {
            return;
        }
        let Place::Row(seq) = place else { return };
        match &e.kind {
            EventKind::Frame(f) => self.frame(seq, e.ts, f),
            EventKind::Gap { dir, .. } => {
                // As the statistics: a gap forgets what was waiting.
                self.traffic.gap(*dir);
                self.awaiting.clear();
            }
            EventKind::Close(_) => self.end(),
            _ => {}
        }
        if self.full() && self.awaiting.is_empty() {
            self.end();
        }
    }

    fn frame(&mut self, seq: u64, ts: Timestamp, f: &Arc<FrameEvent>) {
        let link = self.links.of(f);
        let at = At {
            seq,
            dir: f.dir,
            ts: ts.0,
            size: f.size(),
        };
        let mut notes = std::mem::take(&mut self.notes);
        self.traffic.frame(at, &f.frame, &mut notes);
        let follow = &self.request.follow;
        let name = f.frame.name();
        let owns = follow.owns(link.as_deref(), f.frame.channel(), name)
            || notes
                .iter()
                .any(|n| matches!(n, Note::Settled { flow, .. } if follow.is_flow(flow)));
        if owns && self.full() {
            self.cut.1 = true;
        }
        if owns && !self.full() {
            self.steps.push_back(Step {
                seq,
                ts,
                dir: Some(f.dir),
                channel: Some(f.frame.channel()),
                name: name.to_string(),
                summary: f.frame.summary(),
                settlement: None,
            });
            if seq < self.request.around {
                self.before += 1;
                self.trim();
            }
        }
        for note in notes.drain(..) {
            match note {
                Note::Flow { message: true, .. } if self.last_is(seq) => {
                    self.awaiting.insert(seq);
                }
                Note::Settled {
                    start,
                    after_us,
                    kind,
                    ..
                } => self.settle(start, Settlement::After(after_us, kind.by())),
                Note::PreSettled { start, kind } => {
                    self.settle(start, Settlement::NotAwaited(kind.not_awaited()))
                }
                Note::Untimed => {
                    // Never to be timed: nothing to wait for.
                    self.awaiting.remove(&seq);
                }
                Note::Flow { .. } => {}
            }
        }
        self.notes = notes;
    }

    /// Whether the latest step kept is row `seq`.
    fn last_is(&self, seq: u64) -> bool {
        self.steps.back().is_some_and(|s| s.seq == seq)
    }

    /// The delivery started by row `start` was settled: its step says how, if it is kept.
    fn settle(&mut self, start: u64, how: Settlement) {
        self.awaiting.remove(&start);
        if let Ok(i) = self.steps.binary_search_by_key(&start, |s| s.seq) {
            self.steps[i].settlement = Some(how);
        }
    }

    /// Drop the oldest steps before the one asked beyond half the bound.
    fn trim(&mut self) {
        let half = (self.rows / 2).max(1);
        while self.before > half {
            let Some(s) = self.steps.pop_front() else {
                break;
            };
            self.awaiting.remove(&s.seq);
            self.before -= 1;
            self.cut.0 = true;
        }
    }

    pub(super) fn finish(self) -> Followed {
        Followed {
            request: self.request,
            steps: self.steps.into(),
            cut: self.cut,
        }
    }
}
