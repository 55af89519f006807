//! The frame list's component: which rows it lists (the connection choice, the filter and the
//! marks passed), its cursor, whether it follows new frames, the marks (`m`, `M`) and its time
//! column (`t`).
//!
//! The list is `(connection, row number)` pairs into the shared model's rows, in arrival
//! order. Rows dropped from memory leave their entry behind until the list is compacted
//! (rarely: the usual drop is the oldest row, whose entry goes at once). A mark names a row by
//! its pair, so it stays on its row whatever the list shows; marks of rows dropped from memory
//! are kept until unmarked (they export nothing).

use std::collections::{HashSet, VecDeque};

use super::super::app::TimeMode;
use super::super::filter::Filter;
use super::super::model::{Model, Row};
use super::Outcome;
use super::cursor::Cursor;
use crate::event::ConnId;
use crate::tui::input::Action;

/// The frame list's rows, cursor, marks and time column.
#[derive(Clone, Debug, Default)]
pub struct FrameList {
    view: VecDeque<(ConnId, u64)>,
    /// Entries whose rows were dropped from memory, not yet compacted away.
    dangling: usize,
    cursor: Cursor,
    follow: bool,
    marks: HashSet<(ConnId, u64)>,
    marked_conns: HashSet<ConnId>,
    marked_only: bool,
    time_mode: TimeMode,
}

impl FrameList {
    /// An empty list, following new frames or not.
    pub fn new(follow: bool) -> FrameList {
        FrameList {
            follow,
            ..Default::default()
        }
    }

    /// The rows listed: (connection, row number).
    pub fn view(&self) -> &VecDeque<(ConnId, u64)> {
        &self.view
    }

    /// The cursor (the list's columns flex to the width: it is not scrolled sideways).
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// Whether the list tails new frames.
    pub fn follows(&self) -> bool {
        self.follow
    }

    /// The marked frames.
    pub fn marks(&self) -> &HashSet<(ConnId, u64)> {
        &self.marks
    }

    /// The marked connections: all their frames count as marked.
    pub fn marked_conns(&self) -> &HashSet<ConnId> {
        &self.marked_conns
    }

    /// Whether only the marked frames are listed.
    pub fn marked_only(&self) -> bool {
        self.marked_only
    }

    /// What the time column shows.
    pub fn time_mode(&self) -> TimeMode {
        self.time_mode
    }

    /// The entry under the cursor.
    pub fn selected(&self) -> Option<(ConnId, u64)> {
        self.view.get(self.cursor.selected()).copied()
    }

    /// Where `entry` is listed.
    pub fn position(&self, entry: (ConnId, u64)) -> Option<usize> {
        self.view.iter().position(|e| *e == entry)
    }

    /// Whether the row `seq` of `conn` is marked (by itself or with its connection).
    pub fn is_marked(&self, conn: ConnId, seq: u64) -> bool {
        self.marked_conns.contains(&conn) || self.marks.contains(&(conn, seq))
    }

    /// Whether the list shows `row` under `filter` (and the marks when only they show); the
    /// connection choice aside.
    pub fn shows(&self, row: &Row, filter: &Filter) -> bool {
        row.matches(filter) && (!self.marked_only || self.is_marked(row.conn, row.seq))
    }

    /// List only the marked frames, or every frame.
    pub fn set_marked_only(&mut self, on: bool) {
        self.marked_only = on;
    }

    /// Follow new frames, or stop.
    pub fn set_follow(&mut self, on: bool) {
        self.follow = on;
    }

    /// Keep the cursor within the list and its `page` rows.
    pub fn clamp(&mut self, page: usize) {
        self.cursor.clamp(self.view.len(), page);
    }

    /// Move the cursor by `delta` rows in a `page`-row pane (a move up stops following new
    /// frames); whether it moved.
    pub fn move_by(&mut self, delta: isize, page: usize) -> bool {
        if delta < 0 {
            self.follow = false;
        }
        self.cursor.move_by(delta, self.view.len(), page)
    }

    /// Put the cursor on row `i` of a `page`-row pane, no longer following new frames.
    pub fn select(&mut self, i: usize, page: usize) {
        self.follow = false;
        self.cursor.select(i);
        self.clamp(page);
    }

    /// The row listed next to the cursor: after it (`forward`) or before it.
    pub fn neighbour(&self, forward: bool) -> Option<usize> {
        let cur = self.cursor.selected();
        if forward {
            Some(cur + 1).filter(|i| *i < self.view.len())
        } else {
            cur.checked_sub(1).filter(|_| !self.view.is_empty())
        }
    }

    /// The nearest row listed after the cursor (`forward`) or before it whose frame has a
    /// violation (among the rows `model` keeps).
    pub fn next_with_violation(&self, model: &Model, forward: bool) -> Option<usize> {
        let cur = self.cursor.selected();
        let has = |i: &usize| {
            self.view
                .get(*i)
                .and_then(|(c, s)| model.row(*c, *s))
                .is_some_and(|r| !r.violations.is_empty())
        };
        if forward {
            (cur + 1..self.view.len()).find(has)
        } else {
            (0..cur).rev().find(has)
        }
    }

