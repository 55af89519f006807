//! What makes the ring dump (`--dump-on`): a finding at or above a severity, any diagnosis, or
//! one rule or diagnosis by id; and `SIGUSR1`.

use crate::event::{EventKind, Severity};

/// One `--dump-on` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// A finding at or above this severity (`error`, `warning`).
    Severity(Severity),
    /// Any diagnosis starting.
    Diagnosis,
    /// The rule or diagnosis of this id.
    Id(String),
}

impl Trigger {
    /// `error`, `warning`, `info`, `diagnosis`, or a rule or diagnosis id (refused when it
    /// names neither: a misspelt id would never fire).
    pub fn parse(s: &str) -> Result<Trigger, String> {
        let s = s.trim();
        Ok(match s {
            "error" => Trigger::Severity(Severity::Error),
            "warning" => Trigger::Severity(Severity::Warning),
            "info" => Trigger::Severity(Severity::Info),
            "diagnosis" => Trigger::Diagnosis,
            id if crate::state::rules::by_id(id).is_some()
                || crate::state::diagnose::catalog::CHECKS
                    .iter()
                    .any(|c| c.id == id) =>
            {
                Trigger::Id(id.to_string())
            }
            other => {
                return Err(format!(
                    "{other:?}: error, warning, info, diagnosis, or a rule or diagnosis id \
                     (docs/rules.md and docs/diagnoses.md list them)"
                ));
            }
        })
    }

    /// The name a dump this trigger fires takes (in its file names): the rule or diagnosis
    /// id that fired.
    pub fn fires(&self, kind: &EventKind) -> Option<&'static str> {
        match kind {
            EventKind::Violation(v) => match self {
                Trigger::Severity(s) if v.severity >= *s => Some(v.rule.id),
                Trigger::Id(id) if v.rule.id == id => Some(v.rule.id),
                _ => None,
            },
            EventKind::Diagnosis(d) if d.ended.is_none() => match self {
                Trigger::Diagnosis => Some(d.check.id),
                Trigger::Id(id) if d.check.id == id => Some(d.check.id),
                _ => None,
            },
            _ => None,
        }
    }
}
