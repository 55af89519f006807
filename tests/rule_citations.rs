//! Every sentence a rule quotes from the AMQP 1.0 transport specification (part 2, §2.x) or
//! the Anonymous Terminus specification is in their text, checked against the text the project
//! was created from (`shared/spec/seeds/` beside the checkout, when present: the project's own
//! `spec/` holds only the machine-readable definitions).
//!
//! That text loses the rest of a paragraph at each inline element (an `<xref>`, a type name
//! in a sentence): a quote must be in it word for word, or word for word up to such a cut (a
//! line ends there, after at least four of its words). A quote from another sentence, a
//! paraphrase or a wrong word before the cut fails.

use std::path::{Path, PathBuf};

/// The folder holding the seed texts, searched from the checkout upwards.
fn seeds() -> Option<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/spec/seeds"))
        .find(|p| p.is_dir())
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == '"')
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '(' | ')')))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The rules' doc comments: (rule id, the comment's text joined into one line).
fn rule_docs(source: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut doc = String::new();
    let mut pending: Option<String> = None;
    for line in source.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push(' ');
            doc.push_str(d.trim());
        } else if t.starts_with("pub static") && t.contains(": Rule") {
            pending = Some(std::mem::take(&mut doc));
        } else if let Some(d) = pending.as_ref()
            && let Some(id) = t.split('"').nth(1).filter(|_| t.contains('"'))
        {
            out.push((id.to_string(), d.clone()));
            pending = None;
        } else if !t.starts_with("#[") {
            doc.clear();
        }
    }
    out
}

/// The quotes of `doc` that cite AMQP 1.0 part 2 or the Anonymous Terminus: the text between
/// double quotes whose nearest citation before it is `§2.` (in a comment about AMQP 1.0) or
/// the Anonymous Terminus, split at editorial `...` and `[...]`.
fn quotes(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = doc.split('"').collect();
    let mut source = "";
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 0 {
            // Outside quotes: the last citation named.
            for marker in ["§", "0-9-1", "RFC", "Anonymous Terminus", "RabbitMQ"] {
                if let Some(at) = part.rfind(marker) {
                    let later = ["§", "0-9-1", "RFC", "Anonymous Terminus", "RabbitMQ"]
                        .iter()
                        .filter_map(|m| part.rfind(m))
                        .max()
                        .unwrap_or(0);
                    if at == later {
                        source = if marker == "§" {
                            if part[at..].starts_with("§2.") && !part.contains("0-9-1") {
                                "1.0"
                            } else if part[at..].starts_with("§2") || part[at..].starts_with("§3")
                            {
                                // Anonymous Terminus §2/§3 keep the source already named.
                                if source == "anon" { "anon" } else { "other" }
                            } else {
                                "other"
                            }
                        } else if marker == "Anonymous Terminus" {
                            "anon"
                        } else {
                            "other"
                        };
                    }
                }
            }
            continue;
        }
        if source == "other" || source.is_empty() {
            continue;
        }
        for piece in part.split("...") {
            let piece: String = piece
                .split('[')
                .enumerate()
                .map(|(j, s)| {
                    if j == 0 {
                        s
                    } else {
                        s.split_once(']').map_or(s, |x| x.1)
                    }
                })
                .collect();
            if words(&piece).len() >= 3 {
                out.push(format!("{source}\u{0}{piece}"));
            }
        }
    }
    out
}

/// The spec text as its lines' words, and all of it as one string of words.
struct Text {
    lines: Vec<Vec<String>>,
    joined: String,
}

impl Text {
    fn new(text: &str) -> Text {
        let lines: Vec<Vec<String>> = text.lines().map(words).collect();
        let joined = format!(" {} ", words(text).join(" "));
        Text { lines, joined }
    }

    /// `quote` is in the text, or the text is cut where an inline element was (a line ends
    /// there) after at least its first four words, which it has.
    fn has(&self, quote: &[String]) -> bool {
        if self.joined.contains(&format!(" {} ", quote.join(" "))) {
            return true;
        }
        (4..quote.len()).rev().any(|k| {
            self.lines
                .iter()
                .any(|l| l.len() >= k && l[l.len() - k..] == quote[..k])
        })
    }
}

/// Quotes the seed text lost whole (the rest of a paragraph after an inline element): they are
/// the specification's words, but this text cannot show them.
const LOST: &[&str] = &[
    // §2.4.1: "..., the maximum frame size is 512 (MIN-MAX-FRAME-SIZE) and the maximum channel
    // number is 0." (the text stops at "the maximum frame size is").
    "the maximum channel number is 0",
    // §2.7.4 next-incoming-id: the text keeps only its first line.
    "This value MUST be set if the peer has received the begin frame for the session, and MUST NOT be set if it has not.",
];

#[test]
fn every_quoted_amqp10_sentence_is_in_the_spec_text() {
    let Some(dir) = seeds() else {
        eprintln!("note: no shared/spec/seeds beside the checkout; quotes not checked");
        return;
    };
    let read = |prefix: &str| {
        let f = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}* in {}", dir.display()));
        std::fs::read_to_string(f.path()).unwrap()
    };
    let transport = Text::new(&read("000_"));
    let anonymous = Text::new(&read("002_"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in ["src/state/rules.rs", "src/state/amqp10/rules.rs"] {
        let source = std::fs::read_to_string(root.join(file)).unwrap();
        for (id, doc) in rule_docs(&source) {
            for q in quotes(&doc) {
                let (src, q) = q.split_once('\u{0}').unwrap();
                let text = if src == "anon" {
                    &anonymous
                } else {
                    &transport
                };
                let w = words(q);
                if w.len() < 4 || LOST.iter().any(|l| words(l) == w) {
                    continue;
                }
                checked += 1;
                if !text.has(&w) {
                    wrong.push(format!("{id}: {q:?}"));
                }
            }
        }
    }
    assert!(
        checked > 60,
        "only {checked} quotes found: the parser lost them"
    );
    assert!(
        wrong.is_empty(),
        "quotes not in the spec text:\n{}",
        wrong.join("\n")
    );
}
