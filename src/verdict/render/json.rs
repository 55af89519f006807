//! The verdict as one JSON document: counts, the failing rules (each with its first
//! occurrence), and every finding with its status, count, first occurrences (at most
//! [`SAMPLES`](super::super::finding::SAMPLES)) and last occurrence; and the diagnoses
//! (`diagnoses`: counts and each one, see [`super::diagnoses::DiagnosesSection`]).

use serde_json::{Value, json};

use crate::event::Severity;

use super::super::finding::Finding;
use super::super::judge::{Judged, Verdict};
use super::super::policy::Status;

/// The JSON report.
pub fn render(v: &Verdict<'_>, source: &str) -> String {
    let (ignored, baselined) = v.set_aside();
    let failing: Vec<Value> = v
        .failing()
        .iter()
        .map(|f| {
            json!({
                "rule": f.rule,
                "severity": f.severity,
                "findings": f.findings,
                "occurrences": f.occurrences,
                "first": occurrence_at(f.first, f.first_occurrence()),
            })
        })
        .collect();
    let doc = json!({
        "source": source,
        "verdict": v.word().to_ascii_lowercase(),
        "fail_on": v.policy.fail_on,
        "connections": v.report.totals().0,
        "frames": v.report.totals().1,
        "errors": v.count(Severity::Error),
        "warnings": v.count(Severity::Warning),
        "infos": v.count(Severity::Info),
        "ignored": ignored.1,
        "baselined": baselined.1,
        "failing": failing,
        "findings": v.judged.iter().map(finding).collect::<Vec<_>>(),
        "fail_on_diagnosis": v.policy.fail_on_diagnosis,
        "diagnoses": v.diagnoses(),
    });
    let mut s = crate::json::to_string_pretty(&doc);
    s.push('\n');
    s
}

fn finding(j: &Judged<'_>) -> Value {
    let f = j.finding;
    let mut o = json!({
        "rule": f.rule,
        "severity": j.severity,
        "status": j.status.as_str(),
        "spec": f.spec,
        "text": f.text,
        "conn": f.conn,
        "side": f.side(),
        "dir": f.dir,
        "count": f.count,
        "first": f.first(),
        "last": f.last(),
        "occurrences": f.first,
    });
    if let Some(c) = f.scope.channel {
        o["channel"] = c.into();
    }
    if let Some(h) = f.scope.handle {
        o["handle"] = h.into();
    }
    if j.severity != f.severity {
        o["reported_severity"] = json!(f.severity);
    }
    if let Status::Ignored(p) = &j.status {
        o["ignored_by"] = p.clone().into();
    }
    o
}

/// An occurrence with the connection and peer of its finding.
fn occurrence_at(f: &Finding, o: &super::super::finding::Occurrence) -> Value {
    let mut v = json!(o);
    v["conn"] = f.conn.into();
    v["side"] = f.side().into();
    v
}
