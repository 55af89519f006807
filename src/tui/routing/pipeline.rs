//! How pipeline events change the UI: each event becomes rows of its connection's frame list,
//! counters, violations or the connection's shown state, within the bounds of
//! [`TuiOptions`](crate::tui::TuiOptions); the frame list's view and cursor follow.

use std::sync::Arc;

use bytes::Bytes;

use crate::event::{ConnId, Dir, Event, EventKind, FrameEvent, Timestamp, Violation};

use crate::browse::numbering::Place;
use crate::tui::app::{App, Pane};
use crate::tui::model::{Row, ViolationRow};

impl App {
    /// Apply one pipeline event.
    pub(in crate::tui) fn pipeline(&mut self, e: Event) {
        let place = self.model.numbering.place(&e);
        self.model.now = self.model.now.max(e.ts);
        let (conn, ts) = (e.conn, e.ts);
        let before = self.model.conns.len();
        self.model.conn_mut(conn, ts);
        if self.model.conns.len() != before && self.conn_list.cursor().selected() > 0 {
            // A new connection sorts last (numbers grow), but keep the cursor on its conn.
            let sel = self.conn_list.cursor().selected();
            let n = self.model.conns.len();
            if sel >= n {
                self.conn_list.select(n.min(sel));
            }
        }
        match e.kind {
            EventKind::Connect { client, upstream } => {
                let c = self.model.conn_mut(conn, ts);
                c.client = Some(client);
                c.upstream = Some(upstream);
            }
            EventKind::Header {
                dir,
                offset,
                header,
                raw,
            } => {
                let c = self.model.conn_mut(conn, ts);
                if c.proto.is_empty() || header.proto_name() != "amqp-sasl" {
                    c.proto = header.proto_name().to_string();
                }
                self.push_row(Row::header(conn, ts, dir, offset, header, &raw));
            }
            EventKind::Frame(f) => self.frame(conn, ts, f),
            EventKind::Violation(v) => self.violation(conn, ts, v, place),
            EventKind::Data { dir, offset, bytes } => self.data(conn, ts, dir, offset, bytes),
            // Shown through the `Data` events that carry the same bytes, and the violations.
            EventKind::Undecoded { .. } => {}
            // A half-close shows in the close row's reason.
            EventKind::Fin { .. } => {}
            // The Health pane lists them; the frame list shows none.
            EventKind::Diagnosis(d) => {
                self.health.diagnosis(&self.model, conn, d);
                // The pane's rows depend on how many diagnoses it lists.
                let h = self.page(Pane::Health);
                self.health.clamp(h);
            }
            EventKind::Gap {
                dir,
                offset,
                len,
                reason,
            } => {
                if !self.model.windowing {
                    self.model.skimmed.count(ts, len, &reason);
                }
                self.push_row(Row::gap(conn, ts, dir, offset, len, &reason))
            }
            EventKind::Close(info) => {
                self.health.closed(conn, ts, &info);
                let c = self.model.conn_mut(conn, ts);
                c.bytes = [
                    c.bytes[0].max(info.bytes_c2s),
                    c.bytes[1].max(info.bytes_s2c),
                ];
                let row = Row::close(conn, ts, &info);
                c.closed = Some(info);
                self.push_row(row);
                self.forget_closed();
            }
            EventKind::State(snapshot) => self.model.conn_mut(conn, ts).set_state(ts, snapshot),
        }
    }

    pub(super) fn frame(&mut self, conn: ConnId, ts: Timestamp, f: Arc<FrameEvent>) {
        let (max_raw, max_body) = (self.model.opts.max_raw_per_frame, self.model.opts.max_body);
        let windowing = self.model.windowing;
        let c = self.model.conn_mut(conn, ts);
        if !windowing {
            // Counted once, as the frames first arrive (a window brought back is no new frame).
            c.frames[f.dir.index()] += 1;
        }
        let link = c.link_of(&f);
        self.push_row(Row::frame(conn, ts, &f, link, max_raw, max_body));
    }

