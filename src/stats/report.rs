//! What the statistics show ([`StatsReport`]: `--format json` serialises it as it is), and its
//! text form: one aligned table per question, as `tshark -z` prints them.

use std::fmt::Write as _;

use serde::Serialize;

use super::latency::Percentiles;
use super::{Collector, Count, FlowDir, FlowStats, SettleKind};
use crate::base::escape::Quoted;
use crate::event::{ConnId, Dir, Timestamp};
use crate::verdict::render::diagnoses::DiagnosesSection;

/// The statistics of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StatsReport {
    /// The `--filter` the numbers are of, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Connections seen (with a filter: those with anything it passed).
    pub connections: u64,
    /// The first event's time (RFC 3339), if any.
    pub first: Option<String>,
    /// The last event's time (RFC 3339), if any.
    pub last: Option<String>,
    /// From the first event to the last, in µs.
    pub duration_us: i64,
    /// Decoded frames: the number `check`, the JSONL's `frame` records and the TUI count.
    pub frames: u64,
    /// Protocol headers (counted apart from the frames).
    pub headers: u64,
    /// Runs of undecoded bytes (counted apart from the frames).
    pub undecoded: u64,
    /// Bytes of the frames, headers and undecoded bytes in all.
    pub bytes: u64,
    /// Per protocol, frame name and direction.
    pub by_name: Vec<FrameRow>,
    /// Per link and per channel.
    pub flows: Vec<FlowRow>,
    /// Flows past the listed ones, summed into the last row of `flows` (`other`).
    pub flows_summed: bool,
    /// Per kind of settlement.
    pub settlement: Vec<SettleRow>,
    /// Deliveries not timed: their numbering was lost in a gap, or too many waited at once.
    pub untimed: u64,
    /// Deliveries still waiting for their settlement when their connection ended.
    pub unsettled_at_close: u64,
    /// Gaps (bytes lost or passed over): numbers after a gap are of what was seen.
    pub gaps: u64,
    /// Why flows were stuck: the diagnoses made, each with its place, times, evidence frames,
    /// likely cause and what to do.
    pub diagnoses: DiagnosesSection,
}

/// Frames of one name in one direction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FrameRow {
    /// `amqp-1.0`, `amqp-sasl`, `amqp-0-9-1` (`-` for undecoded bytes).
    pub proto: &'static str,
    /// Performative or method (`transfer`, `basic.publish`, `content-body`, `protocol-header`).
    pub name: &'static str,
    /// `c2s` or `s2c`.
    pub dir: Dir,
    /// How many.
    pub frames: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
}

/// One flow: an AMQP 1.0 link or an AMQP 0-9-1 channel of one connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowRow {
    /// Its connection (0 for the summed row).
    pub conn: ConnId,
    /// `link "orders" c2s`, `channel 1`, or `other` for the summed row.
    pub flow: String,
    /// Per direction that carried any of its frames.
    pub dirs: Vec<DirRow>,
    /// Deliveries settled (by disposition, confirm or ack) and timed.
    pub settled: u64,
    /// Their latency, when the flow has its own histogram.
    pub latency: Option<Percentiles>,
}

/// One direction of a flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirRow {
    /// `c2s` or `s2c`.
    pub dir: Dir,
    /// Frames of the flow.
    pub frames: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Messages (deliveries) started.
    pub messages: u64,
    /// From the flow's first frame in this direction to its last, in µs.
    pub span_us: i64,
    /// Messages per second over that span (`None` when it is 0).
    pub messages_per_s: Option<f64>,
    /// Bytes per second over that span (`None` when it is 0).
    pub bytes_per_s: Option<f64>,
}

/// One kind of settlement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SettleRow {
    /// `transfer->disposition`, `publish->confirm`, `deliver->ack`.
    pub kind: &'static str,
    /// The latencies, when any was timed.
    pub latency: Option<Percentiles>,
    /// Deliveries that needed no settlement of this kind: pre-settled transfers, publishes
    /// outside confirm mode, deliveries to no-ack consumers and gets.
    pub not_awaited: u64,
}

/// The row name of protocol headers.
pub(super) const HEADER: &str = "protocol-header";
/// The row name of undecoded bytes.
pub(super) const UNDECODED: &str = "undecoded bytes";

