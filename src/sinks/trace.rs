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
    let micros = ts.0.rem_euclid(86_400_000_000);
    let secs = micros / 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        micros % 1_000_000
    )
}

/// A diagnosis's trace line: `?? diagnosis ID NAME since TIME: DETAIL` when it starts, `??
/// diagnosis ended ID NAME after SECS s: WHY` when it ends. Its name and detail quote wire
/// strings escaped (they were built so).
fn diagnosis_line(head: &str, d: &crate::event::Diagnosis) -> String {
    match &d.ended {
        None => format!(
            "{head} ?? diagnosis {} {} since {}: {} ({})",
            d.check.id,
            d.name,
            clock(d.since),
            d.detail,
            d.check.todo
        ),
        Some(e) => format!(
            "{head} ?? diagnosis ended {} {} after {:.3} s: {}",
            d.check.id,
            d.name,
            d.held_us(e.ts) as f64 / 1e6,
            e.why.as_str()
        ),
    }
}

/// The trace line for an event (without the newline), or `None` for events the trace skips.
pub fn trace_line(ev: &Event) -> Option<String> {
    let head = format!("{} #{}", clock(ev.ts), ev.conn);
    Some(match &ev.kind {
        EventKind::Connect { client, upstream } => {
            format!("{head} connect {client} => {upstream}")
        }
        EventKind::Header {
            dir, header, raw, ..
        } => {
            let hex = hex::encode(raw);
            format!(
                "{head} {} header {} [{hex}]",
                dir.arrow(),
                header.describe()
            )
        }
        EventKind::Frame(f) => {
            let text = f.line();
            format!("{head} {} ch{} {text}", f.dir.arrow(), f.frame.channel())
        }
        EventKind::Violation(v) => {
            let spec = if v.spec.is_empty() {
                String::new()
            } else {
                format!(" [{}]", Escaped(&v.spec))
            };
            format!(
                "{head} {} !! {} {} at offset {}: {}{spec}",
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
        } => format!(
            "{head} {} gap at offset {offset} ({len} bytes): {}",
            dir.arrow(),
            Escaped(reason)
        ),
        EventKind::Fin { dir, offset } => {
            format!(
                "{head} {} fin at offset {offset} (no more bytes this way)",
                dir.arrow()
            )
        }
        EventKind::Close(c) => format!(
            "{head} close: {} (c2s {} B, s2c {} B)",
            Escaped(&c.reason.to_string()),
            c.bytes_c2s,
            c.bytes_s2c
        ),
        EventKind::Diagnosis(d) => diagnosis_line(&head, d),
        EventKind::Data { .. } | EventKind::Undecoded { .. } | EventKind::State(_) => return None,
    })
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
    line: String,
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
}

fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}

impl Lines {
    /// The held frame line goes out, unless the only violations it carried were counted.
    fn release(&mut self, out: &mut Vec<u8>) {
        if let Some(h) = self.held.take()
            && !h.counted
            && !h.printed
        {
            push_line(out, &h.line);
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
            push_line(out, &h.line);
            h.printed = true;
        }
        if let Some(line) = trace_line(ev) {
            push_line(out, &line);
        }
    }
}

impl Render for Lines {
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>) {
        match &ev.kind {
            EventKind::Frame(f) => {
                self.release(out);
                self.coalescer.keep(ev);
                self.held = trace_line(ev).map(|line| Held {
                    conn: ev.conn,
                    dir: f.dir,
                    offset: f.offset,
                    line,
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
                if let Some(line) = trace_line(&v) {
                    push_line(out, &line);
                }
            }
        }
        if let Some(line) = trace_line(ev) {
            push_line(out, &line);
        }
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
