//! What an export (`e`, then Enter in the export line) asks for, and what the status line says
//! of it.
//!
//! When the view holds every frame it can reach (a live session without a spool, stdin), the
//! export is the capture rebuilt from the rows in memory (`tui::export::capture_of`), written
//! by the event loop ([`Effect::Export`]). When it pages (a file replay, a spooled live
//! session), memory holds a window only: a connection, or the frames shown, are then written by
//! the pager from its source, the whole file or spool ring, through the filter that chooses
//! them ([`Effect::ExportSource`]: `conn:N`; the frame list's filter and its connection), as
//! `replay --filter F --jsonl`/`--pcap` writes them. Marks are on rows seen: the marked frames
//! are those in memory, and the status line says how many marked frames it leaves out.

use crate::browse::export::{ExportRequest, Exported};
use crate::filter::{Filter, Term};
use crate::tui::app::{App, Effect, ExportScope, Overlay};

impl App {
    /// Enter in the export line: ask for what is chosen to be written to `path`.
    pub(super) fn submit_export(&mut self, path: String, scope: ExportScope) {
        self.overlay = Overlay::None;
        let jsonl = path.ends_with(".jsonl") || path.ends_with(".json");
        if let Some(filter) = self.source_filter(scope) {
            let what = format!("{} frames of the whole capture", scope.name());
            self.message = Some(format!("exporting {what} to {path}…"));
            self.effects.push(Effect::ExportSource(ExportRequest {
                path: path.into(),
                jsonl,
                filter,
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
        let left_out = match scope {
            ExportScope::Marked => self.marks_not_in_memory(),
            _ => String::new(),
        };
        self.effects.push(Effect::Export {
            path: path.into(),
            jsonl,
            events,
            what: format!(
                "{frames} {} frame(s) of {conns} connection(s){left_out}",
                scope.name()
            ),
        });
    }

    /// The filter choosing what `scope` exports of the whole source, when the view pages it
    /// (`None`: the rows in memory are exported). The frames shown with only the marked ones
    /// listed are the marked frames in memory.
    fn source_filter(&self, scope: ExportScope) -> Option<Filter> {
        if !self.model.pages() {
            return None;
        }
        match scope {
            ExportScope::Marked => None,
            ExportScope::Shown if self.frames.marked_only() => None,
            ExportScope::Shown => {
                let mut filter = self.filter.applied().clone();
                if let Some(conn) = self.selected_conn() {
                    filter.terms.push(Term::Conn(vec![conn]));
                    filter.source = format!("{} conn:{conn}", filter.source).trim().into();
                }
                Some(filter)
            }
            ExportScope::Connection => {
                let conn = self
                    .selected_conn()
                    .or_else(|| self.selected_row().map(|r| r.conn))?;
                Some(Filter {
                    terms: vec![Term::Conn(vec![conn])],
                    source: format!("conn:{conn}"),
                })
            }
        }
    }

    /// What a marked export of a paged view leaves out, in words (empty: nothing): the marked
    /// frames, and the frames of marked connections, no longer in memory.
    fn marks_not_in_memory(&self) -> String {
        if !self.model.pages() {
            return String::new();
        }
        let frames = self
            .frames
            .marks()
            .iter()
            .filter(|(c, s)| self.model.row(*c, *s).is_none())
            .count();
        let conns = self
            .frames
            .marked_conns()
            .iter()
            .filter_map(|c| self.model.conns.get(c))
            .filter(|c| c.total_rows > c.rows.len() as u64)
            .count();
        match (frames, conns) {
            (0, 0) => String::new(),
            (n, 0) => format!(" ({n} marked frame(s) not in memory left out)"),
            (0, m) => format!(" (the frames of {m} marked connection(s) not in memory left out)"),
            (n, m) => format!(
                " ({n} marked frame(s) and the frames of {m} marked connection(s) not in memory \
                 left out)"
            ),
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
