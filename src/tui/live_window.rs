//! The live view's paging: with a spool (`spool.rs`), the frames dropped from memory are
//! reached as in a file replay (`window.rs`): the pager re-runs the spool ring and brings
//! back the window around the frame asked, at once (a live feed never ends). Rows keep the
//! numbers the view gave them, from the first the ring still holds ([`SpoolState::from`]):
//! the frames before it are gone, and the frame list says so.
//!
//! [`SpoolState::from`]: super::model::SpoolState

use super::model::Model;

impl Model {
    /// Whether the frames not in memory can be brought back: a file replay's, or a live
    /// session's that is spooled.
    pub fn pages(&self) -> bool {
        self.opts.whole_capture || self.opts.spool.is_some()
    }

    /// Whether the pager can be asked now: a live spool at any time, a file once its first
    /// pass is over.
    pub fn pager_ready(&self) -> bool {
        !self.opts.whole_capture || self.feed_ended
    }

    /// The first row the pager can bring back: the first the spool ring still holds (0 in a
    /// file replay, or while the ring holds the whole session).
    pub fn reachable_from(&self) -> u64 {
        if self.opts.whole_capture {
            return 0;
        }
        self.spool.from
    }

    /// The spool ring removed its oldest segment: it holds the rows from `first_frame` on.
    pub(super) fn spool_from(&mut self, first_frame: u64) {
        self.spool.from = self.spool.from.max(first_frame);
    }
}
