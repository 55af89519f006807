//! The CI verdict: collects violations (grouped by rule, with the frames involved) and renders
//! a report as text, JSON or JUnit XML. Used by `amqpeek check` and `amqpeek proxy --fail-on`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::event::{ConnId, Dir, Event, EventKind, Severity, Violation};
use crate::pipeline::Sink;
use crate::state::rules;

/// One reported violation, with where it happened.
#[derive(Clone, Debug, Serialize)]
pub struct Occurrence {
    /// Connection.
    pub conn: ConnId,
    /// When (RFC 3339).
    pub ts: String,
    /// Direction.
    pub dir: Dir,
    /// Byte offset of the offending frame.
    pub offset: u64,
    /// The offending frame's summary line, when known.
    pub frame: Option<String>,
    /// What happened.
    pub message: String,
}

/// All occurrences of one rule.
#[derive(Clone, Debug, Serialize)]
pub struct RuleGroup {
    /// Rule id.
    pub rule: String,
    /// Severity.
    pub severity: Severity,
    /// Spec section.
    pub spec: String,
    /// The rule's one-line explanation (from the catalog when known).
    pub text: String,
    /// Every occurrence, in order.
    pub occurrences: Vec<Occurrence>,
}

/// Collects a run's violations; renders the verdict.
#[derive(Debug, Default)]
pub struct CheckReport {
    groups: BTreeMap<String, RuleGroup>,
    connections: u64,
    frames: u64,
}

/// Output format of the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// One JSON document.
    Json,
    /// JUnit XML (one test case per rule of the catalog, plus any other rule seen).
    Junit,
}

impl CheckReport {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one violation directly (also done by [`Sink::event`]).
    pub fn record(&mut self, conn: ConnId, ts: String, v: &Violation) {
        let frame = v.frame.clone();
        let group = self
            .groups
            .entry(v.rule.clone())
            .or_insert_with(|| RuleGroup {
                rule: v.rule.clone(),
                severity: v.severity,
                spec: v.spec.clone(),
                text: rules::by_id(&v.rule)
                    .map(|r| r.text.to_string())
                    .unwrap_or_default(),
                occurrences: Vec::new(),
            });
        group.occurrences.push(Occurrence {
            conn,
            ts,
            dir: v.dir,
            offset: v.offset,
            frame,
            message: v.message.clone(),
        });
    }

