//! Traffic statistics of a capture or a live run, as `tshark -z` gives them for other
//! protocols: frames and bytes per performative or method and direction, rates per link and
//! per channel, settlement latency percentiles (transfer -> disposition, publish -> confirm,
//! deliver -> ack); and the diagnoses the pipeline made (why a flow is stuck, see
//! [`crate::verdict::render::diagnoses`]), each once, at most
//! [`crate::verdict::diagnoses::MAX_KEPT`] of them.
//!
//! [`Collector`] is a [`Sink`]: it reads the pipeline's events like any other sink, so
//! `amqpeek stats`, the TUI's statistics pane and anything else get the same numbers from the
//! same decoded frames; it decodes and tracks no protocol state: which flow a frame belongs to
//! and which frame settles which delivery is the frame's
//! [`FrameContext`](crate::event::FrameContext), published by the state layer. Its
//! [`StatsReport`] is what is shown: text, JSON, or the pane.
//!
//! Memory is bounded whatever the capture: per connection while it is open, with a filter, the
//! deliveries waiting for settlement whose start it passed (at most [`MAX_OPEN`]); at most [`MAX_FLOWS`] flows listed (the rest are
//! summed in one row) and [`MAX_TIMED_FLOWS`] of them with their own latency histogram.

mod latency;
mod report;

use crate::event::{Awaits, ConnId, Dir, Event, EventKind, FrameEvent, FrameRef, Timestamp};
use crate::filter::{Filter, FrameFacts};
use crate::hash::{HashMap, HashSet};
use crate::pipeline::Sink;

pub use crate::event::{FlowKey, SettleKind};
pub use crate::state::context::MAX_OPEN;
pub use latency::{Latency, Percentiles};
pub use report::{DirRow, FlowRow, FrameRow, SettleRow, StatsReport};

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

/// One open connection: the deliveries waiting on it after its latest frame (its context says),
/// and (with a filter) the deliveries waiting whose start the filter passed.
#[derive(Debug, Default)]
struct ConnStats {
    /// Something of it was counted (with a filter, connections are counted by what passed).
    counted: bool,
    waiting: usize,
    passed: HashSet<FrameRef>,
}

