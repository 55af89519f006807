//! The metrics' sink: reads the pipeline's events like every other sink and adds to the
//! counters what they already carry (a frame's name, size and context; a violation's rule; a
//! diagnosis; a close reason; the tracker's published state). It decodes nothing and tracks
//! no protocol: per open connection it keeps only what it added to the gauges, so that the
//! close takes it back out.

use prometheus_client::metrics::counter::Counter;

use super::Metrics;
use super::families::{
    CheckLabels, DeliveryLabels, DirLabels, Families, FrameLabels, KindLabels, LinkLabels,
    ProtocolLabels, ReasonLabels, RuleLabels, SettleLabels,
};
use super::top::{OTHER, TopLinks};
use crate::event::{
    Awaits, CloseReason, ConnId, Diagnosis, Dir, Event, EventKind, FlowKey, FrameEvent, SettleKind,
    Sink, Snapshot, Timestamp,
};
use crate::hash::HashMap;

/// The row name of protocol headers (as `amqpeek stats` names it).
const HEADER: &str = "protocol-header";
/// The row name of undecoded bytes (as `amqpeek stats` names it).
const UNDECODED: &str = "undecoded bytes";
/// Diagnoses remembered per connection to take back at its close, at most (the pipeline
/// bounds them far below this).
const MAX_DIAGNOSES_PER_CONN: usize = 256;

/// What one open connection added to the gauges.
#[derive(Debug, Default)]
struct Conn {
    waiting: i64,
    unconfirmed: i64,
    /// Sessions, links, channels, consumers, as its latest state said.
    scopes: [i64; 4],
    /// Diagnoses holding: (check, scope name, since).
    diagnoses: Vec<(&'static str, String, Timestamp)>,
}

/// Adds the events it is given to a [`Metrics`] (see the module doc).
#[derive(Debug)]
pub struct MetricsSink {
    f: Families,
    conns: HashMap<ConnId, Conn>,
    /// The frame counters by (protocol, name, direction), so a frame costs one local lookup.
    frames: HashMap<(&'static str, &'static str, Dir), (Counter, Counter)>,
    top: Option<TopLinks>,
}

impl MetricsSink {
    pub(super) fn new(m: &Metrics) -> Self {
        MetricsSink {
            f: m.families.clone(),
            conns: HashMap::default(),
            frames: HashMap::default(),
            top: m.top_links.map(TopLinks::new),
        }
    }

    fn count(&mut self, proto: &'static str, name: &'static str, dir: Dir, bytes: u64) {
        let f = &self.f;
        let (frames, size) = self.frames.entry((proto, name, dir)).or_insert_with(|| {
            let l = FrameLabels {
                protocol: proto,
                direction: dir.as_str(),
                name,
            };
            (
                f.frames.get_or_create_owned(&l),
                f.bytes.get_or_create_owned(&l),
            )
        });
        frames.inc();
        size.inc_by(bytes);
    }

    fn frame(&mut self, conn: ConnId, ts: Timestamp, fe: &FrameEvent) {
        let size = fe.size();
        self.count(fe.frame.proto_name(), fe.frame.name(), fe.dir, size);
        let cx = &fe.context;
        let f = &self.f;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if let Some(d) = cx.delivery {
            let kind = KindLabels {
                kind: d.kind.as_str(),
            };
            if d.starts {
                f.deliveries
                    .get_or_create(&DeliveryLabels {
                        kind: kind.kind,
                        direction: fe.dir.as_str(),
                    })
                    .inc();
            }
            match d.awaits {
                Some(Awaits::NotAwaited) => {
                    f.not_awaited.get_or_create(&kind).inc();
                }
                Some(Awaits::Untimed) => {
                    f.untimed.inc();
                }
                Some(Awaits::Settlement) if d.starts && d.kind == SettleKind::PublishConfirm => {
                    c.unconfirmed += 1;
                }
                _ => {}
            }
        }
        for s in &cx.settles {
            let kind = s.kind.as_str();
            f.settlements
                .get_or_create(&SettleLabels {
                    kind,
                    outcome: s.outcome,
                })
                .inc();
            f.latency
                .get_or_create(&KindLabels { kind })
                .observe(s.after_us.max(0) as f64 / 1e6);
            if s.kind == SettleKind::PublishConfirm {
                c.unconfirmed -= 1;
            }
        }
        c.waiting = i64::from(cx.waiting);
        // A delivery the protocol forgot unsettled (a channel closed) waits no more.
        c.unconfirmed = c.unconfirmed.clamp(0, c.waiting);
        if fe.frame.redelivered() {
            f.redeliveries
                .get_or_create(&ProtocolLabels {
                    protocol: fe.frame.proto_name(),
                })
                .inc();
        }
        self.link(ts, fe, size);
    }

