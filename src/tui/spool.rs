//! The live view's spool: when `amqpeek proxy` shows the TUI and writes no capture, what the
//! view is shown is also written, masked, as JSONL to a file of bounded size (`--spool-size`,
//! in `--spool-dir` or a temporary file removed at exit), so the frames the view drops from
//! memory stay reachable: `amqpeek replay SPOOL` navigates the whole session as any capture.
//!
//! The spool is a sink beside the view and like the view it does without what the inspection
//! had no time to decode (a skim is a `gap` record in it): it never makes the relay wait.
//! Once it holds `--spool-size` bytes it takes no more, and the view says up to when it kept
//! the session. It is never written with `--show-secrets`: the spool holds only masked frames.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::event::{Event, Render, Sink};
use crate::sinks::{JsonOptions, JsonlSink};

use super::{AppEvent, TuiFeed};

/// `--spool-size` when not given.
pub const DEFAULT_SPOOL_SIZE: u64 = 512 * 1024 * 1024;

/// Where the spool goes and how big it may grow.
#[derive(Clone, Debug)]
pub struct SpoolOptions {
    /// The folder to keep it in (`None`: a temporary file, removed when the run ends).
    pub dir: Option<PathBuf>,
    /// Bytes it may hold, at most.
    pub size: u64,
    /// Message bodies longer than this are cut (`--max-body`).
    pub max_body: usize,
}

/// The spool file being written: a sink of the pipeline's events.
pub struct Spool {
    out: JsonlSink<BufWriter<File>>,
    path: PathBuf,
    /// Remove the file when done (a temporary spool).
    remove: bool,
    written: u64,
    limit: u64,
    full: bool,
    /// Where the view is told that the spool filled.
    feed: TuiFeed,
    /// Renders the events given one by one ([`Sink::event`]), holding a frame's line until
    /// its violations have come, as the workers' renderers do.
    own: Box<dyn Render>,
    /// Lines rendered by `own`, not yet written.
    pending: Vec<u8>,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("path", &self.path)
            .field("written", &self.written)
            .field("limit", &self.limit)
            .finish()
    }
}

impl Spool {
    /// Create the spool file (named for this process, and numbered after the first) in `opts.dir`, or in the temporary
    /// folder; `feed` is the view's, told when the spool is full. An error names the path.
    pub fn create(opts: &SpoolOptions, feed: TuiFeed) -> io::Result<Spool> {
        static CREATED: AtomicU64 = AtomicU64::new(0);
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = match n {
            0 => format!("amqpeek-live-{}.jsonl", std::process::id()),
            n => format!("amqpeek-live-{}-{n}.jsonl", std::process::id()),
        };
        let (dir, remove) = match &opts.dir {
            Some(d) => (d.clone(), false),
            None => (std::env::temp_dir(), true),
        };
        let path = dir.join(name);
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let out = JsonlSink::new(
            BufWriter::new(file),
            JsonOptions {
                max_body: opts.max_body,
            },
        );
        let own = out
            .renderer()
            .ok_or_else(|| io::Error::other("the JSONL sink renders no lines"))?;
        Ok(Spool {
            own,
            pending: Vec::new(),
            out,
            path,
            remove,
            written: 0,
            limit: opts.size,
            full: false,
            feed,
        })
    }

    /// The spool file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file stays once the run ends (`--spool-dir`).
    pub fn kept(&self) -> bool {
        !self.remove
    }

    /// Whether `n` more bytes fit; the first time they do not, the view is told.
    fn room(&mut self, n: usize) -> bool {
        if self.full {
            return false;
        }
        if self.written.saturating_add(n as u64) > self.limit {
            self.full = true;
            self.feed.send(AppEvent::SpoolFull(self.written));
            return false;
        }
        self.written += n as u64;
        true
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Sink for Spool {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.pending);
        line.clear();
        self.own.render(ev, &mut line);
        let done = self.write_rendered(&line);
        self.pending = line;
        done
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut rest = std::mem::take(&mut self.pending);
        rest.clear();
        self.own.end(&mut rest);
        self.write_rendered(&rest)?;
        self.pending = rest;
        self.out.flush()
    }

    /// A companion of the live view: it does without what the view does without.
    fn needs_every_frame(&self) -> bool {
        false
    }

    fn records_cuts(&self) -> bool {
        true
    }

    fn renderer(&self) -> Option<Box<dyn Render>> {
        self.out.renderer()
    }

    fn write_rendered(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() || !self.room(bytes.len()) {
            return Ok(());
        }
        self.out.write_rendered(bytes)
    }
}
