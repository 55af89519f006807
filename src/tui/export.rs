//! Export from the TUI (the bug-report workflow): the marked frames, the shown ones or a whole
//! connection, written as pcapng or JSONL, masked.
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
            for c in app.conns.values() {
                for r in c.rows.iter().filter(|r| app.is_marked(c.id, r.seq)) {
                    out.entry(c.id).or_default().push(r.seq);
                }
            }
        }
        ExportScope::Shown => {
            for (c, s) in &app.view {
                out.entry(*c).or_default().push(*s);
            }
        }
        ExportScope::Connection => {
            let id = app
                .selected_conn()
                .or_else(|| app.selected_row().map(|r| r.conn));
            if let Some(c) = id.and_then(|id| app.conns.get(&id)) {
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
    match proto {
        "amqp-sasl" => Some(ProtocolHeader::Amqp10Sasl),
        "amqp-1.0" => Some(ProtocolHeader::Amqp10),
        "amqp-0-9-1" => Some(ProtocolHeader::Amqp091),
        _ => None,
    }
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
        let Some(c) = app.conns.get(&id) else {
            continue;
        };
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| r.kind == RowKind::Header || seqs.binary_search(&r.seq).is_ok())
            .collect();
        let n = rows.iter().filter(|r| r.kind == RowKind::Frame).count();
        if n == 0 && !rows.iter().any(|r| r.kind == RowKind::Malformed) {
            continue;
        }
        frames += n;
        conns += 1;
        connection(c, &rows, &mut events);
    }
    (events, frames, conns)
}

/// One connection's capture: connect, the rows' bytes with gaps between them, close.
fn connection(c: &Conn, rows: &[&Row], out: &mut Vec<SourceEvent>) {
    let unknown = |port| SocketAddr::from(([192, 0, 2, 1], port));
    let first = rows.first().map_or(c.first_ts, |r| r.ts);
    out.push(SourceEvent::Connect {
        conn: c.id,
        ts: first,
        client: c.client.unwrap_or(unknown(1024)),
        server: c.upstream.unwrap_or(unknown(5672)),
    });
    let mut next = [0u64; 2];
    for r in rows {
        let Some(dir) = r.dir else { continue };
        if !matches!(
            r.kind,
            RowKind::Header | RowKind::Frame | RowKind::Malformed
        ) {
            continue;
        }
        let at = &mut next[dir.index()];
        if r.offset < *at {
            continue;
        }
        if r.offset > *at {
            out.push(SourceEvent::Gap {
                conn: c.id,
                ts: r.ts,
                dir,
                offset: *at,
                len: r.offset - *at,
                reason: "not exported".into(),
                resync: if r.kind == RowKind::Header {
                    None
                } else {
                    framing(r, c)
                },
            });
        }
        let bytes = bytes_of(r);
        *at = r.offset + bytes.len() as u64;
        out.push(SourceEvent::Chunk(Chunk {
            conn: c.id,
            dir,
            ts: r.ts,
            bytes,
        }));
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
