//! The command line's side of the verdict: the judging policy from `--fail-on`, the policy
//! options and the config file, and what a failing gate says on stderr at exit.

use std::process::ExitCode;

use anyhow::{Context, anyhow};

use amqpeek::event::Severity;
use amqpeek::verdict::config::{self, Overrides};
use amqpeek::verdict::{Baseline, CheckReport, Policy};

use crate::cli::{FailOn, PolicyArgs};

/// The severity `--fail-on` names.
pub fn severity(f: FailOn) -> Severity {
    match f {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::Info => Severity::Info,
    }
}

/// The policy of `args` over the config file (`--config`, or `amqpeek.toml` in the current
/// folder), with `fail_on` from the command line; `error` when neither sets a threshold. Any
/// mistake is an error (exit 2): a gate must not judge with settings other than the ones
/// written.
pub fn policy(args: &PolicyArgs, fail_on: Option<FailOn>) -> anyhow::Result<Policy> {
    let cwd = std::env::current_dir().context("finding the current folder")?;
    let cfg = config::load(args.config.as_deref(), &cwd)
        .map_err(|e| anyhow!(e))?
        .unwrap_or_default();
    let over = Overrides {
        fail_on: fail_on.map(severity),
        ignore: args.ignore.clone(),
        severity: args.severity.clone(),
        baseline: args.baseline.clone(),
        diagnosis_threshold: args.diagnosis_threshold.clone(),
        fail_on_diagnosis: args.fail_on_diagnosis.clone(),
        no_diagnoses: args.no_diagnoses,
    };
    config::build(&cfg, &over, Severity::Error).map_err(|e| anyhow!(e))
}

/// Judge `report` under `policy`; when it fails, name the failing rules (counts, first
/// occurrence) on stderr and give status 1, else give 0 (saying so when `say_pass`: the proxy
/// and replay print no report of their own).
pub fn conclude(report: &CheckReport, policy: &Policy, say_pass: bool) -> ExitCode {
    let verdict = report.judge(policy);
    match verdict.failure_summary() {
        Some(summary) => {
            eprint!("amqpeek: {summary}");
            ExitCode::FAILURE
        }
        None if !say_pass => ExitCode::SUCCESS,
        None => {
            let (connections, _) = report.totals();
            let (ignored, baselined) = verdict.set_aside();
            say!(
                "PASS (--fail-on {}): {connections} connection(s), nothing at or above \
                 it{}{}",
                policy.fail_on.as_str(),
                if ignored.0 > 0 {
                    format!(", {} finding(s) ignored", ignored.0)
                } else {
                    String::new()
                },
                if baselined.0 > 0 {
                    format!(", {} finding(s) in the baseline", baselined.0)
                } else {
                    String::new()
                },
            );
            ExitCode::SUCCESS
        }
    }
}

/// Write the baseline of `report`'s findings to `path`.
pub fn write_baseline(report: &CheckReport, path: &std::path::Path) -> anyhow::Result<()> {
    let baseline = Baseline::of(report.findings());
    amqpeek::files::write(path, baseline.to_json().as_bytes())
        .with_context(|| format!("writing baseline {}", path.display()))?;
    say!(
        "baseline of {} rule(s) and peer(s) written to {}",
        baseline.len(),
        path.display()
    );
    Ok(())
}
