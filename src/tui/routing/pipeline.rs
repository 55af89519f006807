//! How pipeline events change the UI: each event becomes rows of its connection's frame list,
//! counters, violations or the connection's shown state, within the bounds of
//! [`TuiOptions`](crate::tui::TuiOptions); the frame list's view and cursor follow.

use std::sync::Arc;

use bytes::Bytes;

use crate::event::{ConnId, Dir, Event, EventKind, FrameEvent, Timestamp, Violation};

use crate::browse::numbering::Place;
use crate::tui::app::{App, Pane};
use crate::tui::model::{Conn, Row, ViolationRow};

impl App {
    pub(in crate::tui) fn conn_mut(&mut self, id: ConnId, ts: Timestamp) -> &mut Conn {
        if !self.model.conns.contains_key(&id) {
            let at = self.model.conn_ids.partition_point(|x| *x < id);
            self.model.conn_ids.insert(at, id);
        }
        let c = self
            .model
            .conns
            .entry(id)
            .or_insert_with(|| Conn::new(id, ts));
        c.last_ts = c.last_ts.max(ts);
        c
    }

    /// Apply one pipeline event.
    pub(in crate::tui) fn pipeline(&mut self, e: Event) {
        let place = self.model.numbering.place(&e);
        self.model.now = self.model.now.max(e.ts);
        let (conn, ts) = (e.conn, e.ts);
        let before = self.model.conns.len();
        self.conn_mut(conn, ts);
        if self.model.conns.len() != before && self.conn_list.list().selected > 0 {
            // A new connection sorts last (numbers grow), but keep the cursor on its conn.
            let sel = self.conn_list.list().selected;
            let n = self.model.conns.len();
            if sel >= n {
                self.conn_list.select(n.min(sel));
            }
        }
        match e.kind {
            EventKind::Connect { client, upstream } => {
                let c = self.conn_mut(conn, ts);
                c.client = Some(client);
                c.upstream = Some(upstream);
            }
            EventKind::Header {
                dir,
                offset,
                header,
                raw,
            } => {
                let c = self.conn_mut(conn, ts);
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
                let c = self.conn_mut(conn, ts);
                c.bytes = [
                    c.bytes[0].max(info.bytes_c2s),
                    c.bytes[1].max(info.bytes_s2c),
                ];
                let row = Row::close(conn, ts, &info);
                c.closed = Some(info);
                self.push_row(row);
                self.forget_closed();
            }
            EventKind::State(snapshot) => self.conn_mut(conn, ts).set_state(ts, snapshot),
        }
    }

    pub(super) fn frame(&mut self, conn: ConnId, ts: Timestamp, f: Arc<FrameEvent>) {
        let (max_raw, max_body) = (self.model.opts.max_raw_per_frame, self.model.opts.max_body);
        let windowing = self.model.windowing;
        let c = self.conn_mut(conn, ts);
        if !windowing {
            // Counted once, as the frames first arrive (a window brought back is no new frame).
            c.frames[f.dir.index()] += 1;
        }
        let link = c.link_of(&f);
        self.push_row(Row::frame(conn, ts, &f, link, max_raw, max_body));
    }

    pub(in crate::tui) fn push_row(&mut self, mut row: Row) {
        row.seq = self.model.next_seq;
        self.model.next_seq += 1;
        let conn = row.conn;
        let seq = row.seq;
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let visible = in_scope && self.frames.shows(&row, self.filter.applied());
        let windowing = self.model.windowing;
        let Some(c) = self.model.conns.get_mut(&conn) else {
            return;
        };
        if !windowing {
            // The whole capture's rows, counted once as they first arrive.
            c.first_seq.get_or_insert(seq);
            c.last_seq = seq;
            c.total_rows += 1;
        }
        c.raw_bytes += row.held_bytes();
        c.rows.push_back(row);
        self.frames.append((conn, seq), visible);
        self.evict(conn);
        let h = self.page(Pane::Frames);
        self.frames.settle(h);
    }

    /// Drop `conn`'s oldest rows beyond the frame and byte bounds, and their list entries.
    pub(in crate::tui) fn evict(&mut self, conn: ConnId) {
        let max = self.model.opts.max_frames_per_conn.max(1);
        let max_bytes = self.model.opts.max_bytes_per_conn;
        let in_scope = self.selected_conn().is_none_or(|c| c == conn);
        let Some(c) = self.model.conns.get_mut(&conn) else {
            return;
        };
        while c.rows.len() > max || (c.raw_bytes > max_bytes && c.rows.len() > 1) {
            let Some(old) = c.rows.pop_front() else { break };
            c.raw_bytes = c.raw_bytes.saturating_sub(old.held_bytes());
            c.evicted += 1;
            if let Some(state) = &old.state {
                // The state pane of the rows kept before the next state shows this one.
                c.base_state = Some(state.clone());
            }
            if in_scope {
                let filter = self.filter.applied();
                self.frames.dropped((conn, old.seq), || old.matches(filter));
            }
        }
        if self.frames.needs_compact() {
            let h = self.page(Pane::Frames);
            self.frames.compact(&self.model, h);
        }
    }

    pub(in crate::tui) fn violation(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        v: Violation,
        place: Place,
    ) {
        let c = self.conn_mut(conn, ts);
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

    pub(in crate::tui) fn data(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        dir: Dir,
        offset: u64,
        bytes: Bytes,
    ) {
        let max_raw = self.model.opts.max_raw_per_frame;
        let c = self.conn_mut(conn, ts);
        let end = offset.saturating_add(bytes.len() as u64);
        c.bytes[dir.index()] = c.bytes[dir.index()].max(end);
        if c.pending_raw.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut c.pending_raw);
        let mut keep = Vec::new();
        for s in pending {
            let Some(r) = c.row(s) else { continue };
            if r.dir != Some(dir) {
                keep.push(s);
                continue;
            }
            if r.offset < offset || r.offset >= end {
                if r.offset >= end {
                    keep.push(s);
                }
                continue;
            }
            // The bytes run to the next row of this direction, or the end of the data.
            // Rows after it in arrival order; only the next few can be its neighbour.
            let at = c.rows.partition_point(|x| x.seq <= s);
            let next = c
                .rows
                .range(at..)
                .take(64)
                .filter(|x| x.dir == Some(dir) && x.offset > r.offset)
                .map(|x| x.offset)
                .min()
                .unwrap_or(end)
                .min(end);
            let from = (r.offset - offset) as usize;
            let to = ((next - offset) as usize)
                .min(from + max_raw)
                .min(bytes.len());
            let slice = Bytes::copy_from_slice(&bytes[from..to]);
            let len = (next - r.offset) as usize;
            c.raw_bytes += slice.len();
            if let Some(r) = c.row_mut(s) {
                r.raw = slice;
                r.len = len;
            }
        }
        c.pending_raw = keep;
        self.evict(conn);
        let h = self.page(Pane::Frames);
        self.frames.clamp(h);
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
