//! `--filter EXPR` headless: a [`Sink`] wrapper that forwards only what the filter passes, as
//! `tshark -Y` does, so any output (trace, JSONL, pcapng) of any driver loop can be filtered.
//! The relay and the verdict are never filtered (the wrapper sits in front of outputs only).
//!
//! What a filtered output holds:
//! - every `connect`, `close`, protocol `header`, `gap` and `state` event, and undecoded bytes
//!   (what no frame holds): the connections and their protocols stay readable;
//! - the frames the filter passes, each with its own violations (those right after it, at its
//!   offset); a frame it does not pass goes with its violations;
//! - a violation of no frame (at a close, at a header) when it passes as a row of its own (no
//!   name, its message as summary, its rule);
//! - in a pcapng, the bytes of what it holds: a frame not passed leaves a hole in its TCP
//!   stream (Wireshark: "previous segment not captured"); replayed, amqpeek reads the hole as
//!   a gap and tracks nothing it could not see. A JSONL's offsets have the same holes, read
//!   back as gaps.
//! - in a capture (a sink that [records cuts](Sink::records_cuts)), each run of frames not
//!   passed as a `Gap` event where the first of them was (before anything else of its
//!   connection), so that reading it back knows of the hole before what the peers sent after
//!   it: a pcapng then acknowledges the missing bytes at once, a JSONL holds a `gap` record.
//!
//! A filter with `violations` or `rule:` judges a frame once its violations are known: at the
//! next event that is not one of them, or at the flush (violations follow their frame within
//! one batch).

mod bytes;

use std::collections::HashMap;
use std::io;
use std::ops::Range;

use crate::event::{ConnId, Dir, Event, EventKind, FrameEvent, Timestamp};
use crate::filter::{Filter, FrameFacts, frame_proto};
use crate::pipeline::Sink;

use self::bytes::DirBytes;

/// A sink that passes `inner` only what `filter` matches (see the module doc).
pub struct FilteredSink<S> {
    inner: S,
    filter: Filter,
    /// A frame waiting for its violations, with them and its link.
    pending: Option<Pending>,
    conns: HashMap<ConnId, ConnState>,
    /// The inner sink is a capture: what is left out goes to it as gaps.
    cuts: bool,
}

struct Pending {
    frame: Event,
    violations: Vec<Event>,
    link: Option<String>,
    /// Chosen besides the filter ([`FilteredSink::event_chosen`]).
    chosen: bool,
}

#[derive(Default)]
struct ConnState {
    dirs: [DirBytes; 2],
    /// Per direction: the run of frames not passed since the last event forwarded, as
    /// (stream range, time of its first frame).
    cuts: [Option<(Range<u64>, Timestamp)>; 2],
    /// Runs ended by a later run not adjacent to them, waiting as their cuts do:
    /// (time, direction, stream range).
    spilled: Vec<(Timestamp, Dir, Range<u64>)>,
    /// `Data` events flow (a pcapng is written): a gap waits for the bytes kept before it.
    data_flows: bool,
}

impl<S: Sink> FilteredSink<S> {
    /// `inner`, filtered by `filter`.
    pub fn new(inner: S, filter: Filter) -> Self {
        FilteredSink {
            cuts: inner.records_cuts(),
            inner,
            filter,
            pending: None,
            conns: HashMap::new(),
        }
    }

