//! The judging settings from a config file and the command line. The file is `amqpeek.toml`
//! in the current folder, or the one `--config PATH` names:
//!
//! ```toml
//! fail-on = "error"                                     # check's default threshold
//! ignore = ["server:amqp10.connection.frame-after-close"]
//! baseline = "amqpeek-baseline.json"                    # relative to the file's folder
//!
//! fail-on-diagnosis = ["amqp091.consumer.prefetch-full"]  # diagnoses fail nothing unless named
//!
//! [severity]
//! "amqp10.link.detach-not-closed" = "error"
//!
//! [diagnosis-threshold]                                 # seconds (a count for redelivery loops)
//! "amqp10.link.no-credit" = 10
//! ```
//!
//! `diagnoses = false` (a top-level key, before any table) turns the diagnoses off, as
//! `--no-diagnoses` does.
//!
//! The command line adds to the file: its `--ignore` and `--severity` come after the file's
//! (a later `--severity` wins), and its `--fail-on` and `--baseline` replace the file's. Any
//! mistake (unknown key, bad pattern or level, unreadable baseline) is an error naming the
//! file: a gate must not silently judge with other settings than the ones written. Both files
//! are read only as regular files of at most 16 MiB ([`crate::files::read_settings`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::event::Severity;

use super::baseline::Baseline;
use super::policy::{Policy, RulePattern, parse_severity};

/// The config file looked for in the current folder.
pub const FILE_NAME: &str = "amqpeek.toml";

/// The config file's content.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// `check`'s `--fail-on` unless given.
    pub fail_on: Option<String>,
    /// `--ignore` patterns.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// `--severity` overrides, pattern to level.
    #[serde(default)]
    pub severity: BTreeMap<String, String>,
    /// `--baseline`, relative to the config file's folder.
    pub baseline: Option<PathBuf>,
    /// `--diagnosis-threshold` values, diagnosis id to seconds (a count for a redelivery loop).
    #[serde(default)]
    pub diagnosis_threshold: BTreeMap<String, f64>,
    /// `--fail-on-diagnosis` ids (or `all`).
    #[serde(default)]
    pub fail_on_diagnosis: Vec<String>,
    /// `diagnoses = false`: as `--no-diagnoses` (on when absent).
    pub diagnoses: Option<bool>,
}

/// Read the config: `explicit` (which must exist), else `amqpeek.toml` in `cwd` if there is
/// one. Baseline paths are made relative to the file's folder.
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<Option<Config>, String> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = cwd.join(FILE_NAME);
            if !p.exists() {
                return Ok(None);
            }
            p
        }
    };
    let text = crate::files::read_settings(&path)
        .map_err(|e| format!("reading config {}: {e}", path.display()))?;
    let mut cfg: Config =
        toml::from_str(&text).map_err(|e| format!("config {}: {e}", path.display()))?;
    if let Some(b) = &cfg.baseline
        && let Some(dir) = path.parent()
    {
        cfg.baseline = Some(dir.join(b));
    }
    // Checked now, so the mistake is reported against the file.
    build(&cfg, &Overrides::default(), Severity::Error)
        .map_err(|e| format!("config {}: {e}", path.display()))?;
    Ok(Some(cfg))
}

/// What the command line gives.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--fail-on`.
    pub fail_on: Option<Severity>,
    /// `--ignore`.
    pub ignore: Vec<String>,
    /// `--severity RULE=LEVEL`.
    pub severity: Vec<String>,
    /// `--baseline`.
    pub baseline: Option<PathBuf>,
    /// `--diagnosis-threshold ID=SECS`.
    pub diagnosis_threshold: Vec<String>,
    /// `--fail-on-diagnosis ID|all`.
    pub fail_on_diagnosis: Vec<String>,
    /// `--no-diagnoses`: off whatever the file says.
    pub no_diagnoses: bool,
}

