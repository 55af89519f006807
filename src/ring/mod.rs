//! The ring capture (`proxy --ring SIZE`): the most recent SIZE bytes of the run's masked
//! records (JSONL lines), for every connection together, held in memory and written out only
//! when a trigger fires (`--dump-on`), `SIGUSR1` asks, or never.
//!
//! ```text
//! live driver -> RingSink (a sink: render, keep, arm) -> Store (one budget, pins apart)
//!                                                          │ trigger + --dump-after
//!                                              dumper thread: JSONL, then pcapng, then hook
//! ```
//!
//! A dump is a JSONL capture ([`store`] explains its gaps) and the pcapng made from it by the
//! offline pipeline, named by the time and the rule or diagnosis that fired it; `--dump-keep`
//! dumps are kept, the older ones removed. The ring never holds up the relay for longer than
//! writing a dump's JSONL (the store is locked while it is written, which the inspection waits
//! for through its queue budget like any capture's write).

mod circular;
mod dumper;
mod pins;
mod sink;
pub mod store;
pub mod trigger;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use dumper::Dump;
pub use sink::RingSink;
pub use trigger::Trigger;

use store::Store;

/// Called after each dump with its files; returns the files it wrote beside them (a bundle),
/// removed with the dump when it is no longer kept, or an error naming what failed.
pub type AfterDump = Box<dyn FnMut(&Dump) -> Result<Vec<PathBuf>, String> + Send>;

/// How the ring runs.
pub struct RingOptions {
    /// Bytes of records held, pins included (`--ring`).
    pub size: usize,
    /// What dumps it (`--dump-on`; `error` when none given).
    pub triggers: Vec<Trigger>,
    /// How long after the trigger the dump still takes in (`--dump-after`).
    pub after: Duration,
    /// Where dumps go (`--dump-dir`).
    pub dir: PathBuf,
    /// Dumps kept (`--dump-keep`), at least 1.
    pub keep: usize,
    /// The records were written unmasked (`--show-secrets`): the pcapng made from them is too.
    pub show_secrets: bool,
    /// Message bodies are cut after this many bytes in the records (`--max-body`).
    pub max_body: usize,
    /// Inspection memory per connection when the pcapng is made (`--inspect-memory`).
    pub inspect_memory: usize,
    /// After each dump (`--bundle`: the bundle of it).
    pub after_dump: Option<AfterDump>,
}

impl std::fmt::Debug for RingOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingOptions")
            .field("size", &self.size)
            .field("triggers", &self.triggers)
            .field("after", &self.after)
            .field("dir", &self.dir)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

/// A dump armed, waiting for its time.
#[derive(Debug)]
struct Armed {
    /// What fired (a rule or diagnosis id, or `signal`).
    name: String,
    /// When it fired, for its file names.
    at: crate::event::Timestamp,
    /// When it is written.
    due: Instant,
}

/// What the sink and the dumper share.
#[derive(Debug)]
struct State {
    store: Store,
    armed: Option<Armed>,
    /// The run is over: write what is armed now, and stop.
    closing: bool,
}

impl State {
    /// Arm a dump `after` from now, unless one is armed (it takes this trigger's frames in).
    fn arm(&mut self, name: &str, after: Duration) {
        if self.armed.is_none() {
            self.armed = Some(Armed {
                name: name.to_string(),
                at: crate::event::Timestamp::now(),
                due: Instant::now() + after,
            });
        }
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    after: Duration,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere poisons the lock; the store itself stays consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Asks for a dump now (`SIGUSR1`); cheap to clone.
#[derive(Clone, Debug)]
pub struct RingHandle {
    shared: Arc<Shared>,
}

impl RingHandle {
    /// Dump now: an armed dump is written at once, else one named `signal`.
    pub fn dump_now(&self) {
        let mut s = self.shared.lock();
        s.arm("signal", Duration::ZERO);
        if let Some(a) = &mut s.armed {
            a.due = Instant::now();
        }
        self.shared.wake.notify_all();
    }
}

/// What the ring did over the run.
#[derive(Debug, Default)]
pub struct RingReport {
    /// Every dump written (the kept ones and those removed since).
    pub dumps: Vec<Dump>,
    /// Dumps that failed, each naming its file and why.
    pub failures: Vec<String>,
}

/// The running ring: its sink goes to the live driver; [`Ring::finish`] ends it.
pub struct Ring {
    shared: Arc<Shared>,
    thread: std::thread::JoinHandle<RingReport>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

impl Ring {
    /// Start the ring's dumper thread; the sink to give the live driver, and the ring.
    pub fn start(mut opts: RingOptions) -> std::io::Result<(RingSink, Ring)> {
        if opts.triggers.is_empty() {
            opts.triggers
                .push(Trigger::Severity(crate::event::Severity::Error));
        }
        opts.keep = opts.keep.max(1);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                store: Store::new(opts.size),
                armed: None,
                closing: false,
            }),
            wake: Condvar::new(),
            after: opts.after,
        });
        let json = crate::sinks::JsonOptions {
            max_body: opts.max_body,
        };
        let sink = RingSink::new(shared.clone(), std::mem::take(&mut opts.triggers), json);
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("amqpeek-ring".into())
            .spawn(move || dumper::run(&for_thread, opts))?;
        Ok((sink, Ring { shared, thread }))
    }

    /// What asks this ring for a dump.
    pub fn handle(&self) -> RingHandle {
        RingHandle {
            shared: self.shared.clone(),
        }
    }

    /// The run is over (its sinks are flushed): write the dump armed, if any, and stop.
    pub fn finish(self) -> RingReport {
        self.shared.lock().closing = true;
        self.shared.wake.notify_all();
        self.thread.join().unwrap_or_else(|_| RingReport {
            dumps: Vec::new(),
            failures: vec!["the ring's dump thread panicked".to_string()],
        })
    }
}
