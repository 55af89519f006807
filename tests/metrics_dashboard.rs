//! The Grafana dashboard shipped in `dashboards/amqpeek.json` queries only metrics amqpeek
//! exports: every `amqpeek_*` name in its expressions (panels and template variables) is a
//! series name of the registry's Prometheus encoding, after the shipped captures of real
//! peers went through the pipeline into the metrics' sink. And every panel asks something.

use std::collections::BTreeSet;
use std::path::Path;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::metrics::{Format, Metrics};
use amqpeek::pipeline::{InspectOptions, Sink};
use serde_json::Value;

/// The series names a scrape of `metrics` holds (what Prometheus stores and queries).
fn exported(metrics: &Metrics) -> BTreeSet<String> {
    metrics
        .encode(Format::Prometheus)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            l.split(['{', ' '])
                .next()
                .expect("a series line starts with its name")
                .to_string()
        })
        .collect()
}

/// Metrics after the shipped captures (AMQP 0-9-1 with a violation, AMQP 1.0), with the
/// per-link series on.
fn metrics_of_shipped_captures() -> Metrics {
    let metrics = Metrics::new(Some(4));
    for name in [
        "amqp091-lapin.jsonl",
        "amqp091-bad-ack.jsonl",
        "amqp10-fe2o3.jsonl",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures")
            .join(name);
        let source = capture::open(&path, CaptureOptions::default()).unwrap();
        let mut sink = metrics.sink();
        let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(&mut sink)];
        let opts = InspectOptions {
            emit_state: true,
            ..InspectOptions::DEFAULT
        };
        offline::run(
            source,
            opts,
            sinks,
            std::num::NonZeroUsize::MIN,
            Pace::Batched,
        );
    }
    metrics
}

/// Every query expression of the dashboard: panel targets' `expr`, variables' queries.
fn expressions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr" | "definition", Value::String(s)) => out.push(s.clone()),
                    ("query", Value::String(s)) if s.contains('(') => out.push(s.clone()),
                    _ => expressions(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| expressions(v, out)),
        _ => {}
    }
}

/// The `amqpeek_*` names an expression names.
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("amqpeek_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboards/amqpeek.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_metric_the_dashboard_queries_is_one_amqpeek_exports() {
    let exported = exported(&metrics_of_shipped_captures());
    assert!(
        exported.contains("amqpeek_frames_total")
            && exported.contains("amqpeek_settlement_latency_seconds_bucket"),
        "the captures' traffic was counted: {exported:?}"
    );
    let mut exprs = Vec::new();
    expressions(&dashboard(), &mut exprs);
    assert!(exprs.len() > 20, "{exprs:?}");
    let mut unknown = Vec::new();
    for e in &exprs {
        let names = names_in(e);
        assert!(!names.is_empty(), "a query naming no amqpeek metric: {e}");
        unknown.extend(names.into_iter().filter(|n| !exported.contains(n)));
    }
    assert!(
        unknown.is_empty(),
        "the dashboard queries metrics amqpeek does not export: {unknown:?}\nexported: {exported:?}"
    );
}

#[test]
fn the_dashboard_shows_traffic_latency_findings_and_back_pressure() {
    let mut exprs = Vec::new();
    expressions(&dashboard(), &mut exprs);
    let all = exprs.join("\n");
    for needed in [
        "amqpeek_bytes_total",
        "histogram_quantile(0.99",
        "amqpeek_violations_total",
        "amqpeek_diagnoses_active",
        "amqpeek_backpressure_wait_seconds_total",
    ] {
        assert!(all.contains(needed), "no panel queries {needed}");
    }
}

#[test]
fn a_name_the_registry_does_not_encode_is_not_taken_for_an_exported_one() {
    let exported = exported(&Metrics::new(None));
    assert!(exported.contains("amqpeek_connections_opened_total"));
    assert!(!exported.contains("amqpeek_connections_opened"));
    assert!(
        !exported.contains("amqpeek_link_frames_total"),
        "opt-in only"
    );
    assert_eq!(
        names_in("histogram_quantile(0.5, sum by (le) (rate(amqpeek_x_bucket[5m]))) / amqpeek_y"),
        ["amqpeek_x_bucket", "amqpeek_y"]
    );
}

/// The `amqpeek_*` names in the rows of the markdown tables of `page`.
fn table_names(page: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for row in page.lines().filter(|l| l.starts_with("| `amqpeek_")) {
        for part in row.split('`').skip(1).step_by(2) {
            if part.starts_with("amqpeek_") {
                out.insert(part.to_string());
            }
        }
    }
    out
}

/// The README's metric table and docs/metrics.md's each name every metric a scrape holds
/// (a histogram by its family name), and none it does not.
#[test]
fn the_readme_and_the_metrics_page_list_every_exported_metric() {
    let families: BTreeSet<String> = exported(&metrics_of_shipped_captures())
        .into_iter()
        .map(|name| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix).map(str::to_string))
                .unwrap_or(name)
        })
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for page in ["README.md", "docs/metrics.md"] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let listed = table_names(&text);
        let missing: Vec<_> = families.difference(&listed).collect();
        let extra: Vec<_> = listed.difference(&families).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{page}: metrics exported but not listed {missing:?}; listed but not exported {extra:?}"
        );
    }
}