    /// With `--metrics-top-links`: the frame counted under its link's label (or `other`).
    fn link(&mut self, ts: Timestamp, fe: &FrameEvent, size: u64) {
        let (Some(top), Some(FlowKey::Link { name, sender, .. })) =
            (&mut self.top, &fe.context.flow)
        else {
            return;
        };
        let label = name.as_ref().and_then(|n| top.label(n, size, ts.0));
        let l = LinkLabels {
            link: label.as_deref().unwrap_or(OTHER).to_string(),
            direction: sender.as_str(),
        };
        self.f.link_frames.get_or_create(&l).inc();
        self.f.link_bytes.get_or_create(&l).inc_by(size);
        if fe.context.starts_message() {
            self.f.link_deliveries.get_or_create(&l).inc();
        }
    }

    fn state(&mut self, conn: ConnId, snap: &Snapshot) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let now = scopes(snap);
        let gauges = [
            &self.f.sessions_open,
            &self.f.links_open,
            &self.f.channels_open,
            &self.f.consumers_open,
        ];
        for (i, g) in gauges.into_iter().enumerate() {
            g.inc_by(now[i] - c.scopes[i]);
        }
        c.scopes = now;
    }

    fn diagnosis(&mut self, d: &Diagnosis) {
        let Some(c) = self.conns.get_mut(&d.conn) else {
            return;
        };
        let check = CheckLabels { check: d.check.id };
        if d.ended.is_none() {
            self.f.diagnoses.get_or_create(&check).inc();
            if c.diagnoses.len() < MAX_DIAGNOSES_PER_CONN {
                self.f.diagnoses_active.get_or_create(&check).inc();
                c.diagnoses.push((d.check.id, d.name.clone(), d.since));
            }
        } else if let Some(i) = c
            .diagnoses
            .iter()
            .position(|(id, name, since)| *id == d.check.id && *name == d.name && *since == d.since)
        {
            c.diagnoses.swap_remove(i);
            self.f.diagnoses_active.get_or_create(&check).dec();
        }
    }

    fn close(&mut self, conn: ConnId, reason: &CloseReason) {
        let f = &self.f;
        f.connections_closed
            .get_or_create(&ReasonLabels {
                reason: reason_class(reason),
            })
            .inc();
        if matches!(
            reason,
            CloseReason::Refused(_) | CloseReason::Unreachable(_)
        ) {
            f.upstream_connect_errors
                .get_or_create(&ReasonLabels {
                    reason: reason_class(reason),
                })
                .inc();
        }
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        f.connections_open.dec();
        f.unsettled.dec_by(c.waiting);
        f.unconfirmed.dec_by(c.unconfirmed);
        for (i, g) in [
            &f.sessions_open,
            &f.links_open,
            &f.channels_open,
            &f.consumers_open,
        ]
        .into_iter()
        .enumerate()
        {
            g.dec_by(c.scopes[i]);
        }
        for (id, _, _) in &c.diagnoses {
            f.diagnoses_active
                .get_or_create(&CheckLabels { check: id })
                .dec();
        }
    }
}

/// Sessions mapped, links attached, channels open and their consumers, as `snap` says.
fn scopes(snap: &Snapshot) -> [i64; 4] {
    snap.detail.open_scopes()
}

