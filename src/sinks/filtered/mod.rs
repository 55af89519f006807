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
//!
//! A filter with `violations` or `rule:` judges a frame once its violations are known: at the
//! next event that is not one of them, or at the flush (violations follow their frame within
//! one batch).

mod bytes;

use std::collections::HashMap;
use std::io;

use crate::event::{ConnId, Dir, Event, EventKind, FrameEvent};
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
}

struct Pending {
    frame: Event,
    violations: Vec<Event>,
    link: Option<String>,
}

#[derive(Default)]
struct ConnState {
    dirs: [DirBytes; 2],
}

impl<S: Sink> FilteredSink<S> {
    /// `inner`, filtered by `filter`.
    pub fn new(inner: S, filter: Filter) -> Self {
        FilteredSink {
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
        let keep = self.frame_passes(p.frame.conn, f, p.link.as_deref(), &rules);
        let conn = p.frame.conn;
        let range = f.offset..f.offset + f.raw.len() as u64;
        if keep {
            self.inner.event(&p.frame)?;
            for v in &p.violations {
                self.inner.event(v)?;
            }
        }
        self.decide(conn, f.dir, range, keep, &p.frame)
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
            self.inner.event(&Event {
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
            self.inner.event(ev)?;
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

impl<S: Sink> Sink for FilteredSink<S> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
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
                });
                Ok(())
            }
            EventKind::Violation(v) => self.lone_violation(ev, v),
            EventKind::Data { dir, offset, bytes } => {
                self.conn(ev.conn).dirs[dir.index()].data(*offset, bytes.clone(), ev.ts);
                self.release(ev.conn, *dir, ev)
            }
            EventKind::Header {
                dir, offset, raw, ..
            } => {
                self.inner.event(ev)?;
                let range = *offset..offset + raw.len() as u64;
                self.decide(ev.conn, *dir, range, true, ev)
            }
            EventKind::Undecoded { dir, offset, bytes } => {
                self.inner.event(ev)?;
                let range = *offset..offset + bytes.len() as u64;
                self.decide(ev.conn, *dir, range, true, ev)
            }
            EventKind::Close(_) => {
                self.conns.remove(&ev.conn);
                self.inner.event(ev)
            }
            EventKind::Connect { .. }
            | EventKind::Gap { .. }
            | EventKind::State(_)
            | EventKind::Diagnosis(_)
            | EventKind::Fin { .. } => self.inner.event(ev),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.resolve()?;
        self.inner.flush()
    }

    fn needs_every_frame(&self) -> bool {
        self.inner.needs_every_frame()
    }
}
