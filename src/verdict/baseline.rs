//! A baseline, as linters keep one: the rules each peer broke in a run that was accepted
//! (`check --write-baseline FILE`). With `--baseline FILE`, findings of a rule and peer in it
//! are known and do not fail the gate; only new ones do.
//!
//! A finding is known by its rule and the peer at fault, not by its connection, channel or
//! offset: those change from one run of the same tests to the next, and a broker's known bug
//! shows on whatever connection happens to trigger it. The counts are recorded for the reader.
//!
//! The file is JSON: `{"amqpeek-baseline": 1, "findings": [{"rule": "...", "side": "server",
//! "findings": 1, "occurrences": 270}]}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::Dir;

use super::finding::{Finding, side};

/// The format version written as `amqpeek-baseline`.
pub const VERSION: u64 = 1;

/// One known rule and peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    rule: String,
    side: String,
    #[serde(default)]
    findings: u64,
    #[serde(default)]
    occurrences: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "amqpeek-baseline")]
    version: u64,
    findings: Vec<Entry>,
}

/// The rules each peer is known to break.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Baseline {
    /// (rule, side) -> (findings, occurrences).
    known: BTreeMap<(String, &'static str), (u64, u64)>,
}

impl Baseline {
    /// The baseline of these findings.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Baseline {
        let mut b = Baseline::default();
        for f in findings {
            let e = b.known.entry((f.rule.clone(), f.side())).or_default();
            e.0 += 1;
            e.1 += f.count;
        }
        b
    }

    /// Whether `rule` broken by the sender of `dir` is known.
    pub fn contains(&self, rule: &str, dir: Dir) -> bool {
        self.known.contains_key(&(rule.to_string(), side(dir)))
    }

    /// Rules and peers known.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// True when nothing is known.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        let file = File {
            version: VERSION,
            findings: self
                .known
                .iter()
                .map(|((rule, side), (findings, occurrences))| Entry {
                    rule: rule.clone(),
                    side: side.to_string(),
                    findings: *findings,
                    occurrences: *occurrences,
                })
                .collect(),
        };
        let mut s = crate::json::to_string_pretty(&file);
        s.push('\n');
        s
    }

    /// Read a baseline file's text.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.version != VERSION {
            return Err(format!(
                "baseline format {} is not known (this amqpeek reads {VERSION})",
                file.version
            ));
        }
        let mut b = Baseline::default();
        for e in file.findings {
            let side = match e.side.as_str() {
                "client" => "client",
                "server" => "server",
                other => return Err(format!("side {other:?} is neither client nor server")),
            };
            b.known.insert((e.rule, side), (e.findings, e.occurrences));
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_it_does_not_know() {
        let mut b = Baseline::default();
        b.known.insert(("r.a".into(), "server"), (2, 270));
        let back = Baseline::parse(&b.to_json()).unwrap();
        assert_eq!(back, b);
        assert!(back.contains("r.a", Dir::S2C));
        assert!(!back.contains("r.a", Dir::C2S));
        assert!(Baseline::parse("{}").is_err());
        assert!(Baseline::parse(r#"{"amqpeek-baseline": 9, "findings": []}"#).is_err());
        assert!(
            Baseline::parse(
                r#"{"amqpeek-baseline": 1, "findings": [{"rule": "x", "side": "broker"}]}"#
            )
            .is_err()
        );
    }
}
