//! The pager of a file replay into the TUI (the UI's [`WindowSource`]): on a thread of its
//! own, it brings back the rows around a frame no longer in memory by re-running the ordinary
//! pipeline over the capture file from its start (the same capture, options and order as the
//! first pass, so the same events and, with the same `Numbering`, the same row numbers),
//! keeping only the events of the window around the target (`WindowSink`, `window_sink.rs`:
//! with a filter on, the rows it matches; for a search, around the match it finds), and
//! reading no further once it has them. Each request replaces the one before: a re-run for an
//! older one stops at its next event. The windows are the row model's (`crate::browse`): this
//! knows nothing of the UI.
//!
//! The timeline's followed frames of the whole capture ([`FollowRequest`]) are brought back the
//! same way, by a re-run into a `FollowSink` (`follow_sink.rs`) on a second thread, so a window
//! and a timeline do not wait for each other; a newer follow request stops an older re-run.
//!
//! An export of the whole capture ([`ExportRequest`], `e` in the TUI) is one more re-run, on a
//! third thread, into the file asked (`ExportSink`, `export_sink.rs`): every request carried
//! out in turn, none cancelled by a newer one, so that what is written never depends on how
//! many frames the UI holds. A spool ring is written as `replay` reads its segments: with the
//! gaps it starts with and the ends of the connections still open, which the view never had
//! and the other re-runs leave out.
//!
//! The live view's spool ring (`tui::spool`) is paged the same way ([`Pager::spawn_ring`]): its
//! segments re-run in order as one capture whose first row is the first the ring still holds
//! (`Numbering::starting_at`), the gaps its oldest segment starts with (the bytes of the
//! connections before it, removed) and the ends of the connections still open where the
//! writing has got to (the re-run ends there, not the connections) left out: so the rows keep
//! the numbers the live view gave them.
//!
//! Memory: the window (at most `rows` rows and `max_bytes` of frames in scope, with what
//! belongs to them), each connection's latest state before it, and the numbering's few keys
//! per connection; never the capture. The state of a frame is the pipeline's own as of that
//! frame, as in the first pass: nothing is tracked here.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};

use crate::browse::export::{ExportRequest, Exported};
use crate::browse::follow::{FollowRequest, Followed};
use crate::browse::window::{Find, Window, WindowRequest, WindowSource};
use crate::capture::jsonl_read::NOT_IN_CAPTURE;
use crate::capture::{CaptureSource, Stop};
use crate::driver::offline::{self, Pace};
use crate::event::{CloseReason, ConnId, Dir, Event, EventKind};
use crate::filter::Term;
use crate::hash::HashSet;
use crate::pipeline::{InspectOptions, Sink};

use export_sink::ExportSink;
use follow_sink::FollowSink;
use window_sink::WindowSink;

mod export_sink;
mod follow_sink;
mod window_sink;

/// Opens the capture file anew, reading no further once the flag is set (`None`: it cannot
/// be opened any more).
pub type Opener = Box<dyn Fn(&Stop) -> Option<CaptureSource> + Send>;

/// Opens the live view's spool ring anew as one capture, with the number of its first row
/// (`None`: it cannot be opened).
pub type RingOpener = Box<dyn Fn(&Stop) -> Option<(CaptureSource, u64)> + Send>;

/// A capture opened for a re-run.
struct Reopened {
    source: CaptureSource,
    /// The number of its first row.
    first_row: u64,
    /// A spool ring being written: its cut start and open end are left out.
    ring: bool,
}

/// How the pager opens what it re-runs.
type Open = Box<dyn Fn(&Stop) -> Option<Reopened> + Send>;

/// The opener, shared by the pager's two threads (held only while the file is opened).
type Shared = Arc<Mutex<Open>>;

/// Open the capture anew (`None`: it cannot be).
fn reopen(open: &Shared, stop: &Stop) -> Option<Reopened> {
    let open = open.lock().unwrap_or_else(|e| e.into_inner());
    open(stop)
}

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
    follows: Sender<FollowRequest>,
    followed: Receiver<Followed>,
    latest_follow: Arc<AtomicU64>,
    exports: Sender<ExportRequest>,
    exported: Receiver<Exported>,
    /// Bytes of the file the first pass has read.
    pub read: Arc<AtomicU64>,
    /// Rows the current re-run has numbered (how far a search has got).
    pub scanned: Arc<AtomicU64>,
    /// The file's size.
    pub total: u64,
}

