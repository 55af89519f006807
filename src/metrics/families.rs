//! Every metric amqpeek exports, registered once under the `amqpeek_` prefix: its name, help
//! text, type and labels. The labels are bounded by what the code knows, never by the
//! traffic: protocol, direction and frame name (the codecs' static names), a close reason's
//! class, a settlement's kind and outcome, a rule of the catalog, a diagnosis check; the
//! link label (only with a top-N bound, see `top.rs`) is the one label wire strings reach.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::event::{Dir, SettleKind};

/// A protocol unit: the rows of `amqpeek stats`' frames by name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct FrameLabels {
    /// `amqp-1.0`, `amqp-sasl`, `amqp-0-9-1` (`-` for undecoded bytes).
    pub(super) protocol: &'static str,
    /// `c2s` or `s2c`.
    pub(super) direction: &'static str,
    /// Performative or method, `protocol-header`, `undecoded bytes`.
    pub(super) name: &'static str,
}

/// One direction.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DirLabels {
    /// `c2s` or `s2c`.
    pub(super) direction: &'static str,
}

/// Why a connection ended, as a class (`closed`, `reset`, `refused`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ReasonLabels {
    /// The class of the close reason.
    pub(super) reason: &'static str,
}

/// A kind of settlement.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindLabels {
    /// `transfer->disposition`, `publish->confirm`, `deliver->ack`.
    pub(super) kind: &'static str,
}

/// A kind of settlement and the direction the delivery went.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DeliveryLabels {
    /// `transfer->disposition`, `publish->confirm`, `deliver->ack`.
    pub(super) kind: &'static str,
    /// `c2s` (the client sent it) or `s2c` (the client received it).
    pub(super) direction: &'static str,
}

/// A settlement's kind and outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SettleLabels {
    /// `transfer->disposition`, `publish->confirm`, `deliver->ack`.
    pub(super) kind: &'static str,
    /// `accepted`, `rejected`, `released`, `modified`, `settled`, `ack`, `nack`, `reject`.
    pub(super) outcome: &'static str,
}

/// A protocol.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ProtocolLabels {
    /// `amqp-1.0`, `amqp-0-9-1`.
    pub(super) protocol: &'static str,
}

/// A rule of the catalog.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RuleLabels {
    /// The rule's id.
    pub(super) rule: &'static str,
    /// `info`, `warning`, `error`.
    pub(super) severity: &'static str,
}

/// A diagnosis check.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct CheckLabels {
    /// The check's id.
    pub(super) check: &'static str,
}

/// One of the top links (or `other`), one direction.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct LinkLabels {
    /// The link's name, escaped and cut to a bound; `other` for the rest summed.
    pub(super) link: String,
    /// The direction its transfers go.
    pub(super) direction: &'static str,
}

/// The build's version.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

/// Settlement latency buckets, in seconds: 100 µs doubling to about 52 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// Every settlement kind with the outcomes its settling frames state.
const OUTCOMES: [(SettleKind, &[&str]); 3] = [
    (
        SettleKind::TransferDisposition,
        &["accepted", "rejected", "released", "modified", "settled"],
    ),
    (SettleKind::PublishConfirm, &["ack", "nack"]),
    (SettleKind::DeliverAck, &["ack", "nack", "reject"]),
];

/// Every class a close reason falls in (`sink::reason_class`).
pub(super) const REASONS: [&str; 15] = [
    "client_closed",
    "upstream_closed",
    "client_reset",
    "upstream_reset",
    "client_error",
    "upstream_error",
    "refused",
    "unreachable",
    "tls",
    "handshake_timeout",
    "idle_timeout",
    "proxy_stopped",
    "reset",
    "capture_ended",
    "other",
];

type LatencyFamily = Family<KindLabels, Histogram, fn() -> Histogram>;

