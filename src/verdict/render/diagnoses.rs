//! The Diagnoses section of `check` (text, JSON; JUnit builds its suite from the same rows)
//! and of `stats` (text, JSON): each diagnosis with its id, connection and scope, since when
//! it held and until when (or that it still held when the capture or the proxy ended), the
//! frames that show it by direction and offset, what they show, the likely cause and what to
//! do.
//!
//! A [`DiagnosisRow`] is what every format shows of one diagnosis. Its `name` and `detail`
//! hold wire strings (link names, queue names, consumer tags, error conditions): the text
//! form writes them through [`Escaped`], and JSON through the JSON writer, which escapes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::base::escape::Escaped;
use crate::event::{ConnId, Diagnosis, Dir, EndWhy, FrameRef};

use super::super::Diagnoses;

/// A frame by where it is: its direction and its offset in that direction's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FrameAt {
    /// `c2s` or `s2c`.
    pub dir: Dir,
    /// Its offset in that direction's stream.
    pub offset: u64,
}

impl From<FrameRef> for FrameAt {
    fn from(f: FrameRef) -> FrameAt {
        FrameAt {
            dir: f.dir,
            offset: f.offset,
        }
    }
}

impl std::fmt::Display for FrameAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} @{}", self.dir.as_str(), self.offset)
    }
}

/// One diagnosis as the reports show it (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiagnosisRow {
    /// The check's id, e.g. `amqp10.link.no-credit`.
    pub id: &'static str,
    /// The connection.
    pub conn: ConnId,
    /// What it is about: `connection`, `session`, `link`, `channel`, `consumer`.
    pub scope: &'static str,
    /// Which one: `link "orders" s2c`, `channel 1`, `consumer "ctag" on channel 1`, `server`.
    pub name: String,
    /// Since when the condition held (RFC 3339).
    pub since: String,
    /// When it had held its threshold and became a diagnosis (RFC 3339).
    pub at: String,
    /// When it ended, unless it still held at the end of the run.
    pub until: Option<String>,
    /// Why it ended: `cleared`, `scope closed`, `unknown after a gap`; `capture ended` when it
    /// still held as the capture (or the proxy) ended.
    pub ended: Option<&'static str>,
    /// It still held when the capture or the proxy ended (or the report was made).
    pub still_active: bool,
    /// The frame that ended it, if a frame did.
    pub end_frame: Option<FrameAt>,
    /// How long it held (to its end, or to when it became a diagnosis while it holds), µs.
    pub held_us: i64,
    /// The frames that show it, the one it holds since first.
    pub evidence: Vec<FrameAt>,
    /// What the frames show.
    pub detail: String,
    /// What the check is about, in one line.
    pub summary: &'static str,
    /// The spec section or broker document it rests on.
    pub basis: &'static str,
    /// The likely cause.
    pub cause: &'static str,
    /// What to do.
    pub todo: &'static str,
    /// It fails the verdict (named by `--fail-on-diagnosis`).
    pub fails: bool,
}

/// Whether `--fail-on-diagnosis` `ids` name check `id` (`all`: every one).
pub fn named(ids: &[String], id: &str) -> bool {
    ids.iter().any(|i| i == "all" || i == id)
}

impl DiagnosisRow {
    /// The row of `d`; `fail_on` the `--fail-on-diagnosis` ids.
    pub fn of(d: &Diagnosis, fail_on: &[String]) -> DiagnosisRow {
        let ended = d.ended.as_ref();
        let active = ended.is_none_or(|e| e.why == EndWhy::CaptureEnded);
        DiagnosisRow {
            id: d.check.id,
            conn: d.conn,
            scope: d.scope.as_str(),
            name: d.name.clone(),
            since: d.since.rfc3339(),
            at: d.at.rfc3339(),
            until: ended.filter(|_| !active).map(|e| e.ts.rfc3339()),
            ended: ended.map(|e| e.why.as_str()),
            still_active: active,
            end_frame: ended.and_then(|e| e.frame).map(FrameAt::from),
            held_us: d.held_us(d.at),
            evidence: d.evidence.iter().copied().map(FrameAt::from).collect(),
            detail: d.detail.clone(),
            summary: d.check.summary,
            basis: d.check.basis,
            cause: d.check.cause,
            todo: d.check.todo,
            fails: named(fail_on, d.check.id),
        }
    }

    /// The text form: a heading line (`conn 1 link "orders" s2c: amqp10.link.no-credit`) and
    /// the rest indented by `indent`, wire strings escaped.
    pub fn text_into(&self, out: &mut String, indent: &str) {
        let _ = writeln!(
            out,
            "{} conn {} {}{}",
            self.id,
            self.conn,
            Escaped(&self.name),
            if self.fails {
                "  (fails: --fail-on-diagnosis)"
            } else {
                ""
            }
        );
        let held = if self.held_us < 1_000_000 {
            format!("{:.3} ms", self.held_us as f64 / 1e3)
        } else {
            format!("{:.3} s", self.held_us as f64 / 1e6)
        };
        let first = self
            .evidence
            .first()
            .map(|f| format!(" (frame {f})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{indent}since {}{first}, a diagnosis from {}",
            self.since, self.at
        );
        let end = match (&self.until, self.ended) {
            (Some(until), Some(why)) => {
                let by = self
                    .end_frame
                    .map(|f| format!(" by the frame {f}"))
                    .unwrap_or_default();
                format!("until {until} ({why}{by}; held {held})")
            }
            (_, Some(_)) => format!("still held at the end of the capture (held {held})"),
            _ => "still held".to_string(),
        };
        let _ = writeln!(out, "{indent}{end}");
        let _ = writeln!(out, "{indent}{}: {}", self.summary, Escaped(&self.detail));
        let evidence: Vec<String> = self.evidence.iter().map(|f| f.to_string()).collect();
        let _ = writeln!(out, "{indent}evidence: {}", evidence.join(", "));
        let _ = writeln!(out, "{indent}likely cause: {}", self.cause);
        let _ = writeln!(out, "{indent}to do: {}", self.todo);
    }
}

/// A run's diagnoses as the reports show them: how many started, by check id, and each one
/// kept (at most [`super::super::diagnoses::MAX_KEPT`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiagnosesSection {
    /// Diagnoses started.
    pub total: u64,
    /// Of them, those that fail the verdict (named by `--fail-on-diagnosis`).
    pub failing: u64,
    /// Diagnoses started by check id.
    pub by_id: BTreeMap<&'static str, u64>,
    /// Each one kept, by connection and start.
    pub list: Vec<DiagnosisRow>,
    /// The `--fail-on-diagnosis` ids it was judged by.
    #[serde(skip)]
    pub fail_on: Vec<String>,
}