    /// Put the cursor on row `i`, scrolled to the middle of the pane.
    pub fn select_centred(&mut self, i: usize, page: usize) {
        self.cursor.centre(i, self.view.len(), page);
    }

    /// Follow new frames from the last one listed (`F`).
    pub fn tail(&mut self, page: usize) {
        self.follow = true;
        self.cursor.select(self.view.len().saturating_sub(1));
        self.clamp(page);
    }

    /// A row arrived: list it when `visible`.
    pub fn append(&mut self, entry: (ConnId, u64), visible: bool) {
        if visible {
            self.view.push_back(entry);
        }
    }

    /// Rows arrived or went: the cursor follows the last row when following, and stays
    /// within the pane.
    pub fn settle(&mut self, page: usize) {
        if self.follow {
            self.cursor.select(self.view.len().saturating_sub(1));
        }
        self.clamp(page);
    }

    /// The row `entry` was dropped from memory (`listed`: it was one the filter showed): the
    /// oldest listed goes at once, the cursor staying on its row; another waits for
    /// [`FrameList::compact`].
    pub fn dropped(&mut self, entry: (ConnId, u64), listed: impl FnOnce() -> bool) {
        if self.view.front() == Some(&entry) {
            self.view.pop_front();
            self.cursor.first_removed();
        } else if listed() {
            self.dangling += 1;
        }
    }

    /// Whether there are many entries of rows gone from memory: time to compact.
    pub fn needs_compact(&self) -> bool {
        self.dangling > 256 || self.dangling * 8 > self.view.len()
    }

    /// Drop the entries whose rows are gone from memory, keeping the cursor on its row.
    pub fn compact(&mut self, model: &Model, page: usize) {
        let sel = self.selected();
        self.view.retain(|(c, s)| model.row(*c, *s).is_some());
        self.dangling = 0;
        self.cursor.select(match sel {
            Some((_, s)) => self.view.partition_point(|(_, x)| *x < s),
            None => 0,
        });
        self.settle(page);
    }

    /// List nothing (the rows are about to be replaced), and stop following.
    pub fn clear(&mut self) {
        self.view.clear();
        self.dangling = 0;
        self.follow = false;
    }

    /// Recompute the list from the rows of `scope` (`None`: all connections) that `filter`
    /// and the marks show, keeping the cursor on the same row when it is still listed.
    pub fn rebuild(&mut self, model: &Model, scope: Option<ConnId>, filter: &Filter, page: usize) {
        let sel = self.selected();
        let mut view = Vec::new();
        for c in model.conns.values() {
            if scope.is_some_and(|s| s != c.id) {
                continue;
            }
            for r in &c.rows {
                if self.shows(r, filter) {
                    view.push((c.id, r.seq));
                }
            }
        }
        if scope.is_none() {
            view.sort_unstable_by_key(|(_, s)| *s);
        }
        self.view = view.into();
        self.dangling = 0;
        self.cursor.select(if self.follow {
            self.view.len().saturating_sub(1)
        } else {
            match sel {
                Some((_, s)) => self
                    .view
                    .partition_point(|(_, x)| *x < s)
                    .min(self.view.len().saturating_sub(1)),
                None => 0,
            }
        });
        self.clamp(page);
    }

    /// Mark or unmark connection `conn`; whether it is marked now.
    pub fn toggle_conn_mark(&mut self, conn: ConnId) -> bool {
        let on = self.marked_conns.insert(conn);
        if !on {
            self.marked_conns.remove(&conn);
        }
        on
    }

    /// Mark the row `seq` of `conn`.
    pub fn mark(&mut self, conn: ConnId, seq: u64) {
        self.marks.insert((conn, seq));
    }

    /// Forget every mark of a frame (the marked connections stay).
    pub fn clear_marks(&mut self) {
        self.marks.clear();
    }

    /// A key of the list's own: `m` marks or unmarks the selected frame, `M` lists only the
    /// marked ones, `t` cycles the time column. [`Outcome::Rebuild`] when the rows listed must
    /// be recomputed.
    pub fn handle_key(&mut self, a: Action) -> Outcome {
        match a {
            Action::Mark => {
                let Some(entry) = self.selected() else {
                    return Outcome::Consumed;
                };
                let on = self.marks.insert(entry);
                if !on {
                    self.marks.remove(&entry);
                }
                let m = format!(
                    "{} marked frame(s){}",
                    self.marks.len(),
                    if on { "" } else { " (unmarked one)" }
                );
                if self.marked_only {
                    return Outcome::Rebuild(Some(m));
                }
                Outcome::Message(m)
            }
            Action::MarkedOnly => {
                self.marked_only = !self.marked_only;
                self.follow = false;
                Outcome::Rebuild(None)
            }
            Action::CycleTime => {
                self.time_mode = match self.time_mode {
                    TimeMode::Absolute => TimeMode::Relative,
                    TimeMode::Relative => TimeMode::Delta,
                    TimeMode::Delta => TimeMode::Absolute,
                };
                Outcome::Consumed
            }
            _ => Outcome::Ignored,
        }
    }
}
