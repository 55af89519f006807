//! The live terminal UI (ratatui + crossterm): connections, frames, frame detail with hex,
//! sessions/links/channels, violations, a filter language, keys and mouse.
//!
//! Wiring (the only entry points). The UI runs no pipeline: what it needs run is given to the
//! event loop, an [`Exporter`] for the exports (`replay::export::write`) and, for a file or a
//! live view's spool, a [`WindowSource`] (`replay::pager::Pager`).
//!
//! ```text
//! // live (proxy): the feed is a Sink; put it with the other sinks of the inspection.
//! let (feed, rx) = tui::channel(tui::DEFAULT_CAPACITY);
//! sinks.push(Box::new(feed));                  // never blocks: try_send, drops counted
//! tui::run(rx, TuiOptions::default(), export::write)?;  // on the main thread, until quit
//! // then stop the proxy (the UI returned: the user pressed q or Ctrl-C).
//!
//! // replay: nothing may be dropped, and the UI stays open after the last event.
//! let (feed, rx) = tui::channel(tui::DEFAULT_CAPACITY);
//! let feed = feed.lossless();                  // blocks instead of dropping
//! thread::spawn(move || { for ev in capture { feed.event(&ev); } });  // feed dropped at end
//! tui::run(rx, TuiOptions { live: false, ..Default::default() }, export::write)?;
//!
//! // replay of a file: the same, and a pager that reaches every frame of it (see `window.rs`
//! // and `replay::pager`: the app asks, the pager re-runs the pipeline over the file, on its
//! // thread, and answers with the row model's windows, `browse::window`).
//! let pager = replay::pager::Pager::spawn(open_file_again, inspect, size, bytes_read, file_len);
//! let opts = TuiOptions { live: false, whole_capture: true, ..Default::default() };
//! tui::run_paged(rx, opts, pager, export::write)?;
//!
//! // live with a spool (`spool.rs`): the ring is a sink beside the feed, and its pager
//! // reaches every frame it holds (`live_window.rs`).
//! let ring = tui::spool::SpoolRing::create(&spool_opts, feed.clone())?;
//! let pager = replay::pager::Pager::spawn_ring(ring.opener(), inspect, size);
//! sinks.push(Box::new(ring));
//! let opts = TuiOptions { spool: Some(ring_name), ..Default::default() };
//! tui::run_paged(rx, opts, pager, export::write)?;
//! ```
//!
//! While the UI runs it owns the terminal: nothing else may write to stdout or stderr (no text
//! trace sink, tracing to a file or off), or the screen is garbled.
//!
//! The UI tracks no protocol state, decodes nothing and runs no pipeline: frames arrive
//! decoded and shared, and each connection's state arrives as the pipeline's `State` events
//! (throttled there), which it renders as they are. The app does no I/O: exports, windows and
//! clipboard copies are [`app::Effect`]s the event loop performs. An export (`e`) is the
//! capture the app rebuilds from its rows (`export.rs`, pure), which the [`Exporter`] runs
//! through the ordinary pipeline, as `replay` would, to mask it; when the view pages a file or
//! a spool ring, an export of a connection or of the frames shown is the pager's, from that
//! whole source, on its thread (`routing/export.rs`).
//!
//! This module must never slow the relay: the feed only ever `try_send`s into a bounded
//! channel (connects, closes, headers, gaps and diagnoses are kept aside when it is full, and
//! the latest state of each connection; everything else is dropped and counted, and the UI says
//! so); the UI keeps a bounded number of frames and bytes per connection, and redraws at most
//! [`MAX_FPS`] times a second however fast events come. The terminal is restored on exit, on
//! error, on panic (hook), on Ctrl-C (a key in raw mode, mapped to quit), on SIGINT, SIGTERM
//! and SIGHUP (the UI quits as on `q`) and on an abort (see `terminal.rs`).

pub mod app;
pub mod clipboard;
pub mod components;
pub mod export;
mod fulltext;
mod hangup;
/// The filter language (shared with the headless `--filter`).
pub use crate::filter;
pub use components::health;
pub mod input;
mod keep;
pub mod line;
mod live_window;
pub mod messages;
pub mod model;
mod routing;
pub mod spool;
mod terminal;
pub mod timeline;
pub mod views;
pub mod window;