impl DiagnosesSection {
    /// The section of `ds`, judged by the `--fail-on-diagnosis` ids `fail_on`.
    pub fn of(ds: &Diagnoses, fail_on: &[String]) -> DiagnosesSection {
        DiagnosesSection {
            total: ds.total(),
            failing: ds.failing(fail_on),
            by_id: ds.counts().clone(),
            list: ds
                .list()
                .into_iter()
                .map(|d| DiagnosisRow::of(d, fail_on))
                .collect(),
            fail_on: fail_on.to_vec(),
        }
    }

    /// The text form, empty when there is no diagnosis: a `Diagnoses` heading with the
    /// counts, then each diagnosis (see [`DiagnosisRow::text_into`]) after `bullet`, its
    /// lines after `indent`.
    pub fn text_into(&self, out: &mut String, bullet: &str, indent: &str) {
        if self.total == 0 {
            return;
        }
        let counts: Vec<String> = self
            .by_id
            .iter()
            .map(|(id, n)| format!("{id} {n}"))
            .collect();
        let judged = if self.failing > 0 {
            format!("{} fail the verdict (--fail-on-diagnosis)", self.failing)
        } else {
            "none fails the verdict (only --fail-on-diagnosis makes one fail)".to_string()
        };
        let _ = writeln!(
            out,
            "Diagnoses (why a flow is stuck): {} ({}); {judged}",
            self.total,
            counts.join(", ")
        );
        for row in &self.list {
            out.push_str(bullet);
            row.text_into(out, indent);
        }
        let left = self.total.saturating_sub(self.list.len() as u64);
        if left > 0 {
            let _ = writeln!(out, "{bullet}{left} more, counted only");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Ended, ScopeKind, Timestamp};
    use crate::state::diagnose::catalog;

    fn made(name: &str, ended: Option<Ended>) -> Diagnosis {
        Diagnosis {
            check: &catalog::NO_CREDIT,
            conn: 3,
            scope: ScopeKind::Link,
            name: name.into(),
            since: Timestamp(1_000_000),
            at: Timestamp(31_000_000),
            evidence: vec![FrameRef {
                dir: Dir::S2C,
                offset: 403,
            }],
            detail: format!("attached {name}"),
            ended,
        }
    }

    #[test]
    fn a_row_tells_its_place_times_evidence_and_escapes_wire_strings() {
        let mut ds = Diagnoses::default();
        let end = Ended {
            ts: Timestamp(40_000_000),
            frame: None,
            why: EndWhy::CaptureEnded,
        };
        ds.take(&made("link \"a\u{1b}]52\n\u{202e}\" s2c", None));
        ds.take(&made("link \"a\u{1b}]52\n\u{202e}\" s2c", Some(end)));
        let section = DiagnosesSection::of(&ds, &["all".into()]);
        assert_eq!((section.total, section.failing), (1, 1));
        let row = &section.list[0];
        assert!(row.still_active && row.until.is_none());
        assert_eq!(row.ended, Some("capture ended"));
        let mut text = String::new();
        section.text_into(&mut text, "", "    ");
        assert!(
            text.starts_with("Diagnoses (why a flow is stuck): 1 "),
            "{text}"
        );
        assert!(text.contains("(fails: --fail-on-diagnosis)"), "{text}");
        assert!(text.contains("(frame s2c @403)"), "{text}");
        assert!(
            text.contains("still held at the end of the capture (held 39.000 s)"),
            "{text}"
        );
        assert!(text.contains("\\x1b]52\\n\\u{202e}"), "{text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert_eq!(text.lines().count(), 8, "{text}");
    }

    #[test]
    fn a_cleared_diagnosis_shows_until_when_and_the_frame_that_ended_it() {
        let mut ds = Diagnoses::default();
        let end = Ended {
            ts: Timestamp(45_000_000),
            frame: Some(FrameRef {
                dir: Dir::C2S,
                offset: 512,
            }),
            why: EndWhy::Cleared,
        };
        ds.take(&made("link \"q\" s2c", None));
        ds.take(&made("link \"q\" s2c", Some(end)));
        let section = DiagnosesSection::of(&ds, &[]);
        assert_eq!(section.failing, 0);
        let mut text = String::new();
        section.text_into(&mut text, "", "  ");
        assert!(
            text.contains("(cleared by the frame c2s @512; held 44.000 s)"),
            "{text}"
        );
        assert!(text.contains("none fails the verdict"), "{text}");
        let mut empty = String::new();
        DiagnosesSection::default().text_into(&mut empty, "", "");
        assert!(empty.is_empty());
    }
}
