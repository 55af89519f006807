//! Completion of a filter being typed (Tab in the TUI's filter line): the word before the
//! cursor, and what it can become. A word without `:` becomes a key (`name:`, `link:`, a frame
//! field such as `delivery-id:`) or `violations`; after `key:` (and after each `|`) it becomes
//! a value the key takes: a frame name of either protocol, a direction, a protocol, a rule id,
//! a restricted field's named value, or a link or queue name the caller has seen.
//!
//! Candidates are whole words as they would stand in the line (`!name:basic.publish`), sorted:
//! those that start with what was typed first, then those that only contain it. Names seen on
//! the wire that would need escaping or quoting the language cannot express are never offered.

use std::collections::BTreeSet;

use super::{DIR_NAMES, KEYS, field_names, frame_names, proto_names, rule_ids};

/// At most this many candidates are offered (a session with thousands of links offers the
/// first ones, in order).
pub const MAX_CANDIDATES: usize = 500;

/// The word before the cursor and what it can become.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidates {
    /// Where the word starts in the text before the cursor (a byte offset).
    pub start: usize,
    /// What the word can become, each the whole word; empty when nothing fits.
    pub words: Vec<String>,
}

/// The candidates for the word that ends `before_cursor` (the filter's text up to the cursor).
/// `seen` are the link and queue names of the session, offered after `link:`.
pub fn candidates<'a>(before_cursor: &str, seen: impl IntoIterator<Item = &'a str>) -> Candidates {
    let start = before_cursor
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before_cursor[start..];
    let mut out = Candidates {
        start,
        words: Vec::new(),
    };
    if word.contains('"') {
        // Inside or after a quoted word: a text search, nothing to complete.
        return out;
    }
    let body = word.trim_start_matches('!');
    let bang = &word[..word.len() - body.len()];
    let Some((key, value)) = body.split_once(':') else {
        let mut keys: Vec<String> = KEYS
            .iter()
            .chain(field_names().iter())
            .map(|k| format!("{k}:"))
            .collect();
        keys.push("violations".into());
        out.words = ranked(body, keys.iter().map(String::as_str))
            .map(|k| format!("{bang}{k}"))
            .collect();
        return out;
    };
    let (done, partial) = match value.rfind('|') {
        Some(i) => value.split_at(i + 1),
        None => ("", value),
    };
    let head = format!("{bang}{key}:{done}");
    let values = values_of(key, seen);
    out.words = ranked(partial, values.iter().map(String::as_str))
        .map(|v| format!("{head}{v}"))
        .collect();
    out
}

/// What `key:` (by any of its spellings) takes, for completion.
fn values_of<'a>(key: &str, seen: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    match key.to_ascii_lowercase().as_str() {
        "name" | "n" => owned(&frame_names()),
        "dir" | "d" => owned(&DIR_NAMES),
        "proto" | "p" => owned(&proto_names()),
        "rule" | "r" => owned(&rule_ids()),
        "link" | "l" => seen
            .into_iter()
            .filter(|s| expressible(s))
            .map(|s| {
                if s.chars().any(char::is_whitespace) {
                    format!("\"{s}\"")
                } else {
                    s.to_string()
                }
            })
            .collect(),
        "channel" | "ch" | "conn" | "c" => Vec::new(),
        field => super::field::choice_names(field)
            .into_iter()
            .map(str::to_string)
            .collect(),
    }
}

/// Whether a name seen on the wire can be offered as it is: not empty, nothing the crate's
/// escaping would change, no quote and no `|` (the language has no way to write them in a
/// value).
fn expressible(s: &str) -> bool {
    !s.is_empty()
        && !s.contains(['"', '|'])
        && matches!(
            crate::base::escape::escape(s),
            std::borrow::Cow::Borrowed(_)
        )
}

/// The candidates that start with `typed` (case aside), then, when two or more characters are
/// typed, those that only contain it; each once, in the order given, at most
/// [`MAX_CANDIDATES`].
fn ranked<'a>(typed: &str, all: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    let t = typed.to_lowercase();
    let mut once = BTreeSet::new();
    let mut starts = Vec::new();
    let mut contains = Vec::new();
    for c in all.filter(|c| once.insert(*c)) {
        if c.to_lowercase().starts_with(&t) {
            starts.push(c);
        } else if t.chars().nth(1).is_some() && super::contains_ci(c, &t) {
            contains.push(c);
        }
    }
    starts.into_iter().chain(contains).take(MAX_CANDIDATES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str, seen: &[&str]) -> Vec<String> {
        candidates(line, seen.iter().copied()).words
    }

    #[test]
    fn keys_complete_from_their_first_letters() {
        let w = words("name:open li", &[]);
        assert_eq!(w[0], "link:");
        assert!(w.contains(&"link-credit:".to_string()), "{w:?}");
        assert_eq!(candidates("name:open li", []).start, 10);
        assert_eq!(words("!viol", &[]), ["!violations"]);
        assert!(words("deliv", &[]).contains(&"delivery-tag:".to_string()));
    }

    #[test]
    fn values_complete_after_the_key_and_after_each_bar() {
        let w = words("name:tran", &[]);
        assert!(w.contains(&"name:transfer".to_string()), "{w:?}");
        let w = words("n:publish", &[]);
        assert!(w.contains(&"n:basic.publish".to_string()), "{w:?}");
        assert_eq!(words("dir:s", &[]), ["dir:s2c"]);
        let w = words("name:open|clo", &[]);
        assert_eq!(w[0], "name:open|close");
        assert!(
            w.contains(&"name:open|connection.close".to_string()),
            "{w:?}"
        );
        assert!(words("proto:0-9", &[]).contains(&"proto:amqp-0-9-1".to_string()));
        assert!(!words("rule:credit", &[]).is_empty());
        assert_eq!(words("role:rec", &[]), ["role:receiver"]);
        assert!(words("channel:", &[]).is_empty());
    }

    #[test]
    fn link_names_seen_are_offered_when_the_language_can_write_them() {
        let seen = [
            "orders-sender",
            "my orders",
            "evil\u{1b}[2J",
            "a|b",
            "invoices",
        ];
        assert_eq!(
            words("link:", &seen),
            ["link:orders-sender", "link:\"my orders\"", "link:invoices"]
        );
        assert_eq!(
            words("link:ord", &seen),
            ["link:orders-sender", "link:\"my orders\""]
        );
        assert!(words("\"link:", &seen).is_empty());
    }
}
