//! The verdict: a report's findings judged under a policy (severity overrides, ignores,
//! baseline, `--fail-on`), in report order, with what failed the gate by rule.

use crate::event::Severity;

use super::finding::{Finding, Occurrence};
use super::format::Format;
use super::policy::{Policy, Status};
use super::report::CheckReport;

/// One finding as judged.
#[derive(Clone, Debug)]
pub struct Judged<'a> {
    /// The finding.
    pub finding: &'a Finding,
    /// The severity it is judged at (the rule's, unless `--severity` changed it).
    pub severity: Severity,
    /// Whether it counts.
    pub status: Status,
}

impl Judged<'_> {
    /// Whether this finding fails a gate at `fail_on`.
    pub fn fails(&self, fail_on: Severity) -> bool {
        self.status == Status::Active && self.severity >= fail_on
    }
}

/// A rule that failed the gate: its findings and occurrences, and the first occurrence.
#[derive(Clone, Debug)]
pub struct Failing<'a> {
    /// Rule id.
    pub rule: &'a str,
    /// Severity judged at.
    pub severity: Severity,
    /// Findings of the rule that fail.
    pub findings: u64,
    /// Their occurrences.
    pub occurrences: u64,
    /// The finding with the earliest occurrence.
    pub first: &'a Finding,
}

impl Failing<'_> {
    /// The earliest occurrence.
    pub fn first_occurrence(&self) -> &Occurrence {
        self.first.first()
    }
}

/// A report judged under a policy.
#[derive(Debug)]
pub struct Verdict<'a> {
    /// The report judged.
    pub report: &'a CheckReport,
    /// The policy.
    pub policy: &'a Policy,
    /// Every finding: active ones first, then those in the baseline, then the ignored; each
    /// by severity, then rule and place.
    pub judged: Vec<Judged<'a>>,
}

impl<'a> Verdict<'a> {
    /// Judge `report` under `policy`.
    pub fn new(report: &'a CheckReport, policy: &'a Policy) -> Verdict<'a> {
        let mut judged: Vec<Judged<'a>> = report
            .findings()
            .into_iter()
            .map(|finding| {
                let (severity, status) = policy.classify(finding);
                Judged {
                    finding,
                    severity,
                    status,
                }
            })
            .collect();
        // Stable: within a rank, report order (rule, connection, peer, place).
        judged.sort_by(|a, b| {
            (
                a.status.rank(),
                std::cmp::Reverse(a.severity),
                &a.finding.rule,
            )
                .cmp(&(
                    b.status.rank(),
                    std::cmp::Reverse(b.severity),
                    &b.finding.rule,
                ))
        });
        Verdict {
            report,
            policy,
            judged,
        }
    }

    /// True when a finding fails the gate.
    pub fn fails(&self) -> bool {
        self.judged.iter().any(|j| j.fails(self.policy.fail_on)) || self.diagnoses_failing() > 0
    }

    /// Diagnoses that fail the gate (`--fail-on-diagnosis`).
    pub fn diagnoses_failing(&self) -> u64 {
        self.report
            .diagnoses()
            .failing(&self.policy.fail_on_diagnosis)
    }

    /// The run's diagnoses as the reports show them, judged by `--fail-on-diagnosis`.
    pub fn diagnoses(&self) -> super::render::diagnoses::DiagnosesSection {
        super::render::diagnoses::DiagnosesSection::of(
            self.report.diagnoses(),
            &self.policy.fail_on_diagnosis,
        )
    }

    /// `PASS` or `FAIL`.
    pub fn word(&self) -> &'static str {
        if self.fails() { "FAIL" } else { "PASS" }
    }

    /// Occurrences of the active findings judged at `severity`.
    pub fn count(&self, severity: Severity) -> u64 {
        self.judged
            .iter()
            .filter(|j| j.status == Status::Active && j.severity == severity)
            .map(|j| j.finding.count)
            .sum()
    }

    /// (findings, occurrences) ignored, and the same in the baseline.
    pub fn set_aside(&self) -> ((u64, u64), (u64, u64)) {
        let mut ignored = (0, 0);
        let mut baselined = (0, 0);
        for j in &self.judged {
            let slot = match j.status {
                Status::Active => continue,
                Status::Ignored(_) => &mut ignored,
                Status::Baselined => &mut baselined,
            };
            slot.0 += 1;
            slot.1 += j.finding.count;
        }
        (ignored, baselined)
    }

    /// The rules that fail the gate, in verdict order, each with its counts and first
    /// occurrence (the earliest by time, then connection).
    pub fn failing(&self) -> Vec<Failing<'a>> {
        let mut out: Vec<Failing<'a>> = Vec::new();
        for j in self.judged.iter().filter(|j| j.fails(self.policy.fail_on)) {
            let f = j.finding;
            match out.iter_mut().find(|x| x.rule == f.rule) {
                Some(x) => {
                    x.findings += 1;
                    x.occurrences += f.count;
                    if (&f.first().ts, f.conn) < (&x.first.first().ts, x.first.conn) {
                        x.first = f;
                    }
                }
                None => out.push(Failing {
                    rule: &f.rule,
                    severity: j.severity,
                    findings: 1,
                    occurrences: f.count,
                    first: f,
                }),
            }
        }
        out
    }

    /// What failed, for stderr at exit: one line per failing rule with its counts and first
    /// occurrence; `None` when the gate passes.
    pub fn failure_summary(&self) -> Option<String> {
        use std::fmt::Write as _;
        let failing = self.failing();
        let diagnosed = self.diagnoses_failing();
        if failing.is_empty() && diagnosed == 0 {
            return None;
        }
        let mut s = String::new();
        if diagnosed > 0 {
            let _ = writeln!(
                s,
                "FAIL: {diagnosed} diagnosis(es) named by --fail-on-diagnosis ({}):",
                self.policy.fail_on_diagnosis.join(", ")
            );
            for d in self.report.diagnoses().list() {
                if self
                    .policy
                    .fail_on_diagnosis
                    .iter()
                    .any(|i| i == "all" || i == d.check.id)
                {
                    let _ = writeln!(s, "  {}", super::Diagnoses::line(d));
                }
            }
            if failing.is_empty() {
                return Some(s);
            }
        }
        let _ = writeln!(
            s,
            "FAIL: {} rule(s) at or above {} (--fail-on):",
            failing.len(),
            self.policy.fail_on.as_str()
        );
        for f in &failing {
            let o = f.first_occurrence();
            let _ = writeln!(
                s,
                "  {} {}: {} occurrence(s) in {} finding(s); first: conn {} {}{} @{} at {}: {}",
                f.severity.as_str(),
                f.rule,
                f.occurrences,
                f.findings,
                f.first.conn,
                f.first.side(),
                scope_suffix(f.first),
                o.offset,
                o.ts,
                o.message
            );
        }
        Some(s)
    }

    /// Render the verdict.
    pub fn render(&self, format: Format, source: &str) -> String {
        match format {
            Format::Text => super::render::text::render(self, source),
            Format::Json => super::render::json::render(self, source),
            Format::Junit => super::render::junit::render(self, source),
        }
    }
}

