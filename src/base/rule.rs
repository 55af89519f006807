//! A rule of the catalog (`state::rules`), as every violation carries it: by reference, so a
//! violation cannot name a rule the catalog does not hold, and its severity, spec section and
//! explanation are the catalog's own.

use std::fmt;

use super::{Dir, Severity, Violation};

/// One rule of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Stable id, e.g. `amqp10.connection.frame-after-close`.
    pub id: &'static str,
    /// `error` for MUST, `warning` for SHOULD.
    pub severity: Severity,
    /// Spec and section, e.g. `AMQP 1.0 §2.7.9`.
    pub spec: &'static str,
    /// One line of explanation.
    pub text: &'static str,
}

impl Rule {
    /// A violation of this rule by the frame at `offset` in direction `dir`.
    pub fn violation(
        &'static self,
        dir: Dir,
        offset: u64,
        message: impl Into<String>,
    ) -> Violation {
        Violation {
            rule: self,
            severity: self.severity,
            spec: self.spec.to_string(),
            message: message.into(),
            dir,
            offset,
            frame: None,
        }
    }
}

/// A rule shows as its id.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id)
    }
}

/// A rule is its id: `violation.rule == "codec.malformed-frame"`.
impl PartialEq<str> for Rule {
    fn eq(&self, id: &str) -> bool {
        self.id == id
    }
}

/// Serialized as its id (JSON, JSONL: what the id always was).
impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id)
    }
}
