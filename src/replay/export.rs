//! The TUI's export, executed: a capture replayed through the ordinary pipeline with masking
//! on, whatever `--show-secrets` said, into the JSONL or pcapng sink. The file is what
//! `replay --jsonl` or `--pcap` would write of those bytes, and reads back as such.
//!
//! Two sources: the capture the TUI rebuilds from the rows it holds ([`write`]; pure, see
//! `tui::export::capture_of`), or, when the view pages a file or a live spool ring, that whole
//! source re-run by the pager (`pager::export_sink`), into the sink of [`filtered_sink`]: the
//! frames a filter passes, as `replay --filter F --jsonl`/`--pcap` writes them.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use crate::capture::SourceEvent;
use crate::event::{Event, EventKind};
use crate::filter::Filter;
use crate::pipeline::{InspectOptions, Sink};
use crate::sinks::pcapng::PcapngSink;
use crate::sinks::{FilteredSink, JsonOptions, JsonlSink};

/// An export's sink: a new file, written as it goes.
pub type ExportSink = Box<dyn Sink + Send>;

/// `e`, its message prefixed with `path` (every export error names the file).
pub fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The inspection of an export: masked whatever `--show-secrets` said, the bytes flowing for a
/// pcapng, bodies cut at `max_body`.
pub fn masked(jsonl: bool, max_body: usize) -> InspectOptions {
    InspectOptions {
        show_secrets: false,
        emit_data: !jsonl,
        max_body,
        ..InspectOptions::default()
    }
}

/// A new JSONL (`jsonl`) or pcapng file at `path`, as a sink. Errors name the path.
pub fn create(path: &Path, jsonl: bool, max_body: usize) -> io::Result<ExportSink> {
    let file = BufWriter::new(File::create(path).map_err(|e| named(path, e))?);
    Ok(if jsonl {
        Box::new(JsonlSink::new(file, JsonOptions { max_body }))
    } else {
        Box::new(PcapngSink::new(file).map_err(|e| named(path, e))?)
    })
}

/// An export's sink counting the frames it is given: those written.
pub struct Counted {
    inner: ExportSink,
    /// Frames written so far.
    pub frames: u64,
}

impl Sink for Counted {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if matches!(ev.kind, EventKind::Frame(_)) {
            self.frames += 1;
        }
        self.inner.event(ev)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn records_cuts(&self) -> bool {
        self.inner.records_cuts()
    }
}

/// [`create`] behind `filter`, as `replay --filter` puts it (`FilteredSink`): what a re-run of
/// the whole source writes of the frames it passes, counted.
pub fn filtered_sink(
    path: &Path,
    jsonl: bool,
    max_body: usize,
    filter: Filter,
) -> io::Result<FilteredSink<Counted>> {
    let inner = Counted {
        inner: create(path, jsonl, max_body)?,
        frames: 0,
    };
    Ok(FilteredSink::new(inner, filter))
}

/// Replay `events` through a masking pipeline into a new JSONL (`jsonl`) or pcapng file at
/// `path`; the number of frames written. Errors name the path.
pub fn write(
    path: &Path,
    jsonl: bool,
    events: Vec<SourceEvent>,
    max_body: usize,
) -> io::Result<u64> {
    let mut sink = create(path, jsonl, max_body)?;
    let opts = masked(jsonl, max_body);
    let stats = super::run(events, opts, &mut [&mut *sink]).map_err(|e| named(path, e))?;
    sink.flush().map_err(|e| named(path, e))?;
    Ok(stats.frames)
}
