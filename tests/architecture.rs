//! The dependency rules of README's "Architecture" that a reading of the sources can check:
//! the TUI runs no pipeline, tracks nothing and decodes nothing (issue #14: "no tracker and no
//! decoder used under `src/tui/`"); its pager and export are executed by code it is given, and
//! the row model it shares with the pager (`src/browse/`) knows nothing of it.
//!
//! The check reads identifiers in code, comments and string and char literals left out, so a
//! doc comment may say "the pager re-runs the pipeline" and an import in braces
//! (`use crate::{driver::offline, ..}`) is still caught.

use std::fs;
use std::path::{Path, PathBuf};

/// What the TUI must not name: the drivers and the replay that run the pipeline, the
/// inspector and its options, the router, the trackers, and the codecs' decoders.
const NOT_IN_TUI: &[&str] = &[
    "driver",
    "replay",
    "Inspector",
    "InspectOptions",
    "Router",
    "ProtocolTracker",
    "ConnTracker",
    "ConnectionTracker",
    "tracker",
    "decode",
    "decode_frame",
    "decode_head",
    "decode_top",
    "decode_sections",
    "decode_kept",
];

/// Every `.rs` file under `dir`, recursively, in a stable order.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a Rust source: comments, string literals and char literals blanked out (a
/// lifetime `'a` is kept; raw strings are not used in these folders).
fn code_only(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < s.len() && !(s[i] == '*' && s.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{..}'.
            i += 2;
            while i < s.len() && s[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' && s.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push(' ');
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The identifiers of `code` with their line numbers.
fn identifiers(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for word in line.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                out.push((n + 1, word));
            }
        }
    }
    out
}

/// `file:line: name` for each identifier of `forbidden` the files under `dir` name.
fn named(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let files = sources(&root);
    assert!(!files.is_empty(), "no source under {}", root.display());
    let mut found = Vec::new();
    for path in files {
        let src = fs::read_to_string(&path).unwrap();
        let code = code_only(&src);
        for (line, word) in identifiers(&code) {
            if forbidden.contains(&word) {
                let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
                found.push(format!("{}:{line}: {word}", rel.display()));
            }
        }
    }
    found
}

#[test]
fn the_tui_runs_no_pipeline_tracks_nothing_and_decodes_nothing() {
    let found = named("src/tui", NOT_IN_TUI);
    assert!(
        found.is_empty(),
        "src/tui/ names the pipeline, a tracker or a decoder:\n{}",
        found.join("\n")
    );
}

/// The row model is shared by the TUI and the pager: the dependency points from them to it,
/// and it runs nothing either.
#[test]
fn the_row_model_knows_neither_the_tui_nor_the_pipeline_runners() {
    let mut forbidden = vec!["tui"];
    forbidden.extend_from_slice(NOT_IN_TUI);
    let found = named("src/browse", &forbidden);
    assert!(
        found.is_empty(),
        "src/browse/ names the TUI, the pipeline, a tracker or a decoder:\n{}",
        found.join("\n")
    );
}

/// The pager and the export run the pipeline for the TUI; they do not reach into it.
#[test]
fn the_replay_does_not_depend_on_the_tui() {
    let found = named("src/replay", &["tui"]);
    assert!(
        found.is_empty(),
        "src/replay/ names the TUI:\n{}",
        found.join("\n")
    );
}

/// The stripping itself: what a comment or a literal says is not code.
#[test]
fn comments_and_literals_are_not_code() {
    let src = "use crate::{driver::offline, x}; // the replay\n\
               let s = \"decode \\\" tracker\"; let c = '\"'; let q = '\\''; fn f<'a>() {}\n\
               /* Router */ let r = replay;";
    let code = code_only(src);
    let words: Vec<&str> = identifiers(&code).into_iter().map(|(_, w)| w).collect();
    assert!(words.contains(&"driver"));
    assert!(words.contains(&"replay"), "the code's `replay`, line 3");
    assert!(!words.contains(&"decode") && !words.contains(&"tracker"));
    assert!(!words.contains(&"Router"));
    assert!(words.contains(&"a"), "a lifetime is code");
    assert_eq!(words.iter().filter(|w| **w == "replay").count(), 1);
}
