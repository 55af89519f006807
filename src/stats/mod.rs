//! Traffic statistics of a capture or a live run, as `tshark -z` gives them for other
//! protocols: frames and bytes per performative or method and direction, rates per link and
//! per channel, settlement latency percentiles (transfer -> disposition, publish -> confirm,
//! deliver -> ack).
//!
//! [`Collector`] is a [`Sink`]: it reads the pipeline's events like any other sink, so
//! `amqpeek stats`, the TUI's statistics pane and anything else get the same numbers from the
//! same decoded frames; it decodes and tracks no protocol state (which frame settles which
//! delivery is each protocol's [`Traffic`], registered in [`crate::protocol`]). Its
//! [`StatsReport`] is what is shown: text, JSON, or the pane.
//!
//! Memory is bounded whatever the capture: per connection while it is open, the deliveries
//! waiting for settlement ([`MAX_OPEN`]); at most [`MAX_FLOWS`] flows listed (the rest are
//! summed in one row) and [`MAX_TIMED_FLOWS`] of them with their own latency histogram.

mod amqp091;
mod amqp10;
mod latency;
mod report;
mod traffic;

use std::collections::HashSet;

use crate::event::{ConnId, Dir, Event, EventKind, FrameEvent, Timestamp};
use crate::filter::{Filter, FrameFacts, LinkNames};
use crate::hash::HashMap;
use crate::pipeline::Sink;
use crate::protocol::Traffics;

pub use amqp10::Amqp10Traffic;
pub use amqp091::Amqp091Traffic;
pub use latency::{Latency, Percentiles};
pub use report::{DirRow, FlowRow, FrameRow, SettleRow, StatsReport};
pub use traffic::{At, FlowKey, MAX_OPEN, Note, SettleKind, Traffic};

/// Flows listed one by one, at most; the rest are summed in one row.
pub const MAX_FLOWS: usize = 4096;
/// Flows with their own latency histogram (about 16 KiB each), at most.
pub const MAX_TIMED_FLOWS: usize = 256;

/// Frames and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Count {
    frames: u64,
    bytes: u64,
}

/// One direction of a flow.
#[derive(Clone, Copy, Debug, Default)]
struct FlowDir {
    count: Count,
    messages: u64,
    first_ts: Option<i64>,
    last_ts: i64,
}

/// What one flow (a link, a channel) carried.
#[derive(Clone, Debug, Default)]
struct FlowStats {
    dirs: [FlowDir; 2],
    settled: u64,
    latency: Option<Box<Latency>>,
}

/// One open connection: its protocols' traffic accounting, its frames so far, and (with a
/// filter) its link names and the deliveries waiting whose start the filter passed.
#[derive(Debug, Default)]
struct ConnStats {
    traffic: Traffics,
    seq: u64,
    links: LinkNames,
    passed: HashSet<u64>,
}

impl ConnStats {
    /// Deliveries waiting for their settlement that the statistics count.
    fn waiting(&self, filtering: bool) -> usize {
        if filtering {
            // A delivery the protocol forgot without a settlement (a reopened channel, a reused
            // delivery-id) may still be in `passed`: never more than what waits.
            self.passed.len().min(self.traffic.open())
        } else {
            self.traffic.open()
        }
    }
}

/// Statistics of the connections whose events it is given (see the module doc).
#[derive(Debug, Default)]
pub struct Collector {
    /// Only frames this passes are counted, and deliveries they start (`--filter`).
    filter: Option<Filter>,
    /// Connections open now.
    open: HashMap<ConnId, ConnStats>,
    connections: u64,
    first_ts: Option<Timestamp>,
    last_ts: Timestamp,
    /// Per (protocol, name, direction); sorted when reported.
    frames: HashMap<(&'static str, &'static str, Dir), Count>,
    /// Per connection and flow; sorted when reported.
    flows: HashMap<(ConnId, FlowKey), FlowStats>,
    /// Flows past [`MAX_FLOWS`], summed (`None`: there were none).
    other_flows: Option<FlowStats>,
    timed_flows: usize,
    latency: [Latency; 3],
    not_awaited: [u64; 3],
    untimed: u64,
    unsettled_at_close: u64,
    gaps: u64,
    notes: Vec<Note>,
}

