//! Reading amqpeek's own JSONL capture back as a source: the base64 `raw` of `header`,
//! `frame` and `bytes` lines rebuilds each direction's byte stream (credentials stay masked as written),
//! `connect` / `fin` / `close` / `gap` lines become their events, and holes in the offsets become
//! gaps. Files written before `fin` lines existed read as before (each direction then ends at
//! the close).
//!
//! `violation` and `diagnosis` lines are read past: the pipeline derives both again from the
//! frames, so a JSONL capture is judged as a pcapng of the same bytes is, and nothing is
//! counted twice. Diagnoses come back the same (ids, scopes, start times and offsets) because
//! their times are the frames' times and the capture's end: the last line's time, as the
//! `close` lines the writer ends each connection with say (see
//! [`crate::state::diagnose`]). A diagnosis the proxy's clock started while a connection was
//! silent shows again, as that connection's `close` line is as late as its end or the proxy's
//! stop; only a file cut short (the proxy killed, no `close` line) ends at its last frame,
//! and what became due after it is then in its `diagnosis` lines alone.
//!
//! Streams line by line; holds only per-connection offsets, for at most
//! [`CaptureOptions::max_connections`](super::CaptureOptions) connections open at once (as the
//! packet reader): beyond, the least recently active eighth is closed as
//! [`CloseReason::Evicted`], which every output shows, and a later line of one of them reads as
//! a connection whose start the capture does not hold. A line that is not valid JSON or lacks
//! a needed field yields an error naming its byte offset, and reading goes on.

use crate::hash::HashMap;
use std::io::BufRead;
use std::net::SocketAddr;

use base64::Engine;
use bytes::Bytes;
use serde_json::Value;

use super::source::SourceEvent;
use crate::codec::ProtocolHeader;
use crate::event::{Chunk, CloseReason, ConnId, Dir, Timestamp};

/// How the reason of a gap for bytes the file does not hold ends (`N bytes not in the JSONL
/// capture`): a connection's direction whose start the file does not hold begins with one.
pub const NOT_IN_CAPTURE: &str = "not in the JSONL capture";

/// Longest line accepted, checked before it is read into memory: a longer one is skipped
/// unread (and reported). amqpeek writes shorter ones: a frame record holds at most
/// [`MAX_HELD_FRAME`](crate::codec::limits::MAX_HELD_FRAME) bytes of frame (base64: 4/3 of that)
/// and a `bytes` record one relayed chunk.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

#[derive(Debug, Default)]
struct DirState {
    /// Stream offset the next chunk must start at.
    expected: u64,
    /// A gap read from the file, waiting for the next frame to learn the protocol.
    pending_gap: Option<(Timestamp, u64, u64, String)>,
    /// A pending gap went out before the protocol was known (a line of the other direction
    /// came first): the next frame owes the decoder its protocol, in a gap of no bytes.
    owes_resync: bool,
}

/// One open connection: when a line last named it, and each direction's offsets.
#[derive(Debug, Default)]
struct Conn {
    last_seen: u64,
    dirs: [DirState; 2],
}

/// Yields [`SourceEvent`]s from an amqpeek JSONL capture.
pub struct JsonlSource<R: BufRead> {
    src: R,
    line: Vec<u8>,
    file_offset: u64,
    conns: HashMap<ConnId, Conn>,
    /// Lines read (the clock of `last_seen`).
    tick: u64,
    max_connections: usize,
    out: std::collections::VecDeque<SourceEvent>,
    done: bool,
}

/// The framing (as its protocol's header) of a record whose `"proto"` is `name`.
fn proto_of(name: &str) -> Option<ProtocolHeader> {
    crate::protocol::ProtocolId::of_proto_name(name).map(|p| p.header())
}

impl<R: BufRead> JsonlSource<R> {
    /// Read JSONL from `src`, holding as many connections open as a packet capture's reader.
    pub fn new(src: R) -> Self {
        Self::with_max_connections(src, super::CaptureOptions::default().max_connections)
    }

