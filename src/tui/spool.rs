//! The live view's spool: when `amqpeek proxy` shows the TUI and writes no capture, what the
//! view is shown is also written, masked, as JSONL to a bounded ring on disk (`--spool-size`
//! bytes at most, in `--spool-dir` or the temporary folder, removed at exit then), so the
//! frames the view drops from memory stay reachable: the live view pages the ring as a file
//! replay pages its file (`g`/`G`, search, follow, export), through [`SpoolRing::opener`].
//!
//! The ring is [`SEGMENTS`] files of `--spool-size / SEGMENTS` bytes each: when the newest
//! is full, a new one is opened and the oldest removed, so the ring holds the newest three
//! quarters to all of the budget, in whole lines. Each segment knows the number of its first
//! row (the view's numbering, counted here over the same events), so the rows paged back keep
//! their numbers, and the view is told the first row still held when the oldest goes
//! ([`AppEvent::SpoolFrom`]). The lines are rendered on the inspection workers, as any JSONL
//! capture's, each row's output after a [`ROW`] byte (whether an event is a row depends on its
//! connection's events alone, which one worker sees); the writing counts and drops those bytes.
//!
//! The spool is a sink beside the view and like the view it does without what the inspection
//! had no time to decode (a skim is a `gap` record in it): it never makes the relay wait. It
//! is never written with `--show-secrets`: the spool holds only masked frames.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::browse::numbering::{Numbering, Place};
use crate::capture::{self, CaptureOptions, CaptureSource, Stop};
use crate::event::{Event, Render, Sink};
use crate::sinks::{JsonOptions, JsonlSink};

/// Opens a live ring as one capture read no further once the flag is set, with the number of
/// its first row ([`SpoolRing::opener`]'s result).
pub type RingOpener = Box<dyn Fn(&Stop) -> Option<(CaptureSource, u64)> + Send>;

use super::{AppEvent, TuiFeed};

/// `--spool-size` when not given.
pub const DEFAULT_SPOOL_SIZE: u64 = 512 * 1024 * 1024;

/// Segment files of the ring.
pub const SEGMENTS: usize = 4;

/// Put before the output of an event that is a row (ASCII record separator: JSON text never
/// holds it raw); never written to a segment.
const ROW: u8 = 0x1e;

/// Where the spool goes and how big it may grow.
#[derive(Clone, Debug)]
pub struct SpoolOptions {
    /// The folder to keep it in (`None`: the temporary folder, removed when the run ends).
    pub dir: Option<PathBuf>,
    /// Bytes it may hold on disk, at most.
    pub size: u64,
    /// Message bodies longer than this are cut (`--max-body`).
    pub max_body: usize,
}

/// The ring's segments, oldest first: each file and the number of its first row. Shared
/// with the pager's opener; held while a segment is removed or the ring opened.
type Segments = Arc<Mutex<VecDeque<(PathBuf, u64)>>>;

/// The spool ring being written: a sink of the pipeline's events.
pub struct SpoolRing {
    out: JsonlSink<BufWriter<File>>,
    segments: Segments,
    /// The name segments are numbered after (`…-live-PID.K.jsonl`).
    base: PathBuf,
    /// Segments opened so far.
    opened: u64,
    /// Remove the files when done (a temporary spool).
    remove: bool,
    /// Bytes written to the newest segment, and the most one holds.
    written: u64,
    limit: u64,
    /// Where the view is told which rows the ring still holds.
    feed: TuiFeed,
    /// Rows written so far: the number the next gets, as the view numbers them.
    rows: u64,
    /// Renders the events given one by one ([`Sink::event`]) as the workers' renderers do.
    own: Box<dyn Render>,
    max_body: usize,
    line: Vec<u8>,
}

impl std::fmt::Debug for SpoolRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpoolRing")
            .field("base", &self.base)
            .field("written", &self.written)
            .field("limit", &self.limit)
            .finish()
    }
}

