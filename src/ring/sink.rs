//! The ring as a sink of the live driver: each event rendered to its JSONL record (masked as
//! every capture is) and kept in the [`Store`](super::store::Store); a trigger that fires
//! arms a dump.

use std::sync::Arc;

use crate::event::{Event, EventKind};
use crate::pipeline::{Render, Sink};
use crate::sinks::{JsonOptions, JsonlSink};

use super::Shared;
use super::pins;
use super::store::Span;
use super::trigger::Trigger;

/// Takes the live run's events into the ring.
pub struct RingSink {
    shared: Arc<Shared>,
    render: Box<dyn Render>,
    line: Vec<u8>,
    triggers: Vec<Trigger>,
}

impl std::fmt::Debug for RingSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSink")
            .field("triggers", &self.triggers)
            .finish()
    }
}

/// Where the bytes of the record of `kind` sit in their stream.
fn span(kind: &EventKind) -> Option<Span> {
    let (dir, start, len) = match kind {
        EventKind::Header {
            dir, offset, raw, ..
        } => (*dir, *offset, raw.len() as u64),
        EventKind::Frame(f) => (f.dir, f.offset, f.raw.len() as u64),
        EventKind::Undecoded { dir, offset, bytes } => (*dir, *offset, bytes.len() as u64),
        EventKind::Gap {
            dir, offset, len, ..
        } => (*dir, *offset, *len),
        EventKind::Fin { dir, offset } => (*dir, *offset, 0),
        _ => return None,
    };
    Some(Span {
        dir,
        start,
        end: start.saturating_add(len),
    })
}

impl RingSink {
    pub(super) fn new(shared: Arc<Shared>, triggers: Vec<Trigger>, opts: JsonOptions) -> Self {
        let render = JsonlSink::new(std::io::sink(), opts)
            .renderer()
            .expect("the JSONL sink renders");
        RingSink {
            shared,
            render,
            line: Vec::new(),
            triggers,
        }
    }
}

impl Sink for RingSink {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.line.clear();
        self.render.render(ev, &mut self.line);
        self.render.end(&mut self.line);
        let fired = self.triggers.iter().find_map(|t| t.fires(&ev.kind));
        if self.line.is_empty() && fired.is_none() {
            return Ok(());
        }
        let mut state = self.shared.lock();
        if !self.line.is_empty() {
            state.store.push(
                ev.conn,
                ev.ts,
                span(&ev.kind),
                &self.line,
                pins::pinned(&ev.kind),
                matches!(ev.kind, EventKind::Close(_)),
            );
        }
        if let Some(name) = fired {
            state.arm(name, self.shared.after);
            self.shared.wake.notify_all();
        }
        if self.line.capacity() > 1 << 20 {
            self.line = Vec::new();
            self.render.release_spare();
        }
        Ok(())
    }
}