    /// Read JSONL from `src`, holding at most `max` connections open at once (at least 1).
    pub fn with_max_connections(src: R, max: usize) -> Self {
        JsonlSource {
            src,
            line: Vec::new(),
            file_offset: 0,
            conns: HashMap::default(),
            tick: 0,
            max_connections: max.max(1),
            out: Default::default(),
            done: false,
        }
    }

    /// `conn` is active: opened if it was not (the least recently active closed first, at the
    /// bound).
    fn touch(&mut self, conn: ConnId, ts: Timestamp) {
        if !self.conns.contains_key(&conn) && self.conns.len() >= self.max_connections {
            self.evict(ts);
        }
        self.conns.entry(conn).or_default().last_seen = self.tick;
    }

    /// Close the least recently active eighth of the open connections (at least one), oldest
    /// first, then in connection order: the same events on every run.
    fn evict(&mut self, ts: Timestamp) {
        let mut old: Vec<(u64, ConnId)> = self
            .conns
            .iter()
            .map(|(id, c)| (c.last_seen, *id))
            .collect();
        old.sort_unstable();
        old.truncate((old.len() / 8).max(1));
        for (_, conn) in old {
            self.end(conn, ts, CloseReason::Evicted);
        }
    }

    /// Read the next line into `self.line`, at most `max` bytes of it: a longer line is passed
    /// over to its end without being kept. Returns the line's length (0 at the end of input)
    /// and whether it was too long.
    fn next_line(&mut self, max: usize) -> std::io::Result<(usize, bool)> {
        self.line.clear();
        if self.line.capacity() > 1024 * 1024 {
            self.line = Vec::new(); // a long line's room is not kept for the short ones
        }
        let (mut n, mut long) = (0usize, false);
        loop {
            let buf = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok((n, long));
            }
            let (take, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if !long && self.line.len() + take > max {
                long = true;
                self.line = Vec::new();
            }
            if !long {
                self.line.extend_from_slice(&buf[..take]);
            }
            self.src.consume(take);
            n += take;
            if end {
                return Ok((n, long));
            }
        }
    }

    fn read_line(&mut self) -> Option<(u64, Result<Value, String>)> {
        let start = self.file_offset;
        let (n, long) = match self.next_line(MAX_LINE) {
            Ok((0, _)) => return None,
            Ok(r) => r,
            Err(e) => {
                self.done = true;
                return Some((start, Err(format!("read error: {e}"))));
            }
        };
        self.file_offset += n as u64;
        if long {
            return Some((
                start,
                Err(format!(
                    "line of {n} bytes is longer than the {MAX_LINE} accepted"
                )),
            ));
        }
        if self.line.trim_ascii().is_empty() {
            return Some((start, Ok(Value::Null)));
        }
        Some((
            start,
            serde_json::from_slice(&self.line).map_err(|e| format!("not a JSON line: {e}")),
        ))
    }

    /// A line of `dir` came: a gap pending in the other direction goes out now, in the
    /// order the capture holds it (the peers' frames are judged in that order), before the
    /// protocol after it is known.
    fn flush_other(&mut self, conn: ConnId, dir: Dir) {
        let other = dir.flip();
        if let Some(c) = self.conns.get_mut(&conn)
            && let st = &mut c.dirs[other.index()]
            && let Some((gts, goff, glen, reason)) = st.pending_gap.take()
        {
            self.out.push_back(SourceEvent::Gap {
                conn,
                ts: gts,
                dir: other,
                offset: goff,
                len: glen,
                reason,
                resync: None,
            });
            st.expected = goff + glen;
            st.owes_resync = true;
        }
    }

    /// Turn one record into its source events.
    fn handle(&mut self, v: &Value) -> Result<(), String> {
        let line = Line::of(v)?;
        match line.event {
            "connect" => {
                self.touch(line.conn, line.ts);
                self.out.push_back(SourceEvent::Connect {
                    conn: line.conn,
                    ts: line.ts,
                    client: line.addr("client")?,
                    server: line.addr("upstream")?,
                });
            }
            "header" | "frame" | "bytes" => self.bytes(&line)?,
            "gap" => self.gap(&line)?,
            "fin" => self.fin(&line)?,
            "close" => self.close(&line),
            // Violations and diagnoses are derived again from the frames (see the module doc);
            // anything newer carries no bytes.
            _ => {}
        }
        Ok(())
    }

