//! What the shared model keeps of each connection as events arrive: connections made when
//! first heard of, rows numbered and appended (counted once as the whole capture's, not again
//! when a window of it is brought back), the oldest rows dropped beyond the bounds of
//! [`TuiOptions`](super::TuiOptions), the bytes of malformed rows filled in from the `Data`
//! events that follow them, and closed connections forgotten beyond their bound. The frame
//! list follows through the router (`routing/pipeline.rs`).

use std::collections::HashSet;

use bytes::Bytes;

use crate::event::{ConnId, Dir, Timestamp};

use super::model::{Conn, Model, Row};

impl Model {
    /// Connection `id`, made when first heard of at `ts`; its latest time moves on to `ts`.
    pub(super) fn conn_mut(&mut self, id: ConnId, ts: Timestamp) -> &mut Conn {
        if !self.conns.contains_key(&id) {
            let at = self.conn_ids.partition_point(|x| *x < id);
            self.conn_ids.insert(at, id);
        }
        let c = self.conns.entry(id).or_insert_with(|| Conn::new(id, ts));
        c.last_ts = c.last_ts.max(ts);
        c
    }

    /// Give `row` the next row number.
    pub(super) fn number(&mut self, row: &mut Row) {
        row.seq = self.next_seq;
        self.next_seq += 1;
    }

    /// Append the numbered `row` to its connection's rows; false when the connection is not
    /// known.
    pub(super) fn keep(&mut self, row: Row) -> bool {
        let windowing = self.windowing;
        let Some(c) = self.conns.get_mut(&row.conn) else {
            return false;
        };
        if !windowing {
            // The whole capture's rows, counted once as they first arrive.
            c.first_seq.get_or_insert(row.seq);
            c.last_seq = row.seq;
            c.total_rows += 1;
        }
        c.raw_bytes += row.held_bytes();
        c.rows.push_back(row);
        true
    }

    /// Drop `conn`'s oldest rows beyond the frame and byte bounds, each shown to `dropped`.
    pub(super) fn evict(&mut self, conn: ConnId, mut dropped: impl FnMut(&Row)) {
        let max = self.opts.max_frames_per_conn.max(1);
        let max_bytes = self.opts.max_bytes_per_conn;
        let Some(c) = self.conns.get_mut(&conn) else {
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
            dropped(&old);
        }
    }

    /// `bytes` of `conn` at `offset` going `dir`: counted, and given to the malformed rows
    /// waiting for theirs (each runs to the next row of its direction, or the end of the
    /// data, cut at `max_raw_per_frame`). Whether any row was waiting (rows grew: the bounds
    /// apply again).
    pub(super) fn data(
        &mut self,
        conn: ConnId,
        ts: Timestamp,
        (dir, offset): (Dir, u64),
        bytes: &Bytes,
    ) -> bool {
        let max_raw = self.opts.max_raw_per_frame;
        let c = self.conn_mut(conn, ts);
        let end = offset.saturating_add(bytes.len() as u64);
        c.bytes[dir.index()] = c.bytes[dir.index()].max(end);
        if c.pending_raw.is_empty() {
            return false;
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
        true
    }

    /// Forget the oldest closed connections once there are more than `max_closed_conns`
    /// (a tenth more, so the list is compacted rarely): those forgotten.
    pub(super) fn forget_closed(&mut self) -> HashSet<ConnId> {
        let max = self.opts.max_closed_conns.max(1);
        let closed: Vec<ConnId> = self
            .conn_ids
            .iter()
            .filter(|id| self.conns.get(id).is_some_and(|c| c.closed.is_some()))
            .copied()
            .collect();
        if closed.len() <= max + max / 10 {
            return HashSet::new();
        }
        let gone: HashSet<ConnId> = closed[..closed.len() - max].iter().copied().collect();
        for id in &gone {
            self.conns.remove(id);
        }
        self.conns_forgotten += gone.len() as u64;
        self.conn_ids.retain(|id| !gone.contains(id));
        gone
    }
}
