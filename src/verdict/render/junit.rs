//! The verdict as JUnit XML, which CI systems display: one test case per rule of the catalog
//! (passing when it never fired), plus any other rule seen. A rule with a failing finding is a
//! failure listing its findings; findings that do not fail (below `--fail-on`, ignored, in the
//! baseline) go to the case's system-out.
//!
//! The diagnoses are a test suite of their own (`SOURCE diagnoses`, class
//! `amqpeek.diagnoses`): one test case per check of the diagnosis catalog. A check named by
//! `--fail-on-diagnosis` that was diagnosed is a failure listing its diagnoses; a check
//! diagnosed but not named passes, its diagnoses in the case's system-out (diagnoses fail
//! nothing unless asked, and a skipped case would read as "not checked"); a check never
//! diagnosed passes empty.

use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::state::diagnose::catalog;
use crate::state::rules;

use super::super::judge::{Judged, Verdict, scope_suffix};
use super::super::policy::Status;
use super::diagnoses::{DiagnosesSection, DiagnosisRow, named};
use super::plural;

/// The JUnit report.
pub fn render(v: &Verdict<'_>, source: &str) -> String {
    let mut ids: Vec<(String, String)> = rules::catalog()
        .map(|r| (r.id.to_string(), r.spec.to_string()))
        .collect();
    for j in &v.judged {
        if !ids.iter().any(|(id, _)| *id == j.finding.rule) {
            ids.push((j.finding.rule.clone(), j.finding.spec.clone()));
        }
    }
    let mut suite = TestSuite::new(source);
    for (id, spec) in &ids {
        let of_rule: Vec<&Judged<'_>> = v.judged.iter().filter(|j| j.finding.rule == *id).collect();
        suite.add_test_case(case(v, id, spec, &of_rule));
    }
    let mut report = Report::new("amqpeek");
    report.add_test_suite(suite);
    report.add_test_suite(diagnoses_suite(&v.diagnoses(), source));
    report.to_string().unwrap_or_default()
}

/// The diagnoses' suite: a case per check of the catalog (see the module doc).
fn diagnoses_suite(section: &DiagnosesSection, source: &str) -> TestSuite {
    let mut suite = TestSuite::new(format!("{source} diagnoses"));
    for check in catalog::CHECKS {
        let rows: Vec<&DiagnosisRow> = section.list.iter().filter(|r| r.id == check.id).collect();
        let made = section.by_id.get(check.id).copied().unwrap_or(0);
        let mut body = String::new();
        for r in &rows {
            r.text_into(&mut body, "    ");
        }
        if made > rows.len() as u64 {
            let _ = writeln!(body, "{} more, counted only", made - rows.len() as u64);
        }
        let fails = made > 0 && named(&section.fail_on, check.id);
        let status = if fails {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let n = if made == 1 { "diagnosis" } else { "diagnoses" };
            st.set_message(format!(
                "{made} {n} (--fail-on-diagnosis): {}",
                check.summary
            ))
            .set_type("diagnosis")
            .set_description(std::mem::take(&mut body));
            st
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(check.id, status);
        case.set_classname("amqpeek.diagnoses");
        if !body.is_empty() {
            case.set_system_out(body);
        }
        suite.add_test_case(case);
    }
    suite
}

/// The test case of rule `id`, whose findings are `of_rule`.
fn case(v: &Verdict<'_>, id: &str, spec: &str, of_rule: &[&Judged<'_>]) -> TestCase {
    let fail_on = v.policy.fail_on;
    let failing: Vec<&&Judged<'_>> = of_rule.iter().filter(|j| j.fails(fail_on)).collect();
    let body = |js: &mut dyn Iterator<Item = &&Judged<'_>>| {
        let mut s = String::new();
        for j in js {
            line(&mut s, j);
        }
        s
    };
    let status = if failing.is_empty() {
        TestCaseStatus::success()
    } else {
        let occurrences: u64 = failing.iter().map(|j| j.finding.count).sum();
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
        st.set_message(format!(
            "{} in {} ({spec})",
            plural(occurrences, "occurrence"),
            plural(failing.len() as u64, "finding")
        ))
        .set_type(failing[0].severity.as_str())
        .set_description(body(&mut failing.iter().copied()));
        st
    };
    let mut case = TestCase::new(id, status);
    case.set_classname("amqpeek.rules");
    let rest = body(&mut of_rule.iter().filter(|j| !j.fails(fail_on)));
    if !rest.is_empty() {
        case.set_system_out(rest);
    }
    case
}

/// One finding on one line: place, count, first occurrence and frame, status when set aside.
fn line(s: &mut String, j: &Judged<'_>) {
    let f = j.finding;
    let o = f.first();
    let note = match &j.status {
        Status::Active => String::new(),
        Status::Baselined => " (in baseline)".into(),
        Status::Ignored(p) => format!(" (ignored: {p})"),
    };
    let times = if f.count == 1 {
        String::new()
    } else {
        format!(" {} times, last @{};", f.count, f.last().offset)
    };
    let _ = writeln!(
        s,
        "{} conn {} {}{} @{}:{times} {}{}{note}",
        j.severity.as_str(),
        f.conn,
        f.side(),
        scope_suffix(f),
        o.offset,
        o.message,
        o.frame
            .as_ref()
            .map(|fr| format!(" [{fr}]"))
            .unwrap_or_default()
    );
}
