//! Reaching any frame of the capture: a jump outside the rows kept in memory (`g`/`G`,
//! `n`/`N`, Enter on a violation or a diagnosis, scrolling past the window's edge) asks the
//! pager for the window around the frame it wants ([`Effect::LoadWindow`]), and the window
//! that comes replaces the kept rows (see `tui::window` for the whole-capture mode).

use crate::browse::numbering::Place;
use crate::event::{ConnId, EventKind};
use crate::tui::app::{App, Effect};
use crate::tui::model::Row;
use crate::tui::window::{FILTER_CLEARED, Find, Item, Window, WindowRequest, percent};

impl App {
    /// Select row `seq` of `conn`: at once when it is kept, else (whole-capture mode, once the
    /// first pass is over) by asking for the window around it.
    pub(in crate::tui) fn reach(&mut self, conn: ConnId, seq: u64) {
        if self.row(conn, seq).is_some() {
            self.select_frame(conn, seq);
            return;
        }
        self.ask_window(conn, seq, 0)
    }

    /// Ask for the window around row `seq` of `conn`, to select it then move the cursor by
    /// `step` rows.
    pub(super) fn ask_window(&mut self, conn: ConnId, seq: u64, step: isize) {
        self.ask(conn, seq, step, None)
    }

    /// Ask the pager for a window: around row `seq` of `conn`, or (`find`) around the match
    /// of the filter it finds from row `seq` on (back, backwards). Its rows are those the
    /// filter matches, as the frame list shows.
    pub(in crate::tui) fn ask(&mut self, conn: ConnId, seq: u64, step: isize, find: Option<Find>) {
        if !self.model.pages() {
            self.message = Some("that frame is no longer in memory".into());
            return;
        }
        if !self.model.pager_ready() {
            let pct = self.model.paging.progress.map_or(0, |(r, t)| percent(r, t));
            self.message = Some(format!(
                "still reading the capture ({pct}%): every frame is reachable once it is read"
            ));
            return;
        }
        let request = WindowRequest {
            id: self.model.paging.next_id(),
            // One connection shown: its rows only; else the rows of all around the target.
            scope: self.selected_conn().map(|_| conn),
            target: (conn, seq),
            step,
            filter: self.filter.applied().clone(),
            find,
        };
        self.model.paging.loading = Some(request.clone());
        self.model.paging.scanned = 0;
        self.frames.set_follow(false);
        self.message = Some(match find {
            None => format!("loading frame #{} from the capture...", seq + 1),
            Some(_) => "searching (0%)".into(),
        });
        self.effects.push(Effect::LoadWindow(request));
    }

    /// A connection chosen of which the window holds no row: bring back its latest rows.
    pub(in crate::tui) fn fill_scope(&mut self) {
        if !self.model.pages() || !self.model.pager_ready() || self.rows_in_scope() > 0 {
            return;
        }
        if let Some((_, (conn, seq))) = self.scope_ends() {
            if self.filter.applied().is_empty() {
                self.reach(conn, seq);
            } else {
                // Its latest rows the filter matches.
                self.find(u64::MAX, false, false);
            }
        }
    }

    /// The first and the last row of the connection choice, of the whole capture.
    pub fn scope_ends(&self) -> Option<((ConnId, u64), (ConnId, u64))> {
        let conns: Vec<_> = match self.selected_conn() {
            Some(c) => self.model.conns.get(&c).into_iter().collect(),
            None => self.model.conns.values().collect(),
        };
        let first = conns
            .iter()
            .filter_map(|c| Some((c.id, c.first_seq?)))
            .min_by_key(|(_, s)| *s)?;
        let last = conns
            .iter()
            .filter(|c| c.first_seq.is_some())
            .map(|c| (c.id, c.last_seq))
            .max_by_key(|(_, s)| *s)?;
        Some((first, last))
    }

    /// `g` / `G` in the frame list of a whole capture: the first / last row of the connection
    /// choice, brought back when it is not kept. False when the ordinary move does it.
    pub(in crate::tui) fn far_end(&mut self, last: bool) -> bool {
        if !self.model.pages() {
            return false;
        }
        let Some((first, end)) = self.scope_ends() else {
            return false;
        };
        let (conn, seq) = if last { end } else { first };
        if self.row(conn, seq).is_some() {
            return false;
        }
        let held = self.model.reachable_from();
        if self.filter.applied().is_empty() && (last || seq >= held) {
            self.reach(conn, seq);
        } else {
            // The first / last row the filter shows, of the whole capture (of what the spool
            // still holds: its first row is a search's).
            let from = if last { u64::MAX } else { held };
            self.find(from, !last, false);
        }
        true
    }

    /// A move of the frame cursor from `before` that hit the window's edge: bring back the
    /// window around the edge row when the capture goes on beyond it.
    pub(in crate::tui) fn past_edge(&mut self, delta: isize, before: usize) {
        if !self.model.pages() || !self.model.pager_ready() || self.model.paging.loading.is_some() {
            return;
        }
        let Some((first, last)) = self.scope_ends() else {
            return;
        };
        let edge = if delta < 0 && before == 0 {
            (
                self.row(first.0, first.1).is_none(),
                self.frames.view().front(),
            )
        } else if delta > 0 && before + 1 >= self.frames.view().len() {
            (
                self.row(last.0, last.1).is_none(),
                self.frames.view().back(),
            )
        } else {
            return;
        };
        if let (true, Some(&(conn, seq))) = edge {
            if self.model.paging.edge == Some((conn, seq, delta)) {
                // The window around it had nothing beyond it.
                return;
            }
            self.model.paging.edge = Some((conn, seq, delta));
            self.ask_window(conn, seq, delta);
        }
    }

