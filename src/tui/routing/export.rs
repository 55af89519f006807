//! What an export (`e`, then Enter in the export line) asks for, and what the status line says
//! of it.
//!
//! When the view holds every frame it can reach (a live session without a spool, stdin), the
//! export is the capture rebuilt from the rows in memory (`tui::export::capture_of`), written
//! by the event loop ([`Effect::Export`]). When it pages (a file replay, a spooled live
//! session), memory holds a window only: the export is then the pager's, from its source, the
//! whole file or spool ring ([`Effect::ExportSource`]), through the filter that chooses the
//! frames as `replay --filter F --jsonl`/`--pcap` writes them: `conn:N` for a connection; the
//! frame list's filter, and its connection, for the frames shown; and the marks (by row
//! number) for the marked frames, or the frames shown while only the marked ones are listed.

use crate::browse::export::{ExportRequest, Exported, Marks};
use crate::filter::{Filter, Term};
use crate::tui::app::{App, Effect, ExportScope, Overlay};

impl App {
    /// Enter in the export line: ask for what is chosen to be written to `path`.
    pub(super) fn submit_export(&mut self, path: String, scope: ExportScope) {
        self.overlay = Overlay::None;
        let jsonl = path.ends_with(".jsonl") || path.ends_with(".json");
        if self.model.pages() {
            let Some((filter, marks)) = self.source_choice(scope) else {
                self.message = Some(format!("nothing to export ({} frames)", scope.name()));
                return;
            };
            let of = if self.model.opts.whole_capture {
                "the file"
            } else {
                "the spool"
            };
            let what = format!("{} frames of {of}", scope.name());
            self.message = Some(format!("exporting {what} to {path}..."));
            self.effects.push(Effect::ExportSource(ExportRequest {
                path: path.into(),
                jsonl,
                filter,
                marks,
                max_body: self.model.opts.max_body,
                what,
            }));
            return;
        }
        let (events, frames, conns) = crate::tui::export::capture_of(self, scope);
        if frames == 0 && conns == 0 {
            self.message = Some(format!("nothing to export ({} frames)", scope.name()));
            return;
        }
        self.effects.push(Effect::Export {
            path: path.into(),
            jsonl,
            events,
            what: format!(
                "{frames} {} frame(s) of {conns} connection(s)",
                scope.name()
            ),
        });
    }

    /// What `scope` exports of the whole source of a view that pages: the filter, and the
    /// marks when only the marked frames are (`None`: nothing is chosen).
    fn source_choice(&self, scope: ExportScope) -> Option<(Filter, Option<Marks>)> {
        let marks = || {
            let marks = Marks {
                frames: self.frames.marks().iter().copied().collect(),
                conns: self.frames.marked_conns().iter().copied().collect(),
            };
            (!marks.is_empty()).then_some(marks)
        };
        match scope {
            ExportScope::Marked => Some((Filter::default(), Some(marks()?))),
            ExportScope::Shown => {
                let mut filter = self.filter.applied().clone();
                if let Some(conn) = self.selected_conn() {
                    filter.terms.push(Term::Conn(vec![conn]));
                    filter.source = format!("{} conn:{conn}", filter.source).trim().into();
                }
                if self.frames.marked_only() {
                    return Some((filter, Some(marks()?)));
                }
                Some((filter, None))
            }
            ExportScope::Connection => {
                let conn = self
                    .selected_conn()
                    .or_else(|| self.selected_row().map(|r| r.conn))?;
                let filter = Filter {
                    terms: vec![Term::Conn(vec![conn])],
                    source: format!("conn:{conn}"),
                };
                Some((filter, None))
            }
        }
    }

    /// The pager has written an export of the whole source, or failed to.
    pub(crate) fn exported(&mut self, done: Exported) {
        let r = &done.request;
        self.message = Some(match &done.result {
            Ok(n) => format!(
                "exported {}: {n} frame(s) to {} ({}, masked)",
                r.what,
                r.path.display(),
                if r.jsonl { "JSONL" } else { "pcapng" }
            ),
            Err(e) => format!("export failed: {e}"),
        });
    }
}