impl Collector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty collector counting only the frames `filter` passes (and the deliveries they
    /// start, however they are settled: the settling frame need not pass). A filter reading
    /// violations (`violations`, `rule:`) is refused: statistics do not wait for them.
    pub fn filtered(filter: Filter) -> Result<Self, String> {
        if filter.reads_rules() {
            return Err("stats --filter cannot use `violations` or `rule:` terms".into());
        }
        Ok(Collector {
            filter: (!filter.is_empty()).then_some(filter),
            ..Self::default()
        })
    }

    /// Take one event of the pipeline.
    pub fn add(&mut self, ev: &Event) {
        self.first_ts.get_or_insert(ev.ts);
        self.last_ts = self.last_ts.max(ev.ts);
        if !self.open.contains_key(&ev.conn) {
            self.connections += 1;
            self.open.insert(ev.conn, ConnStats::default());
        }
        match &ev.kind {
            EventKind::Header {
                dir, header, raw, ..
            } => {
                self.count(
                    header.proto_name(),
                    "protocol-header",
                    *dir,
                    raw.len() as u64,
                );
            }
            EventKind::Undecoded { dir, bytes, .. } => {
                self.count("-", "undecoded bytes", *dir, bytes.len() as u64);
            }
            EventKind::Frame(f) => self.frame(ev.conn, ev.ts, f),
            EventKind::Gap { dir, .. } => {
                self.gaps += 1;
                if let Some(c) = self.open.get_mut(&ev.conn) {
                    c.traffic.gap(*dir);
                    c.passed.clear();
                }
            }
            EventKind::Close(_) => {
                let filtering = self.filter.is_some();
                if let Some(c) = self.open.remove(&ev.conn) {
                    self.unsettled_at_close += c.waiting(filtering) as u64;
                }
            }
            _ => {}
        }
    }

    /// A decoded frame: counted if it passes the filter; its protocol's notes taken as far as
    /// they are about what passed.
    fn frame(&mut self, conn: ConnId, ts: Timestamp, f: &FrameEvent) {
        let Some(c) = self.open.get_mut(&conn) else {
            return;
        };
        c.seq += 1;
        let at = At {
            seq: c.seq,
            dir: f.dir,
            ts: ts.0,
            size: f.size(),
        };
        let pass = match &self.filter {
            None => true,
            Some(filter) => {
                let link = c.links.of(f);
                passes(filter, conn, f, link.as_deref())
            }
        };
        let mut notes = std::mem::take(&mut self.notes);
        c.traffic.frame(at, &f.frame, &mut notes);
        if self.filter.is_some() && !keep_passed(c, at.seq, pass, &mut notes) {
            notes.push(Note::Untimed);
        }
        if pass {
            self.count(f.frame.proto_name(), f.frame.name(), f.dir, at.size);
        }
        for note in notes.drain(..) {
            self.note(conn, at, note);
        }
        self.notes = notes;
    }

    fn count(&mut self, proto: &'static str, name: &'static str, dir: Dir, bytes: u64) {
        let c = self.frames.entry((proto, name, dir)).or_default();
        c.frames += 1;
        c.bytes += bytes;
    }

    /// The stats of `flow` on `conn` (the shared row once [`MAX_FLOWS`] are listed).
    fn flow(&mut self, conn: ConnId, flow: FlowKey) -> &mut FlowStats {
        let key = (conn, flow);
        if self.flows.len() >= MAX_FLOWS && !self.flows.contains_key(&key) {
            return self.other_flows.get_or_insert_with(FlowStats::default);
        }
        self.flows.entry(key).or_default()
    }

    fn note(&mut self, conn: ConnId, at: At, note: Note) {
        match note {
            Note::Flow { flow, message } => {
                let d = &mut self.flow(conn, flow).dirs[at.dir.index()];
                d.count.frames += 1;
                d.count.bytes += at.size;
                d.messages += u64::from(message);
                d.first_ts.get_or_insert(at.ts);
                d.last_ts = at.ts;
            }
            Note::Settled {
                after_us,
                kind,
                flow,
                ..
            } => {
                self.latency[kind as usize].record(after_us);
                let can_time = self.timed_flows < MAX_TIMED_FLOWS;
                let f = self.flow(conn, flow);
                f.settled += 1;
                let started = f.latency.is_none() && can_time;
                if started {
                    f.latency = Some(Box::default());
                }
                if let Some(l) = &mut f.latency {
                    l.record(after_us);
                }
                self.timed_flows += usize::from(started);
            }
            Note::PreSettled { kind, .. } => self.not_awaited[kind as usize] += 1,
            Note::Untimed => self.untimed += 1,
        }
    }

    /// What was collected so far, as shown.
    pub fn report(&self) -> StatsReport {
        report::build(self)
    }
}

/// Whether `filter` passes frame `f` of `conn` (which belongs to `link`, if any).
fn passes(filter: &Filter, conn: ConnId, f: &FrameEvent, link: Option<&str>) -> bool {
    let summary = if filter.reads_summary() {
        f.frame.summary()
    } else {
        String::new()
    };
    filter.matches(&FrameFacts {
        conn,
        dir: Some(f.dir),
        channel: Some(f.frame.channel()),
        name: f.frame.name(),
        summary: &summary,
        link,
        proto: f.frame.proto_name(),
        rules: &[],
        frame: Some(&f.frame),
    })
}

/// With a filter: keep of frame `seq`'s notes those about what the filter passed (the frame
/// itself if `pass`, the deliveries whose start it passed), and remember which deliveries it
/// starts that wait for a settlement. False when one could not be remembered (the bound).
fn keep_passed(c: &mut ConnStats, seq: u64, pass: bool, notes: &mut Vec<Note>) -> bool {
    let waits = pass
        && !notes.iter().any(|n| {
            matches!(n, Note::Untimed)
                || matches!(n, Note::PreSettled { start, .. } if *start == seq)
        });
    let mut kept = true;
    notes.retain(|n| match n {
        Note::Flow { message, .. } => {
            // Bounded as the protocols' waiting deliveries are (stale entries included).
            if *message && waits {
                kept = c.passed.len() < MAX_OPEN && c.passed.insert(seq);
            }
            pass
        }
        Note::Settled { start, .. } => c.passed.remove(start),
        Note::PreSettled { start, .. } => (*start == seq && pass) || c.passed.remove(start),
        Note::Untimed => pass,
    });
    kept
}

impl Sink for Collector {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.add(ev);
        Ok(())
    }
}
