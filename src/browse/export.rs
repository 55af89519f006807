//! What the TUI and the pager say to each other about an export of the whole source (a file
//! replay, or a live view's spool ring) rather than of the rows in memory: the app asks for the
//! frames a filter passes (and, for the marked frames, its marks: [`Marks`]) to be written to a
//! file ([`ExportRequest`]); the pager re-runs the source through a masking pipeline into that
//! file and answers how it went ([`Exported`]).
//! Pure data: the pager (`crate::replay::pager`) performs it, the UI asks and reports.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::event::ConnId;
use crate::filter::Filter;

/// An export asked of the pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportRequest {
    /// Where.
    pub path: PathBuf,
    /// JSONL (else pcapng).
    pub jsonl: bool,
    /// The frames written: those it passes (`conn:N` for a connection; the frame list's filter,
    /// and its connection, for the frames shown).
    pub filter: Filter,
    /// Only these frames besides (the marked ones; `None`: every frame the filter passes).
    pub marks: Option<Marks>,
    /// Bodies cut at this many bytes.
    pub max_body: usize,
    /// What is exported, in words (`shown frames`), for the report.
    pub what: String,
}

/// The frames the user marked, by row number (`browse::numbering`: the pager's re-run numbers
/// the rows as the view did).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// Marked frames: connection and row number.
    pub frames: BTreeSet<(ConnId, u64)>,
    /// Marked connections: every frame of theirs counts as marked.
    pub conns: BTreeSet<ConnId>,
}

impl Marks {
    /// Whether row `seq` of `conn` is marked (by itself or with its connection).
    pub fn has(&self, conn: ConnId, seq: u64) -> bool {
        self.conns.contains(&conn) || self.frames.contains(&(conn, seq))
    }

    /// Whether nothing is marked.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.conns.is_empty()
    }
}

/// How an export went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// What was asked.
    pub request: ExportRequest,
    /// The number of frames written, or the error (naming the path).
    pub result: Result<u64, String>,
}
