//! The pager of a file replay: on a thread of its own, it brings back the rows around a frame
//! no longer in memory by re-running the ordinary pipeline over the capture file from its
//! start (the same capture, options and order as the first pass, so the same events and, with
//! the same [`Numbering`], the same row numbers), keeping only the events of the window around
//! the target ([`WindowSink`]), and reading no further once it has them.
//!
//! Memory: the window (at most `rows` rows and `max_bytes` of frames in scope, with what
//! belongs to them), each connection's latest state before it, and the numbering's few keys
//! per connection; never the capture. The state of a frame is the pipeline's own as of that
//! frame, as in the first pass: nothing is tracked here.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};

use crate::capture::{CaptureSource, Stop};
use crate::driver::offline::{self, Pace};
use crate::event::{ConnId, Dir, Event, EventKind};
use crate::filter::LinkNames;
use crate::hash::HashMap;
use crate::pipeline::{InspectOptions, Sink};
use crate::state::Snapshot;

use super::numbering::{Numbering, Place};
use super::window::{Item, Window, WindowRequest};

/// Opens the capture file anew, reading no further once the flag is set (`None`: it cannot
/// be opened any more).
pub type Opener = Box<dyn Fn(&Stop) -> Option<CaptureSource> + Send>;

/// How big a window is.
#[derive(Clone, Copy, Debug)]
pub struct WindowSize {
    /// Rows in scope, at most (at most half before the target, the rest from it).
    pub rows: usize,
    /// Bytes of the rows' frames in scope, at most (the target's always kept).
    pub max_bytes: usize,
}

/// The UI's handle on the pager thread; dropping it stops the thread's current re-run.
#[derive(Debug)]
pub struct Pager {
    requests: Sender<WindowRequest>,
    windows: Receiver<Window>,
    latest: Arc<AtomicU64>,
    quit: Stop,
    /// Bytes of the file the first pass has read.
    pub read: Arc<AtomicU64>,
    /// The file's size.
    pub total: u64,
}

impl Pager {
    /// Start the pager thread. `read` counts the bytes the first pass reads of the file, of
    /// `total`.
    pub fn spawn(
        open: Opener,
        inspect: InspectOptions,
        size: WindowSize,
        read: Arc<AtomicU64>,
        total: u64,
    ) -> Pager {
        let (requests, rx) = channel::<WindowRequest>();
        let (tx, windows) = channel();
        let latest = Arc::new(AtomicU64::new(0));
        let quit = Stop::new();
        let (latest2, quit2) = (latest.clone(), quit.clone());
        std::thread::spawn(move || {
            while let Ok(mut request) = rx.recv() {
                // Only the latest request matters.
                loop {
                    match rx.try_recv() {
                        Ok(r) => request = r,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => return,
                    }
                }
                let cancel = Cancel {
                    id: request.id,
                    latest: latest2.clone(),
                    quit: quit2.clone(),
                };
                let window = window_of(&open, &inspect, request, size, cancel);
                if tx.send(window).is_err() {
                    return;
                }
            }
        });
        Pager {
            requests,
            windows,
            latest,
            quit,
            read,
            total,
        }
    }

    /// Ask for a window (a re-run for an older request stops).
    pub fn request(&self, r: WindowRequest) {
        self.latest.store(r.id, Ordering::SeqCst);
        let _ = self.requests.send(r);
    }

    /// A window that has come, if any.
    pub fn try_recv(&self) -> Option<Window> {
        self.windows.try_recv().ok()
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.quit.stop();
    }
}

/// Why a re-run stops before it has its window: a newer request, or the UI gone.
struct Cancel {
    id: u64,
    latest: Arc<AtomicU64>,
    quit: Stop,
}

impl Cancel {
    fn cancelled(&self) -> bool {
        self.quit.is_stopped() || self.latest.load(Ordering::SeqCst) != self.id
    }
}

/// Re-run the pipeline over the capture for the window `request` asks.
fn window_of(
    open: &Opener,
    inspect: &InspectOptions,
    request: WindowRequest,
    size: WindowSize,
    cancel: Cancel,
) -> Window {
    let stop = Stop::new();
    let mut sink = WindowSink::new(request, size, stop.clone(), cancel);
    if let Some(source) = open(&stop) {
        let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(Lent(&mut sink))];
        offline::run(
            source,
            inspect.clone(),
            sinks,
            NonZeroUsize::MIN,
            Pace::Batched,
        );
    }
    sink.finish()
}

/// The sink of a re-run, lent to the pipeline.
struct Lent<'a>(&'a mut WindowSink);

impl Sink for Lent<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.event(ev);
        Ok(())
    }
}

/// A row of the window and what belongs to it.
#[derive(Debug)]
struct Group {
    seq: u64,
    conn: ConnId,
    items: Vec<Item>,
    bytes: usize,
}

/// Keeps the events of the window around a target row from a re-run's events.
struct WindowSink {
    request: WindowRequest,
    size: WindowSize,
    numbering: Numbering,
    links: HashMap<ConnId, LinkNames>,
    groups: VecDeque<Group>,
    held: usize,
    before: usize,
    after: usize,
    /// Each connection's latest row (kept or not).
    last_row: HashMap<ConnId, u64>,
    /// Each connection's latest state before its first kept row.
    base: HashMap<ConnId, Arc<Snapshot>>,
    /// Kept malformed rows still waiting for their bytes: (conn, dir, offset).
    pending: Vec<(ConnId, Dir, u64)>,
    done: bool,
    stop: Stop,
    cancel: Cancel,
}