/// The metrics (see the module doc); each a handle shared with the registry.
#[derive(Clone, Debug)]
pub(super) struct Families {
    pub(super) connections_open: Gauge,
    pub(super) connections_opened: Counter,
    pub(super) connections_closed: Family<ReasonLabels, Counter>,
    pub(super) upstream_connect_errors: Family<ReasonLabels, Counter>,
    pub(super) frames: Family<FrameLabels, Counter>,
    pub(super) bytes: Family<FrameLabels, Counter>,
    pub(super) decode_errors: Family<DirLabels, Counter>,
    pub(super) skimmed_bytes: Family<DirLabels, Counter>,
    pub(super) gaps: Family<DirLabels, Counter>,
    pub(super) backpressure_wait: Counter<f64, std::sync::atomic::AtomicU64>,
    pub(super) sessions_open: Gauge,
    pub(super) links_open: Gauge,
    pub(super) channels_open: Gauge,
    pub(super) consumers_open: Gauge,
    pub(super) deliveries: Family<DeliveryLabels, Counter>,
    pub(super) not_awaited: Family<KindLabels, Counter>,
    pub(super) untimed: Counter,
    pub(super) settlements: Family<SettleLabels, Counter>,
    pub(super) latency: LatencyFamily,
    pub(super) unsettled: Gauge,
    pub(super) unconfirmed: Gauge,
    pub(super) redeliveries: Family<ProtocolLabels, Counter>,
    pub(super) violations: Family<RuleLabels, Counter>,
    pub(super) diagnoses_active: Family<CheckLabels, Gauge>,
    pub(super) diagnoses: Family<CheckLabels, Counter>,
    pub(super) link_frames: Family<LinkLabels, Counter>,
    pub(super) link_bytes: Family<LinkLabels, Counter>,
    pub(super) link_deliveries: Family<LinkLabels, Counter>,
}

impl Families {
    /// The series whose labels come from a fixed set (settlement kinds and outcomes,
    /// directions, close-reason classes, the rule and check catalogs) exist from the start, at
    /// zero: `rate()` and `increase()` then see their first event, and a dashboard shows 0
    /// rather than no data. The catalogs bound them (one series per rule, per check).
    fn prefill(&self) {
        for (kind, outcomes) in OUTCOMES {
            let k = KindLabels {
                kind: kind.as_str(),
            };
            for dir in [Dir::C2S, Dir::S2C] {
                self.deliveries.get_or_create_owned(&DeliveryLabels {
                    kind: kind.as_str(),
                    direction: dir.as_str(),
                });
            }
            self.not_awaited.get_or_create_owned(&k);
            self.latency.get_or_create_owned(&k);
            for &outcome in outcomes {
                self.settlements.get_or_create_owned(&SettleLabels {
                    kind: kind.as_str(),
                    outcome,
                });
            }
        }
        for dir in [Dir::C2S, Dir::S2C] {
            let d = DirLabels {
                direction: dir.as_str(),
            };
            self.decode_errors.get_or_create_owned(&d);
            self.skimmed_bytes.get_or_create_owned(&d);
            self.gaps.get_or_create_owned(&d);
        }
        for reason in REASONS {
            self.connections_closed
                .get_or_create_owned(&ReasonLabels { reason });
        }
        for reason in ["refused", "unreachable"] {
            self.upstream_connect_errors
                .get_or_create_owned(&ReasonLabels { reason });
        }
        self.redeliveries.get_or_create_owned(&ProtocolLabels {
            protocol: "amqp-0-9-1",
        });
        for rule in crate::state::catalog() {
            self.violations.get_or_create_owned(&RuleLabels {
                rule: rule.id,
                severity: rule.severity.as_str(),
            });
        }
        for check in crate::state::diagnose::catalog::CHECKS {
            let c = CheckLabels { check: check.id };
            self.diagnoses.get_or_create_owned(&c);
            self.diagnoses_active.get_or_create_owned(&c);
        }
    }

    /// Every metric, registered in `registry` (the `amqpeek_` prefix is the registry's); the
    /// per-link ones only when `links` (a top-N bound was given).
    pub(super) fn register(registry: &mut Registry, links: bool) -> Self {
        let f = Families {
            connections_open: Gauge::default(),
            connections_opened: Counter::default(),
            connections_closed: Family::default(),
            upstream_connect_errors: Family::default(),
            frames: Family::default(),
            bytes: Family::default(),
            decode_errors: Family::default(),
            skimmed_bytes: Family::default(),
            gaps: Family::default(),
            backpressure_wait: Counter::default(),
            sessions_open: Gauge::default(),
            links_open: Gauge::default(),
            channels_open: Gauge::default(),
            consumers_open: Gauge::default(),
            deliveries: Family::default(),
            not_awaited: Family::default(),
            untimed: Counter::default(),
            settlements: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            unsettled: Gauge::default(),
            unconfirmed: Gauge::default(),
            redeliveries: Family::default(),
            violations: Family::default(),
            diagnoses_active: Family::default(),
            diagnoses: Family::default(),
            link_frames: Family::default(),
            link_bytes: Family::default(),
            link_deliveries: Family::default(),
        };
        f.prefill();
        f.register_connections(registry);
        f.register_traffic(registry);
        f.register_scopes_and_deliveries(registry);
        f.register_findings(registry);
        if links {
            f.register_links(registry);
        }
        f
    }