/// A close reason as a bounded label: who ended it and how, not the operating system's words.
pub fn reason_class(r: &CloseReason) -> &'static str {
    use crate::event::Failure;
    match r {
        CloseReason::Closed { first: Dir::C2S } => "client_closed",
        CloseReason::Closed { first: Dir::S2C } => "upstream_closed",
        CloseReason::Failed {
            by: Dir::C2S,
            how: Failure::Reset,
            ..
        } => "client_reset",
        CloseReason::Failed {
            by: Dir::S2C,
            how: Failure::Reset,
            ..
        } => "upstream_reset",
        CloseReason::Failed { by: Dir::C2S, .. } => "client_error",
        CloseReason::Failed { by: Dir::S2C, .. } => "upstream_error",
        CloseReason::Refused(_) => "refused",
        CloseReason::Unreachable(_) => "unreachable",
        CloseReason::TlsUpgradeUnanswered
        | CloseReason::TlsUpgradeClosed(_)
        | CloseReason::TlsHandshake { .. } => "tls",
        CloseReason::Timeout(crate::event::Timeout::Handshake(_)) => "handshake_timeout",
        CloseReason::Timeout(crate::event::Timeout::Idle(_)) => "idle_timeout",
        CloseReason::ProxyStopped => "proxy_stopped",
        // A packet capture's words (a replayed JSONL of the proxy has the proxy's).
        CloseReason::Reset { .. } => "reset",
        CloseReason::CaptureEnded => "capture_ended",
        CloseReason::FinBothWays { .. }
        | CloseReason::Evicted
        | CloseReason::Superseded
        | CloseReason::Other(_) => "other",
    }
}

impl Sink for MetricsSink {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        if let std::collections::hash_map::Entry::Vacant(e) = self.conns.entry(ev.conn) {
            e.insert(Conn::default());
            self.f.connections_opened.inc();
            self.f.connections_open.inc();
        }
        match &ev.kind {
            EventKind::Header {
                dir, header, raw, ..
            } => self.count(header.proto_name(), HEADER, *dir, raw.len() as u64),
            EventKind::Undecoded { dir, bytes, .. } => {
                self.count("-", UNDECODED, *dir, bytes.len() as u64);
            }
            EventKind::Frame(fe) => {
                let before = self.conns.get(&ev.conn).map(|c| (c.waiting, c.unconfirmed));
                self.frame(ev.conn, ev.ts, fe);
                self.moved(ev.conn, before);
            }
            EventKind::Violation(v) => {
                self.f
                    .violations
                    .get_or_create(&RuleLabels {
                        rule: v.rule.id,
                        severity: v.severity.as_str(),
                    })
                    .inc();
                if v.rule.id.starts_with("codec.") {
                    let dir = DirLabels {
                        direction: v.dir.as_str(),
                    };
                    self.f.decode_errors.get_or_create(&dir).inc();
                }
            }
            EventKind::Gap {
                dir, len, reason, ..
            } => {
                let d = DirLabels {
                    direction: dir.as_str(),
                };
                self.f.gaps.get_or_create(&d).inc();
                if reason.starts_with("skimmed") {
                    self.f.skimmed_bytes.get_or_create(&d).inc_by(*len);
                }
                // The state layer forgot what was waiting at the gap.
                let before = self.conns.get(&ev.conn).map(|c| (c.waiting, c.unconfirmed));
                if let Some(c) = self.conns.get_mut(&ev.conn) {
                    c.waiting = 0;
                    c.unconfirmed = 0;
                }
                self.moved(ev.conn, before);
            }
            EventKind::State(snap) => self.state(ev.conn, snap),
            EventKind::Diagnosis(d) => self.diagnosis(d),
            EventKind::Close(info) => self.close(ev.conn, &info.reason),
            EventKind::Connect { .. } | EventKind::Data { .. } | EventKind::Fin { .. } => {}
        }
        Ok(())
    }

    /// Metrics do without frames the inspection had no time to decode: a skim shows as
    /// `amqpeek_skimmed_bytes_total`, and the relay never waits for them.
    fn needs_every_frame(&self) -> bool {
        false
    }
}

impl MetricsSink {
    /// The waiting gauges follow connection `conn`'s counts, which were `before`.
    fn moved(&self, conn: ConnId, before: Option<(i64, i64)>) {
        if let (Some((waiting, unconfirmed)), Some(c)) = (before, self.conns.get(&conn)) {
            self.f.unsettled.inc_by(c.waiting - waiting);
            self.f.unconfirmed.inc_by(c.unconfirmed - unconfirmed);
        }
    }
}