pub(super) fn build(c: &Collector) -> StatsReport {
    let mut frames: Vec<_> = c.frames.iter().collect();
    frames.sort_unstable_by_key(|(k, _)| **k);
    let by_name: Vec<FrameRow> = frames
        .into_iter()
        .map(|(&(proto, name, dir), n)| FrameRow {
            proto,
            name,
            dir,
            frames: n.frames,
            bytes: n.bytes,
        })
        .collect();
    let mut listed: Vec<_> = c.flows.iter().collect();
    listed.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut flows: Vec<FlowRow> = listed
        .into_iter()
        .map(|((conn, key), f)| flow_row(*conn, key.label(), f))
        .collect();
    if let Some(f) = &c.other_flows {
        flows.push(flow_row(0, "other".into(), f));
    }
    let settlement = SettleKind::ALL
        .iter()
        .map(|&k| SettleRow {
            kind: k.as_str(),
            latency: c.latency[k as usize].summary(),
            not_awaited: c.not_awaited[k as usize],
        })
        .collect();
    let first = c.first_ts;
    StatsReport {
        filter: c.filter.as_ref().map(|f| f.source.clone()),
        connections: c.connections,
        first: first.map(Timestamp::rfc3339),
        last: first.map(|_| c.last_ts.rfc3339()),
        duration_us: first.map_or(0, |f| c.last_ts.0 - f.0),
        frames: by_name
            .iter()
            .filter(|r| !matches!(r.name, HEADER | UNDECODED))
            .map(|r| r.frames)
            .sum(),
        headers: by_name
            .iter()
            .filter(|r| r.name == HEADER)
            .map(|r| r.frames)
            .sum(),
        undecoded: by_name
            .iter()
            .filter(|r| r.name == UNDECODED)
            .map(|r| r.frames)
            .sum(),
        bytes: by_name.iter().map(|r| r.bytes).sum(),
        by_name,
        flows,
        flows_summed: c.other_flows.is_some(),
        settlement,
        untimed: c.untimed,
        unsettled_at_close: c.unsettled_at_close
            + c.open
                .values()
                .map(|s| s.waiting(c.filter.is_some()) as u64)
                .sum::<u64>(),
        gaps: c.gaps,
        diagnoses: DiagnosesSection::of(&c.diagnoses, &[]),
    }
}

fn flow_row(conn: ConnId, flow: String, f: &FlowStats) -> FlowRow {
    let dirs = [Dir::C2S, Dir::S2C]
        .into_iter()
        .filter_map(|dir| dir_row(dir, &f.dirs[dir.index()]))
        .collect();
    FlowRow {
        conn,
        flow,
        dirs,
        settled: f.settled,
        latency: f.latency.as_ref().and_then(|l| l.summary()),
    }
}

fn dir_row(dir: Dir, d: &FlowDir) -> Option<DirRow> {
    let first = d.first_ts?;
    let span_us = d.last_ts - first;
    let per_s = |n: u64| (span_us > 0).then(|| n as f64 * 1e6 / span_us as f64);
    let Count { frames, bytes } = d.count;
    Some(DirRow {
        dir,
        frames,
        bytes,
        messages: d.messages,
        span_us,
        messages_per_s: per_s(d.messages),
        bytes_per_s: per_s(bytes),
    })
}