    /// The build and the connections.
    fn register_connections(&self, r: &mut Registry) {
        let f = self;
        r.register(
            "build",
            "The amqpeek build (its version as a label)",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
        r.register(
            "connections_open",
            "Client connections open now",
            f.connections_open.clone(),
        );
        r.register(
            "connections_opened",
            "Client connections accepted",
            f.connections_opened.clone(),
        );
        r.register(
            "connections_closed",
            "Connections ended, by the class of why",
            f.connections_closed.clone(),
        );
        r.register(
            "upstream_connect_errors",
            "Connects to the upstream that failed (refused, unreachable or timed out)",
            f.upstream_connect_errors.clone(),
        );
    }

    /// Frames, bytes, and what was not decoded.
    fn register_traffic(&self, r: &mut Registry) {
        let f = self;
        r.register(
            "frames",
            "Frames, protocol headers and runs of undecoded bytes, by protocol, direction and name",
            f.frames.clone(),
        );
        r.register(
            "bytes",
            "Bytes of those frames, headers and undecoded runs on the wire",
            f.bytes.clone(),
        );
        r.register(
            "decode_errors",
            "Malformed frames and bytes that do not decode (violations of the codec's rules)",
            f.decode_errors.clone(),
        );
        r.register(
            "skimmed_bytes",
            "Bytes passed over undecoded while the inspection fell behind the relay",
            f.skimmed_bytes.clone(),
        );
        r.register(
            "gaps",
            "Gaps: bytes relayed but not inspected (skims included)",
            f.gaps.clone(),
        );
        r.register(
            "backpressure_wait_seconds",
            "Seconds the relay waited for room in a connection's inspection queue, summed",
            f.backpressure_wait.clone(),
        );
    }

    /// Open scopes, deliveries and their settlement.
    fn register_scopes_and_deliveries(&self, r: &mut Registry) {
        let f = self;
        r.register(
            "sessions_open",
            "AMQP 1.0 sessions open now",
            f.sessions_open.clone(),
        );
        r.register(
            "links_open",
            "AMQP 1.0 links attached now",
            f.links_open.clone(),
        );
        r.register(
            "channels_open",
            "AMQP 0-9-1 channels open now",
            f.channels_open.clone(),
        );
        r.register(
            "consumers_open",
            "AMQP 0-9-1 consumers registered now",
            f.consumers_open.clone(),
        );
        r.register(
            "deliveries",
            "Deliveries (messages) started, by the kind of settlement they would have and direction",
            f.deliveries.clone(),
        );
        r.register(
            "deliveries_not_awaited",
            "Deliveries needing no settlement: pre-settled, outside confirm mode, no-ack",
            f.not_awaited.clone(),
        );
        r.register(
            "deliveries_untimed",
            "Deliveries that could not be followed to their settlement",
            f.untimed.clone(),
        );
        r.register(
            "settlements",
            "Deliveries settled, by kind and outcome",
            f.settlements.clone(),
        );
        r.register(
            "settlement_latency_seconds",
            "From a delivery's first frame to the frame settling it, by kind",
            f.latency.clone(),
        );
        r.register(
            "unsettled_deliveries",
            "Deliveries waiting for their settlement now",
            f.unsettled.clone(),
        );
        r.register(
            "unconfirmed_publishes",
            "AMQP 0-9-1 publishes in confirm mode waiting for their confirm now",
            f.unconfirmed.clone(),
        );
        r.register(
            "redeliveries",
            "Deliveries marked as redelivered (AMQP 0-9-1 basic.deliver, basic.get-ok)",
            f.redeliveries.clone(),
        );
    }

    /// Violations and diagnoses.
    fn register_findings(&self, r: &mut Registry) {
        let f = self;
        r.register(
            "violations",
            "Spec violations, by rule and severity",
            f.violations.clone(),
        );
        r.register(
            "diagnoses_active",
            "Diagnoses holding now, by check",
            f.diagnoses_active.clone(),
        );
        r.register("diagnoses", "Diagnoses made, by check", f.diagnoses.clone());
    }

    /// The top links' series (`--metrics-top-links`).
    fn register_links(&self, r: &mut Registry) {
        let f = self;
        r.register(
            "link_frames",
            "AMQP 1.0 frames of the top links by traffic (the rest summed as `other`)",
            f.link_frames.clone(),
        );
        r.register(
            "link_bytes",
            "Bytes of the top links' frames (the rest summed as `other`)",
            f.link_bytes.clone(),
        );
        r.register(
            "link_deliveries",
            "Deliveries of the top links (the rest summed as `other`)",
            f.link_deliveries.clone(),
        );
    }
}
