//! The sinks of a run, with the one sink-error policy, and what inspection workers make for
//! them ([`Output`]).
//!
//! A sink that fails (a capture that cannot be written: its error names its flag and path) is
//! reported once on stderr, dropped, and the run goes on with the others; the run's caller
//! ends it with exit status 2 ([`SinkSet::into_failures`]). A reader of stdout that went away
//! (`| head`, a closed Wireshark) is the reader's choice, not a failure: that sink is dropped
//! silently.

use std::io;
use std::ops::Range;

use crate::event::Event;
use crate::pipeline::{Render, Sink};

/// What inspection made for a run of source events, split into pieces (one per source event,
/// or per connection closed at the end) so that a sequencer can write them in any order it
/// must: the events for the sinks that take events, and the bytes of each rendering sink.
#[derive(Debug, Default)]
pub struct Output {
    /// Events, for the sinks that take events (none kept when no sink does).
    events: Vec<Event>,
    /// Bytes per sink (empty for the sinks that take events).
    bytes: Vec<Vec<u8>>,
    /// Where each piece ends: `1 + sinks` entries per piece (events, then each sink's bytes).
    ends: Vec<usize>,
}

/// Bytes of rendered output a sink's buffer keeps room for across [`Output::release_spare`].
const KEEP_BYTES: usize = 64 * 1024;
/// Events and piece ends kept room for across [`Output::release_spare`].
const KEEP_PIECES: usize = 256;

impl Output {
    /// How many pieces it holds.
    pub fn pieces(&self) -> usize {
        self.ends.len() / (1 + self.bytes.len()).max(1)
    }

    /// Empty it, keeping its buffers for the next batch.
    pub fn clear(&mut self) {
        self.events.clear();
        self.bytes.iter_mut().for_each(Vec::clear);
        self.ends.clear();
    }

    /// Empty it for the next batch, keeping each sink's buffer unless it grew beyond `keep`
    /// bytes: a buffer grown anew every batch costs a copy of every rendered byte.
    pub fn recycle(&mut self, keep: usize) {
        self.clear();
        for buf in &mut self.bytes {
            if buf.capacity() > keep {
                *buf = Vec::new();
            }
        }
    }

    /// Empty it and let go of buffers grown beyond what an ordinary batch needs (a burst of
    /// large frames grows them to megabytes): for a worker about to wait for traffic.
    pub fn release_spare(&mut self) {
        self.recycle(KEEP_BYTES);
        self.events.shrink_to(KEEP_PIECES);
        self.ends.shrink_to(KEEP_PIECES);
    }

    /// Whether it holds nothing to write.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.bytes.iter().all(Vec::is_empty)
    }

    fn start(&self, piece: usize, i: usize) -> usize {
        match piece {
            0 => 0,
            p => self.ends[(p - 1) * (1 + self.bytes.len()) + i],
        }
    }

    fn end(&self, piece: usize, i: usize) -> usize {
        self.ends[piece * (1 + self.bytes.len()) + i]
    }
}

/// What one worker keeps of a run's sinks: a [`Render`] for each sink that renders, and
/// whether any sink takes events. Fills [`Output`]s.
pub struct Part {
    renders: Vec<Option<Box<dyn Render>>>,
    events: bool,
}

impl Part {
    /// Let each renderer go of what a burst grew (see [`Render::release_spare`]).
    pub fn release_spare(&mut self) {
        self.renders
            .iter_mut()
            .flatten()
            .for_each(|r| r.release_spare());
    }

    /// Whether any sink renders (has its bytes made here).
    pub fn renders(&self) -> bool {
        self.renders.iter().any(Option::is_some)
    }

    /// Take `events` (emptied) into `out` as one more piece.
    pub fn take(&mut self, events: &mut Vec<Event>, out: &mut Output) {
        if out.bytes.len() != self.renders.len() {
            out.bytes.resize_with(self.renders.len(), Vec::new);
        }
        for (r, buf) in self.renders.iter_mut().zip(out.bytes.iter_mut()) {
            if let Some(r) = r {
                for e in events.iter() {
                    r.render(e, buf);
                }
                r.end(buf);
            }
        }
        if self.events {
            out.events.append(events);
        } else {
            events.clear();
        }
        out.ends.push(out.events.len());
        out.ends.extend(out.bytes.iter().map(Vec::len));
    }
}

/// One sink of the run; `None` once it failed.
struct Slot<'a> {
    sink: Option<Box<dyn Sink + Send + 'a>>,
    renders: bool,
}

/// The sinks of one run.
pub struct SinkSet<'a> {
    slots: Vec<Slot<'a>>,
    /// What the run went on with when a sink failed, for the report (`the relay`, `the replay`).
    going_on: &'static str,
    failures: Vec<String>,
}

impl std::fmt::Debug for SinkSet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkSet")
            .field("sinks", &self.slots.len())
            .field("failures", &self.failures)
            .finish()
    }
}

