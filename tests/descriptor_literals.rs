//! Descriptor codes and spec defaults are written once, by `tools/gen_amqp10.py`: outside the
//! generated files (`src/codec/amqp10/{tables,views}.rs`, `src/codec/amqp091/generated.rs`),
//! `src/` names a descriptor code by its constant in `views::code` and reads a composite's
//! fields through its generated view. This scans `src/` for the shapes a hand-written code or
//! default takes: a spec descriptor code as a literal where a code is looked up, compared,
//! matched or declared (`section(0x70)`, `Code(0x14)`, `code == 0x28`, `(0x75, Value::...)`, `(0x40..=0x44)`,
//! `const DATA: u64 = 0x75`), and a field read with a default written by hand
//! (`f.ubyte(1).unwrap_or(4)`).

use std::path::{Path, PathBuf};

use amqpeek::codec::amqp10::tables::ALL;

/// The generated files, which are where the codes and defaults live.
const GENERATED: [&str; 3] = [
    "src/codec/amqp10/tables.rs",
    "src/codec/amqp10/views.rs",
    "src/codec/amqp091/generated.rs",
];

/// Text right before a literal that makes it a descriptor code.
const CODE_CONTEXTS: [&str; 7] = [
    "section(0x",
    "Code(0x",
    "described_list(0x",
    "code == 0x",
    "descriptor == 0x",
    ": u64 = 0x",
    "(0x",
];

/// Typed field reads that take a default.
const ACCESSORS: [&str; 6] = [
    ".bool(", ".ubyte(", ".ushort(", ".uint(", ".ulong(", ".symbol(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The value of the hex literal at the start of `s` (after `0x`), and what follows it.
fn hex_at(s: &str) -> Option<(u64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_hexdigit() || c == '_'))
        .unwrap_or(s.len());
    let digits: String = s[..end].chars().filter(|&c| c != '_').collect();
    Some((u64::from_str_radix(&digits, 16).ok()?, &s[end..]))
}

/// The descriptor-code literals of one line, in a context that makes them codes.
fn code_literals(line: &str, codes: &[u64]) -> Vec<u64> {
    let mut found = Vec::new();
    for ctx in CODE_CONTEXTS {
        for (at, _) in line.match_indices(ctx) {
            let Some((v, rest)) = hex_at(&line[at + ctx.len()..]) else {
                continue;
            };
            // A bare `(0x..` is a code only as a match tuple on a section's value or as the
            // start of a range of codes.
            let bare = ctx == "(0x";
            let coded = rest.starts_with(", Value::") || rest.starts_with("..=");
            if codes.contains(&v) && (!bare || coded) {
                found.push(v);
            }
        }
    }
    found.dedup();
    found
}

/// Whether a line reads a field with a hand-written default: `.uint(4).unwrap_or(`.
fn hand_default(line: &str) -> bool {
    ACCESSORS.iter().any(|acc| {
        line.match_indices(acc).any(|(at, _)| {
            let rest = &line[at + acc.len()..];
            let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
            digits > 0 && rest[digits..].starts_with(").unwrap_or(")
        })
    })
}

#[test]
fn src_writes_no_descriptor_code_or_default_by_hand() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let codes: Vec<u64> = ALL.iter().map(|d| d.code).collect();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 20, "src/ has its files");
    let mut offences = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if GENERATED.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for v in code_literals(line, &codes) {
                offences.push(format!(
                    "{rel}:{}: descriptor code 0x{v:x}: {}",
                    n + 1,
                    line.trim()
                ));
            }
            if hand_default(line) {
                offences.push(format!("{rel}:{}: default by hand: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "use the generated constants and views:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scanner_sees_each_shape() {
    let codes: Vec<u64> = ALL.iter().map(|d| d.code).collect();
    assert_eq!(
        code_literals("let s = self.section(0x70)?;", &codes),
        [0x70]
    );
    assert_eq!(
        code_literals("(0x75, Value::Binary(b)) => x,", &codes),
        [0x75]
    );
    assert_eq!(code_literals("const DATA: u64 = 0x75;", &codes), [0x75]);
    assert_eq!(
        code_literals("Descriptor::Code(0x0000_0014)", &codes),
        [0x14]
    );
    assert_eq!(code_literals("(0x40..=0x44).contains(&b)", &codes), [0x40]);
    assert_eq!(
        code_literals("section(0x77, Value::Uint(7))", &codes),
        [0x77]
    );
    // Not codes: a constructor byte, a value that is no descriptor, a plain tuple.
    assert!(code_literals("pub const UINT: u8 = 0x70;", &codes).is_empty());
    assert!(code_literals("InvalidFormatCode(0xff)", &codes).is_empty());
    assert!(code_literals("f(0x70, 1)", &codes).is_empty());
    assert!(hand_default("priority: f.ubyte(1).unwrap_or(4),"));
    assert!(!hand_default("priority: f.ubyte(1),"));
    assert!(!hand_default("t.settled.unwrap_or(false)"));
}
