//! Every relative link in README.md and docs/*.md leads somewhere: the file it names exists
//! (relative to the document that links it), and a `#anchor` on a Markdown file names one of its
//! headings (as GitHub derives anchors from headings). Web links (`http:`, `https:`, `mailto:`)
//! are not followed. Fenced code blocks are left out.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose links are checked: README.md and every docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    assert!(!in_docs.is_empty(), "docs/ holds no .md file");
    docs.extend(in_docs);
    docs
}

/// The lines of a Markdown text outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of one line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                // `[text](target "title")`: the target is up to the first space.
                let target = after[..end].split_whitespace().next().unwrap_or("");
                out.push(target.to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(path: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    prose_lines(&text)
        .into_iter()
        .filter_map(|(_, l)| {
            let hashes = l.chars().take_while(|&c| c == '#').count();
            (hashes > 0 && l[hashes..].starts_with(' ')).then(|| anchor_of(&l[hashes..]))
        })
        .collect()
}

/// What is wrong with one link of `doc`, if anything.
fn broken(doc: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    if ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| target.starts_with(s))
    {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a)),
        None => (target, None),
    };
    let path = if file.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().unwrap().join(file)
    };
    if !path.exists() {
        return Some(format!("{} does not exist", path.display()));
    }
    if let Some(anchor) = anchor
        && path.extension().is_some_and(|e| e == "md")
        && !anchors(&path).contains(anchor)
    {
        return Some(format!(
            "{} has no heading with the anchor #{anchor}",
            path.display()
        ));
    }
    None
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                checked += 1;
                if let Some(why) = broken(&doc, &target) {
                    problems.push(format!("{}:{n}: ({target}): {why}", doc.display()));
                }
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} links found: is the link parser broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_links_every_page_of_docs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let linked: HashSet<String> = prose_lines(&readme)
        .into_iter()
        .flat_map(|(_, l)| link_targets(l))
        .map(|t| t.split('#').next().unwrap().to_string())
        .collect();
    for doc in documents().into_iter().skip(1) {
        let name = format!("docs/{}", doc.file_name().unwrap().to_string_lossy());
        assert!(linked.contains(&name), "README.md does not link {name}");
    }
}

#[test]
fn the_link_parser_finds_links_and_anchors() {
    assert_eq!(
        link_targets("see [a](docs/a.md) and [b](b.md#x \"t\"), not (c)"),
        vec!["docs/a.md", "b.md#x"]
    );
    assert_eq!(
        anchor_of(" A CI gate: `amqpeek check`"),
        "a-ci-gate-amqpeek-check"
    );
    assert_eq!(anchor_of(" pcapng captures"), "pcapng-captures");
}

#[test]
fn the_tui_page_lists_every_key_the_help_overlay_lists() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tui.md")).unwrap();
    for (key, what) in amqpeek::tui::input::KEYS {
        assert!(
            page.contains(&format!("| {what} |")),
            "docs/tui.md does not list {key:?}: {what}"
        );
    }
}
