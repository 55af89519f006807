//! Rendering a [`Verdict`]: text, JSON and JUnit XML, one file each, and the Diagnoses
//! section they (and `stats`) show ([`diagnoses`]); here what they share, the findings
//! grouped by rule.

pub mod diagnoses;
pub mod json;
pub mod junit;
pub mod text;

use crate::event::Severity;

use super::judge::{Judged, Verdict};
use super::policy::Status;

/// The consecutive findings of one rule with one status, as a report shows them.
pub struct Group<'v, 'a> {
    /// Rule id.
    pub rule: &'a str,
    /// Severity judged at (of the group's first finding: overrides apply per rule and peer).
    pub severity: Severity,
    /// Their status.
    pub status: &'v Status,
    /// The findings.
    pub entries: Vec<&'v Judged<'a>>,
}

impl Group<'_, '_> {
    /// Occurrences in all.
    pub fn occurrences(&self) -> u64 {
        self.entries.iter().map(|j| j.finding.count).sum()
    }
}

/// The verdict's findings in runs of one rule, status and severity.
pub fn groups<'v, 'a>(v: &'v Verdict<'a>) -> Vec<Group<'v, 'a>> {
    let mut out: Vec<Group<'v, 'a>> = Vec::new();
    for j in &v.judged {
        match out.last_mut() {
            Some(g)
                if g.rule == j.finding.rule
                    && *g.status == j.status
                    && g.severity == j.severity =>
            {
                g.entries.push(j)
            }
            _ => out.push(Group {
                rule: &j.finding.rule,
                severity: j.severity,
                status: &j.status,
                entries: vec![j],
            }),
        }
    }
    out
}

/// `1 occurrence` / `2 occurrences`.
pub fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