impl WindowSink {
    fn new(request: WindowRequest, size: WindowSize, stop: Stop, cancel: Cancel) -> WindowSink {
        WindowSink {
            request,
            size,
            numbering: Numbering::default(),
            links: HashMap::default(),
            groups: VecDeque::new(),
            held: 0,
            before: 0,
            after: 0,
            last_row: HashMap::default(),
            base: HashMap::default(),
            pending: Vec::new(),
            done: false,
            stop,
            cancel,
        }
    }

    fn half(&self) -> usize {
        (self.size.rows / 2).max(1)
    }

    fn in_scope(&self, conn: ConnId) -> bool {
        self.request.scope.is_none_or(|s| s == conn)
    }

    fn end(&mut self) {
        self.done = true;
        self.stop.stop();
    }

    fn event(&mut self, e: &Event) {
        if self.done {
            return;
        }
        if self.cancel.cancelled() {
            self.end();
            return;
        }
        let place = self.numbering.place(e);
        if !self.in_scope(e.conn) {
            return;
        }
        let link = match &e.kind {
            EventKind::Frame(f) => self.links.entry(e.conn).or_default().of(f),
            _ => None,
        };
        match place {
            Place::Row(seq) => self.row(seq, link, e),
            Place::Attach(seq) => {
                if let Some(g) = self.group_mut(seq) {
                    g.items.push(Item {
                        place,
                        link: None,
                        event: e.clone(),
                    });
                }
            }
            Place::None => match &e.kind {
                EventKind::State(s) => self.state(e, s),
                EventKind::Data { dir, offset, bytes } => {
                    self.data(e, *dir, *offset, bytes.len() as u64)
                }
                _ => {}
            },
        }
    }

    fn row(&mut self, seq: u64, link: Option<String>, e: &Event) {
        let target = self.request.target.1;
        // Fewer rows before the target than half a window (it is near the start): more after.
        let full = self.before + self.after >= self.size.rows.max(1) && self.after >= 1;
        if full || (seq > target && self.held > self.size.max_bytes) {
            // The window is complete: read no further.
            self.end();
            return;
        }
        self.last_row.insert(e.conn, seq);
        let bytes = match &e.kind {
            EventKind::Frame(f) => f.raw.len(),
            EventKind::Header { raw, .. } => raw.len(),
            _ => 0,
        } + 64;
        if let EventKind::Violation(v) = &e.kind {
            self.pending.push((e.conn, v.dir, v.offset));
        }
        self.groups.push_back(Group {
            seq,
            conn: e.conn,
            items: vec![Item {
                place: Place::Row(seq),
                link,
                event: e.clone(),
            }],
            bytes,
        });
        self.held += bytes;
        if seq >= target {
            self.after += 1;
        } else {
            self.before += 1;
        }
        self.trim();
    }

    /// Drop the oldest rows before the target beyond half a window (or the byte bound); their
    /// states become their connections' states before the window.
    fn trim(&mut self) {
        let target = self.request.target.1;
        while let Some(front) = self.groups.front() {
            let over = self.before > self.half()
                || (self.held > self.size.max_bytes && self.groups.len() > 1);
            if front.seq >= target || !over {
                break;
            }
            let Some(g) = self.groups.pop_front() else {
                break;
            };
            self.held = self.held.saturating_sub(g.bytes);
            self.before -= 1;
            for it in g.items {
                if let EventKind::State(s) = it.event.kind {
                    self.base.insert(g.conn, s);
                }
            }
        }
    }

    fn group_mut(&mut self, seq: u64) -> Option<&mut Group> {
        let i = self.groups.binary_search_by_key(&seq, |g| g.seq).ok()?;
        self.groups.get_mut(i)
    }

    /// A state goes with its connection's latest row when that is kept, else before them.
    fn state(&mut self, e: &Event, s: &Arc<Snapshot>) {
        let last = self.last_row.get(&e.conn).copied();
        match last.and_then(|seq| self.group_mut(seq)) {
            Some(g) => g.items.push(Item {
                place: Place::None,
                link: None,
                event: e.clone(),
            }),
            None => {
                self.base.insert(e.conn, s.clone());
            }
        }
    }

    /// Bytes go with their connection's latest row when they are those of a kept malformed
    /// row (the app cuts them to it); other bytes are not needed.
    fn data(&mut self, e: &Event, dir: Dir, offset: u64, len: u64) {
        let end = offset.saturating_add(len);
        let mut wanted = false;
        self.pending.retain(|(c, d, at)| {
            if *c != e.conn || *d != dir || *at >= end {
                return true;
            }
            wanted |= *at >= offset;
            false
        });
        if !wanted {
            return;
        }
        let last = self.last_row.get(&e.conn).copied();
        if let Some(g) = last.and_then(|seq| self.group_mut(seq)) {
            g.items.push(Item {
                place: Place::None,
                link: None,
                event: e.clone(),
            });
        }
    }

    fn finish(self) -> Window {
        Window {
            request: self.request,
            base: self.base.into_iter().collect(),
            items: self.groups.into_iter().flat_map(|g| g.items).collect(),
        }
    }
}
