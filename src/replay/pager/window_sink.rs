//! The sink of a pager's re-run (`mod.rs`): from the pipeline's events over the whole
//! capture, it keeps the rows of the window around a target row, and what belongs to them.
//!
//! With a filter on, the window's rows are those the filter matches (and the target), as the
//! frame list of rows in memory shows only those; a row is judged once the next row comes (its
//! violations follow it). The state as of a kept row is still the pipeline's: a state published
//! after a row not kept is carried by the next kept row of its connection (or is the state
//! before the window). A search ([`Find`]) has no target at first: forwards, the first match at
//! or after the row asked becomes it, and the kept rows before it (half a window at most) are
//! those just before it; backwards, the last kept row before the first row past the one asked.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::browse::numbering::{Numbering, Place};
use crate::browse::window::{Item, Window, WindowRequest, row_matches};
use crate::capture::Stop;
use crate::event::{ConnId, Dir, Event, EventKind};
use crate::hash::HashMap;
use crate::state::Snapshot;

use super::{Cancel, WindowSize};

/// A row of the window and what belongs to it.
#[derive(Debug)]
struct Group {
    seq: u64,
    conn: ConnId,
    items: Vec<Item>,
    bytes: usize,
}

/// Keeps the events of the window around a target row from a re-run's events.
pub(super) struct WindowSink {
    request: WindowRequest,
    size: WindowSize,
    numbering: Numbering,
    groups: VecDeque<Group>,
    held: usize,
    before: usize,
    after: usize,
    /// The latest group is a row not judged yet (its violations may still come).
    undecided: bool,
    /// The row to select, once known: the request's target, or the match found.
    select: Option<(ConnId, u64)>,
    /// Each connection's latest row (kept or not).
    last_row: HashMap<ConnId, u64>,
    /// Each connection's kept rows.
    kept: HashMap<ConnId, usize>,
    /// Each connection's latest state before its first kept row.
    base: HashMap<ConnId, Arc<Snapshot>>,
    /// Each connection's latest state since its latest kept row, published after rows not
    /// kept: the next kept row of the connection carries it.
    loose: HashMap<ConnId, Event>,
    /// Kept malformed rows still waiting for their bytes: (conn, dir, offset).
    pending: Vec<(ConnId, Dir, u64)>,
    /// Rows numbered so far (the progress of a search).
    scanned: Arc<AtomicU64>,
    done: bool,
    stop: Stop,
    cancel: Cancel,
}

impl WindowSink {
    pub(super) fn new(
        request: WindowRequest,
        size: WindowSize,
        stop: Stop,
        cancel: Cancel,
        scanned: Arc<AtomicU64>,
    ) -> WindowSink {
        WindowSink {
            select: request.find.is_none().then_some(request.target),
            request,
            size,
            numbering: Numbering::default(),
            groups: VecDeque::new(),
            held: 0,
            before: 0,
            after: 0,
            undecided: false,
            last_row: HashMap::default(),
            kept: HashMap::default(),
            base: HashMap::default(),
            loose: HashMap::default(),
            pending: Vec::new(),
            scanned,
            done: false,
            stop,
            cancel,
        }
    }

    fn half(&self) -> usize {
        (self.size.rows / 2).max(1)
    }

    /// The target's number (none yet: every kept row is before it).
    fn target(&self) -> u64 {
        self.select.map_or(u64::MAX, |t| t.1)
    }

    fn in_scope(&self, conn: ConnId) -> bool {
        self.request.scope.is_none_or(|s| s == conn)
    }

    /// Number the re-run's rows from `first` on (a spool ring's first row).
    pub(super) fn start_at(&mut self, first: u64) {
        self.numbering = Numbering::starting_at(first);
    }

    fn end(&mut self) {
        self.done = true;
        self.stop.stop();
    }

    pub(super) fn event(&mut self, e: &Event) {
        if self.done {
            return;
        }
        if self.cancel.cancelled() {
            self.end();
            return;
        }
        let place = self.numbering.place(e);
        if !self.in_scope(e.conn) {
            return;
        }
        let link = match &e.kind {
            EventKind::Frame(f) => f.context.link_name().map(String::from),
            _ => None,
        };
        match place {
            Place::Row(seq) => self.row(seq, link, e),
            Place::Attach(seq) => {
                if let Some(g) = self.group_mut(seq) {
                    g.items.push(Item {
                        place,
                        link: None,
                        event: e.clone(),
                    });
                }
            }
            Place::None => match &e.kind {
                EventKind::State(s) => self.state(e, s),
                EventKind::Data { dir, offset, bytes } => {
                    self.data(e, *dir, *offset, bytes.len() as u64)
                }
                _ => {}
            },
        }
    }

