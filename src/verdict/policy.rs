//! How findings are judged: the `--fail-on` threshold, `--ignore` patterns, `--severity`
//! overrides and a baseline of known findings. Living with a broker's known bug: ignore its
//! rule on the server side, or record today's findings and fail only on new ones.

use crate::event::{Dir, Severity};

use super::baseline::Baseline;
use super::finding::Finding;
use super::glob;

/// A glob over rule ids, limited to one peer by a `client:` or `server:` prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulePattern {
    /// The peer whose findings it matches (`None`: both).
    pub side: Option<Dir>,
    /// The glob (see [`glob::matches`]).
    pub glob: String,
}

impl RulePattern {
    /// `[client:|server:]GLOB`.
    pub fn parse(s: &str) -> Result<RulePattern, String> {
        let (side, glob) = match s.split_once(':') {
            Some(("client", g)) => (Some(Dir::C2S), g),
            Some(("server", g)) => (Some(Dir::S2C), g),
            Some((other, _)) => {
                return Err(format!(
                    "{s:?}: the prefix before ':' must be client or server, not {other:?}"
                ));
            }
            None => (None, s),
        };
        if glob.is_empty() {
            return Err(format!("{s:?}: no rule pattern"));
        }
        Ok(RulePattern {
            side,
            glob: glob.to_string(),
        })
    }

    /// Whether the pattern matches `rule` reported against the sender of `dir`.
    pub fn matches(&self, rule: &str, dir: Dir) -> bool {
        self.side.is_none_or(|s| s == dir) && glob::matches(&self.glob, rule)
    }
}

impl std::fmt::Display for RulePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.side {
            Some(d) => write!(f, "{}:{}", super::finding::side(d), self.glob),
            None => f.write_str(&self.glob),
        }
    }
}

/// Parse a severity name.
pub fn parse_severity(s: &str) -> Result<Severity, String> {
    match s {
        "error" => Ok(Severity::Error),
        "warning" => Ok(Severity::Warning),
        "info" => Ok(Severity::Info),
        _ => Err(format!("{s:?} is not a severity (error, warning or info)")),
    }
}

/// What became of a finding under a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Judged: fails the gate when at or above `fail_on`.
    Active,
    /// Matched an `--ignore` pattern (shown as text): counted and listed, never failing.
    Ignored(String),
    /// Its rule and peer are in the baseline: known, not new, never failing.
    Baselined,
}

impl Status {
    /// Order in reports: active, baseline, ignored.
    pub fn rank(&self) -> u8 {
        match self {
            Status::Active => 0,
            Status::Baselined => 1,
            Status::Ignored(_) => 2,
        }
    }

    /// `active`, `baseline` or `ignored`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Baselined => "baseline",
            Status::Ignored(_) => "ignored",
        }
    }
}

/// The judging settings of one run.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Findings at or above this severity fail the gate.
    pub fail_on: Severity,
    /// Findings matching any of these are ignored.
    pub ignore: Vec<RulePattern>,
    /// Severity overrides; the last matching one wins.
    pub severity: Vec<(RulePattern, Severity)>,
    /// Known findings that do not fail the gate.
    pub baseline: Option<Baseline>,
    /// Diagnoses that fail the gate (`--fail-on-diagnosis`: check ids, or `all`); none by
    /// default: a diagnosis explains, it does not judge.
    pub fail_on_diagnosis: Vec<String>,
    /// The diagnoses' thresholds (the file's `[diagnosis-threshold]`, then the command line's).
    pub thresholds: crate::state::diagnose::Thresholds,
    /// Diagnoses are made at all (the file's `diagnoses = false` or `--no-diagnoses` turn
    /// them off: the diagnoser then never runs).
    pub diagnoses: bool,
}

impl Policy {
    /// No ignores, overrides or baseline.
    pub fn fail_on(fail_on: Severity) -> Policy {
        Policy {
            fail_on,
            ignore: Vec::new(),
            severity: Vec::new(),
            baseline: None,
            fail_on_diagnosis: Vec::new(),
            thresholds: Default::default(),
            diagnoses: true,
        }
    }

    /// The severity `f` is judged at, and what became of it.
    pub fn classify(&self, f: &Finding) -> (Severity, Status) {
        let severity = self
            .severity
            .iter()
            .rev()
            .find(|(p, _)| p.matches(&f.rule, f.dir))
            .map_or(f.severity, |(_, s)| *s);
        let status = if let Some(p) = self.ignore.iter().find(|p| p.matches(&f.rule, f.dir)) {
            Status::Ignored(p.to_string())
        } else if self
            .baseline
            .as_ref()
            .is_some_and(|b| b.contains(&f.rule, f.dir))
        {
            Status::Baselined
        } else {
            Status::Active
        };
        (severity, status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_prefix_limits_a_pattern_to_that_peer() {
        let p = RulePattern::parse("server:amqp10.connection.*").unwrap();
        assert!(p.matches("amqp10.connection.frame-after-close", Dir::S2C));
        assert!(!p.matches("amqp10.connection.frame-after-close", Dir::C2S));
        let both = RulePattern::parse("*.frame-after-close").unwrap();
        assert!(both.matches("amqp091.connection.frame-after-close", Dir::C2S));
        assert!(both.matches("amqp091.connection.frame-after-close", Dir::S2C));
        assert_eq!(p.to_string(), "server:amqp10.connection.*");
        assert!(RulePattern::parse("broker:x").is_err());
        assert!(RulePattern::parse("client:").is_err());
        assert!(parse_severity("fatal").is_err());
    }
}