    /// Take one pipeline event: count connections and frames, record violations (what
    /// [`Sink::event`] does, without its `io::Result`: this never fails).
    pub fn tally(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Connect { .. } => self.connections += 1,
            EventKind::Frame(_) => self.frames += 1,
            EventKind::Violation(v) => self.record(ev.conn, ev.ts.rfc3339(), v),
            EventKind::Close(_)
            | EventKind::Header { .. }
            | EventKind::Data { .. }
            | EventKind::Undecoded { .. }
            | EventKind::Gap { .. }
            | EventKind::State(_) => {}
        }
    }

    /// Add connections and frames counted elsewhere (by the threads of a parallel check,
    /// whose violations arrive through [`CheckReport::record`]).
    pub fn add_totals(&mut self, connections: u64, frames: u64) {
        self.connections += connections;
        self.frames += frames;
    }

    /// Groups, ordered by severity (errors first) then rule id.
    pub fn groups(&self) -> Vec<&RuleGroup> {
        let mut g: Vec<&RuleGroup> = self.groups.values().collect();
        g.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
        g
    }

    /// Number of violations at `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.groups
            .values()
            .filter(|g| g.severity == severity)
            .map(|g| g.occurrences.len())
            .sum()
    }

    /// True when any violation is at or above `fail_on`.
    pub fn fails(&self, fail_on: Severity) -> bool {
        self.groups
            .values()
            .any(|g| g.severity >= fail_on && !g.occurrences.is_empty())
    }

    /// Connections and frames seen.
    pub fn totals(&self) -> (u64, u64) {
        (self.connections, self.frames)
    }

    /// Render the verdict.
    pub fn render(&self, format: Format, source: &str, fail_on: Severity) -> String {
        match format {
            Format::Text => self.render_text(source, fail_on),
            Format::Json => self.render_json(source, fail_on),
            Format::Junit => self.render_junit(source, fail_on),
        }
    }

    fn verdict(&self, fail_on: Severity) -> &'static str {
        if self.fails(fail_on) { "FAIL" } else { "PASS" }
    }

    fn render_text(&self, source: &str, fail_on: Severity) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "amqpeek check: {source}");
        for g in self.groups() {
            let n = g.occurrences.len();
            let _ = writeln!(
                out,
                "\n{:<7} {}  ({})  {} occurrence{}",
                g.severity.as_str(),
                g.rule,
                g.spec,
                n,
                if n == 1 { "" } else { "s" }
            );
            if !g.text.is_empty() {
                let _ = writeln!(out, "        {}", g.text);
            }
            for o in &g.occurrences {
                let _ = writeln!(
                    out,
                    "        conn {} {} @{}  {}{}",
                    o.conn,
                    o.dir.as_str(),
                    o.offset,
                    o.message,
                    o.frame
                        .as_ref()
                        .map(|f| format!("\n            frame: {f}"))
                        .unwrap_or_default()
                );
            }
        }
        let _ = writeln!(
            out,
            "\n{} connection(s), {} frame(s): {} error(s), {} warning(s), {} info -> {} (fail-on {})",
            self.connections,
            self.frames,
            self.count(Severity::Error),
            self.count(Severity::Warning),
            self.count(Severity::Info),
            self.verdict(fail_on),
            fail_on.as_str()
        );
        out
    }

    fn render_json(&self, source: &str, fail_on: Severity) -> String {
        let doc = serde_json::json!({
            "source": source,
            "verdict": self.verdict(fail_on).to_ascii_lowercase(),
            "fail_on": fail_on,
            "connections": self.connections,
            "frames": self.frames,
            "errors": self.count(Severity::Error),
            "warnings": self.count(Severity::Warning),
            "infos": self.count(Severity::Info),
            "rules": self.groups(),
        });
        let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
        s.push('\n');
        s
    }

    fn render_junit(&self, source: &str, fail_on: Severity) -> String {
        // One test case per catalog rule (passing when it never fired), plus any other rule seen.
        let mut cases: Vec<(String, String, Option<&RuleGroup>)> = rules::catalog()
            .map(|r| (r.id.to_string(), r.spec.to_string(), self.groups.get(r.id)))
            .collect();
        for g in self.groups.values() {
            if rules::by_id(&g.rule).is_none() {
                cases.push((g.rule.clone(), g.spec.clone(), Some(g)));
            }
        }
        let failures = cases
            .iter()
            .filter(|(_, _, g)| g.is_some_and(|g| g.severity >= fail_on))
            .count();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"amqpeek\" tests=\"{}\" failures=\"{}\">",
            cases.len(),
            failures
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            xml_escape(source),
            cases.len(),
            failures
        );
        for (id, spec, group) in &cases {
            let _ = write!(
                out,
                "    <testcase classname=\"amqpeek.rules\" name=\"{}\">",
                xml_escape(id)
            );
            if let Some(g) = group {
                let mut body = String::new();
                for o in &g.occurrences {
                    let _ = writeln!(
                        body,
                        "conn {} {} @{}: {}{}",
                        o.conn,
                        o.dir.as_str(),
                        o.offset,
                        o.message,
                        o.frame
                            .as_ref()
                            .map(|f| format!(" [{f}]"))
                            .unwrap_or_default()
                    );
                }
                let tag = if g.severity >= fail_on {
                    "failure"
                } else {
                    "system-out"
                };
                if tag == "failure" {
                    let _ = write!(
                        out,
                        "\n      <failure message=\"{} occurrence(s) ({})\" type=\"{}\">{}</failure>\n    ",
                        g.occurrences.len(),
                        xml_escape(spec),
                        g.severity.as_str(),
                        xml_escape(&body)
                    );
                } else {
                    let _ = write!(
                        out,
                        "\n      <system-out>{}</system-out>\n    ",
                        xml_escape(&body)
                    );
                }
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#x{:x};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

impl Sink for CheckReport {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.tally(ev);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Timestamp;

    fn violation_event(conn: ConnId, rule: &rules::Rule, offset: u64) -> Event {
        Event {
            conn,
            ts: Timestamp(0),
            kind: EventKind::Violation(rule.violation(Dir::C2S, offset, "boom")),
        }
    }

    #[test]
    fn warnings_pass_at_fail_on_error_and_fail_at_fail_on_warning() {
        let mut r = CheckReport::new();
        r.event(&violation_event(1, &rules::CODEC_TRUNCATED_FRAME, 10))
            .unwrap();
        assert!(!r.fails(Severity::Error));
        assert!(r.fails(Severity::Warning));
        assert!(
            r.render(Format::Text, "x", Severity::Error)
                .contains("-> PASS")
        );
    }

    #[test]
    fn groups_by_rule_with_errors_first() {
        let mut r = CheckReport::new();
        r.event(&violation_event(1, &rules::CODEC_TRUNCATED_FRAME, 10))
            .unwrap();
        r.event(&violation_event(1, &rules::CODEC_MALFORMED_FRAME, 20))
            .unwrap();
        r.event(&violation_event(2, &rules::CODEC_MALFORMED_FRAME, 30))
            .unwrap();
        let g = r.groups();
        assert_eq!(g[0].rule, "codec.malformed-frame");
        assert_eq!(g[0].occurrences.len(), 2);
        assert_eq!(g[1].rule, "codec.truncated-frame");
        let json: serde_json::Value =
            serde_json::from_str(&r.render(Format::Json, "x", Severity::Error)).unwrap();
        assert_eq!(json["verdict"], "fail");
        assert_eq!(json["errors"], 2);
        assert_eq!(json["rules"][0]["occurrences"][1]["conn"], 2);
    }

    #[test]
    fn junit_has_a_case_per_catalog_rule_and_escapes() {
        let mut r = CheckReport::new();
        let mut ev = violation_event(1, &rules::CODEC_MALFORMED_FRAME, 7);
        if let EventKind::Violation(v) = &mut ev.kind {
            v.message = "<bad & \"worse\">".into();
        }
        r.event(&ev).unwrap();
        let xml = r.render(Format::Junit, "cap.jsonl", Severity::Error);
        assert_eq!(xml.matches("<testcase ").count(), rules::catalog().count());
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert!(xml.contains("&lt;bad &amp; &quot;worse&quot;&gt;"));
        assert!(!xml.contains("<bad"));
    }
}

/// Counts violations at or above a severity, shared with whoever holds the counter (the proxy's
/// `--fail-on`: the sink runs on the inspection thread, the verdict is read at shutdown).
#[derive(Debug)]
pub struct ViolationCounter {
    threshold: Severity,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl ViolationCounter {
    /// A counter of violations at or above `threshold`, and the shared count it updates.
    pub fn new(threshold: Severity) -> (Self, std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        (
            ViolationCounter {
                threshold,
                count: count.clone(),
            },
            count,
        )
    }
}

impl Sink for ViolationCounter {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        if let EventKind::Violation(v) = &ev.kind
            && v.severity >= self.threshold
        {
            self.count
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;
    use crate::event::Timestamp;

    #[test]
    fn counts_only_at_or_above_the_threshold() {
        let (mut c, n) = ViolationCounter::new(Severity::Error);
        for rule in [&rules::CODEC_TRUNCATED_FRAME, &rules::CODEC_MALFORMED_FRAME] {
            let kind = EventKind::Violation(rule.violation(Dir::S2C, 0, "x"));
            c.event(&Event {
                conn: 1,
                ts: Timestamp(0),
                kind,
            })
            .unwrap();
        }
        assert_eq!(n.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