    /// The wrapped sink.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn conn(&mut self, id: ConnId) -> &mut ConnState {
        self.conns.entry(id).or_default()
    }

    /// Judge the pending frame with its violations; forward them if it passes.
    fn resolve(&mut self) -> io::Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let EventKind::Frame(f) = &p.frame.kind else {
            return Ok(());
        };
        let rules: Vec<String> = p
            .violations
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation(v) => Some(v.rule.id.to_string()),
                _ => None,
            })
            .collect();
        let keep = p.chosen && self.frame_passes(p.frame.conn, f, p.link.as_deref(), &rules);
        let conn = p.frame.conn;
        let range = f.offset..f.offset + f.raw.len() as u64;
        if keep {
            self.forward(&p.frame)?;
            for v in &p.violations {
                self.forward(v)?;
            }
        } else if self.cuts {
            self.cut(conn, f.dir, range.clone(), p.frame.ts);
        }
        self.decide(conn, f.dir, range, keep, &p.frame)
    }

    /// Frame bytes `range` of `dir`, from `ts`, are left out: they join the run of the frames
    /// left out before them (a run not adjacent goes out as its gap first).
    fn cut(&mut self, conn: ConnId, dir: Dir, range: Range<u64>, ts: Timestamp) {
        let c = self.conn(conn);
        match &mut c.cuts[dir.index()] {
            Some((r, _)) if r.end == range.start => r.end = range.end,
            slot => {
                if let Some((r, t)) = slot.replace((range, ts)) {
                    c.spilled.push((t, dir, r));
                }
            }
        }
    }

    /// Pass `ev` on, after the gaps of the frames of its connection left out before it (in
    /// the order the first frame of each was seen). Bytes of a direction that come before a
    /// run left out (`Data` decided late) go out before its gap.
    fn forward(&mut self, ev: &Event) -> io::Result<()> {
        let ahead = stream_end(ev);
        let closing = matches!(ev.kind, EventKind::Close(_));
        let mut gaps = Vec::new();
        if let Some(c) = self.conns.get_mut(&ev.conn) {
            let (dirs, flows) = (&c.dirs, c.data_flows);
            let later = |dir: Dir, r: &Range<u64>| {
                !closing
                    && (ahead.is_some_and(|(d, end)| d == dir && r.start >= end)
                        || flows && dirs[dir.index()].owes_before(r.start))
            };
            let mut i = 0;
            while i < c.spilled.len() {
                if later(c.spilled[i].1, &c.spilled[i].2) {
                    i += 1;
                } else {
                    gaps.push(c.spilled.remove(i));
                }
            }
            for dir in [Dir::C2S, Dir::S2C] {
                let slot = &mut c.cuts[dir.index()];
                if slot.as_ref().is_some_and(|(r, _)| !later(dir, r))
                    && let Some((r, t)) = slot.take()
                {
                    gaps.push((t, dir, r));
                }
            }
        }
        gaps.sort_by_key(|g| g.0);
        for (ts, dir, r) in gaps {
            self.inner.event(&Event {
                conn: ev.conn,
                ts,
                kind: EventKind::Gap {
                    dir,
                    offset: r.start,
                    len: r.end - r.start,
                    reason: format!("{} bytes left out by the filter", r.end - r.start),
                },
            })?;
        }
        self.inner.event(ev)
    }

    fn frame_passes(
        &self,
        conn: ConnId,
        f: &FrameEvent,
        link: Option<&str>,
        rules: &[String],
    ) -> bool {
        let summary = if self.filter.reads_summary() {
            f.line()
        } else {
            String::new()
        };
        self.filter.matches(&FrameFacts {
            conn,
            dir: Some(f.dir),
            channel: Some(f.frame.channel()),
            name: f.frame.name(),
            summary: &summary,
            link,
            proto: frame_proto(&f.frame),
            rules,
            frame: Some(&f.frame),
        })
    }

    /// Bytes `range` of `dir` are decided; forward the `Data` now decided and kept.
    fn decide(
        &mut self,
        conn: ConnId,
        dir: Dir,
        range: std::ops::Range<u64>,
        keep: bool,
        at: &Event,
    ) -> io::Result<()> {
        let d = &mut self.conn(conn).dirs[dir.index()];
        d.decide(range, keep);
        self.release(conn, dir, at)
    }

    fn release(&mut self, conn: ConnId, dir: Dir, at: &Event) -> io::Result<()> {
        let mut out = Vec::new();
        self.conn(conn).dirs[dir.index()].release(&mut out);
        for (offset, bytes, ts) in out {
            self.forward(&Event {
                conn: at.conn,
                ts,
                kind: EventKind::Data { dir, offset, bytes },
            })?;
        }
        Ok(())
    }

    /// A violation of no pending frame: passed when it matches as a row of its own.
    fn lone_violation(&mut self, ev: &Event, v: &crate::event::Violation) -> io::Result<()> {
        let rules = [v.rule.id.to_string()];
        let pass = self.filter.matches(&FrameFacts {
            conn: ev.conn,
            dir: Some(v.dir),
            channel: None,
            name: "",
            summary: &v.message,
            link: None,
            proto: "",
            rules: &rules,
            frame: None,
        });
        if pass {
            self.forward(ev)?;
        }
        Ok(())
    }

    /// Whether `v` (on `conn`) is the pending frame's own violation.
    fn is_own(&self, conn: ConnId, v: &crate::event::Violation) -> bool {
        self.pending.as_ref().is_some_and(|p| {
            p.frame.conn == conn
                && matches!(&p.frame.kind, EventKind::Frame(f) if f.dir == v.dir && f.offset == v.offset)
        })
    }
}

