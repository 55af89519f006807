//! The TUI's export, executed (the TUI rebuilds the capture to export from its rows, pure:
//! `tui::export::capture_of`; this runs it): the capture replayed through the ordinary pipeline
//! with masking on, whatever `--show-secrets` said, into the JSONL or pcapng sink. The file is
//! what `replay --jsonl` or `--pcap` would write of those bytes, and reads back as such.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use crate::capture::SourceEvent;
use crate::pipeline::{InspectOptions, Sink};
use crate::sinks::pcapng::PcapngSink;
use crate::sinks::{JsonOptions, JsonlSink};

/// Replay `events` through a masking pipeline into a new JSONL (`jsonl`) or pcapng file at
/// `path`; the number of frames written. Errors name the path.
pub fn write(
    path: &Path,
    jsonl: bool,
    events: Vec<SourceEvent>,
    max_body: usize,
) -> io::Result<u64> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = BufWriter::new(File::create(path).map_err(named)?);
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: !jsonl,
        max_body,
        ..InspectOptions::default()
    };
    let mut sink: Box<dyn Sink + Send> = if jsonl {
        Box::new(JsonlSink::new(file, JsonOptions { max_body }))
    } else {
        Box::new(PcapngSink::new(file).map_err(named)?)
    };
    let stats = super::run(events, opts, &mut [&mut *sink]).map_err(named)?;
    sink.flush().map_err(named)?;
    Ok(stats.frames)
}
