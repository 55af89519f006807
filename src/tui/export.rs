//! Export from the TUI (the bug-report workflow): the marked frames, the shown ones or a whole
//! connection, written as pcapng or JSONL, masked.
//!
//! This is the export of the rows in memory, for a view that holds all it can reach. A view
//! that pages a file or a spool ring has the pager write the frames chosen from that whole
//! source instead (`routing/export.rs`).
//!
//! The rows hold the frames' bytes as the pipeline gave them. An export rebuilds a capture from
//! them ([`capture_of`], pure): per connection its connect, its protocol headers (always: the
//! rest cannot be read without them), the chosen rows' bytes in stream order, a gap wherever
//! bytes between them are left out (resuming at the next frame of its protocol), and its close.
//! The event loop hands that capture to the [`Exporter`] it was given, which runs it through the
//! ordinary pipeline with masking on (whatever `--show-secrets` said) into the JSONL or pcapng
//! sink (`replay::export`): the file is what `replay --jsonl` or `--pcap` would write of those
//! bytes, and reads back as such. Nothing here runs the pipeline.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::Path;

use bytes::Bytes;

use super::app::{App, ExportScope};
use super::model::{Conn, Row, RowKind};
use crate::capture::SourceEvent;
use crate::event::ProtocolHeader;
use crate::event::{Chunk, ConnId};

/// Writes an export: the capture `events` into a new JSONL (`jsonl`) or pcapng file at `path`,
/// masked, bodies cut at `max_body`; the number of frames written, or an error naming the path.
/// The event loop is given one (`replay::export::write` in the binary), so that the UI itself
/// runs no pipeline.
pub type Exporter = fn(&Path, bool, Vec<SourceEvent>, usize) -> io::Result<u64>;