/// ` ch1 link 0`, or empty for a connection-level finding.
pub fn scope_suffix(f: &Finding) -> String {
    let d = f.scope.describe();
    if d.is_empty() { d } else { format!(" {d}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Dir, Event, EventKind, Timestamp};
    use crate::state::rules;
    use crate::verdict::{Baseline, RulePattern};

    fn report(items: &[(&'static rules::Rule, Dir, u64)]) -> CheckReport {
        let mut r = CheckReport::new();
        for (i, (rule, dir, conn)) in items.iter().enumerate() {
            let mut v = rule.violation(*dir, i as u64, "boom");
            v.message = "<bad & \"worse\">".into();
            r.tally(&Event {
                conn: *conn,
                ts: Timestamp(i as i64),
                kind: EventKind::Violation(v),
            });
        }
        r
    }

    #[test]
    fn warnings_pass_at_fail_on_error_and_fail_at_fail_on_warning() {
        let r = report(&[(&rules::CODEC_TRUNCATED_FRAME, Dir::C2S, 1)]);
        assert!(!r.fails(Severity::Error));
        assert!(r.fails(Severity::Warning));
        assert!(
            r.render(Format::Text, "x", Severity::Error)
                .contains("-> PASS")
        );
    }

    #[test]
    fn failing_rules_are_named_with_counts_and_their_first_occurrence() {
        let r = report(&[
            (&rules::CODEC_TRUNCATED_FRAME, Dir::C2S, 1),
            (&rules::CODEC_MALFORMED_FRAME, Dir::S2C, 2),
            (&rules::CODEC_MALFORMED_FRAME, Dir::S2C, 1),
            (&rules::CODEC_MALFORMED_FRAME, Dir::S2C, 1),
        ]);
        let p = Policy::fail_on(Severity::Error);
        let v = r.judge(&p);
        let failing = v.failing();
        assert_eq!(failing.len(), 1);
        assert_eq!(failing[0].rule, "codec.malformed-frame");
        assert_eq!((failing[0].findings, failing[0].occurrences), (2, 3));
        // The earliest, though connection 1's finding comes first in report order.
        assert_eq!(failing[0].first.conn, 2);
        assert_eq!(failing[0].first_occurrence().offset, 1);
        let s = v.failure_summary().unwrap();
        assert!(
            s.contains("codec.malformed-frame: 3 occurrence(s) in 2 finding(s)"),
            "{s}"
        );
        assert!(s.contains("first: conn 2 server @1"), "{s}");
        assert!(!s.contains("truncated"), "{s}");
        assert!(r.judge(&Policy::fail_on(Severity::Error)).fails());
    }

    #[test]
    fn ignored_and_baselined_findings_are_listed_but_never_fail() {
        let r = report(&[
            (&rules::CODEC_MALFORMED_FRAME, Dir::S2C, 1),
            (&rules::CODEC_MALFORMED_FRAME, Dir::C2S, 1),
            (&rules::CODEC_UNDECODABLE_STREAM, Dir::S2C, 1),
        ]);
        let mut p = Policy::fail_on(Severity::Error);
        p.ignore
            .push(RulePattern::parse("server:codec.malformed-*").unwrap());
        let v = r.judge(&p);
        assert!(
            v.fails(),
            "the client's malformed frame and the stream still fail"
        );
        assert_eq!(v.set_aside().0, (1, 1));
        let text = v.render(Format::Text, "x");
        assert!(
            text.contains("(ignored: server:codec.malformed-*)"),
            "{text}"
        );
        assert!(text.contains("; 1 occurrence ignored -> FAIL"), "{text}");

        // Today's findings as the baseline: nothing new, so the gate passes.
        p.baseline = Some(Baseline::of(r.findings()));
        let v = r.judge(&p);
        assert!(!v.fails());
        assert!(v.render(Format::Text, "x").contains("(in baseline)"));
        // A new rule fails again.
        let mut r2 = report(&[(&rules::CODEC_MALFORMED_FRAME, Dir::C2S, 1)]);
        r2.absorb(report(&[(&rules::CODEC_TRUNCATED_FRAME, Dir::C2S, 9)]));
        p.fail_on = Severity::Warning;
        assert_eq!(r2.judge(&p).failing()[0].rule, "codec.truncated-frame");
    }

    #[test]
    fn a_severity_override_moves_a_rule_across_the_threshold() {
        let r = report(&[(&rules::CODEC_TRUNCATED_FRAME, Dir::S2C, 1)]);
        let mut p = Policy::fail_on(Severity::Error);
        p.severity
            .push((RulePattern::parse("codec.*").unwrap(), Severity::Error));
        assert!(r.judge(&p).fails());
        p.severity.push((
            RulePattern::parse("client:codec.*").unwrap(),
            Severity::Info,
        ));
        assert!(
            r.judge(&p).fails(),
            "the client's override does not touch the server"
        );
        let json: serde_json::Value =
            serde_json::from_str(&r.judge(&p).render(Format::Json, "x")).unwrap();
        assert_eq!(json["findings"][0]["severity"], "error");
        assert_eq!(json["findings"][0]["reported_severity"], "warning");
    }

    #[test]
    fn json_shows_each_finding_with_its_count_and_first_occurrences() {
        let items: Vec<_> = (0..20)
            .map(|_| (&rules::CODEC_MALFORMED_FRAME, Dir::S2C, 3))
            .collect();
        let r = report(&items);
        let json: serde_json::Value =
            serde_json::from_str(&r.render(Format::Json, "x", Severity::Error)).unwrap();
        assert_eq!(json["verdict"], "fail");
        assert_eq!(json["errors"], 20);
        let f = &json["findings"][0];
        assert_eq!(
            (f["count"].as_u64(), f["conn"].as_u64()),
            (Some(20), Some(3))
        );
        assert_eq!(f["side"], "server");
        assert_eq!(f["occurrences"].as_array().unwrap().len(), 5);
        assert_eq!(f["last"]["offset"], 19);
        assert_eq!(json["failing"][0]["rule"], "codec.malformed-frame");
        assert_eq!(json["failing"][0]["first"]["conn"], 3);
    }

    #[test]
    fn junit_has_a_case_per_catalog_rule_and_escapes() {
        let r = report(&[
            (&rules::CODEC_MALFORMED_FRAME, Dir::C2S, 1),
            (&rules::CODEC_TRUNCATED_FRAME, Dir::C2S, 1),
        ]);
        let xml = r.render(Format::Junit, "cap.jsonl", Severity::Error);
        // A case per rule, and one per diagnosis check in the diagnoses' suite.
        let checks = crate::state::diagnose::catalog::CHECKS.len();
        assert_eq!(
            xml.matches("<testcase ").count(),
            rules::catalog().count() + checks
        );
        assert_eq!(
            xml.matches("classname=\"amqpeek.diagnoses\"").count(),
            checks
        );
        assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
        assert!(xml.contains("&lt;bad &amp; "), "{xml}");
        assert!(!xml.contains("<bad"));
        // The warning below the threshold is shown, not failed.
        assert!(xml.contains("<system-out>warning conn 1 client"), "{xml}");
    }
}