impl<'a> SinkSet<'a> {
    /// The sinks of a run; `going_on` names what goes on when one fails (`the relay`).
    pub fn new(sinks: Vec<Box<dyn Sink + Send + 'a>>, going_on: &'static str) -> Self {
        let slots = sinks
            .into_iter()
            .map(|sink| Slot {
                renders: sink.renderer().is_some(),
                sink: Some(sink),
            })
            .collect();
        SinkSet {
            slots,
            going_on,
            failures: Vec::new(),
        }
    }

    /// A worker's part of the sinks (each worker gets its own).
    pub fn part(&self) -> Part {
        let renders = self
            .slots
            .iter()
            .map(|s| match (&s.sink, s.renders) {
                (Some(sink), true) => sink.renderer(),
                _ => None,
            })
            .collect();
        let events = self.slots.iter().any(|s| s.sink.is_some() && !s.renders);
        Part { renders, events }
    }

    /// Whether no sink needs every frame (only a live view listens), so a live inspection
    /// that falls behind may skim; false with no sink at all.
    pub fn may_skim(&self) -> bool {
        !self.slots.is_empty()
            && self
                .slots
                .iter()
                .filter_map(|s| s.sink.as_ref())
                .all(|s| !s.needs_every_frame())
    }

    /// Whether every sink there was has failed or gone (a replay then has nothing to do).
    pub fn all_gone(&self) -> bool {
        !self.slots.is_empty() && self.slots.iter().all(|s| s.sink.is_none())
    }

    /// Write pieces `pieces` of `out` to every sink.
    pub fn write(&mut self, out: &Output, pieces: Range<usize>) {
        if pieces.is_empty() {
            return;
        }
        for i in 0..self.slots.len() {
            let renders = self.slots[i].renders;
            let Some(sink) = self.slots[i].sink.as_mut() else {
                continue;
            };
            let result = if renders {
                let (a, b) = (
                    out.start(pieces.start, 1 + i),
                    out.end(pieces.end - 1, 1 + i),
                );
                sink.write_rendered(&out.bytes[i][a..b])
            } else {
                let (a, b) = (out.start(pieces.start, 0), out.end(pieces.end - 1, 0));
                out.events[a..b].iter().try_for_each(|e| sink.event(e))
            };
            if let Err(e) = result {
                self.fail(i, e);
            }
        }
    }

    /// Write every piece of `out`.
    pub fn write_all(&mut self, out: &Output) {
        self.write(out, 0..out.pieces());
    }

    /// Push every sink's buffered output to its destination.
    pub fn flush(&mut self) {
        for i in 0..self.slots.len() {
            if let Some(Err(e)) = self.slots[i].sink.as_mut().map(|s| s.flush()) {
                self.fail(i, e);
            }
        }
    }

    fn fail(&mut self, i: usize, e: io::Error) {
        self.slots[i].sink = None;
        if e.kind() != io::ErrorKind::BrokenPipe {
            let what = format!(
                "{e}: this capture is incomplete ({} went on)",
                self.going_on
            );
            tracing::error!("{what}");
            self.failures.push(what);
        }
    }

    /// Flush, drop every sink (closing its file), and say what failed, each already reported
    /// on stderr when it happened.
    pub fn into_failures(mut self) -> Vec<String> {
        self.flush();
        self.slots.clear();
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, Timestamp};
    use crate::sinks::{JsonOptions, JsonlSink, TraceSink};

    fn connect(conn: u64) -> Event {
        Event {
            conn,
            ts: Timestamp(1_764_417_600_000_000),
            kind: EventKind::Connect {
                client: "127.0.0.1:40000".parse().unwrap(),
                upstream: "127.0.0.1:5672".parse().unwrap(),
            },
        }
    }

    /// Fails every write.
    struct Full;

    impl Sink for Full {
        fn event(&mut self, _: &Event) -> io::Result<()> {
            Err(io::Error::other("--jsonl /full: disk full"))
        }
    }

    #[test]
    fn rendered_and_event_sinks_write_what_the_sinks_would_alone_and_a_failing_one_is_dropped_once()
    {
        let (mut direct_j, mut direct_t) = (Vec::new(), Vec::new());
        {
            let mut j = JsonlSink::new(&mut direct_j, JsonOptions::default());
            let mut t = TraceSink::new(&mut direct_t);
            for c in 1..=3 {
                j.event(&connect(c)).unwrap();
                t.event(&connect(c)).unwrap();
            }
        }
        let (mut jsonl, mut trace) = (Vec::new(), Vec::new());
        let failures = {
            let mut set = SinkSet::new(
                vec![
                    Box::new(JsonlSink::new(&mut jsonl, JsonOptions::default())),
                    Box::new(Full),
                    Box::new(TraceSink::new(&mut trace)),
                ],
                "the relay",
            );
            let mut part = set.part();
            let mut out = Output::default();
            for c in 1..=3 {
                part.take(&mut vec![connect(c)], &mut out);
            }
            assert_eq!(out.pieces(), 3);
            // In two writes, as a sequencer does.
            set.write(&out, 0..1);
            set.write(&out, 1..3);
            set.flush();
            set.into_failures()
        };
        assert_eq!(jsonl, direct_j);
        assert_eq!(trace, direct_t);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].starts_with("--jsonl /full: disk full"));
    }
}