use std::collections::BTreeMap;
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub use app::{App, AppEvent, Pane, TuiOptions};
pub use export::Exporter;

use crate::browse::window::WindowSource;
use crate::event::Sink;
use crate::event::{ConnId, Event, EventKind, Timestamp};
use terminal::TerminalGuard;

/// Redraws per second, at most.
pub const MAX_FPS: u64 = 30;
/// A good channel capacity for live use.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// The sending side, held by the relay (clone it per connection task).
#[derive(Clone, Debug)]
pub struct TuiFeed {
    tx: SyncSender<AppEvent>,
    dropped: Arc<AtomicU64>,
    overflow: Arc<Mutex<Overflow>>,
    lossless: bool,
}

/// What a full channel could not take but the UI cannot do without: connection structure (few
/// per connection), and the latest state of each connection (older ones are superseded).
#[derive(Debug, Default)]
struct Overflow {
    events: Vec<AppEvent>,
    states: BTreeMap<ConnId, AppEvent>,
    /// The latest statistics (older ones are superseded).
    stats: Option<AppEvent>,
}

/// The receiving side, given to [`run`].
#[derive(Debug)]
pub struct TuiReceiver {
    rx: Receiver<AppEvent>,
    dropped: Arc<AtomicU64>,
    overflow: Arc<Mutex<Overflow>>,
}

impl TuiReceiver {
    /// Everything available now, without waiting: the channel's events, then any connection
    /// events that overflowed it. `None` once every feed is gone and nothing is left.
    pub fn drain(&self, max: usize) -> Option<Vec<AppEvent>> {
        let mut out = Vec::new();
        let mut gone = false;
        while out.len() < max {
            match self.rx.try_recv() {
                Ok(ev) => out.push(ev),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    gone = true;
                    break;
                }
            }
        }
        if let Ok(mut o) = self.overflow.lock() {
            out.append(&mut o.events);
            // After the events: a state describes the connection after all of them.
            out.extend(std::mem::take(&mut o.states).into_values());
            out.extend(o.stats.take());
        }
        if gone && out.is_empty() {
            None
        } else {
            Some(out)
        }
    }

    /// Events the feeds have dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Connection structure the list cannot do without, and the diagnoses the Health pane lists:
/// kept even when the channel is full (there are few of them per connection).
fn is_structural(ev: &AppEvent) -> bool {
    matches!(
        ev,
        AppEvent::Pipeline(Event {
            kind: EventKind::Connect { .. }
                | EventKind::Close(_)
                | EventKind::Header { .. }
                | EventKind::Gap { .. }
                | EventKind::Diagnosis(_),
            ..
        })
    )
}

/// A bounded feed of `capacity` events.
pub fn channel(capacity: usize) -> (TuiFeed, TuiReceiver) {
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity.max(1));
    let dropped = Arc::new(AtomicU64::new(0));
    let overflow = Arc::new(Mutex::new(Overflow::default()));
    (
        TuiFeed {
            tx,
            dropped: dropped.clone(),
            overflow: overflow.clone(),
            lossless: false,
        },
        TuiReceiver {
            rx,
            dropped,
            overflow,
        },
    )
}

impl TuiFeed {
    /// Block instead of dropping when the UI is behind (replay: never drop).
    pub fn lossless(mut self) -> Self {
        self.lossless = true;
        self
    }

