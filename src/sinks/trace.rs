//! The text trace: one human-readable line per header, frame, violation, gap, connect and close.
//!
//! ```text
//! 12:00:00.123456 #1 connect 127.0.0.1:50412 => 127.0.0.1:5672
//! 12:00:00.123901 #1 -> header AMQP 0-9-1 (0 0 9 1)
//! 12:00:00.125002 #1 <- ch0 connection.start version-major=0 ...
//! 12:00:00.130000 #1 close: client closed (c2s 1234 B, s2c 5678 B)
//! ```
//!
//! Times are UTC. It prints what the Inspector hands it and must never print secrets of its
//! own accord (they are already masked); it ignores raw `Data` events. Frame lines come
//! escaped from the codecs; the words of violations, gaps and closes (which a JSONL capture
//! can carry) go through `base::escape` here.
//!
//! Repeated violations are coalesced ([`super::coalesce`]): past the first few of a rule,
//! peer and scope, a violation is counted, not printed, and so is the frame that carried only
//! such violations; the connection's close is preceded by one line per rule, peer and scope
//! counted. A flood of violating frames prints a few lines, not two per frame.

use std::io::{self, Write};

use super::coalesce::Coalescer;
use crate::base::escape::Escaped;
use crate::event::{ConnId, Dir, Event, EventKind, Timestamp};
use crate::pipeline::{Render, Sink};

/// Writes one line per event to `W` (stdout in the CLI).
#[derive(Debug)]
pub struct TraceSink<W: Write> {
    out: W,
    lines: Lines,
    buf: Vec<u8>,
}

impl<W: Write> TraceSink<W> {
    /// A trace written to `out` (wrap unbuffered outputs in a `BufWriter`; the sink flushes
    /// once per batch).
    pub fn new(out: W) -> Self {
        TraceSink {
            out,
            lines: Lines::default(),
            buf: Vec::new(),
        }
    }

    /// The writer back (tests read what was traced), a held frame line written first.
    pub fn into_inner(mut self) -> W {
        self.lines.end(&mut self.buf);
        let _ = self.out.write_all(&self.buf);
        self.out
    }

    /// The writer (a parallel replay takes the bytes written to memory so far).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// `HH:MM:SS.uuuuuu` (UTC) of a timestamp.
pub fn clock(ts: Timestamp) -> String {
    let mut out = String::with_capacity(15);
    clock_into(&mut out, ts);
    out
}

/// Append `HH:MM:SS.uuuuuu` (UTC) of a timestamp, as every trace line starts with it.
pub fn clock_into(out: &mut String, ts: Timestamp) {
    super::ts_text::time_of_day_into(out, ts);
}

/// A diagnosis's trace line after its head: `?? diagnosis ID NAME since TIME: DETAIL` when
/// it starts, `?? diagnosis ended ID NAME after SECS s: WHY` when it ends. Its name and detail
/// quote wire strings escaped (they were built so).
fn diagnosis_into(out: &mut String, d: &crate::event::Diagnosis) -> std::fmt::Result {
    use std::fmt::Write as _;
    match &d.ended {
        None => write!(
            out,
            "?? diagnosis {} {} since {}: {} ({})",
            d.check.id,
            d.name,
            clock(d.since),
            d.detail,
            d.check.todo
        ),
        Some(e) => write!(
            out,
            "?? diagnosis ended {} {} after {:.3} s: {}",
            d.check.id,
            d.name,
            d.held_us(e.ts) as f64 / 1e6,
            e.why.as_str()
        ),
    }
}

/// The trace line for an event (without the newline), or `None` for events the trace skips.
pub fn trace_line(ev: &Event) -> Option<String> {
    let mut line = String::new();
    trace_line_into(ev, &mut line).then_some(line)
}

/// Append the trace line for an event (without the newline) to `out`; false (nothing
/// appended) for events the trace skips. Frame lines, nearly all of a trace, are written
/// straight into `out`: no string of their own.
pub fn trace_line_into(ev: &Event, out: &mut String) -> bool {
    use std::fmt::Write as _;
    if matches!(
        ev.kind,
        EventKind::Data { .. } | EventKind::Undecoded { .. } | EventKind::State(_)
    ) {
        return false;
    }
    clock_into(out, ev.ts);
    out.push_str(" #");
    out.push_str(itoa::Buffer::new().format(ev.conn));
    let _ = match &ev.kind {
        EventKind::Frame(f) => {
            out.push(' ');
            out.push_str(f.dir.arrow());
            out.push_str(" ch");
            out.push_str(itoa::Buffer::new().format(f.frame.channel()));
            out.push(' ');
            f.line_into(out);
            Ok(())
        }
        EventKind::Connect { client, upstream } => {
            write!(out, " connect {client} => {upstream}")
        }
        EventKind::Header {
            dir, header, raw, ..
        } => {
            let hex = hex::encode(raw);
            write!(out, " {} header {} [{hex}]", dir.arrow(), header.describe())
        }
        EventKind::Violation(v) => {
            let spec = if v.spec.is_empty() {
                String::new()
            } else {
                format!(" [{}]", Escaped(&v.spec))
            };
            write!(
                out,
                " {} !! {} {} at offset {}: {}{spec}",
                v.dir.arrow(),
                v.severity.as_str(),
                v.rule,
                v.offset,
                Escaped(&v.message)
            )
        }
        EventKind::Gap {
            dir,
            offset,
            len,
            reason,
        } => write!(
            out,
            " {} gap at offset {offset} ({len} bytes): {}",
            dir.arrow(),
            Escaped(reason)
        ),
        EventKind::Fin { dir, offset } => {
            write!(
                out,
                " {} fin at offset {offset} (no more bytes this way)",
                dir.arrow()
            )
        }
        EventKind::Close(c) => write!(
            out,
            " close: {} (c2s {} B, s2c {} B)",
            Escaped(&c.reason.to_string()),
            c.bytes_c2s,
            c.bytes_s2c
        ),
        EventKind::Diagnosis(d) => {
            out.push(' ');
            diagnosis_into(out, d)
        }
        EventKind::Data { .. } | EventKind::Undecoded { .. } | EventKind::State(_) => Ok(()),
    };
    true
}

impl<W: Write> Sink for TraceSink<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.buf.clear();
        self.lines.render(ev, &mut self.buf);
        self.out.write_all(&self.buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.buf.clear();
        self.lines.end(&mut self.buf);
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    fn renderer(&self) -> Option<Box<dyn Render>> {
        Some(Box::new(Lines::default()))
    }

    fn write_rendered(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }
}

/// A frame's line, held until its violations tell whether it is printed.
#[derive(Debug)]
struct Held {
    conn: ConnId,
    dir: Dir,
    offset: u64,
    /// A violation of it was counted (not printed).
    counted: bool,
    /// Its line went out (with its first printed violation).
    printed: bool,
}

/// Makes the trace lines (on an inspection worker, or in the sink itself).
#[derive(Debug, Default)]
struct Lines {
    coalescer: Coalescer,
    held: Option<Held>,
    /// The held frame's line; its buffer is kept from one frame to the next.
    held_line: String,
    /// Where a line that goes out at once is made (kept, like `held_line`).
    line: String,
}

fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}

