//! The statistics of a run with a view attached (the TUI's `S` pane): a [`Collector`] whose
//! report is handed to the view a few times a second while it changes, and once more when
//! the run ends.
//!
//! A sink like the others: it counts every event it is given (the view's own feed may drop
//! what the UI cannot keep up with; these numbers do not). The report is made on a thread of
//! its own, every [`PUBLISH_EVERY`] when something changed, so that a burst's last events
//! are shown even when no event follows them; the collector is shared with that thread
//! behind a lock the sink takes once per event. Live, it can do without frames the
//! inspection had no time to decode, as the view can: a skim shows as a gap in the report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::event::Event;
use crate::pipeline::Sink;
use crate::stats::{Collector, StatsReport};

/// How often the report is handed on, at most.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(500);

/// Where reports go (the TUI feed's `stats`); false once nobody listens.
pub type Publish = Box<dyn FnMut(Arc<StatsReport>) -> bool + Send>;

/// What the sink and its publishing thread share.
#[derive(Debug, Default)]
struct Shared {
    collector: Mutex<Collector>,
    changed: AtomicBool,
}

impl Shared {
    /// The report, when something changed since the last one.
    fn report_if_changed(&self) -> Option<Arc<StatsReport>> {
        if !self.changed.swap(false, Ordering::AcqRel) {
            return None;
        }
        let c = self.collector.lock().unwrap_or_else(|p| p.into_inner());
        Some(Arc::new(c.report()))
    }
}

/// Collects statistics and publishes them (see the module doc).
#[derive(Debug)]
pub struct StatsFeed {
    shared: Arc<Shared>,
    /// Dropped to stop the publishing thread.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StatsFeed {
    /// A feed handing its reports to `publish`, from a thread it starts.
    pub fn new(publish: Publish) -> Self {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = channel();
        let on_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("amqpeek-stats".into())
            .spawn(move || publish_until_stopped(&on_thread, &stopped, publish))
            .ok();
        StatsFeed {
            shared,
            stop: Some(stop),
            thread,
        }
    }
}

/// Every [`PUBLISH_EVERY`], the report if it changed; once more when told to stop.
fn publish_until_stopped(shared: &Shared, stopped: &Receiver<()>, mut publish: Publish) {
    loop {
        let last = !matches!(
            stopped.recv_timeout(PUBLISH_EVERY),
            Err(RecvTimeoutError::Timeout)
        );
        if let Some(r) = shared.report_if_changed()
            && !publish(r)
        {
            return;
        }
        if last {
            return;
        }
    }
}

impl Sink for StatsFeed {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        let mut c = self
            .shared
            .collector
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        c.add(ev);
        self.shared.changed.store(true, Ordering::Release);
        Ok(())
    }

    fn needs_every_frame(&self) -> bool {
        false
    }
}

impl Drop for StatsFeed {
    /// The run is over: the thread publishes the last report and ends.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
