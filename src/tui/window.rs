//! Whole-capture navigation in a file replay: the kept rows are a window of the capture, and a
//! jump outside it (`g`/`G`, `n`/`N`, Enter on a violation, scrolling past its edge) asks for
//! the window around the frame it wants ([`Effect::LoadWindow`]). The pager (`replay::pager`,
//! given to the event loop as a [`WindowSource`](crate::browse::window::WindowSource))
//! re-runs the ordinary pipeline over the file and answers with the events of that window
//! ([`Window`], a type of the row model `browse` it shares with the UI), which replace the
//! kept rows here. The app does no I/O and decodes nothing: it only knows, from the first
//! pass, each connection's row numbers and the violations.
//!
//! With a filter on, a window's rows are those the filter matches (and the target), as the
//! list of rows in memory shows only those; the far jumps then look for rows it matches
//! (`g`/`G` the first / last, `n`/`N` one with a violation, `>`/`<` the next / previous: a
//! search of the capture, [`Find`], see `routing/search.rs`), and the filter stays on.

pub use crate::browse::window::{Find, Item, Window, WindowRequest};
use crate::event::ConnId;

/// What the status line says when a jump cleared the filter to show its frame.
pub(super) const FILTER_CLEARED: &str = "filter cleared to show the frame";

/// Where the whole-capture mode is.
#[derive(Clone, Debug, Default)]
pub struct Paging {
    /// Bytes of the file the first pass has read, and the file's size.
    pub progress: Option<(u64, u64)>,
    /// The window asked for and not come yet.
    pub loading: Option<WindowRequest>,
    /// Rows a search has scanned so far (of the capture's, the first pass's count).
    pub scanned: u64,
    /// The edge row a move past the window's edge last asked around, and the move: asked
    /// again, the window brought back had nothing beyond it (a spool ring's first row).
    pub(super) edge: Option<(ConnId, u64, isize)>,
    next_id: u64,
}

impl Paging {
    /// The number of a new request of the pager.
    pub(super) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// `read` of `total` in whole percent (100 for an empty file).
pub fn percent(read: u64, total: u64) -> u64 {
    if total == 0 {
        return 100;
    }
    (read.min(total) as u128 * 100 / total as u128) as u64
}

/// What the status line says when a search found nothing.
pub(super) fn no_match(request: &WindowRequest) -> String {
    let Some(find) = request.find else {
        return format!("frame #{} is not in the capture", request.target.1 + 1);
    };
    let what = if find.violations {
        "frame with a violation matching the filter"
    } else {
        "match"
    };
    match (find.forward, request.target.1) {
        (true, 0) | (false, u64::MAX) => format!("no {what} in the capture"),
        // The row searched from is the one after (before) the one selected.
        (true, from) => format!("no {what} after #{from}"),
        (false, from) => format!("no {what} before #{}", from.saturating_add(2)),
    }
}