    /// A `header`, `frame` or `bytes` record: its bytes as a chunk, after the gaps before it.
    fn bytes(&mut self, line: &Line) -> Result<(), String> {
        let (conn, ts, v) = (line.conn, line.ts, line.v);
        let dir = line.dir()?;
        let offset = line.offset()?;
        let raw = v.get("raw").and_then(Value::as_str).ok_or("bad \"raw\"")?;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map_err(|e| format!("bad base64 in \"raw\": {e}"))?;
        // A header names its protocol by its bytes; it is no frame boundary to resync at.
        let boundary_proto = if line.event == "header" {
            None
        } else {
            v.get("proto").and_then(Value::as_str).and_then(proto_of)
        };
        self.flush_other(conn, dir);
        self.touch(conn, ts);
        let st = &mut self.conns.entry(conn).or_default().dirs[dir.index()];
        if std::mem::take(&mut st.owes_resync)
            && st.pending_gap.is_none()
            && boundary_proto.is_some()
        {
            self.out.push_back(SourceEvent::Gap {
                conn,
                ts,
                dir,
                offset: st.expected,
                len: 0,
                reason: "resynchronised at a frame boundary".into(),
                resync: boundary_proto,
            });
        }
        if let Some((gts, goff, glen, reason)) = st.pending_gap.take() {
            let end = (goff + glen).max(offset);
            self.out.push_back(SourceEvent::Gap {
                conn,
                ts: gts,
                dir,
                offset: goff,
                len: end - goff,
                reason,
                resync: boundary_proto,
            });
            st.expected = end;
        }
        missing_up_to(
            &mut self.out,
            &mut st.expected,
            conn,
            ts,
            dir,
            offset,
            boundary_proto,
        );
        let end = offset + raw.len() as u64;
        if end <= st.expected {
            return Ok(()); // already delivered
        }
        let skip = (st.expected - offset) as usize;
        st.expected = end;
        let bytes = Bytes::from(raw).slice(skip..);
        self.out.push_back(SourceEvent::Chunk(Chunk {
            conn,
            dir,
            ts,
            bytes,
        }));
        Ok(())
    }

    /// A `gap` record: held until the next frame tells the protocol to resync at (a gap held
    /// before it goes out first).
    fn gap(&mut self, line: &Line) -> Result<(), String> {
        let (conn, ts, v) = (line.conn, line.ts, line.v);
        let dir = line.dir()?;
        let offset = line.offset()?;
        let len = v.get("len").and_then(Value::as_u64).unwrap_or(0);
        let reason = v
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("gap")
            .to_string();
        self.flush_other(conn, dir);
        self.touch(conn, ts);
        let st = &mut self.conns.entry(conn).or_default().dirs[dir.index()];
        if let Some((gts, goff, glen, r)) = st.pending_gap.take() {
            self.out.push_back(SourceEvent::Gap {
                conn,
                ts: gts,
                dir,
                offset: goff,
                len: glen,
                reason: r,
                resync: None,
            });
            st.expected = goff + glen;
        }
        let offset = offset.max(st.expected);
        st.pending_gap = Some((ts, offset, len, reason));
        Ok(())
    }

    /// A `fin` record: the direction ends at `offset`; what is missing before it is a gap
    /// first.
    fn fin(&mut self, line: &Line) -> Result<(), String> {
        let (conn, ts) = (line.conn, line.ts);
        let dir = line.dir()?;
        let offset = line.offset()?;
        self.touch(conn, ts);
        let st = &mut self.conns.entry(conn).or_default().dirs[dir.index()];
        if let Some((gts, goff, glen, reason)) = st.pending_gap.take() {
            self.out.push_back(SourceEvent::Gap {
                conn,
                ts: gts,
                dir,
                offset: goff,
                len: (goff + glen).max(offset) - goff,
                reason,
                resync: None,
            });
            st.expected = st.expected.max((goff + glen).max(offset));
        }
        missing_up_to(&mut self.out, &mut st.expected, conn, ts, dir, offset, None);
        self.out.push_back(SourceEvent::Fin { conn, dir, ts });
        Ok(())
    }

