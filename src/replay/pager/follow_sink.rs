//! The sink of a pager's re-run for the timeline (`mod.rs`): from the pipeline's events over
//! the whole capture, it keeps the followed link's or channel's frames around the one asked
//! (at most half the bound before it, the rest from it on) as [`Step`]s, and times their
//! deliveries by what the frames' context says settles them (the state layer's pairing, the
//! one `amqpeek stats` reads) over every frame of the connection, so a settlement far from its
//! delivery is found. A link's dispositions are the frames that settle its deliveries (a
//! settlement of its flow).
//!
//! Once the bound is reached it keeps no more frames, and reads on only while a delivery it
//! keeps still awaits its settlement (until the connection's end at most). Memory: the steps
//! (no frame bytes) and the numbering's few keys per connection; never the capture.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::browse::follow::{FollowRequest, Followed, Settlement, Step};
use crate::browse::numbering::{Numbering, Place};
use crate::capture::Stop;
use crate::event::{Awaits, Event, EventKind, FrameEvent, FrameRef, Timestamp};
use crate::hash::{HashMap, HashSet};

use super::Cancel;

/// Keeps the followed frames around the one asked from a re-run's events.
pub(super) struct FollowSink {
    request: FollowRequest,
    /// Steps kept, at most.
    rows: usize,
    numbering: Numbering,
    steps: VecDeque<Step>,
    /// The kept steps that start a delivery, by the frame's place.
    starts: HashMap<FrameRef, u64>,
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
            steps: VecDeque::new(),
            starts: HashMap::default(),
            before: 0,
            awaiting: HashSet::default(),
            cut: (false, false),
            done: false,
            stop,
            cancel,
        }
    }

    /// Number the re-run's rows from `first` on (a spool ring's first row).
    pub(super) fn start_at(&mut self, first: u64) {
        self.numbering = Numbering::starting_at(first);
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
            EventKind::Gap { .. } => {
                // As the state layer: a gap forgets what was waiting.
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
        let cx = &f.context;
        let follow = &self.request.follow;
        let name = f.frame.name();
        let owns = follow.owns(cx.link_name(), f.frame.channel(), name)
            || cx.settles.iter().any(|s| follow.is_flow(&s.flow));
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
        if let Some(d) = cx.delivery {
            if d.starts && self.last_is(seq) {
                self.starts.insert(d.start, seq);
            }
            match d.awaits {
                Some(Awaits::Settlement) if d.starts && self.last_is(seq) => {
                    self.awaiting.insert(seq);
                }
                Some(Awaits::NotAwaited) => {
                    self.settle(d.start, Settlement::NotAwaited(d.kind.not_awaited()))
                }
                // Never to be timed: nothing to wait for.
                Some(Awaits::Untimed) => self.forget(d.start),
                _ => {}
            }
        }
        for s in &cx.settles {
            self.settle(s.start, Settlement::After(s.after_us, s.kind.by()));
        }
    }

    /// The delivery started at `start` will not be settled as far as the view can tell.
    fn forget(&mut self, start: FrameRef) {
        if let Some(seq) = self.starts.remove(&start) {
            self.awaiting.remove(&seq);
        }
    }

    /// Whether the latest step kept is row `seq`.
    fn last_is(&self, seq: u64) -> bool {
        self.steps.back().is_some_and(|s| s.seq == seq)
    }

    /// The delivery started at `start` was settled: its step says how, if it is kept.
    fn settle(&mut self, start: FrameRef, how: Settlement) {
        let Some(start) = self.starts.remove(&start) else {
            return;
        };
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
            self.starts.retain(|_, seq| *seq != s.seq);
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