    fn row(&mut self, seq: u64, link: Option<String>, e: &Event) {
        self.settle();
        self.scanned.store(self.numbering.next(), Ordering::Relaxed);
        let backward = self.request.find.is_some_and(|f| !f.forward);
        if backward && self.select.is_none() && seq > self.request.target.1 {
            // Past the row asked: the latest kept row is the last match before it.
            if !self.select_back() {
                self.end();
                return;
            }
        }
        if self.select.is_some() {
            let target = self.target();
            // Fewer rows before the target than half a window (it is near the start): more after.
            let full = self.before + self.after >= self.size.rows.max(1) && self.after >= 1;
            if full || (seq > target && self.held > self.size.max_bytes) {
                // The window is complete: read no further.
                self.end();
                return;
            }
        }
        self.last_row.insert(e.conn, seq);
        let bytes = match &e.kind {
            EventKind::Frame(f) => f.raw.len(),
            EventKind::Header { raw, .. } => raw.len(),
            _ => 0,
        } + 64;
        if let EventKind::Violation(v) = &e.kind {
            self.pending.push((e.conn, v.dir, v.offset));
        }
        self.groups.push_back(Group {
            seq,
            conn: e.conn,
            items: vec![Item {
                place: Place::Row(seq),
                link,
                event: e.clone(),
            }],
            bytes,
        });
        self.held += bytes;
        self.undecided = true;
    }

    /// Judge the latest row, now that what belongs to it has come: keep it when the filter
    /// matches it (or it is the target), else drop it.
    fn settle(&mut self) {
        if !std::mem::take(&mut self.undecided) {
            return;
        }
        let Some(g) = self.groups.back() else {
            return;
        };
        let (conn, seq) = (g.conn, g.seq);
        let filter = &self.request.filter;
        let is_target = self.request.find.is_none() && self.request.target == (conn, seq);
        if !is_target && !filter.is_empty() && !row_matches(filter, &g.items, false) {
            self.drop_back();
            return;
        }
        let found = self.request.find.is_some_and(|f| {
            f.forward
                && self.select.is_none()
                && seq >= self.request.target.1
                && (!f.violations || row_matches(filter, &g.items, true))
        });
        *self.kept.entry(conn).or_default() += 1;
        if let Some(state) = self.loose.remove(&conn)
            && let Some(g) = self.groups.back_mut()
        {
            // The state as of the rows not kept since the connection's previous kept row.
            let item = Item {
                place: Place::None,
                link: None,
                event: state,
            };
            g.items.insert(1, item);
        }
        if found {
            self.select = Some((conn, seq));
            self.recount();
        } else if seq >= self.target() {
            self.after += 1;
        } else {
            self.before += 1;
        }
        self.trim();
    }

    /// Forget the latest row (the filter does not match it); its states go on without it.
    fn drop_back(&mut self) {
        let Some(g) = self.groups.pop_back() else {
            return;
        };
        self.held = self.held.saturating_sub(g.bytes);
        let kept = self.kept.get(&g.conn).copied().unwrap_or(0) > 0;
        for it in g.items {
            match it.event.kind {
                EventKind::State(ref s) if !kept => {
                    self.base.insert(g.conn, s.clone());
                }
                EventKind::State(_) => {
                    self.loose.insert(g.conn, it.event);
                }
                EventKind::Violation(ref v) if it.place == Place::Row(g.seq) => {
                    let key = (g.conn, v.dir, v.offset);
                    self.pending.retain(|p| *p != key);
                }
                _ => {}
            }
        }
    }

    /// A backward search past the row asked: the latest kept row is the match. False when
    /// there is none.
    fn select_back(&mut self) -> bool {
        let Some(g) = self.groups.back() else {
            return false;
        };
        self.select = Some((g.conn, g.seq));
        self.recount();
        true
    }

    /// Count the kept rows before and from the target anew (it has just been found).
    fn recount(&mut self) {
        let target = self.target();
        self.before = self.groups.iter().filter(|g| g.seq < target).count();
        self.after = self.groups.len() - self.before;
    }

    /// Drop the oldest rows before the target beyond half a window (or the byte bound); their
    /// states become their connections' states before the window.
    fn trim(&mut self) {
        let target = self.target();
        while let Some(front) = self.groups.front() {
            let over = self.before > self.half()
                || (self.held > self.size.max_bytes && self.groups.len() > 1);
            if front.seq >= target || !over {
                break;
            }
            let Some(g) = self.groups.pop_front() else {
                break;
            };
            self.held = self.held.saturating_sub(g.bytes);
            self.before -= 1;
            for it in g.items {
                if let EventKind::State(s) = it.event.kind {
                    self.base.insert(g.conn, s);
                }
            }
            let kept = self.kept.entry(g.conn).or_default();
            *kept = kept.saturating_sub(1);
            if *kept == 0
                && let Some(Event {
                    kind: EventKind::State(s),
                    ..
                }) = self.loose.remove(&g.conn)
            {
                self.base.insert(g.conn, s);
            }
        }
    }

    fn group_mut(&mut self, seq: u64) -> Option<&mut Group> {
        let i = self.groups.binary_search_by_key(&seq, |g| g.seq).ok()?;
        self.groups.get_mut(i)
    }