    /// `n` / `N` found nothing in the window: the next / previous violation's row of the whole
    /// capture beyond it (from the violations of the first pass), brought back; with a filter
    /// on, the next / previous such row the filter shows, found by a search. False when there
    /// is none.
    pub(in crate::tui) fn far_violation(&mut self, forward: bool) -> bool {
        if !self.model.pages() {
            return false;
        }
        let scope = self.selected_conn();
        let edge = if forward {
            self.frames.view().back()
        } else {
            self.frames.view().front()
        };
        let edge = edge.map(|(_, s)| *s);
        let candidates = self
            .violations
            .rows()
            .iter()
            .filter(|v| scope.is_none_or(|c| c == v.conn))
            .filter_map(|v| Some((v.conn, v.seq?)))
            .filter(|(_, s)| *s >= self.model.reachable_from())
            .filter(|(c, s)| self.row(*c, *s).is_none());
        let found = if forward {
            candidates
                .filter(|(_, s)| edge.is_none_or(|e| *s > e))
                .min_by_key(|(_, s)| *s)
        } else {
            candidates
                .filter(|(_, s)| edge.is_none_or(|e| *s < e))
                .max_by_key(|(_, s)| *s)
        };
        match found {
            Some(_) if !self.filter.applied().is_empty() => {
                // With a filter on, the next / previous row it shows that has a violation.
                let from = edge.map_or(0, |e| if forward { e + 1 } else { e.saturating_sub(1) });
                self.find(from, forward, true);
                true
            }
            Some((conn, seq)) => {
                self.reach(conn, seq);
                true
            }
            None => false,
        }
    }

    /// Replace the kept rows by the window the pager brought back, and select its target (a
    /// search that found nothing leaves the rows as they are and says so).
    pub(in crate::tui) fn load_window(&mut self, w: Window) {
        if self.model.paging.loading.as_ref().map(|r| r.id) != Some(w.request.id) {
            // An answer to a request since replaced.
            return;
        }
        self.model.paging.loading = None;
        let Some((conn, seq)) = w.select else {
            self.message = Some(crate::tui::window::no_match(&w.request));
            return;
        };
        self.model.windowing = true;
        for c in self.model.conns.values_mut() {
            c.clear_rows();
            c.evicted = 0;
        }
        self.frames.clear();
        // Live rows go on arriving after the window, numbered on from the latest.
        let next_seq = self.model.next_seq;
        for (conn, state) in w.base {
            if let Some(c) = self.model.conns.get_mut(&conn) {
                c.base_state = Some(state);
            }
        }
        for item in w.items {
            self.window_item(item);
        }
        self.model.next_seq = next_seq;
        self.model.windowing = false;
        self.rebuild_view();
        let Some(row) = self.row(conn, seq) else {
            self.message = Some(format!("frame #{} is not in the capture", seq + 1));
            return;
        };
        if !row.matches(&w.request.filter) {
            // The frame asked is not one the filter shows: the list in memory would clear the
            // filter to show it, so bring back the whole window around it.
            self.filter.clear();
            self.rebuild_view();
            self.ask_window(conn, seq, w.request.step);
            self.message = Some(FILTER_CLEARED.into());
            return;
        }
        if self.message.as_deref() != Some(FILTER_CLEARED) {
            self.message = None;
        }
        self.select_frame(conn, seq);
        if w.request.step != 0 {
            self.move_frames(w.request.step);
        }
    }

    /// One event of a window: its row, or what belongs to a row (the counters, the
    /// violations pane and the connections' latest states are the first pass's).
    pub(super) fn window_item(&mut self, item: Item) {
        let Item { place, link, event } = item;
        let (conn, ts) = (event.conn, event.ts);
        if !self.model.conns.contains_key(&conn) {
            return;
        }
        if let Place::Row(s) = place {
            self.model.next_seq = s;
        }
        let (max_raw, max_body) = (self.model.opts.max_raw_per_frame, self.model.opts.max_body);
        match event.kind {
            EventKind::Header {
                dir,
                offset,
                header,
                raw,
            } => self.push_row(Row::header(conn, ts, dir, offset, header, &raw)),
            EventKind::Frame(f) => {
                self.push_row(Row::frame(conn, ts, &f, link, max_raw, max_body));
            }
            EventKind::Gap {
                dir,
                offset,
                len,
                reason,
            } => self.push_row(Row::gap(conn, ts, dir, offset, len, &reason)),
            EventKind::Close(info) => self.push_row(Row::close(conn, ts, &info)),
            EventKind::Violation(v) => match place {
                Place::Attach(s) => self.attach_violation(conn, s, &v),
                Place::Row(_) => self.push_malformed(conn, ts, &v),
                Place::None => {}
            },
            EventKind::Data { dir, offset, bytes } => self.data(conn, ts, dir, offset, bytes),
            EventKind::State(snapshot) => {
                if let Some(c) = self.model.conns.get_mut(&conn) {
                    c.attach_state(snapshot);
                }
            }
            _ => {}
        }
    }
}