/// The policy of `cfg` with the command line's `over` applied; `default` when neither sets a
/// threshold.
pub fn build(cfg: &Config, over: &Overrides, default: Severity) -> Result<Policy, String> {
    let fail_on = match (over.fail_on, &cfg.fail_on) {
        (Some(s), _) => s,
        (None, Some(s)) => parse_severity(s).map_err(|e| format!("fail-on: {e}"))?,
        (None, None) => default,
    };
    let mut ignore = Vec::new();
    for p in cfg.ignore.iter().chain(&over.ignore) {
        ignore.push(RulePattern::parse(p).map_err(|e| format!("ignore: {e}"))?);
    }
    let mut severity = Vec::new();
    let given = over.severity.iter().map(|s| match s.split_once('=') {
        Some((r, l)) => Ok((r.to_string(), l.to_string())),
        None => Err(format!("severity: {s:?} is not RULE=LEVEL")),
    });
    let from_file = cfg.severity.iter().map(|(r, l)| Ok((r.clone(), l.clone())));
    for item in from_file.chain(given) {
        let (rule, level) = item?;
        let pattern = RulePattern::parse(&rule).map_err(|e| format!("severity: {e}"))?;
        let level = parse_severity(&level).map_err(|e| format!("severity of {rule}: {e}"))?;
        severity.push((pattern, level));
    }
    let baseline = match over.baseline.as_ref().or(cfg.baseline.as_ref()) {
        Some(path) => {
            let text = crate::files::read_settings(path)
                .map_err(|e| format!("reading baseline {}: {e}", path.display()))?;
            Some(Baseline::parse(&text).map_err(|e| format!("baseline {}: {e}", path.display()))?)
        }
        None => None,
    };
    let mut thresholds = crate::state::diagnose::Thresholds::new();
    for (id, secs) in &cfg.diagnosis_threshold {
        thresholds
            .set(id, *secs)
            .map_err(|e| format!("diagnosis-threshold: {e}"))?;
    }
    for arg in &over.diagnosis_threshold {
        thresholds
            .set_arg(arg)
            .map_err(|e| format!("--diagnosis-threshold: {e}"))?;
    }
    let fail_on_diagnosis: Vec<String> = cfg
        .fail_on_diagnosis
        .iter()
        .chain(&over.fail_on_diagnosis)
        .cloned()
        .collect();
    for id in &fail_on_diagnosis {
        if id != "all" && crate::state::diagnose::catalog::check(id).is_none() {
            return Err(format!("fail-on-diagnosis: unknown diagnosis id {id:?}"));
        }
    }
    let diagnoses = !over.no_diagnoses && cfg.diagnoses.unwrap_or(true);
    // A gate told to fail on a diagnosis it never makes would pass having checked nothing.
    if !diagnoses && !fail_on_diagnosis.is_empty() {
        return Err(
            "fail-on-diagnosis: diagnoses are off (diagnoses = false or --no-diagnoses)".into(),
        );
    }
    Ok(Policy {
        fail_on,
        ignore,
        severity,
        baseline,
        fail_on_diagnosis,
        thresholds,
        diagnoses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Dir;

    #[test]
    fn the_file_and_the_command_line_combine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            "fail-on = \"warning\"\nignore = [\"server:amqp10.link.*\"]\n\
             [severity]\n\"amqp10.link.detach-not-closed\" = \"error\"\n",
        )
        .unwrap();
        let cfg = load(None, dir.path()).unwrap().unwrap();
        let over = Overrides {
            ignore: vec!["codec.*".into()],
            severity: vec!["amqp10.link.detach-not-closed=info".into()],
            ..Overrides::default()
        };
        let p = build(&cfg, &over, Severity::Error).unwrap();
        assert_eq!(p.fail_on, Severity::Warning);
        assert_eq!(p.ignore.len(), 2);
        assert!(p.ignore[0].matches("amqp10.link.x", Dir::S2C));
        // The command line's override comes last and wins.
        assert_eq!(p.severity.last().unwrap().1, Severity::Info);
        let over = Overrides {
            fail_on: Some(Severity::Info),
            ..Overrides::default()
        };
        assert_eq!(
            build(&cfg, &over, Severity::Error).unwrap().fail_on,
            Severity::Info
        );
    }

    #[test]
    fn mistakes_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        for text in [
            "fail-on = \"fatal\"",
            "ignore = [\"broker:x\"]",
            "colour = true",
            "[severity]\nx = \"loud\"",
            "baseline = \"missing.json\"",
            "not toml at all [",
        ] {
            std::fs::write(&path, text).unwrap();
            let e = load(Some(&path), dir.path()).unwrap_err();
            assert!(e.contains("bad.toml"), "{text}: {e}");
        }
        assert!(load(None, dir.path()).unwrap().is_none());
        assert!(load(Some(&dir.path().join("none.toml")), dir.path()).is_err());
        let over = Overrides {
            severity: vec!["no-equals".into()],
            ..Overrides::default()
        };
        assert!(build(&Config::default(), &over, Severity::Error).is_err());
    }

    #[test]
    fn diagnoses_are_on_unless_the_file_or_the_flag_turns_them_off() {
        let on =
            |cfg: &Config, over: &Overrides| build(cfg, over, Severity::Error).map(|p| p.diagnoses);
        let off_file: Config = toml::from_str("diagnoses = false").unwrap();
        let on_file: Config = toml::from_str("diagnoses = true").unwrap();
        let flag = Overrides {
            no_diagnoses: true,
            ..Overrides::default()
        };
        assert_eq!(on(&Config::default(), &Overrides::default()), Ok(true));
        assert_eq!(on(&on_file, &Overrides::default()), Ok(true));
        assert_eq!(on(&off_file, &Overrides::default()), Ok(false));
        assert_eq!(on(&on_file, &flag), Ok(false));
        assert_eq!(on(&Config::default(), &flag), Ok(false));
        let named = Overrides {
            fail_on_diagnosis: vec!["all".into()],
            ..Overrides::default()
        };
        assert!(
            on(&off_file, &named)
                .unwrap_err()
                .contains("diagnoses are off")
        );
        assert!(toml::from_str::<Config>("diagnoses = \"no\"").is_err());
    }
}