/// The rows `scope` exports, by connection, in arrival order (headers not added yet).
fn chosen(app: &App, scope: ExportScope) -> BTreeMap<ConnId, Vec<u64>> {
    let mut out: BTreeMap<ConnId, Vec<u64>> = BTreeMap::new();
    match scope {
        ExportScope::Marked => {
            for c in app.model.conns.values() {
                for r in c.rows.iter().filter(|r| app.frames.is_marked(c.id, r.seq)) {
                    out.entry(c.id).or_default().push(r.seq);
                }
            }
        }
        ExportScope::Shown => {
            for (c, s) in app.frames.view() {
                out.entry(*c).or_default().push(*s);
            }
        }
        ExportScope::Connection => {
            let id = app
                .selected_conn()
                .or_else(|| app.selected_row().map(|r| r.conn));
            if let Some(c) = id.and_then(|id| app.model.conns.get(&id)) {
                out.insert(c.id, c.rows.iter().map(|r| r.seq).collect());
            }
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

/// The protocol a row's bytes are framed in, for resuming after a gap (`None`: a header).
fn framing(r: &Row, conn: &Conn) -> Option<ProtocolHeader> {
    let proto = if r.proto.is_empty() {
        conn.proto.as_str()
    } else {
        r.proto
    };
    crate::protocol::ProtocolId::framing_of_proto_name(proto)
}

/// The bytes of a row as relayed (the whole frame for a frame; what is kept otherwise).
fn bytes_of(r: &Row) -> Bytes {
    match &r.frame {
        Some(f) => f.raw.clone(),
        None => r.raw.clone(),
    }
}

/// The capture `scope` exports, and how many frames of how many connections it holds.
pub fn capture_of(app: &App, scope: ExportScope) -> (Vec<SourceEvent>, usize, usize) {
    let mut events = Vec::new();
    let (mut frames, mut conns) = (0, 0);
    for (id, seqs) in chosen(app, scope) {
        let Some(c) = app.model.conns.get(&id) else {
            continue;
        };
        let kept: Vec<bool> = c
            .rows
            .iter()
            .map(|r| r.kind == RowKind::Header || seqs.binary_search(&r.seq).is_ok())
            .collect();
        let of_kind = |k: RowKind| {
            c.rows
                .iter()
                .zip(&kept)
                .filter(|(r, k2)| **k2 && r.kind == k)
                .count()
        };
        let n = of_kind(RowKind::Frame);
        if n == 0 && of_kind(RowKind::Malformed) == 0 {
            continue;
        }
        frames += n;
        conns += 1;
        connection(c, &kept, &mut events);
    }
    (events, frames, conns)
}

/// Whether a row holds bytes of its direction's stream (a header, a frame, malformed bytes).
fn has_bytes(r: &Row) -> bool {
    r.dir.is_some()
        && matches!(
            r.kind,
            RowKind::Header | RowKind::Frame | RowKind::Malformed
        )
}

/// Where the bytes of `dir` left out from row `from` on end, and the protocol the bytes after
/// them resume in: at the next row of `dir` kept (`kept` says which); or, when a row of the
/// other direction is kept first, after the rows of `dir` left out before it (a later run
/// is a gap of its own, told after that row, so that nothing sent after it is judged
/// knowing only the first); else at the end of the last row of `dir` (nothing follows).
fn cut_from(
    c: &Conn,
    kept: &[bool],
    from: usize,
    dir: crate::event::Dir,
) -> (u64, Option<ProtocolHeader>) {
    let resync = |r: &Row| {
        if r.kind == RowKind::Header {
            None
        } else {
            framing(r, c)
        }
    };
    let mut end = (0, None);
    for (r, k) in c.rows.iter().zip(kept).skip(from) {
        if !has_bytes(r) {
            continue;
        }
        if *k {
            if r.dir == Some(dir) {
                return (r.offset, resync(r));
            }
            if end.0 > 0 {
                return end;
            }
            continue;
        }
        if r.dir == Some(dir) {
            end = (end.0.max(r.offset + bytes_of(r).len() as u64), resync(r));
        }
    }
    (end.0, None)
}

/// One connection's capture: connect, the kept rows' bytes (`kept` says which rows), a gap
/// where the first row left out after them was (so that what the peers sent after it is read
/// knowing of the hole), close.
fn connection(c: &Conn, kept: &[bool], out: &mut Vec<SourceEvent>) {
    let unknown = |port| SocketAddr::from(([192, 0, 2, 1], port));
    let first = c
        .rows
        .iter()
        .zip(kept)
        .find(|(_, k)| **k)
        .map_or(c.first_ts, |(r, _)| r.ts);
    out.push(SourceEvent::Connect {
        conn: c.id,
        ts: first,
        client: c.client.unwrap_or(unknown(1024)),
        server: c.upstream.unwrap_or(unknown(5672)),
    });
    let mut next = [0u64; 2];
    for (i, (r, k)) in c.rows.iter().zip(kept).enumerate() {
        let Some(dir) = r.dir.filter(|_| has_bytes(r)) else {
            continue;
        };
        let at = next[dir.index()];
        if r.offset < at {
            continue;
        }
        // Bytes not written before this row, or this row left out: a hole up to the next row
        // kept.
        let (end, resync) = cut_from(c, kept, i, dir);
        if end > at {
            out.push(SourceEvent::Gap {
                conn: c.id,
                ts: r.ts,
                dir,
                offset: at,
                len: end - at,
                reason: "not exported".into(),
                resync,
            });
            next[dir.index()] = end;
        }
        if *k {
            let bytes = bytes_of(r);
            next[dir.index()] = r.offset + bytes.len() as u64;
            out.push(SourceEvent::Chunk(Chunk {
                conn: c.id,
                dir,
                ts: r.ts,
                bytes,
            }));
        }
    }
    if let Some(info) = &c.closed {
        let ts = c.rows.back().map_or(c.last_ts, |r| r.ts);
        out.push(SourceEvent::Close {
            conn: c.id,
            ts,
            reason: info.reason.clone(),
        });
    }
}