impl Pager {
    /// Start the pager's threads (windows, the timeline's followed frames, exports). `read`
    /// counts the bytes the first pass reads of the file, of `total`.
    pub fn spawn(
        open: Opener,
        inspect: InspectOptions,
        size: WindowSize,
        read: Arc<AtomicU64>,
        total: u64,
    ) -> Pager {
        let open: Open = Box::new(move |stop| {
            open(stop).map(|source| Reopened {
                source,
                first_row: 0,
                ring: false,
            })
        });
        Pager::start(open, inspect, size, read, total)
    }

    /// Start the pager of the live view's spool ring: each re-run reads the ring's segments
    /// as they are then, its rows numbered from the first the ring holds.
    pub fn spawn_ring(open: RingOpener, inspect: InspectOptions, size: WindowSize) -> Pager {
        let open: Open = Box::new(move |stop| {
            open(stop).map(|(source, first_row)| Reopened {
                source,
                first_row,
                ring: true,
            })
        });
        Pager::start(open, inspect, size, Arc::new(AtomicU64::new(0)), 0)
    }

    fn start(
        open: Open,
        inspect: InspectOptions,
        size: WindowSize,
        read: Arc<AtomicU64>,
        total: u64,
    ) -> Pager {
        let open = Arc::new(Mutex::new(open));
        let (requests, rx) = channel::<WindowRequest>();
        let (tx, windows) = channel();
        let latest = Arc::new(AtomicU64::new(0));
        let quit = Stop::new();
        let scanned = Arc::new(AtomicU64::new(0));
        let (open2, inspect2, scanned2) = (open.clone(), inspect.clone(), scanned.clone());
        serve(
            rx,
            tx,
            latest.clone(),
            quit.clone(),
            move |request, cancel| window_of(&open2, &inspect2, request, size, cancel, &scanned2),
        );
        let (follows, rx) = channel::<FollowRequest>();
        let (tx, followed) = channel();
        let latest_follow = Arc::new(AtomicU64::new(0));
        let open2 = open.clone();
        serve(
            rx,
            tx,
            latest_follow.clone(),
            quit.clone(),
            move |request, cancel| followed_of(&open2, &inspect, request, size.rows, cancel),
        );
        let (exports, exported) = serve_exports(open, quit.clone());
        Pager {
            requests,
            windows,
            latest,
            quit,
            follows,
            followed,
            latest_follow,
            exports,
            exported,
            read,
            scanned,
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

    /// Ask for the followed frames of the whole capture (a re-run for an older request stops).
    pub fn follow(&self, r: FollowRequest) {
        self.latest_follow.store(r.id, Ordering::SeqCst);
        let _ = self.follows.send(r);
    }

    /// Stop the re-run for the latest follow request (the timeline was closed).
    pub fn stop_follow(&self) {
        self.latest_follow.fetch_add(1 << 62, Ordering::SeqCst);
    }

    /// The followed frames that have come, if any.
    pub fn try_recv_followed(&self) -> Option<Followed> {
        self.followed.try_recv().ok()
    }

    /// Ask for an export of the whole capture (carried out after those asked before).
    pub fn export(&self, r: ExportRequest) {
        let _ = self.exports.send(r);
    }

    /// How an export went, once it has.
    pub fn try_recv_exported(&self) -> Option<Exported> {
        self.exported.try_recv().ok()
    }
}

/// The thread writing the exports asked on the sender returned, each in turn, answering on the
/// receiver returned, until the UI is gone.
fn serve_exports(open: Shared, quit: Stop) -> (Sender<ExportRequest>, Receiver<Exported>) {
    let (requests, rx) = channel::<ExportRequest>();
    let (tx, answers) = channel();
    std::thread::spawn(move || {
        while let Ok(request) = rx.recv() {
            if tx.send(exported_of(&open, request, &quit)).is_err() {
                return;
            }
        }
    });
    (requests, answers)
}

/// A request of the pager, as its threads see it: its id is what a newer one cancels.
trait Ask: Send + 'static {
    fn id(&self) -> u64;
}

impl Ask for WindowRequest {
    fn id(&self) -> u64 {
        self.id
    }
}

impl Ask for FollowRequest {
    fn id(&self) -> u64 {
        self.id
    }
}

/// A thread answering the requests of `rx` with `answer` on `tx`, the latest first (older ones
/// waiting are dropped), until the UI is gone.
fn serve<R: Ask, A: Send + 'static>(
    rx: Receiver<R>,
    tx: Sender<A>,
    latest: Arc<AtomicU64>,
    quit: Stop,
    answer: impl Fn(R, Cancel) -> A + Send + 'static,
) {
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
                id: request.id(),
                latest: latest.clone(),
                quit: quit.clone(),
            };
            if tx.send(answer(request, cancel)).is_err() {
                return;
            }
        }
    });
}

