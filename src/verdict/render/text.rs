//! The verdict as text: findings grouped by rule (errors first, then the findings in the
//! baseline, then the ignored), each finding with its place, count, first and last occurrence,
//! then the diagnoses (see [`super::diagnoses`]: listed, failing nothing unless
//! `--fail-on-diagnosis` names them), then a summary line. What came from the capture or the command line (the source's name,
//! messages, frame lines, patterns) is escaped (`base::escape`): no finding can forge a line.

use std::fmt::Write as _;

use crate::base::escape::Escaped;
use crate::event::Severity;

use super::super::finding::Finding;
use super::super::judge::{Verdict, scope_suffix};
use super::super::policy::Status;
use super::{groups, plural};

/// The text report.
pub fn render(v: &Verdict<'_>, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "amqpeek check: {}", Escaped(source));
    for g in groups(v) {
        let first = g.entries[0].finding;
        let label = match g.status {
            Status::Active => g.severity.as_str().to_string(),
            Status::Baselined => format!("{} (in baseline)", g.severity.as_str()),
            Status::Ignored(p) => {
                format!("{} (ignored: {})", g.severity.as_str(), Escaped(p))
            }
        };
        let _ = writeln!(
            out,
            "\n{:<7} {}  ({})  {}, {}",
            label,
            g.rule,
            first.spec,
            plural(g.entries.len() as u64, "finding"),
            plural(g.occurrences(), "occurrence")
        );
        if !first.text.is_empty() {
            let _ = writeln!(out, "        {}", first.text);
        }
        for j in &g.entries {
            finding(&mut out, j.finding);
        }
    }
    let section = v.diagnoses();
    if section.total > 0 {
        out.push('\n');
        section.text_into(&mut out, "        ", "            ");
    }
    let _ = write!(
        out,
        "\n{} connection(s), {} frame(s): {} error(s), {} warning(s), {} info",
        v.report.totals().0,
        v.report.totals().1,
        v.count(Severity::Error),
        v.count(Severity::Warning),
        v.count(Severity::Info),
    );
    let (ignored, baselined) = v.set_aside();
    if baselined.0 > 0 {
        let _ = write!(out, "; {} in baseline", plural(baselined.1, "occurrence"));
    }
    if ignored.0 > 0 {
        let _ = write!(out, "; {} ignored", plural(ignored.1, "occurrence"));
    }
    let _ = writeln!(
        out,
        " -> {} (fail-on {})",
        v.word(),
        v.policy.fail_on.as_str()
    );
    out
}

/// One finding: `conn 1 client ch1 @938  message` and its frame; a repeated one with its count,
/// first and last offset and time, and its first message.
fn finding(out: &mut String, f: &Finding) {
    let o = f.first();
    let place = format!("conn {} {}{}", f.conn, f.side(), scope_suffix(f));
    if f.count == 1 {
        let _ = writeln!(
            out,
            "        {place} @{}  {}",
            o.offset,
            Escaped(&o.message)
        );
    } else {
        let l = f.last();
        let _ = writeln!(
            out,
            "        {place}: {} times, @{} at {} .. @{} at {}",
            f.count, o.offset, o.ts, l.offset, l.ts
        );
        let _ = writeln!(out, "            first: {}", Escaped(&o.message));
    }
    if let Some(frame) = &o.frame {
        let indent = if f.count == 1 { "" } else { "    " };
        let _ = writeln!(out, "            {indent}frame: {}", Escaped(frame));
    }
}