/// A duration in µs, short: `850µs`, `12.3ms`, `4.20s`.
pub(super) fn duration(us: u64) -> String {
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

/// A byte count, short: `512 B`, `12.3 KiB`, `4.0 MiB`.
pub(super) fn bytes(n: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024.0 {
        return format!("{n:.0} B");
    }
    let mut v = n / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

impl StatsReport {
    /// The text form, as lines (the TUI's pane shows the same ones).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let span = match (&self.first, &self.last) {
            (Some(f), Some(l)) => format!(
                ", {f} to {l} ({})",
                duration(self.duration_us.max(0) as u64)
            ),
            _ => String::new(),
        };
        let mut apart = format!(", {} protocol header(s)", self.headers);
        if self.undecoded > 0 {
            let _ = write!(apart, ", {} run(s) of undecoded bytes", self.undecoded);
        }
        out.push(format!(
            "{} connection(s){span}; {} frames{apart}; {}",
            self.connections,
            self.frames,
            bytes(self.bytes as f64)
        ));
        if let Some(f) = &self.filter {
            out.push(format!(
                "counting only the frames --filter {} passes, and the settlements of the \
                 deliveries they start",
                Quoted(f)
            ));
        }
        out.push(String::new());
        self.name_lines(&mut out);
        out.push(String::new());
        self.flow_lines(&mut out);
        out.push(String::new());
        self.settle_lines(&mut out);
        out
    }

    fn name_lines(&self, out: &mut Vec<String>) {
        out.push("Frames by performative / method and direction".into());
        out.push(format!(
            "  {:<11} {:<24} {:<4} {:>10} {:>12}",
            "proto", "name", "dir", "frames", "bytes"
        ));
        for r in &self.by_name {
            out.push(format!(
                "  {:<11} {:<24} {:<4} {:>10} {:>12}",
                r.proto,
                r.name,
                r.dir.as_str(),
                r.frames,
                bytes(r.bytes as f64)
            ));
        }
    }

    fn flow_lines(&self, out: &mut Vec<String>) {
        out.push("Links and channels (rates over each one's first to last frame that way)".into());
        let width = flow_width(&self.flows);
        out.push(format!(
            "  {:>4} {:<width$} {:<4} {:>8} {:>8} {:>11} {:>9} {:>11} {:>8} {:>8} {:>8}",
            "conn",
            "flow",
            "dir",
            "frames",
            "msgs",
            "bytes",
            "msg/s",
            "B/s",
            "settled",
            "p50",
            "p99"
        ));
        if self.flows.is_empty() {
            out.push("  (none)".into());
        }
        for f in &self.flows {
            let (p50, p99) = f.latency.map_or(("-".into(), "-".into()), |l| {
                (duration(l.p50_us), duration(l.p99_us))
            });
            for (i, d) in f.dirs.iter().enumerate() {
                let mut line = String::new();
                let (conn, name) = if i == 0 {
                    (f.conn.to_string(), fit(&f.flow, width))
                } else {
                    (String::new(), String::new())
                };
                let _ = write!(
                    line,
                    "  {:>4} {:<width$} {:<4} {:>8} {:>8} {:>11} {:>9} {:>11}",
                    conn,
                    name,
                    d.dir.as_str(),
                    d.frames,
                    d.messages,
                    bytes(d.bytes as f64),
                    rate(d.messages_per_s),
                    d.bytes_per_s
                        .map_or("-".into(), |b| format!("{}/s", bytes(b))),
                );
                if i == 0 {
                    let _ = write!(line, " {:>8} {:>8} {:>8}", f.settled, p50, p99);
                }
                out.push(line.trim_end().to_string());
            }
        }
        if self.flows_summed {
            out.push(format!(
                "  (flows past the first {} are summed as `other`)",
                super::MAX_FLOWS
            ));
        }
    }

    fn settle_lines(&self, out: &mut Vec<String>) {
        out.push("Settlement latency".into());
        out.push(format!(
            "  {:<22} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12}",
            "kind", "count", "min", "p50", "p90", "p99", "max", "mean", "not awaited"
        ));
        for s in &self.settlement {
            let cells = match s.latency {
                Some(l) => {
                    [l.min_us, l.p50_us, l.p90_us, l.p99_us, l.max_us, l.mean_us].map(duration)
                }
                None => std::array::from_fn(|_| "-".to_string()),
            };
            out.push(format!(
                "  {:<22} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12}",
                s.kind,
                s.latency.map_or(0, |l| l.count),
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5],
                s.not_awaited
            ));
        }
        if self.unsettled_at_close > 0 {
            out.push(format!(
                "  {} deliveries still unsettled when their connection ended",
                self.unsettled_at_close
            ));
        }
        if self.untimed > 0 {
            out.push(format!(
                "  {} deliveries not timed (numbering lost in a gap, or too many waiting)",
                self.untimed
            ));
        }
        if self.gaps > 0 {
            out.push(format!(
                "  {} gap(s): what they hid is not counted, and deliveries waiting at a gap are not timed",
                self.gaps
            ));
        }
    }

    /// The text form, one string: [`StatsReport::lines`], then the diagnoses when there are
    /// any.
    pub fn text(&self) -> String {
        let mut s = self.lines().join("\n");
        s.push('\n');
        if self.diagnoses.total > 0 {
            s.push('\n');
            self.diagnoses.text_into(&mut s, "  ", "      ");
        }
        s
    }
}

/// The width of the flow column: its longest label, at least 32 and at most
/// [`FLOW_COLUMN_MAX`] characters, so a long link name neither breaks the columns nor makes
/// every line wide.
fn flow_width(flows: &[FlowRow]) -> usize {
    flows
        .iter()
        .map(|f| f.flow.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(32, FLOW_COLUMN_MAX)
}

/// The flow column's widest: a label longer is cut, marked with `…` (the JSON has it whole).
const FLOW_COLUMN_MAX: usize = 64;

/// `label` in at most `width` characters: cut with `…` when longer.
fn fit(label: &str, width: usize) -> String {
    if label.chars().count() <= width {
        return label.to_string();
    }
    let mut out: String = label.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod flow_column_tests {
    use super::*;

    fn row(flow: &str) -> FlowRow {
        FlowRow {
            conn: 1,
            flow: flow.to_string(),
            dirs: Vec::new(),
            settled: 0,
            latency: None,
        }
    }

    #[test]
    fn a_long_link_name_widens_the_column_up_to_a_bound_and_is_cut_beyond() {
        let short = row("link \"a\" c2s");
        assert_eq!(flow_width(std::slice::from_ref(&short)), 32);
        let long = row(&format!("link \"{}\" c2s", "n".repeat(40)));
        assert_eq!(flow_width(&[short, long]), 51);
        let huge = format!("link \"{}\" c2s", "n".repeat(200));
        assert_eq!(flow_width(&[row(&huge)]), FLOW_COLUMN_MAX);
        let cut = fit(&huge, FLOW_COLUMN_MAX);
        assert_eq!(cut.chars().count(), FLOW_COLUMN_MAX);
        assert!(cut.ends_with('…'));
        assert_eq!(fit("channel 1", 32), "channel 1");
    }
}
