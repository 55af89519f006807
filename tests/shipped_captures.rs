//! The sample captures in `captures/` agree with the tool and with their description: for each
//! one, the violation records stored in its JSONL, the violation comments stored in its pcapng,
//! `check` of the JSONL and `check` of the pcapng list the same violations (rule, direction,
//! offset, message), and the verdict column of `captures/README.md` gives `check`'s verdict and
//! names every rule it finds. `captures/record.sh` records them again from real clients and the
//! broker when the rules change.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One violation: rule, direction (`c2s`/`s2c`), offset in that direction's stream, message.
type Found = (String, String, u64, String);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The sample captures' names (`captures/NAME.jsonl` with its `NAME.pcapng`).
fn samples() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("captures"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "jsonl").then(|| p.file_stem().unwrap().to_string_lossy().into())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    names
}

fn capture(name: &str, ext: &str) -> PathBuf {
    let p = root().join("captures").join(format!("{name}.{ext}"));
    assert!(p.exists(), "{} is missing", p.display());
    p
}

/// `check --format json` of `path`: its status word (`PASS`/`FAIL`) and every occurrence.
fn check(path: &Path) -> (String, Vec<Found>) {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .arg("check")
        .arg(path)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 1)), "{}: {code:?}", path.display());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    for f in v["findings"].as_array().unwrap() {
        let occurrences = f["occurrences"].as_array().unwrap();
        assert_eq!(
            f["count"].as_u64(),
            Some(occurrences.len() as u64),
            "every occurrence is listed, so all are compared"
        );
        for o in occurrences {
            found.push((
                f["rule"].as_str().unwrap().to_string(),
                f["dir"].as_str().unwrap().to_string(),
                o["offset"].as_u64().unwrap(),
                o["message"].as_str().unwrap().to_string(),
            ));
        }
    }
    found.sort();
    let status = if code == Some(0) { "PASS" } else { "FAIL" };
    (status.to_string(), found)
}

/// The violation records stored in a JSONL capture.
fn stored_in_jsonl(path: &Path) -> Vec<Found> {
    let mut found: Vec<Found> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "violation")
        .map(|v| {
            (
                v["rule"].as_str().unwrap().to_string(),
                v["dir"].as_str().unwrap().to_string(),
                v["offset"].as_u64().unwrap(),
                v["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    found
}

/// The violation comments stored in a pcapng capture, read by tshark:
/// `amqpeek SEVERITY RULE: MESSAGE [SPEC] (DIR offset N)`.
fn stored_in_pcapng(path: &Path) -> Option<Vec<Found>> {
    let out = match Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-Y", "frame.comment", "-T", "fields", "-e", "frame.comment"])
        .output()
    {
        Ok(out) if out.status.success() => out,
        other => {
            assert!(std::env::var_os("CI").is_none(), "tshark: {other:?}");
            eprintln!("tshark is not usable here; pcapng comments not compared");
            return None;
        }
    };
    let mut found = Vec::new();
    // One packet may carry several comments, comma-separated by tshark.
    for comment in String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .flat_map(|l| l.split(",amqpeek "))
    {
        let comment = comment.trim_start_matches("amqpeek ");
        let Some((head, rest)) = comment.split_once(": ") else {
            continue;
        };
        let Some(rule) = head.split(' ').nth(1) else {
            continue;
        };
        let Some((message, tail)) = rest.rsplit_once(" [") else {
            continue;
        };
        let Some(at) = tail
            .split_once("] (")
            .map(|(_, at)| at.trim_end_matches(')'))
        else {
            continue;
        };
        let mut at = at.split(' ');
        let (Some(dir), Some("offset"), Some(offset)) = (at.next(), at.next(), at.next()) else {
            continue;
        };
        found.push((
            rule.to_string(),
            dir.to_string(),
            offset.parse().unwrap(),
            message.to_string(),
        ));
    }
    found.sort();
    Some(found)
}

/// The verdict column of `name`'s row in `captures/README.md`.
fn described(name: &str) -> String {
    let readme = std::fs::read_to_string(root().join("captures/README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with('|') && l.contains(&format!("`{name}.jsonl`")))
        .unwrap_or_else(|| panic!("captures/README.md has no row for {name}"));
    row.trim_end_matches('|')
        .rsplit('|')
        .next()
        .unwrap()
        .trim()
        .to_string()
}

/// The rule ids a text names in backticks.
fn rules_named(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("amqp"))
        .map(str::to_string)
        .collect()
}

#[test]
fn each_sample_capture_stores_what_check_finds_and_its_readme_row_says_so() {
    for name in samples() {
        let (status_jsonl, from_jsonl) = check(&capture(&name, "jsonl"));
        let (status_pcapng, from_pcapng) = check(&capture(&name, "pcapng"));
        assert_eq!(
            from_jsonl, from_pcapng,
            "{name}: check of the JSONL and of the pcapng"
        );
        assert_eq!(status_jsonl, status_pcapng, "{name}");
        assert_eq!(
            stored_in_jsonl(&capture(&name, "jsonl")),
            from_jsonl,
            "{name}: the violation records stored in the JSONL are what check finds"
        );
        if let Some(comments) = stored_in_pcapng(&capture(&name, "pcapng")) {
            assert_eq!(
                comments, from_jsonl,
                "{name}: the violation comments stored in the pcapng are what check finds"
            );
        }
        let row = described(&name);
        assert!(
            row.starts_with(&status_jsonl),
            "{name}: captures/README.md says {row:?}, check says {status_jsonl}"
        );
        let found: BTreeSet<String> = from_jsonl.iter().map(|f| f.0.clone()).collect();
        assert_eq!(
            rules_named(&row),
            found,
            "{name}: the rules captures/README.md names are those check finds"
        );
    }
}