/// The direction of the bytes `ev` carries and the stream offset they end at (`None` for an
/// event of no bytes).
fn stream_end(ev: &Event) -> Option<(Dir, u64)> {
    match &ev.kind {
        EventKind::Data { dir, offset, bytes } | EventKind::Undecoded { dir, offset, bytes } => {
            Some((*dir, offset + bytes.len() as u64))
        }
        EventKind::Header {
            dir, offset, raw, ..
        } => Some((*dir, offset + raw.len() as u64)),
        EventKind::Frame(f) => Some((f.dir, f.offset + f.raw.len() as u64)),
        _ => None,
    }
}

impl<S: Sink> FilteredSink<S> {
    /// As [`Sink::event`], with a frame (or a violation of no frame) passed only when it is
    /// also `chosen`: a choice the filter language cannot make (the TUI's marked frames, by
    /// row number). The other events are what they always are.
    pub fn event_chosen(&mut self, ev: &Event, chosen: bool) -> io::Result<()> {
        if let EventKind::Violation(v) = &ev.kind
            && self.is_own(ev.conn, v)
        {
            if let Some(p) = self.pending.as_mut() {
                p.violations.push(ev.clone());
            }
            return Ok(());
        }
        self.resolve()?;
        match &ev.kind {
            EventKind::Frame(f) => {
                let link = f.context.link_name().map(String::from);
                self.pending = Some(Pending {
                    frame: ev.clone(),
                    violations: Vec::new(),
                    link,
                    chosen,
                });
                Ok(())
            }
            EventKind::Violation(_) if !chosen => Ok(()),
            EventKind::Violation(v) => self.lone_violation(ev, v),
            EventKind::Data { dir, offset, bytes } => {
                self.conn(ev.conn).data_flows = true;
                self.conn(ev.conn).dirs[dir.index()].data(*offset, bytes.clone(), ev.ts);
                self.release(ev.conn, *dir, ev)
            }
            EventKind::Header {
                dir, offset, raw, ..
            } => {
                self.forward(ev)?;
                let range = *offset..offset + raw.len() as u64;
                self.decide(ev.conn, *dir, range, true, ev)
            }
            EventKind::Undecoded { dir, offset, bytes } => {
                self.forward(ev)?;
                let range = *offset..offset + bytes.len() as u64;
                self.decide(ev.conn, *dir, range, true, ev)
            }
            EventKind::Close(_) => {
                let res = self.forward(ev);
                self.conns.remove(&ev.conn);
                res
            }
            EventKind::Connect { .. }
            | EventKind::Gap { .. }
            | EventKind::State(_)
            | EventKind::Diagnosis(_)
            | EventKind::Fin { .. } => self.forward(ev),
        }
    }
}

impl<S: Sink> Sink for FilteredSink<S> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.event_chosen(ev, true)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.resolve()?;
        self.inner.flush()
    }

    fn needs_every_frame(&self) -> bool {
        self.inner.needs_every_frame()
    }
}
