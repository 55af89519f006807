//! The panes of the UI as components: each owns its state (its cursor, what it scrolls, what
//! it has toggled) and handles its own keys, reading the shared [`Model`] it is given. The
//! [`App`](super::App) routes events to them and carries out what they cannot do alone: an
//! [`Outcome`] names it (select a frame elsewhere, say something, apply a filter).

pub mod conn_list;
pub mod cursor;
pub mod detail;
pub mod export_line;
pub mod filter_line;
pub mod frame_list;
pub mod full_text;
pub mod health;
pub mod messages_view;
pub mod state_pane;
pub mod stats_view;
pub mod timeline_view;
pub mod violations;

use crate::event::{ConnId, FrameRef};

use super::input::Action;
use super::model::Model;

/// What a component made of a key, for the router.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not the component's key: the router takes it.
    Ignored,
    /// Done: only the component changed.
    Consumed,
    /// The cursor moved to another row: the panes that show what it selects follow.
    Moved,
    /// Say this in the status line.
    Message(String),
    /// Select this frame in the frame list, brought back from the capture when it is not in
    /// memory.
    Reach(ConnId, u64),
    /// Select this frame, kept in memory, in the frame list.
    Select(ConnId, u64),
    /// Show the selection's whole text.
    FullText,
    /// Apply this filter (its source) to the frame list and show it.
    Filter(String),
    /// Recompute the frame list's rows, then say this (`None`: say that nothing is marked
    /// when only the marked frames are listed and there is none).
    Rebuild(Option<String>),
    /// Close the overlay.
    Close,
    /// Close the export line and ask for `scope` to be written to `path`.
    Export {
        /// Where.
        path: String,
        /// What.
        scope: super::app::ExportScope,
    },
    /// Close the overlay and select this frame in the frame list (brought back when not in
    /// memory); with `focus`, the frame list takes the focus; `message` is said, if any.
    Jump {
        /// The frame's connection.
        conn: ConnId,
        /// Its row.
        seq: u64,
        /// The frame list takes the focus.
        focus: bool,
        /// What to say.
        message: Option<String>,
    },
    /// A new filter is applied: close its line and recompute the frame list.
    Applied,
}

/// What a component is given with a key: the shared model, and how many rows its pane shows.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The shared data.
    pub model: &'a Model,
    /// Rows the component's pane shows at the current size.
    pub page: usize,
}

/// Enter on a pane's row that names frame `f` of `conn`, row `seq` if known: the frame is
/// reached when the pager can bring it back, else selected when kept, else `gone` (what the
/// frame is, in words) is said to be no longer in memory.
pub fn go_to_frame(
    model: &Model,
    conn: ConnId,
    seq: Option<u64>,
    f: FrameRef,
    gone: &str,
) -> Outcome {
    if let Some(seq) = seq.filter(|s| model.pages() && *s >= model.reachable_from()) {
        // Kept or not: the whole capture is reachable.
        return Outcome::Reach(conn, seq);
    }
    match seq.filter(|s| model.row(conn, *s).is_some()) {
        Some(seq) => Outcome::Select(conn, seq),
        None => Outcome::Message(format!(
            "{gone} at {} offset {} is no longer in memory",
            f.dir.as_str(),
            f.offset
        )),
    }
}

/// The cursor move of a moving key in a list of `page` rows (`None`: not a move).
pub fn step(a: Action, page: usize) -> Option<isize> {
    let page = page.max(2) as isize - 1;
    Some(match a {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -page,
        Action::PageDown => page,
        Action::Home => isize::MIN / 2,
        Action::End => isize::MAX / 2,
        _ => return None,
    })
}

/// Where `a` scrolls a text of `last` + `page` lines to from line `scroll` (`None`: `a` does
/// not scroll).
pub fn scrolled(a: Action, scroll: usize, page: usize, last: usize) -> Option<usize> {
    Some(match a {
        Action::Up => scroll.saturating_sub(1),
        Action::Down => scroll + 1,
        Action::PageUp => scroll.saturating_sub(page.max(2) - 1),
        Action::PageDown => scroll + page.max(2) - 1,
        Action::Home => 0,
        Action::End => last,
        _ => return None,
    })
}