    /// Events dropped so far because the UI was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Send one app event: never blocks unless lossless. When the channel is full, connects,
    /// closes, headers, gaps and diagnoses are kept aside (few per connection), and the latest
    /// state of each connection; everything else is dropped and counted. Returns false when the
    /// UI is gone.
    pub fn send(&self, ev: AppEvent) -> bool {
        if self.lossless {
            return self.tx.send(ev).is_ok();
        }
        match self.tx.try_send(ev) {
            Ok(()) => true,
            Err(TrySendError::Full(ev)) => {
                if let AppEvent::Pipeline(Event {
                    conn,
                    kind: EventKind::State(_),
                    ..
                }) = &ev
                    && let Ok(mut o) = self.overflow.lock()
                {
                    o.states.insert(*conn, ev);
                    return true;
                }
                if is_structural(&ev)
                    && let Ok(mut o) = self.overflow.lock()
                {
                    o.events.push(ev);
                    return true;
                }
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Send a pipeline event.
    pub fn event(&self, ev: &Event) -> bool {
        self.send(AppEvent::Pipeline(ev.clone()))
    }

    /// Send the latest statistics: never blocks; when the channel is full they wait aside,
    /// replacing any older ones still waiting. Returns false when the UI is gone.
    pub fn stats(&self, report: Arc<crate::stats::StatsReport>) -> bool {
        match self.tx.try_send(AppEvent::Stats(report)) {
            Ok(()) => true,
            Err(TrySendError::Full(ev)) => {
                if let Ok(mut o) = self.overflow.lock() {
                    o.stats = Some(ev);
                }
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

impl Sink for TuiFeed {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        TuiFeed::event(self, ev);
        Ok(())
    }

    /// A live view: it drops what it cannot show in time anyway.
    fn needs_every_frame(&self) -> bool {
        false
    }
}

/// What the event loop is given to perform the app's effects that are more than terminal
/// I/O: it runs no pipeline itself.
#[derive(Clone, Copy)]
struct Executors<'a> {
    /// Writes an export.
    export: Exporter,
    /// Brings back windows of the whole capture (a file replay only).
    pager: Option<&'a dyn WindowSource>,
}

/// Run the UI on this thread until the user quits. Events come from `rx`; when every feed
/// has been dropped the UI says "end of feed" and stays open. `export` writes the exports the
/// user asks for.
pub fn run(rx: TuiReceiver, opts: TuiOptions, export: Exporter) -> io::Result<()> {
    run_app(
        rx,
        opts,
        Executors {
            export,
            pager: None,
        },
    )
}

/// As [`run`], for the replay of a file: `pager` brings back the rows of the whole capture
/// (`opts.whole_capture` on), and shows the first pass's progress; or live, the rows of the
/// spool ring (`opts.spool` set). It is dropped when the UI returns.
pub fn run_paged(
    rx: TuiReceiver,
    opts: TuiOptions,
    pager: impl WindowSource,
    export: Exporter,
) -> io::Result<()> {
    run_app(
        rx,
        opts,
        Executors {
            export,
            pager: Some(&pager),
        },
    )
}

fn run_app(rx: TuiReceiver, opts: TuiOptions, exec: Executors<'_>) -> io::Result<()> {
    let mut guard = TerminalGuard::enter()?;
    let size = guard.terminal.size()?;
    let live = opts.live;
    let mut app = App::new(opts, (size.width, size.height));
    if live {
        app.handle(AppEvent::Tick(Timestamp::now()));
    }
    event_loop(&mut guard.terminal, &mut app, &rx, live, exec)
}

/// What the pager has for the app: the first pass's progress, and the windows come.
fn from_pager(app: &mut App, pager: Option<&dyn WindowSource>) -> bool {
    let Some(pager) = pager else {
        return false;
    };
    let mut changed = false;
    let progress = pager.progress();
    if app.model.paging.progress != Some(progress) {
        app.handle(AppEvent::Progress(progress.0, progress.1));
        changed = true;
    }
    let scanned = pager.scanned();
    let searching = app
        .model
        .paging
        .loading
        .as_ref()
        .is_some_and(|r| r.find.is_some());
    if searching && app.model.paging.scanned != scanned {
        app.handle(AppEvent::Scanned(scanned));
        changed = true;
    }
    while let Some(w) = pager.try_recv() {
        app.handle(AppEvent::Window(Box::new(w)));
        changed = true;
    }
    while let Some(f) = pager.try_recv_followed() {
        app.handle(AppEvent::Followed(Box::new(f)));
        changed = true;
    }
    while let Some(x) = pager.try_recv_exported() {
        app.handle(AppEvent::Exported(Box::new(x)));
        changed = true;
    }
    changed
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    rx: &TuiReceiver,
    live: bool,
    exec: Executors<'_>,
) -> io::Result<()> {
    let frame_time = Duration::from_millis(1000 / MAX_FPS);
    let mut last_draw: Option<Instant> = None;
    let mut last_tick = Instant::now();
    let mut dirty = true;
    loop {
        // Drain the feed for at most half a frame so keys stay responsive.
        let start = Instant::now();
        while start.elapsed() < frame_time / 2 {
            match rx.drain(1024) {
                Some(batch) if batch.is_empty() => break,
                Some(batch) => {
                    for ev in batch {
                        app.handle(ev);
                    }
                    dirty = true;
                }
                None => {
                    if !app.model.feed_ended {
                        app.handle(AppEvent::FeedEnded);
                        dirty = true;
                    }
                    break;
                }
            }
        }
        dirty |= from_pager(app, exec.pager);
        let dropped = rx.dropped.load(Ordering::Relaxed);
        if dropped != app.model.dropped {
            app.handle(AppEvent::Dropped(dropped));
            dirty = true;
        }
        if live && last_tick.elapsed() >= Duration::from_secs(1) {
            app.handle(AppEvent::Tick(Timestamp::now()));
            last_tick = Instant::now();
            dirty = true;
        }
        let due = last_draw.is_none_or(|t| t.elapsed() >= frame_time);
        if dirty && due {
            terminal.draw(|f| app.render(f))?;
            last_draw = Some(Instant::now());
            dirty = false;
        }
        // Wait for input until the next frame is due (or a little while when idle).
        let wait = match (dirty, last_draw) {
            (true, Some(t)) => frame_time.saturating_sub(t.elapsed()),
            _ => Duration::from_millis(15),
        };
        // Waited for on the terminal itself: crossterm never returns from one that hung up.
        match hangup::wait_input(wait) {
            hangup::Input::HungUp => return Ok(()),
            hangup::Input::None | hangup::Input::Ready => {}
        }
        if crossterm::event::poll(Duration::ZERO)? {
            loop {
                match crossterm::event::read()? {
                    crossterm::event::Event::Key(k) => app.handle(AppEvent::Key(k)),
                    crossterm::event::Event::Mouse(m) => app.handle(AppEvent::Mouse(m)),
                    crossterm::event::Event::Resize(w, h) => {
                        app.handle(AppEvent::Resize(w, h));
                        terminal.autoresize()?;
                    }
                    _ => {}
                }
                dirty = true;
                if app.quit || !crossterm::event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        if !app.effects.is_empty() {
            perform(terminal, app, exec);
            dirty = true;
        }
        if app.quit || terminal::quit_signalled() {
            return Ok(());
        }
    }
}

/// Do what the app asked (it does no I/O itself), and tell it how that went.
fn perform(terminal: &mut Terminal<CrosstermBackend<Stdout>>, app: &mut App, exec: Executors<'_>) {
    use std::io::Write;
    for effect in std::mem::take(&mut app.effects) {
        let notice = match effect {
            app::Effect::LoadWindow(request) => match exec.pager {
                // The answer comes as a window; the app says "loading" meanwhile.
                Some(p) => {
                    p.request(request);
                    continue;
                }
                None => "only the frames in memory can be shown".to_string(),
            },
            app::Effect::Follow(request) => match exec.pager {
                Some(p) => {
                    p.follow(request);
                    continue;
                }
                None => "only the frames in memory can be followed".to_string(),
            },
            app::Effect::ExportSource(request) => match exec.pager {
                // Written on the pager's thread; the app says "exporting" meanwhile.
                Some(p) => {
                    p.export(request);
                    continue;
                }
                None => "only the frames in memory can be exported".to_string(),
            },
            app::Effect::StopFollow => {
                if let Some(p) = exec.pager {
                    p.stop_follow();
                }
                continue;
            }
            app::Effect::Export {
                path,
                jsonl,
                events,
                what,
            } => match (exec.export)(&path, jsonl, events, app.model.opts.max_body) {
                Ok(n) => format!(
                    "exported {what}: {n} frame(s) to {} ({}, masked)",
                    path.display(),
                    if jsonl { "JSONL" } else { "pcapng" }
                ),
                Err(e) => format!("export failed: {e}"),
            },
            app::Effect::Clipboard { text, what } => {
                let out = terminal.backend_mut();
                match out
                    .write_all(clipboard::osc52(&text).as_bytes())
                    .and_then(|()| out.flush())
                {
                    Ok(()) => format!("copied {what} ({} characters)", text.len()),
                    Err(e) => format!("copy failed: {e}"),
                }
            }
        };
        app.handle(AppEvent::Notice(notice));
    }
}