    /// Keep `row`, numbered next, listing it when the connection choice, the filter and the
    /// marks show it; the oldest rows beyond the bounds go.
    pub(in crate::tui) fn push_row(&mut self, mut row: Row) {
        self.model.number(&mut row);
        let (conn, seq) = (row.conn, row.seq);
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let visible = in_scope && self.frames.shows(&row, self.filter.applied());
        if !self.model.keep(row) {
            return;
        }
        self.frames.append((conn, seq), visible);
        self.evict(conn);
        let h = self.page(Pane::Frames);
        self.frames.settle(h);
    }

    /// Drop `conn`'s oldest rows beyond the frame and byte bounds, and their list entries.
    pub(in crate::tui) fn evict(&mut self, conn: ConnId) {
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let (frames, filter) = (&mut self.frames, self.filter.applied());
        self.model.evict(conn, |old| {
            if in_scope {
                frames.dropped((conn, old.seq), || old.matches(filter));
            }
        });
        if self.frames.needs_compact() {
            let h = self.page(Pane::Frames);
            self.frames.compact(&self.model, h);
        }
    }

    /// A connection closed: forget the oldest closed ones beyond their bound, the connection
    /// list's cursor staying on its connection (on "all" when it is forgotten).
    fn forget_closed(&mut self) {
        let sel = self.selected_conn();
        let gone = self.model.forget_closed();
        if gone.is_empty() {
            return;
        }
        self.conn_list.select(match sel {
            Some(s) if !gone.contains(&s) => {
                self.model.conn_ids().binary_search(&s).map_or(0, |p| p + 1)
            }
            _ => 0,
        });
        self.rebuild_view();
        self.clamp_all();
    }

    pub(in crate::tui) fn violation(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        v: Violation,
        place: Place,
    ) {
        let c = self.model.conn_mut(conn, ts);
        c.violations += 1;
        let seq = match place {
            Place::Attach(s) => {
                self.attach_violation(conn, s, &v);
                Some(s)
            }
            Place::Row(s) => {
                self.push_malformed(conn, ts, &v);
                Some(s)
            }
            Place::None => None,
        };
        let row = ViolationRow {
            conn,
            ts,
            violation: v,
            seq,
        };
        self.violations.push(row, self.model.opts.max_violations);
    }

    /// Attach `v` to row `seq` of `conn`, if it is kept.
    pub(in crate::tui) fn attach_violation(&mut self, conn: ConnId, seq: u64, v: &Violation) {
        let filter = self.filter.applied().clone();
        let in_scope = self.selected_conn().is_none_or(|x| x == conn);
        let Some(r) = self.model.conns.get_mut(&conn).and_then(|c| c.row_mut(seq)) else {
            return;
        };
        let was = r.matches(&filter);
        r.violations.push(v.clone());
        let now = r.matches(&filter);
        if in_scope && was != now {
            self.rebuild_view();
        }
    }

    /// The row of the bytes a `codec.*` violation `v` could not decode; its bytes come with the
    /// `Data` events that follow.
    pub(in crate::tui) fn push_malformed(&mut self, conn: ConnId, ts: Timestamp, v: &Violation) {
        let row = Row::malformed(conn, ts, v);
        let s = self.model.next_seq;
        self.push_row(row);
        if let Some(c) = self.model.conns.get_mut(&conn) {
            c.pending_raw.push(s);
        }
    }

    /// `Data` of `conn`: counted, and the bytes of the malformed rows waiting for them.
    pub(in crate::tui) fn data(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        dir: Dir,
        offset: u64,
        bytes: Bytes,
    ) {
        if self.model.data(conn, ts, (dir, offset), &bytes) {
            self.evict(conn);
            let h = self.page(Pane::Frames);
            self.frames.clamp(h);
        }
    }

    /// Recompute the frame list from the connection choice and the filter, keeping the
    /// cursor on the same row when it is still listed.
    pub fn rebuild_view(&mut self) {
        let scope = self.selected_conn();
        let h = self.page(Pane::Frames);
        self.frames
            .rebuild(&self.model, scope, self.filter.applied(), h);
    }
}