impl ConnStats {
    /// Deliveries waiting for their settlement that the statistics count.
    fn waiting(&self, filtering: bool) -> usize {
        if filtering {
            // A delivery the protocol forgot without a settlement (a reopened channel, a reused
            // delivery-id) may still be in `passed`: never more than what waits.
            self.passed.len().min(self.waiting)
        } else {
            self.waiting
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
    /// The diagnoses (every one: a filter passes frames, not diagnoses).
    diagnoses: crate::verdict::Diagnoses,
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
        if let std::collections::hash_map::Entry::Vacant(e) = self.open.entry(ev.conn) {
            e.insert(ConnStats::default());
            if self.filter.is_none() {
                self.connections += 1;
            }
        }
        match &ev.kind {
            EventKind::Header {
                dir, header, raw, ..
            } => {
                let proto = header.proto_name();
                if self.passes_unit(ev.conn, *dir, proto, report::HEADER) {
                    self.count(proto, report::HEADER, *dir, raw.len() as u64);
                }
            }
            EventKind::Undecoded { dir, bytes, .. }
                if self.passes_unit(ev.conn, *dir, "-", report::UNDECODED) =>
            {
                self.count("-", report::UNDECODED, *dir, bytes.len() as u64);
            }
            EventKind::Frame(f) => self.frame(ev.conn, ev.ts, f),
            EventKind::Gap { dir, .. } => {
                self.gaps += 1;
                let _ = dir;
                if let Some(c) = self.open.get_mut(&ev.conn) {
                    // The state layer forgot what was waiting at the gap.
                    c.waiting = 0;
                    c.passed.clear();
                }
            }
            EventKind::Diagnosis(d) => self.diagnoses.take(d),
            EventKind::Close(_) => {
                let filtering = self.filter.is_some();
                if let Some(c) = self.open.remove(&ev.conn) {
                    self.unsettled_at_close += c.waiting(filtering) as u64;
                }
            }
            _ => {}
        }
    }

    /// A decoded frame: counted if it passes the filter; what its context tells taken as far
    /// as it is about what passed.
    fn frame(&mut self, conn: ConnId, ts: Timestamp, f: &FrameEvent) {
        let Some(c) = self.open.get_mut(&conn) else {
            return;
        };
        let cx = &f.context;
        c.waiting = cx.waiting as usize;
        let here = FrameRef {
            dir: f.dir,
            offset: f.offset,
        };
        let pass = self
            .filter
            .as_ref()
            .is_none_or(|filter| passes(filter, conn, f));
        if pass && !std::mem::replace(&mut c.counted, true) && self.filter.is_some() {
            self.connections += 1;
        }
        let Some(c) = self.open.get_mut(&conn) else {
            return;
        };
        let size = f.size();
        let filtering = self.filter.is_some();
        // With a filter, a delivery counts when the frame that started it passed.
        let counts = |start: &FrameRef, c: &mut ConnStats| {
            !filtering
                || if *start == here {
                    pass
                } else {
                    c.passed.contains(start)
                }
        };
        let mut untimed = false;
        if let Some(d) = cx.delivery.filter(|d| counts(&d.start, c)) {
            match d.awaits {
                Some(Awaits::Settlement) if filtering && d.starts => {
                    // Bounded as the protocols' waiting deliveries are (stale entries included).
                    if c.passed.len() < MAX_OPEN {
                        c.passed.insert(d.start);
                    } else {
                        untimed = true;
                    }
                }
                Some(Awaits::NotAwaited) => {
                    c.passed.remove(&d.start);
                    self.not_awaited[d.kind as usize] += 1;
                }
                Some(Awaits::Untimed) => untimed = true,
                Some(Awaits::Settlement) | None => {}
            }
        }
        let settled: Vec<_> = cx
            .settles
            .iter()
            .filter(|s| !filtering || c.passed.remove(&s.start))
            .collect();
        if pass {
            self.count(f.frame.proto_name(), f.frame.name(), f.dir, size);
            if let Some(flow) = &cx.flow {
                let d = &mut self.flow(conn, flow.clone()).dirs[f.dir.index()];
                d.count.frames += 1;
                d.count.bytes += size;
                d.messages += u64::from(cx.starts_message());
                d.first_ts.get_or_insert(ts.0);
                d.last_ts = ts.0;
            }
        }
        self.untimed += u64::from(untimed);
        for s in settled {
            self.settled(conn, s);
        }
    }

    /// Whether a protocol header or a run of undecoded bytes (`name`) of `conn` passes the
    /// filter, as a row of the frame list would; counts its connection when it does.
    fn passes_unit(&mut self, conn: ConnId, dir: Dir, proto: &str, name: &str) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        let pass = filter.matches(&FrameFacts {
            conn,
            dir: Some(dir),
            channel: None,
            name,
            summary: "",
            link: None,
            proto,
            rules: &[],
            frame: None,
        });
        if pass
            && let Some(c) = self.open.get_mut(&conn)
            && !std::mem::replace(&mut c.counted, true)
        {
            self.connections += 1;
        }
        pass
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

    /// A delivery of `conn` was settled.
    fn settled(&mut self, conn: ConnId, s: &crate::event::Settlement) {
        self.latency[s.kind as usize].record(s.after_us);
        let can_time = self.timed_flows < MAX_TIMED_FLOWS;
        let f = self.flow(conn, s.flow.clone());
        f.settled += 1;
        let started = f.latency.is_none() && can_time;
        if started {
            f.latency = Some(Box::default());
        }
        if let Some(l) = &mut f.latency {
            l.record(s.after_us);
        }
        self.timed_flows += usize::from(started);
    }

    /// What was collected so far, as shown.
    pub fn report(&self) -> StatsReport {
        report::build(self)
    }
}

/// Whether `filter` passes frame `f` of `conn`.
fn passes(filter: &Filter, conn: ConnId, f: &FrameEvent) -> bool {
    let summary = if filter.reads_summary() {
        f.line()
    } else {
        String::new()
    };
    filter.matches(&FrameFacts {
        conn,
        dir: Some(f.dir),
        channel: Some(f.frame.channel()),
        name: f.frame.name(),
        summary: &summary,
        link: f.context.link_name(),
        proto: f.frame.proto_name(),
        rules: &[],
        frame: Some(&f.frame),
    })
}

impl Sink for Collector {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.add(ev);
        Ok(())
    }
}