    /// A state goes with its connection's latest row when that is kept (or not judged yet);
    /// else it is carried by the connection's next kept row, or before its first.
    fn state(&mut self, e: &Event, s: &Arc<Snapshot>) {
        let last = self.last_row.get(&e.conn).copied();
        if let Some(g) = last.and_then(|seq| self.group_mut(seq)) {
            g.items.push(Item {
                place: Place::None,
                link: None,
                event: e.clone(),
            });
        } else if self.kept.get(&e.conn).copied().unwrap_or(0) > 0 {
            self.loose.insert(e.conn, e.clone());
        } else {
            self.base.insert(e.conn, s.clone());
        }
    }

    /// Bytes go with their connection's latest row when they are those of a kept malformed
    /// row (the app cuts them to it); other bytes are not needed.
    fn data(&mut self, e: &Event, dir: Dir, offset: u64, len: u64) {
        let end = offset.saturating_add(len);
        let mut wanted = false;
        self.pending.retain(|(c, d, at)| {
            if *c != e.conn || *d != dir || *at >= end {
                return true;
            }
            wanted |= *at >= offset;
            false
        });
        if !wanted {
            return;
        }
        let last = self.last_row.get(&e.conn).copied();
        if let Some(g) = last.and_then(|seq| self.group_mut(seq)) {
            g.items.push(Item {
                place: Place::None,
                link: None,
                event: e.clone(),
            });
        }
    }

    pub(super) fn finish(mut self) -> Window {
        self.settle();
        if self.request.find.is_some_and(|f| !f.forward) && self.select.is_none() {
            self.select_back();
        }
        let found = self.select.is_some();
        Window {
            request: self.request,
            select: self.select,
            base: self.base.into_iter().collect(),
            items: if found {
                self.groups.into_iter().flat_map(|g| g.items).collect()
            } else {
                Vec::new()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Timestamp;
    use crate::filter::Filter;

    fn ev(kind: EventKind) -> Event {
        Event {
            conn: 1,
            ts: Timestamp(0),
            kind,
        }
    }

    fn gap(offset: u64, reason: &str) -> Event {
        ev(EventKind::Gap {
            dir: Dir::C2S,
            offset,
            len: 1,
            reason: reason.into(),
        })
    }

    fn state(name: &str) -> Event {
        ev(EventKind::State(Arc::new(Snapshot {
            name: name.into(),
            ..Snapshot::default()
        })))
    }

    fn sink(filter: &str, target: u64, find: Option<crate::browse::window::Find>) -> WindowSink {
        let request = WindowRequest {
            id: 1,
            scope: None,
            target: (1, target),
            step: 0,
            filter: Filter::parse(filter).unwrap(),
            find,
        };
        let cancel = Cancel {
            id: 1,
            latest: Arc::new(AtomicU64::new(1)),
            quit: Stop::new(),
        };
        let size = WindowSize {
            rows: 10,
            max_bytes: 1 << 20,
        };
        WindowSink::new(request, size, Stop::new(), cancel, Arc::default())
    }

    /// (row number or state name) of a window's items, in order.
    fn shape(w: &Window) -> Vec<String> {
        w.items
            .iter()
            .map(|it| match (&it.place, &it.event.kind) {
                (Place::Row(s), _) => format!("#{s}"),
                (_, EventKind::State(s)) => s.name.clone(),
                _ => "?".into(),
            })
            .collect()
    }

    /// A state published after a row the filter does not match is carried by the next kept
    /// row of its connection (which published none of its own): the state as of that row.
    #[test]
    fn a_filtered_window_keeps_matching_rows_with_the_state_as_of_each() {
        let mut s = sink("keep", 2, None);
        for e in [
            state("S0"),
            gap(0, "drop"),
            state("S1"),
            gap(1, "keep"),
            state("S2"),
            gap(2, "drop"),
            state("S3"),
            gap(3, "drop"),
            state("S4"),
            gap(4, "keep"),
            gap(5, "drop"),
        ] {
            s.event(&e);
        }
        let w = s.finish();
        assert_eq!(
            w.select,
            Some((1, 2)),
            "the target, kept though it does not match"
        );
        assert_eq!(shape(&w), ["#1", "S2", "#2", "S3", "#4", "S4"]);
        let base: Vec<_> = w.base.iter().map(|(_, s)| s.name.clone()).collect();
        assert_eq!(base, ["S1"]);
    }

    /// Searches: forwards the first match at or after the row asked, backwards the last at
    /// or before it; none, no window.
    #[test]
    fn a_search_selects_the_first_match_after_or_the_last_before() {
        use crate::browse::window::Find;
        let rows = ["a", "keep", "b", "keep", "c", "keep", "d"];
        let run = |from: u64, forward: bool| {
            let find = Find {
                forward,
                violations: false,
            };
            let mut s = sink("keep", from, Some(find));
            for (i, r) in rows.iter().enumerate() {
                s.event(&gap(i as u64, r));
            }
            let w = s.finish();
            (w.select.map(|t| t.1), shape(&w))
        };
        assert_eq!(
            run(2, true),
            (Some(3), ["#1", "#3", "#5"].map(String::from).to_vec())
        );
        assert_eq!(run(6, true), (None, vec![]));
        assert_eq!(run(4, false).0, Some(3));
        assert_eq!(run(0, false), (None, vec![]));
        assert_eq!(run(u64::MAX, false).0, Some(5));
    }
}
