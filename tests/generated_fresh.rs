//! The generated sources are what the generators make of the spec inputs kept in `spec/`: a
//! fresh run of `tools/gen_amqp10.py` and `tools/gen_amqp091.py`, formatted by rustfmt, gives
//! exactly the committed `src/codec/amqp10/{tables,views}.rs` and
//! `src/codec/amqp091/generated.rs`. A hand edit of a generated file, or a generator change
//! whose output was not committed, fails here.
//!
//! Needs python3 and rustfmt; without them the test says so and passes, except under `CI`,
//! where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `tool --version` runs; under `CI` a missing tool is a failure.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is needed to check the generated sources"
        );
        eprintln!("note: {tool} not found; generated sources not checked");
    }
    ok
}

fn rustfmt(path: &Path) {
    let st = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .arg(path)
        .status()
        .expect("rustfmt runs");
    assert!(st.success(), "rustfmt {}", path.display());
}

#[track_caller]
fn same(fresh: &Path, committed: &Path) {
    let a = std::fs::read_to_string(fresh).expect("the generator wrote it");
    let b = std::fs::read_to_string(committed).expect("the committed file");
    if a != b {
        let line = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .map_or(a.lines().count().min(b.lines().count()), |n| n);
        panic!(
            "{} differs from a fresh run of its generator (first at line {}): regenerate it",
            committed.display(),
            line + 1
        );
    }
}

#[test]
fn amqp10_tables_and_views_are_a_fresh_run_of_the_generator() {
    if !have("python3") || !have("rustfmt") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let st = Command::new("python3")
        .arg(root().join("tools/gen_amqp10.py"))
        .arg(out.path())
        .status()
        .unwrap();
    assert!(st.success(), "tools/gen_amqp10.py runs");
    for f in ["tables.rs", "views.rs"] {
        let fresh = out.path().join(f);
        rustfmt(&fresh);
        same(&fresh, &root().join("src/codec/amqp10").join(f));
    }
}

#[test]
fn amqp091_generated_is_a_fresh_run_of_the_generator() {
    if !have("python3") || !have("rustfmt") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let fresh = out.path().join("generated.rs");
    let gen_out = Command::new("python3")
        .arg(root().join("tools/gen_amqp091.py"))
        .output()
        .unwrap();
    assert!(gen_out.status.success(), "tools/gen_amqp091.py runs");
    std::fs::write(&fresh, gen_out.stdout).unwrap();
    rustfmt(&fresh);
    same(&fresh, &root().join("src/codec/amqp091/generated.rs"));
}
