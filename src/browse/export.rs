//! What the TUI and the pager say to each other about an export of the whole source (a file
//! replay, or a live view's spool ring) rather than of the rows in memory: the app asks for the
//! frames a filter passes to be written to a file ([`ExportRequest`]); the pager re-runs the
//! source through a masking pipeline into that file and answers how it went ([`Exported`]).
//! Pure data: the pager (`crate::replay::pager`) performs it, the UI asks and reports.

use std::path::PathBuf;

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
    /// Bodies cut at this many bytes.
    pub max_body: usize,
    /// What is exported, in words (`shown frames`), for the report.
    pub what: String,
}

/// How an export went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// What was asked.
    pub request: ExportRequest,
    /// The number of frames written, or the error (naming the path).
    pub result: Result<u64, String>,
}