/// Create a segment file that must not exist yet; an error names the path.
fn create_file(path: &Path) -> io::Result<File> {
    File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl SpoolRing {
    /// Create the ring's first segment (named for this process, and numbered after the first
    /// ring) in `opts.dir`, or in the temporary folder; `feed` is the view's, told when the
    /// ring removes its oldest segment. An error names the path.
    pub fn create(opts: &SpoolOptions, feed: TuiFeed) -> io::Result<SpoolRing> {
        static CREATED: AtomicU64 = AtomicU64::new(0);
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = match n {
            0 => format!("amqpeek-live-{}", std::process::id()),
            n => format!("amqpeek-live-{}-{n}", std::process::id()),
        };
        let (dir, remove) = match &opts.dir {
            Some(d) => (d.clone(), false),
            None => (std::env::temp_dir(), true),
        };
        let base = dir.join(name);
        let path = segment_path(&base, 1);
        let file = create_file(&path)?;
        let out = JsonlSink::new(BufWriter::new(file), json(opts.max_body));
        let own = RowMarks::of(&out)?;
        Ok(SpoolRing {
            out,
            segments: Arc::new(Mutex::new(VecDeque::from([(path, 0)]))),
            base,
            opened: 1,
            remove,
            written: 0,
            limit: (opts.size / SEGMENTS as u64).max(1),
            feed,
            rows: 0,
            own,
            max_body: opts.max_body,
            line: Vec::new(),
        })
    }

    /// The ring's files, by a pattern (`…/amqpeek-live-PID.*.jsonl`).
    pub fn name(&self) -> String {
        let mut name = self.base.display().to_string();
        name.push_str(".*.jsonl");
        name
    }

    /// The segments the ring holds, oldest first.
    pub fn segment_files(&self) -> Vec<PathBuf> {
        lock(&self.segments)
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Whether the files stay once the run ends (`--spool-dir`).
    pub fn kept(&self) -> bool {
        !self.remove
    }

    /// Opens the ring as it then is, its segments in order as one capture read no further
    /// once the flag is set, with the number of its first row: what the live view's pager
    /// re-runs (`replay::pager::Pager::spawn_ring`).
    pub fn opener(&self) -> RingOpener {
        let segments = self.segments.clone();
        Box::new(move |stop| {
            let held = lock(&segments);
            let first = held.front()?.1;
            let mut all: Box<dyn Read + Send> = Box::new(io::empty());
            for (path, _) in held.iter() {
                // A segment opened stays readable when the ring removes it meanwhile.
                all = Box::new(all.chain(File::open(path).ok()?));
            }
            drop(held);
            let all = capture::stop::stoppable(all, stop, false);
            let source = capture::from_reader(all, CaptureOptions::default()).ok()?;
            Some((source, first))
        })
    }

    /// Make room for `n` bytes of whole lines from row `row` on (`after`: the first row after
    /// them): a new segment once the newest is full, the oldest removed beyond [`SEGMENTS`];
    /// lines larger than a segment are left out, and the ring starts anew after them. False:
    /// the lines are not written.
    fn room(&mut self, n: u64, row: u64, after: u64) -> io::Result<bool> {
        if self.written.saturating_add(n) <= self.limit {
            self.written += n;
            return Ok(true);
        }
        let too_big = n > self.limit;
        if too_big && self.written == 0 && lock(&self.segments).len() == 1 {
            // The ring is one empty segment already: it starts after these lines.
            if let Some(only) = lock(&self.segments).front_mut() {
                only.1 = after;
            }
            self.feed.send(AppEvent::SpoolFrom { first_frame: after });
            return Ok(false);
        }
        let first = if too_big { after } else { row };
        self.rotate(first, if too_big { 0 } else { SEGMENTS - 1 })?;
        if too_big {
            return Ok(false);
        }
        self.written = n;
        Ok(true)
    }

    /// Open a new segment whose first row is `first`, keeping `keep` older ones at most.
    fn rotate(&mut self, first: u64, keep: usize) -> io::Result<()> {
        self.out.flush()?;
        self.opened += 1;
        let path = segment_path(&self.base, self.opened);
        let file = create_file(&path)?;
        self.out = JsonlSink::new(BufWriter::new(file), json(self.max_body));
        self.written = 0;
        let mut held = lock(&self.segments);
        let removed = held.len() > keep;
        while held.len() > keep {
            if let Some((old, _)) = held.pop_front() {
                let _ = std::fs::remove_file(old);
            }
        }
        held.push_back((path, first));
        let first_frame = held.front().map_or(first, |s| s.1);
        drop(held);
        if removed {
            self.feed.send(AppEvent::SpoolFrom { first_frame });
        }
        Ok(())
    }
}

/// The path of segment `k` of the ring named `base`.
fn segment_path(base: &Path, k: u64) -> PathBuf {
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{k}.jsonl"));
    base.with_file_name(name)
}

fn json(max_body: usize) -> JsonOptions {
    JsonOptions { max_body }
}

fn lock(s: &Segments) -> std::sync::MutexGuard<'_, VecDeque<(PathBuf, u64)>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for SpoolRing {
    fn drop(&mut self) {
        if self.remove {
            for (path, _) in lock(&self.segments).drain(..) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// The JSONL sink's renderer, with a [`ROW`] byte before the output of each event that is a
/// row (numbered here as the view numbers them: each connection's events decide its rows).
struct RowMarks {
    lines: Box<dyn Render>,
    numbering: Numbering,
}

impl RowMarks {
    fn of(out: &JsonlSink<BufWriter<File>>) -> io::Result<Box<dyn Render>> {
        let lines = out
            .renderer()
            .ok_or_else(|| io::Error::other("the JSONL sink renders no lines"))?;
        Ok(Box::new(RowMarks {
            lines,
            numbering: Numbering::default(),
        }))
    }
}

impl Render for RowMarks {
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
        if let Place::Row(_) = self.numbering.place(ev) {
            out.push(ROW);
        }
        self.lines.render(ev, out);
    }

    fn release_spare(&mut self) {
        self.lines.release_spare();
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.lines.end(out);
    }
}

impl SpoolRing {
    /// Write `part`, whole lines from row `row` on (`after`: the first row after them).
    fn write_part(&mut self, part: &[u8], row: u64, after: u64) -> io::Result<()> {
        if !part.is_empty() && self.room(part.len() as u64, row, after)? {
            self.out.write_rendered(part)?;
        }
        Ok(())
    }
}

impl Sink for SpoolRing {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        self.own.render(ev, &mut line);
        let done = self.write_rendered(&line);
        self.line = line;
        done
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut rest = std::mem::take(&mut self.line);
        rest.clear();
        self.own.end(&mut rest);
        let done = self.write_rendered(&rest);
        self.line = rest;
        done?;
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
        RowMarks::of(&self.out).ok()
    }

    /// The rendered lines, a segment begun where a row's output starts when the newest is
    /// full (or between lines of no row).
    fn write_rendered(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut parts = bytes.split(|b| *b == ROW);
        if let Some(before) = parts.next() {
            // Lines of events that are no row, after the latest row.
            self.write_part(before, self.rows, self.rows)?;
        }
        for part in parts {
            let row = self.rows;
            self.rows += 1;
            self.write_part(part, row, self.rows)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Dir, EventKind, Timestamp};

    /// Row `i`: a gap at offset `i` whose reason is `pad` bytes long.
    fn gap(i: u64, pad: usize) -> Event {
        Event {
            conn: 1,
            ts: Timestamp(0),
            kind: EventKind::Gap {
                dir: Dir::C2S,
                offset: i,
                len: 1,
                reason: "x".repeat(pad),
            },
        }
    }

    /// The offset of the first line of `path` (the row it is: see [`gap`]).
    fn first_offset(path: &Path) -> u64 {
        let text = std::fs::read_to_string(path).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        line["offset"].as_u64().unwrap()
    }

    #[test]
    fn the_ring_keeps_its_newest_segments_within_its_size_each_knowing_its_first_row() {
        let dir = tempfile::tempdir().unwrap();
        let (feed, rx) = crate::tui::channel(1024);
        let opts = SpoolOptions {
            dir: Some(dir.path().to_path_buf()),
            size: 8 << 10,
            max_body: 64,
        };
        let mut ring = SpoolRing::create(&opts, feed).unwrap();
        for i in 0..200 {
            ring.event(&gap(i, 100)).unwrap();
        }
        ring.flush().unwrap();
        let files = ring.segment_files();
        assert_eq!(files.len(), SEGMENTS);
        let on_disk: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
        // Three full segments at least, each short of its size by less than a line.
        assert!(
            on_disk <= 8 << 10 && on_disk > 3 * ((2 << 10) - 200),
            "{on_disk}"
        );
        let held = lock(&ring.segments).clone();
        for (path, first) in &held {
            assert_eq!(first_offset(path), *first);
        }
        // The view was told where the ring starts, as the ring has it.
        let told = rx.drain(usize::MAX).unwrap();
        let Some(AppEvent::SpoolFrom { first_frame }) = told.last() else {
            panic!("{told:?}");
        };
        assert_eq!(*first_frame, held[0].1);
        assert!(*first_frame > 0);
        // A line larger than a segment is left out: the ring starts after it.
        ring.event(&gap(200, 4 << 10)).unwrap();
        ring.event(&gap(201, 10)).unwrap();
        ring.flush().unwrap();
        let files = ring.segment_files();
        assert_eq!(files.len(), 1);
        assert_eq!(lock(&ring.segments)[0].1, 201);
        assert_eq!(first_offset(&files[0]), 201);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