impl WindowSource for Pager {
    fn request(&self, r: WindowRequest) {
        Pager::request(self, r)
    }

    fn try_recv(&self) -> Option<Window> {
        Pager::try_recv(self)
    }

    fn progress(&self) -> (u64, u64) {
        (self.read.load(Ordering::Relaxed), self.total)
    }

    fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed)
    }

    fn follow(&self, r: FollowRequest) {
        Pager::follow(self, r)
    }

    fn stop_follow(&self) {
        Pager::stop_follow(self)
    }

    fn try_recv_followed(&self) -> Option<Followed> {
        Pager::try_recv_followed(self)
    }

    fn export(&self, r: ExportRequest) {
        Pager::export(self, r)
    }

    fn try_recv_exported(&self) -> Option<Exported> {
        Pager::try_recv_exported(self)
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.quit.stop();
    }
}

/// Why a re-run stops before it has its window: a newer request, or the UI gone.
#[derive(Clone)]
pub(super) struct Cancel {
    /// The request re-run for.
    pub(super) id: u64,
    /// The latest request's id.
    pub(super) latest: Arc<AtomicU64>,
    /// Set when the UI is gone.
    pub(super) quit: Stop,
}

impl Cancel {
    pub(super) fn cancelled(&self) -> bool {
        self.quit.is_stopped() || self.latest.load(Ordering::SeqCst) != self.id
    }
}

/// Re-run the pipeline over the capture for the window `request` asks. A backward search for
/// a row with a violation first finds the row (the window's rows need not have one), then
/// brings back the window around it.
fn window_of(
    open: &Shared,
    inspect: &InspectOptions,
    request: WindowRequest,
    size: WindowSize,
    cancel: Cancel,
    scanned: &Arc<AtomicU64>,
) -> Window {
    let Some(find) = request.find.filter(|f| !f.forward && f.violations) else {
        return rerun(open, inspect, request, size, cancel, scanned);
    };
    let mut locate = request.clone();
    locate.filter.terms.push(Term::Violations);
    locate.find = Some(Find {
        violations: false,
        ..find
    });
    let found = rerun(open, inspect, locate, size, cancel.clone(), scanned).select;
    let Some(target) = found.filter(|_| !cancel.cancelled()) else {
        return Window {
            request,
            select: None,
            base: Vec::new(),
            items: Vec::new(),
        };
    };
    let around = WindowRequest {
        target,
        find: None,
        ..request.clone()
    };
    let mut window = rerun(open, inspect, around, size, cancel, scanned);
    window.request = request;
    window
}

/// One re-run of the pipeline over the capture into a [`WindowSink`].
fn rerun(
    open: &Shared,
    inspect: &InspectOptions,
    request: WindowRequest,
    size: WindowSize,
    cancel: Cancel,
    scanned: &Arc<AtomicU64>,
) -> Window {
    scanned.store(0, Ordering::Relaxed);
    let stop = Stop::new();
    let mut sink = WindowSink::new(request, size, stop.clone(), cancel, scanned.clone());
    replay_into(open, inspect, &stop, &mut sink);
    sink.finish()
}

/// One re-run of the pipeline over the capture into a [`FollowSink`]: the followed frames
/// around the one asked, at most `rows`.
fn followed_of(
    open: &Shared,
    inspect: &InspectOptions,
    request: FollowRequest,
    rows: usize,
    cancel: Cancel,
) -> Followed {
    let stop = Stop::new();
    let mut sink = FollowSink::new(request, rows, stop.clone(), cancel);
    replay_into(open, inspect, &stop, &mut sink);
    sink.finish()
}