    /// A `close` record: the connection ends as it says.
    fn close(&mut self, line: &Line) {
        let reason = line
            .v
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("closed");
        self.end(line.conn, line.ts, CloseReason::parse(reason));
    }

    /// `conn` ends for `reason`: the gaps still held go out, then the close; its offsets are
    /// forgotten.
    fn end(&mut self, conn: ConnId, ts: Timestamp, reason: CloseReason) {
        if let Some(c) = self.conns.remove(&conn) {
            for (dir, st) in [Dir::C2S, Dir::S2C].into_iter().zip(c.dirs) {
                if let Some((gts, goff, glen, reason)) = st.pending_gap {
                    self.out.push_back(SourceEvent::Gap {
                        conn,
                        ts: gts,
                        dir,
                        offset: goff,
                        len: glen,
                        reason,
                        resync: None,
                    });
                }
            }
        }
        self.out.push_back(SourceEvent::Close { conn, ts, reason });
    }
}

/// The fields every record has (`conn`, `ts`, `event`), and the others read on demand.
struct Line<'a> {
    v: &'a Value,
    conn: ConnId,
    ts: Timestamp,
    event: &'a str,
}

impl<'a> Line<'a> {
    /// The record `v`, or what it lacks.
    fn of(v: &'a Value) -> Result<Self, String> {
        let field = |k: &str| v.get(k).ok_or_else(|| format!("missing \"{k}\""));
        let conn = field("conn")?.as_u64().ok_or("bad \"conn\"")?;
        let ts = field("ts")?
            .as_str()
            .and_then(Timestamp::parse_rfc3339)
            .ok_or("bad \"ts\"")?;
        let event = field("event")?.as_str().ok_or("bad \"event\"")?;
        Ok(Line { v, conn, ts, event })
    }

    /// Its `dir`.
    fn dir(&self) -> Result<Dir, String> {
        match self.v.get("dir").and_then(Value::as_str) {
            Some("c2s") => Ok(Dir::C2S),
            Some("s2c") => Ok(Dir::S2C),
            _ => Err("bad \"dir\"".into()),
        }
    }

    /// Its `offset`.
    fn offset(&self) -> Result<u64, String> {
        self.v
            .get("offset")
            .and_then(Value::as_u64)
            .ok_or_else(|| "bad \"offset\"".into())
    }

    /// Its socket address `k`.
    fn addr(&self, k: &str) -> Result<SocketAddr, String> {
        self.v
            .get(k)
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad \"{k}\""))
    }
}

impl<R: BufRead> Iterator for JsonlSource<R> {
    type Item = SourceEvent;

    fn next(&mut self) -> Option<SourceEvent> {
        loop {
            if let Some(e) = self.out.pop_front() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            self.tick += 1;
            let Some((at, line)) = self.read_line() else {
                self.done = true;
                continue;
            };
            let res = line.and_then(|v| if v.is_null() { Ok(()) } else { self.handle(&v) });
            if let Err(message) = res {
                self.out.push_back(SourceEvent::Error {
                    file_offset: at,
                    message: format!("line at byte {at}: {message}"),
                });
            }
        }
    }
}

/// The bytes of `dir` between what was delivered (`expected`) and `offset`, if any, as a gap
/// the capture does not hold; `expected` moves to `offset`.
#[allow(clippy::too_many_arguments)]
fn missing_up_to(
    out: &mut std::collections::VecDeque<SourceEvent>,
    expected: &mut u64,
    conn: ConnId,
    ts: Timestamp,
    dir: Dir,
    offset: u64,
    resync: Option<ProtocolHeader>,
) {
    if offset > *expected {
        out.push_back(SourceEvent::Gap {
            conn,
            ts,
            dir,
            offset: *expected,
            len: offset - *expected,
            reason: format!("{} bytes {NOT_IN_CAPTURE}", offset - *expected),
            resync,
        });
        *expected = offset;
    }
}
