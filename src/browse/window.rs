//! What the TUI and the pager of a file replay say to each other: the app asks for the window
//! of rows around a frame no longer in memory ([`WindowRequest`], maybe a search, [`Find`]);
//! the pager answers with the pipeline events of that window ([`Window`], each [`Item`] with the
//! place the numbering gave it). [`WindowSource`] is the pager as the UI's event loop sees it,
//! whoever runs it. [`row_matches`] is how a row of those events is judged against the frame
//! list's filter, the same way the app judges the rows it keeps. The timeline's requests of the
//! pager are in `follow.rs`.

use std::sync::Arc;

use crate::event::{ConnId, Event, EventKind};
use crate::filter::Filter;
use crate::state::Snapshot;

use super::export::{ExportRequest, Exported};
use super::follow::{FollowRequest, Followed};
use super::numbering::Place;
use super::row::Row;

/// A window asked of the pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowRequest {
    /// Which request (the app applies the answer to its latest only).
    pub id: u64,
    /// Only this connection's rows (the frame list shows one connection), or all.
    pub scope: Option<ConnId>,
    /// The row to centre on and select: its connection and number.
    pub target: (ConnId, u64),
    /// Then move the cursor by this many rows (scrolling past the window's edge goes on).
    pub step: isize,
    /// The frame list's filter: the window's rows are those it matches (and the target), as
    /// the list of rows in memory shows only those.
    pub filter: Filter,
    /// Search: the target is not `target` but the first row matching the filter at or after
    /// it (the last at or before it, backwards), found by the pager scanning the capture.
    pub find: Option<Find>,
}

/// A search of the whole capture for a row matching the request's filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Find {
    /// Towards later rows (the first match at or after the target's number), else earlier
    /// (the last at or before it).
    pub forward: bool,
    /// Only a row with a violation is a match (`n`/`N` with a filter on).
    pub violations: bool,
}

/// One pipeline event of a window, with the place the pager's numbering gave it.
#[derive(Clone, Debug)]
pub struct Item {
    /// Its row number, or the row it belongs to.
    pub place: Place,
    /// The AMQP 1.0 link of a frame, from the attaches before it (they may be outside).
    pub link: Option<String>,
    /// The event.
    pub event: Event,
}

/// The events of the rows around a target, as the pager found them.
#[derive(Clone, Debug)]
pub struct Window {
    /// What was asked.
    pub request: WindowRequest,
    /// The row to select: the request's target, or the match a search found (`None`: no
    /// match; the window is then not to be shown).
    pub select: Option<(ConnId, u64)>,
    /// Each connection's state as of just before its first row in the window.
    pub base: Vec<(ConnId, Arc<Snapshot>)>,
    /// The window's rows and what belongs to them, in capture order.
    pub items: Vec<Item>,
}

/// Brings back windows of a whole capture for the UI, on a thread of its own: the event loop
/// hands it the app's requests and gives the app the windows as they come, with the progress.
pub trait WindowSource {
    /// Ask for a window; an answer still due for an older request may be dropped.
    fn request(&self, r: WindowRequest);
    /// A window that has come, if any (never waits).
    fn try_recv(&self) -> Option<Window>;
    /// Bytes of the capture file the first pass has read, and the file's size.
    fn progress(&self) -> (u64, u64);
    /// Rows the current re-run has numbered (how far a search has got).
    fn scanned(&self) -> u64;
    /// Ask for the followed frames of the whole capture (the timeline, `L`); an answer still
    /// due for an older request may be dropped.
    fn follow(&self, r: FollowRequest);
    /// Stop bringing back the latest followed frames asked (the timeline was closed).
    fn stop_follow(&self);
    /// The followed frames that have come, if any (never waits).
    fn try_recv_followed(&self) -> Option<Followed>;
    /// Write the frames of the whole capture the request's filter passes to its file (`e`,
    /// whatever is in memory); every request is carried out, in turn.
    fn export(&self, r: ExportRequest);
    /// How an export went, once it has (never waits).
    fn try_recv_exported(&self) -> Option<Exported>;
}

/// Whether the row of `items` (its own event first, then what belongs to it) passes `filter`;
/// with `violations`, only when it also has a violation.
pub fn row_matches(filter: &Filter, items: &[Item], violations: bool) -> bool {
    let Some(row) = items.first().and_then(row_of) else {
        return false;
    };
    let mut row = row;
    for it in &items[1..] {
        if let (Place::Attach(_), EventKind::Violation(v)) = (it.place, &it.event.kind) {
            row.violations.push(v.clone());
        }
    }
    (!violations || !row.violations.is_empty()) && row.matches(filter)
}

/// The row the app makes of a row's event (without what only the detail view shows).
fn row_of(item: &Item) -> Option<Row> {
    let e = &item.event;
    let (conn, ts) = (e.conn, e.ts);
    Some(match &e.kind {
        EventKind::Header {
            dir,
            offset,
            header,
            raw,
        } => Row::header(conn, ts, *dir, *offset, *header, raw),
        EventKind::Frame(f) => Row::frame_listed(conn, ts, f, item.link.clone()),
        EventKind::Gap {
            dir,
            offset,
            len,
            reason,
        } => Row::gap(conn, ts, *dir, *offset, *len, reason),
        EventKind::Close(info) => Row::close(conn, ts, info),
        EventKind::Violation(v) => Row::malformed(conn, ts, v),
        _ => return None,
    })
}