/// One re-run of the whole capture into the export `request` asks: masked (as `replay
/// --filter F --jsonl`/`--pcap` with masking on would write it), whatever the view's
/// inspection showed.
fn exported_of(open: &Shared, request: ExportRequest, quit: &Stop) -> Exported {
    let stop = Stop::new();
    let mut sink = match ExportSink::new(&request, stop.clone(), quit.clone()) {
        Ok(sink) => sink,
        Err(e) => {
            return Exported {
                request,
                result: Err(e.to_string()),
            };
        }
    };
    let inspect = crate::replay::export::masked(request.jsonl, request.max_body);
    if !replay_into(open, &inspect, &stop, &mut sink) {
        return Exported {
            request,
            result: Err("the capture cannot be opened again".into()),
        };
    }
    sink.finish(request)
}

/// Replay the capture, opened anew and read no further once `stop` is set, into `sink` on this
/// thread, in capture order (the first pass's order: the same numbering); false when it
/// cannot be opened.
fn replay_into(
    open: &Shared,
    inspect: &InspectOptions,
    stop: &Stop,
    sink: &mut (impl Rerun + Send),
) -> bool {
    let Some(opened) = reopen(open, stop) else {
        return false;
    };
    sink.start_at(opened.first_row);
    let lent = Lent {
        sink,
        ring: opened.ring,
        seen: HashSet::default(),
    };
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(lent)];
    offline::run(
        opened.source,
        inspect.clone(),
        sinks,
        NonZeroUsize::MIN,
        Pace::Batched,
    );
    true
}

/// What a re-run's sink is given of the pipeline's events.
trait Rerun {
    fn event(&mut self, ev: &Event);
    /// Number the rows from `first` on.
    fn start_at(&mut self, first: u64);
    /// An event of a spool ring's re-run the live view never had ([`ring_only`]): no row of
    /// the view's; left out unless the sink writes the ring as it is.
    fn ring_only(&mut self, _ev: &Event) {}
}

impl Rerun for WindowSink {
    fn event(&mut self, ev: &Event) {
        WindowSink::event(self, ev)
    }
    fn start_at(&mut self, first: u64) {
        WindowSink::start_at(self, first)
    }
}

/// An export writes the ring as `replay` reads it: its start's gaps and its open end too,
/// numbered as no row.
impl Rerun for ExportSink {
    fn event(&mut self, ev: &Event) {
        ExportSink::event(self, ev)
    }
    fn start_at(&mut self, first: u64) {
        ExportSink::start_at(self, first)
    }
    fn ring_only(&mut self, ev: &Event) {
        ExportSink::unnumbered(self, ev)
    }
}

impl Rerun for FollowSink {
    fn event(&mut self, ev: &Event) {
        FollowSink::event(self, ev)
    }
    fn start_at(&mut self, first: u64) {
        FollowSink::start_at(self, first)
    }
}

/// The sink of a re-run, lent to the pipeline; of a spool ring, told apart what the live view
/// never had (see [`ring_only`]).
struct Lent<'a, S> {
    sink: &'a mut S,
    ring: bool,
    /// The connections' directions that have had an event of theirs (a ring's re-run).
    seen: HashSet<(ConnId, Dir)>,
}

impl<S: Rerun + Send> Sink for Lent<'_, S> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        if self.ring && ring_only(&mut self.seen, ev) {
            self.sink.ring_only(ev);
        } else {
            self.sink.event(ev);
        }
        Ok(())
    }
}

/// Whether `ev` of a spool ring's re-run is one the live view never had: the gap a
/// connection's direction starts with when the ring removed its bytes before (the reader's
/// [`NOT_IN_CAPTURE`]), or the end of a connection still open where the ring's
/// writing has got to (the re-run ends there, the connection does not).
fn ring_only(seen: &mut HashSet<(ConnId, Dir)>, ev: &Event) -> bool {
    let dir = match &ev.kind {
        EventKind::Close(info) => return info.reason == CloseReason::CaptureEnded,
        EventKind::Header { dir, .. } | EventKind::Data { dir, .. } => *dir,
        EventKind::Frame(f) => f.dir,
        EventKind::Gap {
            dir,
            offset,
            reason,
            ..
        } => {
            let first = seen.insert((ev.conn, *dir));
            return first && *offset == 0 && reason.ends_with(NOT_IN_CAPTURE);
        }
        _ => return false,
    };
    seen.insert((ev.conn, dir));
    false
}