/// Append `ev`'s trace line (made in `line`) and a newline to `out`, when the trace shows it.
fn push_event_line(out: &mut Vec<u8>, ev: &Event, line: &mut String) {
    line.clear();
    if trace_line_into(ev, line) {
        push_line(out, line);
    }
}

impl Lines {
    /// The held frame line goes out, unless the only violations it carried were counted.
    fn release(&mut self, out: &mut Vec<u8>) {
        if let Some(h) = self.held.take()
            && !h.counted
            && !h.printed
        {
            push_line(out, &self.held_line);
        }
    }

    /// A violation of `ev.conn`: printed (after the frame it follows) or counted.
    fn violation(&mut self, ev: &Event, dir: Dir, offset: u64, frame: bool, out: &mut Vec<u8>) {
        let keep = self.coalescer.keep(ev);
        let of_held = self
            .held
            .as_ref()
            .is_some_and(|h| frame && h.conn == ev.conn && h.dir == dir && h.offset == offset);
        if !of_held {
            self.release(out);
        }
        if !keep {
            if let Some(h) = self.held.as_mut().filter(|_| of_held) {
                h.counted = true;
            }
            return;
        }
        if let Some(h) = self.held.as_mut().filter(|h| of_held && !h.printed) {
            // Printed with its first printed violation; its later ones follow it.
            push_line(out, &self.held_line);
            h.printed = true;
        }
        push_event_line(out, ev, &mut self.line);
    }
}

impl Render for Lines {
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
        match &ev.kind {
            EventKind::Frame(f) => {
                self.release(out);
                self.coalescer.keep(ev);
                self.held_line.clear();
                self.held = trace_line_into(ev, &mut self.held_line).then_some(Held {
                    conn: ev.conn,
                    dir: f.dir,
                    offset: f.offset,
                    counted: false,
                    printed: false,
                });
                return;
            }
            EventKind::Violation(v) => {
                return self.violation(ev, v.dir, v.offset, v.frame.is_some(), out);
            }
            // Not traced: no line to order the held one before.
            EventKind::Data { .. } | EventKind::Undecoded { .. } | EventKind::State(_) => {
                self.coalescer.keep(ev);
                return;
            }
            _ => {}
        }
        self.release(out);
        self.coalescer.keep(ev);
        if let EventKind::Close(_) = ev.kind {
            for r in self.coalescer.close(ev.conn) {
                let v = Event {
                    conn: ev.conn,
                    ts: ev.ts,
                    kind: EventKind::Violation(r.violation()),
                };
                push_event_line(out, &v, &mut self.line);
            }
        }
        push_event_line(out, ev, &mut self.line);
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.release(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CloseInfo, Dir, Severity, Violation};

    #[test]
    fn clock_is_utc_time_of_day_with_micros() {
        assert_eq!(clock(Timestamp(1_764_417_600_123_456)), "12:00:00.123456");
        assert_eq!(clock(Timestamp(86_399_999_999)), "23:59:59.999999");
    }

    #[test]
    fn lines_carry_conn_direction_and_details() {
        let ev = |kind| Event {
            conn: 7,
            ts: Timestamp(1_764_417_600_000_001),
            kind,
        };
        let v = trace_line(&ev(EventKind::Violation(Violation {
            rule: &crate::state::rules::CODEC_MALFORMED_FRAME,
            severity: Severity::Error,
            spec: String::new(),
            message: "bad".into(),
            dir: Dir::S2C,
            offset: 8,
            frame: None,
        })))
        .unwrap();
        assert_eq!(
            v,
            "12:00:00.000001 #7 <- !! error codec.malformed-frame at offset 8: bad"
        );
        let c = trace_line(&ev(EventKind::Close(CloseInfo {
            reason: "client closed".into(),
            bytes_c2s: 10,
            bytes_s2c: 20,
        })))
        .unwrap();
        assert_eq!(
            c,
            "12:00:00.000001 #7 close: client closed (c2s 10 B, s2c 20 B)"
        );
        assert!(
            trace_line(&ev(EventKind::Data {
                dir: Dir::C2S,
                offset: 0,
                bytes: bytes::Bytes::from_static(b"x"),
            }))
            .is_none()
        );
    }
}
