//! The sink of a pager's export (`mod.rs`): a re-run of the whole source (the file, or the
//! spool ring) into the file asked, behind the request's filter as `replay --filter F --jsonl`
//! / `--pcap` writes it (`replay::export::filtered_sink`), with masking on; for the marked
//! frames, only those besides, found by row number (the re-run numbers its rows as the view
//! did, `browse::numbering`). It keeps nothing but the numbering's few keys per connection:
//! each event goes to the file as it comes. A write that fails, or the UI gone, stops the
//! re-run.

use std::io;

use crate::browse::export::{ExportRequest, Exported, Marks};
use crate::browse::numbering::{Numbering, Place};
use crate::capture::Stop;
use crate::event::Event;
use crate::pipeline::Sink;
use crate::replay::export::{Counted, filtered_sink, named};
use crate::sinks::FilteredSink;

/// Writes an export from a re-run's events.
pub(super) struct ExportSink {
    out: FilteredSink<Counted>,
    /// The marked frames, when only they are written.
    marks: Option<Marks>,
    numbering: Numbering,
    /// The first write that failed.
    error: Option<io::Error>,
    /// Stops the re-run.
    stop: Stop,
    /// Set when the UI is gone.
    quit: Stop,
}

impl ExportSink {
    /// The file of `request`, created now (an error names it).
    pub(super) fn new(request: &ExportRequest, stop: Stop, quit: Stop) -> io::Result<ExportSink> {
        let out = filtered_sink(
            &request.path,
            request.jsonl,
            request.max_body,
            request.filter.clone(),
        )?;
        Ok(ExportSink {
            out,
            marks: request.marks.clone(),
            numbering: Numbering::default(),
            error: None,
            stop,
            quit,
        })
    }

    /// Number the re-run's rows from `first` on (a spool ring's first row).
    pub(super) fn start_at(&mut self, first: u64) {
        self.numbering = Numbering::starting_at(first);
    }

    /// Whether `ev` is chosen besides the filter: with marks, a row only if it is marked.
    fn chosen(&mut self, ev: &Event) -> bool {
        let Some(marks) = &self.marks else {
            return true;
        };
        match self.numbering.place(ev) {
            Place::Row(seq) => marks.has(ev.conn, seq),
            Place::Attach(_) | Place::None => true,
        }
    }

    /// The next event of the re-run.
    pub(super) fn event(&mut self, ev: &Event) {
        let chosen = self.chosen(ev);
        self.write(ev, chosen);
    }

    /// An event of the re-run that is no row of the view's (the gaps a spool ring starts with,
    /// the ends of the connections still open): written, not numbered (it is never a frame,
    /// which alone a choice concerns).
    pub(super) fn unnumbered(&mut self, ev: &Event) {
        self.write(ev, true);
    }

    fn write(&mut self, ev: &Event, chosen: bool) {
        if self.error.is_some() {
            return;
        }
        if self.quit.is_stopped() {
            self.error = Some(io::Error::other("the view was closed"));
        } else if let Err(e) = self.out.event_chosen(ev, chosen) {
            self.error = Some(e);
        }
        if self.error.is_some() {
            self.stop.stop();
        }
    }

    /// The re-run is over: the last frame judged, the file flushed; the frames written.
    pub(super) fn finish(mut self, request: ExportRequest) -> Exported {
        let flushed = match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        let result = flushed
            .map(|()| self.out.into_inner().frames)
            .map_err(|e| named(&request.path, e).to_string());
        Exported { request, result }
    }
}
