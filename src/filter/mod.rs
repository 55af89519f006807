//! The frame filter language, the same in the TUI (what the user types after `/`) and headless
//! (`--filter EXPR` on `replay` and `proxy`, through [`crate::sinks::FilteredSink`]).
//!
//! ```text
//! filter := term (' ' term)*          every term must match (and)
//! term   := '!' term                  not
//!         | key ':' value ('|' value)*  any of the values
//!         | field ':' value ('|' value)*  a field of the frame (see `field.rs`)
//!         | 'violations'              frames with at least one violation
//!         | word | "quoted words"     case-insensitive text search in name and summary
//! key    := name | channel | ch | link | dir | conn | proto | rule
//! field  := any field name of a frame of either protocol, by its spec name (`handle`,
//!           `delivery-id`, `settled`, `delivery-tag`, `routing-key`), `a.b` for field `b`
//!           of the described value in field `a` (`source.address`)
//! ```
//!
//! Parsing never panics; a bad filter is a [`FilterError`] the UI shows in place. This module
//! only knows [`FrameFacts`], never the app's storage; field terms read the decoded frame the
//! facts carry, never its bytes.

pub mod complete;
mod field;
pub mod register;

pub use field::{Wanted, field_names, is_field_name, text_field};

use crate::event::Dir;
use crate::protocol::AnyFrame;

/// The protocol name of a frame: `amqp-1.0`, `amqp-sasl` or `amqp-0-9-1`.
pub fn frame_proto(frame: &AnyFrame) -> &'static str {
    frame.proto_name()
}

/// What a filter can ask about one row of the frame list.
#[derive(Clone, Copy, Debug)]
pub struct FrameFacts<'a> {
    /// Connection number.
    pub conn: u64,
    /// Direction, when the row has one.
    pub dir: Option<Dir>,
    /// Channel, when the row has one.
    pub channel: Option<u16>,
    /// Frame name (`transfer`, `basic.publish`, `header`, ...).
    pub name: &'a str,
    /// The one-line summary.
    pub summary: &'a str,
    /// Link name this frame belongs to (AMQP 1.0 attach/flow/transfer/detach), when known.
    pub link: Option<&'a str>,
    /// Protocol name (`amqp-1.0`, `amqp-0-9-1`, ...).
    pub proto: &'a str,
    /// Rule ids of the violations attached to the row.
    pub rules: &'a [String],
    /// The decoded frame, for field terms (`None`: the row is no frame).
    pub frame: Option<&'a AnyFrame>,
}

/// Why a filter does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// `foo:bar` with an unknown key (`chanel:1`), and the closest key there is.
    #[error("unknown filter key '{key}' {}", suggestion.map_or_else(
        || "(try name: channel: link: dir: conn: proto: rule:, or a frame field such as \
            handle: delivery-id: settled: delivery-tag:; Tab completes)".to_string(),
        |s| format!("(did you mean {s}:?)")))]
    UnknownKey {
        /// The key given.
        key: String,
        /// The closest key or field name, when one is close.
        suggestion: Option<&'static str>,
    },
    /// A value of a key or field that names something no frame can have (`proto:amqp-2`,
    /// `rule:credit-exeeded`, `role:recever`), and the closest there is.
    #[error("{key}: nothing is called '{value}'{}", suggestion.map_or_else(
        String::new, |s| format!(" (did you mean {key}:{s}?)")))]
    UnknownValue {
        /// The key or field path.
        key: String,
        /// What was given.
        value: String,
        /// The closest value there is, when one is close.
        suggestion: Option<&'static str>,
    },
    /// `channel:x` / `conn:x` with a value that is not a number.
    #[error("{key}: wants a number, got '{value}'")]
    NotANumber {
        /// The key.
        key: &'static str,
        /// What was given.
        value: String,
    },
    /// `dir:` with something other than c2s / s2c / -> / <-.
    #[error("dir: wants c2s or s2c, got '{0}'")]
    BadDir(String),
    /// `key:` with nothing after it.
    #[error("{0}: needs a value")]
    EmptyValue(String),
    /// `!` with nothing after it.
    #[error("'!' needs something to negate")]
    DanglingNot,
    /// A quote that is never closed.
    #[error("unterminated quote")]
    UnterminatedQuote,
    /// More `!` in a row than [`MAX_NOT_DEPTH`].
    #[error(
        "more than {MAX_NOT_DEPTH} '!' in a row (at most {MAX_NOT_DEPTH}: '!!' is the term itself)"
    )]
    TooDeep,
    /// `name:x` where `x` is in no frame's or row's name (`name:tranfer`).
    #[error("name: no frame is named like '{value}'{}", suggestion.as_ref().map_or(String::new(), |s| format!(" (did you mean name:{s}?)")))]
    UnknownName {
        /// What was given.
        value: String,
        /// The closest name there is, when one is close.
        suggestion: Option<&'static str>,
    },
    /// A number outside what the key or field can hold (`channel:70000`, `handle:-1`).
    #[error("{key}: {value} is out of range ({range})")]
    OutOfRange {
        /// The key or field path.
        key: String,
        /// What was given.
        value: String,
        /// What the key or field holds (`0..=65535`), and how else it may be written.
        range: String,
    },
}

/// The most `!` a term may start with: each is one level of [`Term::Not`], which matching
/// walks recursively.
pub const MAX_NOT_DEPTH: usize = 16;

/// One test of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// Negation.
    Not(Box<Term>),
    /// Name contains any of these (lower-case).
    Name(Vec<String>),
    /// Channel is one of these.
    Channel(Vec<u16>),
    /// Link name (or summary) contains any of these (lower-case).
    Link(Vec<String>),
    /// Sent this way (`dir:c2s` client to server, `dir:s2c`).
    Dir(Dir),
    /// Connection is one of these.
    Conn(Vec<u64>),
    /// Protocol name contains any of these (lower-case).
    Proto(Vec<String>),
    /// A violation whose rule id contains any of these (lower-case).
    Rule(Vec<String>),
    /// Has at least one violation.
    Violations,
    /// Name or summary contains this (lower-case).
    Text(String),
    /// A field of the decoded frame (path of spec names, lower-case) has one of these values.
    Field(Vec<String>, Vec<Wanted>),
}

/// A parsed filter: all terms must match. The empty filter matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// The terms, and-ed.
    pub terms: Vec<Term>,
    /// The text it was parsed from.
    pub source: String,
}

pub(crate) fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    if needle_lower.is_empty() {
        return true;
    }
    if hay.is_ascii() && needle_lower.is_ascii() {
        let h = hay.as_bytes();
        let n = needle_lower.as_bytes();
        return h
            .windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b));
    }
    hay.to_lowercase().contains(needle_lower)
}

impl Term {
    /// Does this term match the row?
    pub fn matches(&self, f: &FrameFacts<'_>) -> bool {
        match self {
            Term::Not(t) => !t.matches(f),
            Term::Name(v) => v.iter().any(|s| contains_ci(f.name, s)),
            Term::Channel(v) => f.channel.is_some_and(|c| v.contains(&c)),
            Term::Link(v) => v
                .iter()
                .any(|s| f.link.is_some_and(|l| contains_ci(l, s)) || contains_ci(f.summary, s)),
            Term::Dir(d) => f.dir == Some(*d),
            Term::Conn(v) => v.contains(&f.conn),
            Term::Proto(v) => v.iter().any(|s| contains_ci(f.proto, s)),
            Term::Rule(v) => f.rules.iter().any(|r| v.iter().any(|s| contains_ci(r, s))),
            Term::Violations => !f.rules.is_empty(),
            Term::Text(s) => contains_ci(f.summary, s) || contains_ci(f.name, s),
            Term::Field(path, wanted) => f.frame.is_some_and(|fr| field::matches(fr, path, wanted)),
        }
    }

    /// Whether matching may read the summary (it costs a rendering per frame headless).
    fn reads_summary(&self) -> bool {
        match self {
            Term::Not(t) => t.reads_summary(),
            Term::Link(_) | Term::Text(_) => true,
            _ => false,
        }
    }

    /// Whether matching may read the frame's violations.
    fn reads_rules(&self) -> bool {
        match self {
            Term::Not(t) => t.reads_rules(),
            Term::Rule(_) | Term::Violations => true,
            _ => false,
        }
    }
}

impl Filter {
    /// Parse `src`. Whitespace-only input is the empty filter.
    pub fn parse(src: &str) -> Result<Filter, FilterError> {
        let mut terms = Vec::new();
        for tok in tokenize(src)? {
            terms.push(parse_term(&tok)?);
        }
        Ok(Filter {
            terms,
            source: src.trim().to_string(),
        })
    }

    /// True when the filter has no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Does every term match the row?
    pub fn matches(&self, f: &FrameFacts<'_>) -> bool {
        self.terms.iter().all(|t| t.matches(f))
    }

    /// Whether some term reads the summary (without one, facts may carry an empty summary).
    pub fn reads_summary(&self) -> bool {
        self.terms.iter().any(Term::reads_summary)
    }

    /// Whether some term reads the frame's violations (without one, a frame can be judged
    /// before its violations are known).
    pub fn reads_rules(&self) -> bool {
        self.terms.iter().any(Term::reads_rules)
    }
}

/// A token: its text with quotes removed, and whether any part was quoted (quoted text is
/// always a text search, never a key or keyword).
#[derive(Debug)]
struct Token {
    text: String,
    quoted: bool,
}

fn tokenize(src: &str) -> Result<Vec<Token>, FilterError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_quote = false;
    let mut any = false;
    for c in src.chars() {
        if in_quote {
            if c == '"' {
                in_quote = false;
            } else {
                cur.push(c);
            }
        } else if c == '"' {
            in_quote = true;
            // Quoted from the start (after any '!'): a word, never a key or keyword.
            if cur.chars().all(|x| x == '!') {
                quoted = true;
            }
            any = true;
        } else if c.is_whitespace() {
            if any {
                out.push(Token {
                    text: std::mem::take(&mut cur),
                    quoted,
                });
            }
            quoted = false;
            any = false;
        } else {
            cur.push(c);
            any = true;
        }
    }
    if in_quote {
        return Err(FilterError::UnterminatedQuote);
    }
    if any {
        out.push(Token { text: cur, quoted });
    }
    Ok(out)
}

/// A token as a term: its leading `!`s (at most [`MAX_NOT_DEPTH`]) each negate what follows.
fn parse_term(tok: &Token) -> Result<Term, FilterError> {
    let rest = tok.text.trim_start_matches('!');
    let nots = tok.text.len() - rest.len();
    if nots == 0 {
        return parse_positive(rest, tok.quoted);
    }
    if nots > MAX_NOT_DEPTH {
        return Err(FilterError::TooDeep);
    }
    if rest.is_empty() && !tok.quoted {
        return Err(FilterError::DanglingNot);
    }
    let mut term = parse_positive(rest, tok.quoted)?;
    for _ in 0..nots {
        term = Term::Not(Box::new(term));
    }
    Ok(term)
}

/// A term without leading `!` (`quoted`: a text search whatever it says).
fn parse_positive(text: &str, quoted: bool) -> Result<Term, FilterError> {
    if quoted {
        return Ok(Term::Text(text.to_lowercase()));
    }
    if let Some((key, value)) = text.split_once(':') {
        let key_l = key.to_ascii_lowercase();
        let canon: &'static str = match key_l.as_str() {
            "name" | "n" => "name",
            "channel" | "ch" => "channel",
            "link" | "l" => "link",
            "dir" | "d" => "dir",
            "conn" | "c" => "conn",
            "proto" | "p" => "proto",
            "rule" | "r" => "rule",
            _ => return field_term(key, value),
        };
        let values: Vec<&str> = value.split('|').filter(|s| !s.is_empty()).collect();
        if values.is_empty() {
            return Err(FilterError::EmptyValue(canon.to_string()));
        }
        let lower = || values.iter().map(|s| s.to_lowercase()).collect::<Vec<_>>();
        return Ok(match canon {
            "name" => Term::Name(known_names(lower())?),
            "link" => Term::Link(lower()),
            "proto" => Term::Proto(known_parts(canon, lower(), &proto_names())?),
            "rule" => Term::Rule(known_parts(canon, lower(), &rule_ids())?),
            "channel" => Term::Channel(numbers(canon, &values, u16::MAX)?),
            "conn" => Term::Conn(numbers(canon, &values, u64::MAX)?),
            _ => {
                let d = match value.to_ascii_lowercase().as_str() {
                    "c2s" | "->" | "in" | "client" => Dir::C2S,
                    "s2c" | "<-" | "out" | "server" => Dir::S2C,
                    other => return Err(FilterError::BadDir(other.to_string())),
                };
                Term::Dir(d)
            }
        });
    }
    match text.to_ascii_lowercase().as_str() {
        "violations" | "violation" | "viol" => Ok(Term::Violations),
        other => Ok(Term::Text(other.to_string())),
    }
}

/// What a row that is no frame is named in the frame list (its `name:`).
const ROW_NAMES: [&str; 4] = ["header", "gap", "close", "malformed"];

/// The built-in keys, by their full names (`n:` and the other one-letter forms aside).
pub const KEYS: [&str; 7] = ["name", "channel", "link", "dir", "conn", "proto", "rule"];

/// What `proto:` matches a part of.
pub fn proto_names() -> Vec<&'static str> {
    crate::protocol::ProtocolId::ALL
        .iter()
        .flat_map(|p| p.proto_names().iter().copied())
        .collect()
}

/// What `dir:` takes.
pub const DIR_NAMES: [&str; 2] = ["c2s", "s2c"];

/// The name of every frame of either protocol and of every row that is no frame: what
/// `name:` matches a part of.
pub fn frame_names() -> Vec<&'static str> {
    crate::protocol::ProtocolId::ALL
        .iter()
        .flat_map(|p| p.frame_names())
        .chain(ROW_NAMES)
        .collect()
}

/// The id of every rule a violation can carry: what `rule:` matches a part of.
pub fn rule_ids() -> Vec<&'static str> {
    crate::state::rules::catalog().map(|r| r.id).collect()
}

/// The candidate in `among` closest to `typed`, when it is close enough to be what was meant.
pub(crate) fn closest(typed: &str, among: &[&'static str]) -> Option<&'static str> {
    among
        .iter()
        .map(|n| (strsim::damerau_levenshtein(typed, n), *n))
        .min()
        .filter(|(d, n)| *d <= (n.len() / 3).max(2))
        .map(|(_, n)| n)
}

/// `name:` values, each a part of some frame's or row's name (matching is by part, case
/// aside): a misspelt name would match nothing, silently, so it is refused with the closest
/// name there is.
fn known_names(values: Vec<String>) -> Result<Vec<String>, FilterError> {
    let names = frame_names();
    for v in &values {
        if !names.iter().any(|n| n.contains(v.as_str())) {
            return Err(FilterError::UnknownName {
                value: v.clone(),
                suggestion: closest(v, &names),
            });
        }
    }
    Ok(values)
}

/// Values of `key:` that match by part (`proto:`, `rule:`), each a part of one of `known`:
/// one that is part of none would match nothing, so it is refused with the closest there is.
fn known_parts(
    key: &str,
    values: Vec<String>,
    known: &[&'static str],
) -> Result<Vec<String>, FilterError> {
    for v in &values {
        if !known.iter().any(|n| n.contains(v.as_str())) {
            return Err(FilterError::UnknownValue {
                key: key.to_string(),
                value: v.clone(),
                suggestion: closest(v, known),
            });
        }
    }
    Ok(values)
}

/// `key:value` where `key` is no built-in key: a field term when some frame has such a field.
fn field_term(key: &str, value: &str) -> Result<Term, FilterError> {
    let path = key.to_ascii_lowercase();
    if !is_field_name(&path) || path.split('.').any(str::is_empty) {
        let first = path.split('.').next().unwrap_or(&path);
        let known: Vec<&'static str> = KEYS.into_iter().chain(field::field_names()).collect();
        return Err(FilterError::UnknownKey {
            key: key.to_string(),
            suggestion: closest(first, &known)
                .or_else(|| {
                    known
                        .iter()
                        .filter(|k| k.starts_with(first))
                        .min_by_key(|k| k.len())
                        .copied()
                })
                .filter(|_| !first.is_empty()),
        });
    }
    let values: Vec<Wanted> = value
        .split('|')
        .filter(|s| !s.is_empty())
        .map(Wanted::new)
        .collect();
    if values.is_empty() {
        return Err(FilterError::EmptyValue(path));
    }
    for (text, w) in value.split('|').filter(|s| !s.is_empty()).zip(&values) {
        field::check_range(&path, text, w)?;
        field::check_choice(&path, w)?;
    }
    Ok(Term::Field(
        path.split('.').map(str::to_string).collect(),
        values,
    ))
}

/// The values of `key:` as numbers of type `T`, at most `max`: one that is no integer is
/// [`FilterError::NotANumber`], one that `T` cannot hold [`FilterError::OutOfRange`].
fn numbers<T>(key: &'static str, values: &[&str], max: T) -> Result<Vec<T>, FilterError>
where
    T: TryFrom<i128> + std::fmt::Display,
{
    values
        .iter()
        .map(|v| {
            let n: i128 = v.parse().map_err(|_| FilterError::NotANumber {
                key,
                value: v.to_string(),
            })?;
            T::try_from(n).map_err(|_| FilterError::OutOfRange {
                key: key.to_string(),
                value: v.to_string(),
                range: format!("0..={max}"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(name: &'a str, summary: &'a str, rules: &'a [String]) -> FrameFacts<'a> {
        FrameFacts {
            conn: 2,
            dir: Some(Dir::C2S),
            channel: Some(1),
            name,
            summary,
            link: Some("orders-sender"),
            proto: "amqp-1.0",
            rules,
            frame: None,
        }
    }

    #[test]
    fn empty_filter_matches_everything() {
        let f = Filter::parse("   ").unwrap();
        assert!(f.is_empty());
        assert!(f.matches(&facts("open", "", &[])));
    }

    #[test]
    fn keys_parse_to_their_terms() {
        let f = Filter::parse("name:transfer channel:1|3 link:orders dir:c2s conn:7 violations")
            .unwrap();
        assert_eq!(
            f.terms,
            vec![
                Term::Name(vec!["transfer".into()]),
                Term::Channel(vec![1, 3]),
                Term::Link(vec!["orders".into()]),
                Term::Dir(Dir::C2S),
                Term::Conn(vec![7]),
                Term::Violations,
            ]
        );
    }

    #[test]
    fn terms_are_anded_and_negated() {
        let rules = vec!["amqp10.link.credit-exceeded".to_string()];
        let t = facts("transfer", "@transfer handle=0 delivery-id=4", &rules);
        assert!(Filter::parse("name:transfer").unwrap().matches(&t));
        assert!(
            Filter::parse("name:transfer channel:1")
                .unwrap()
                .matches(&t)
        );
        assert!(
            !Filter::parse("name:transfer channel:2")
                .unwrap()
                .matches(&t)
        );
        assert!(!Filter::parse("!name:transfer").unwrap().matches(&t));
        assert!(Filter::parse("!dir:s2c").unwrap().matches(&t));
        assert!(Filter::parse("violations").unwrap().matches(&t));
        assert!(!Filter::parse("!violations").unwrap().matches(&t));
        assert!(Filter::parse("rule:credit").unwrap().matches(&t));
        assert!(!Filter::parse("rule:frame-after").unwrap().matches(&t));
        assert!(
            !Filter::parse("violations")
                .unwrap()
                .matches(&facts("flow", "", &[]))
        );
    }

    #[test]
    fn link_matches_link_name_or_summary() {
        let t = facts("transfer", "handle=0", &[]);
        assert!(Filter::parse("link:ORDERS").unwrap().matches(&t));
        assert!(!Filter::parse("link:invoices").unwrap().matches(&t));
        let mut q = facts("basic.consume", "basic.consume queue=\"invoices\"", &[]);
        q.link = None;
        assert!(Filter::parse("link:invoices").unwrap().matches(&q));
    }

    #[test]
    fn free_words_search_summary_and_name_case_insensitively() {
        let t = facts("attach", "@attach name=\"Orders-Sender\" role=sender", &[]);
        assert!(Filter::parse("orders role").unwrap().matches(&t));
        assert!(Filter::parse("ATTACH").unwrap().matches(&t));
        assert!(!Filter::parse("orders receiver").unwrap().matches(&t));
        assert!(Filter::parse("\"role=sender\"").unwrap().matches(&t));
        assert_eq!(
            Filter::parse("link:\"my orders\"").unwrap().terms,
            vec![Term::Link(vec!["my orders".into()])]
        );
        assert_eq!(
            Filter::parse("!\"violations\"").unwrap().terms,
            vec![Term::Not(Box::new(Term::Text("violations".into())))]
        );
        // A quoted keyword is a word, not the keyword.
        assert_eq!(
            Filter::parse("\"violations\"").unwrap().terms,
            vec![Term::Text("violations".into())]
        );
    }

    #[test]
    fn dir_accepts_arrows_and_rows_without_direction_never_match() {
        assert_eq!(
            Filter::parse("dir:<-").unwrap().terms,
            vec![Term::Dir(Dir::S2C)]
        );
        let mut t = facts("close", "", &[]);
        t.dir = None;
        t.channel = None;
        assert!(!Filter::parse("dir:c2s").unwrap().matches(&t));
        assert!(!Filter::parse("channel:0").unwrap().matches(&t));
    }

    #[test]
    fn bad_filters_are_errors_not_panics() {
        assert_eq!(
            Filter::parse("colour:red"),
            Err(FilterError::UnknownKey {
                key: "colour".into(),
                suggestion: None
            })
        );
        assert!(matches!(
            Filter::parse("channel:one"),
            Err(FilterError::NotANumber { key: "channel", .. })
        ));
        assert!(matches!(
            Filter::parse("channel:99999"),
            Err(FilterError::OutOfRange { .. })
        ));
        assert!(matches!(
            Filter::parse("conn:18446744073709551616"),
            Err(FilterError::OutOfRange { .. })
        ));
        assert!(Filter::parse("conn:18446744073709551615").is_ok());
        assert_eq!(
            Filter::parse("dir:up"),
            Err(FilterError::BadDir("up".into()))
        );
        assert_eq!(
            Filter::parse("name:"),
            Err(FilterError::EmptyValue("name".into()))
        );
        assert_eq!(Filter::parse("!"), Err(FilterError::DanglingNot));
        assert_eq!(Filter::parse("\"open"), Err(FilterError::UnterminatedQuote));
        // A misspelt frame name matches nothing: refused, with the closest name.
        let e = Filter::parse("name:tranfer").unwrap_err();
        assert_eq!(
            e,
            FilterError::UnknownName {
                value: "tranfer".into(),
                suggestion: Some("transfer")
            }
        );
        assert!(e.to_string().contains("did you mean name:transfer?"), "{e}");
        assert!(matches!(
            Filter::parse("name:basic.pubish"),
            Err(FilterError::UnknownName {
                suggestion: Some("basic.publish"),
                ..
            })
        ));
        assert!(matches!(
            Filter::parse("name:zzzzzzzzzz"),
            Err(FilterError::UnknownName {
                suggestion: None,
                ..
            })
        ));
        // Every other name that would match nothing is refused with the closest there is.
        let e = Filter::parse("chanel:1").unwrap_err();
        assert!(e.to_string().contains("did you mean channel:?"), "{e}");
        let e = Filter::parse("delivery-i:1").unwrap_err();
        assert!(e.to_string().contains("did you mean delivery-id:?"), "{e}");
        let e = Filter::parse("proto:amqp-0-9-2").unwrap_err();
        assert!(
            e.to_string().contains("did you mean proto:amqp-0-9-1?"),
            "{e}"
        );
        let e = Filter::parse("rule:amqp10.link.handle-in-uze").unwrap_err();
        assert!(
            matches!(&e, FilterError::UnknownValue { suggestion: Some(s), .. } if *s == "amqp10.link.handle-in-use"),
            "{e}"
        );
        let e = Filter::parse("role:recever").unwrap_err();
        assert!(e.to_string().contains("did you mean role:receiver?"), "{e}");
        for ok in [
            "proto:0-9-1",
            "rule:credit",
            "rule:handle-in",
            "role:true",
            "rcv-settle-mode:1",
            "snd-settle-mode:mixed",
        ] {
            assert!(Filter::parse(ok).is_ok(), "{ok}");
        }
        // Parts of names, of either protocol and of rows that are no frame, are names.
        for ok in [
            "name:TRANSFER",
            "name:sasl",
            "name:basic.",
            "name:publish|ack",
            "name:gap",
        ] {
            assert!(Filter::parse(ok).is_ok(), "{ok}");
        }
        // Arbitrary junk never panics.
        for s in [
            "::",
            "!!",
            "!:",
            ":x",
            "a:b:c",
            "\u{1F600}:x",
            "!\"\"",
            "ch:|",
        ] {
            let _ = Filter::parse(s);
        }
    }

    #[test]
    fn negations_nest_up_to_the_limit_and_a_longer_run_is_an_error() {
        let deepest = format!("{}name:open", "!".repeat(MAX_NOT_DEPTH));
        let f = Filter::parse(&deepest).unwrap();
        // An even number of '!' is the term itself.
        assert!(f.matches(&facts("open", "", &[])));
        assert!(!f.matches(&facts("close", "", &[])));
        let deeper = format!("!{deepest}");
        assert_eq!(Filter::parse(&deeper), Err(FilterError::TooDeep));
        // Far beyond the limit: the same error, no stack spent on it.
        let hostile = "!".repeat(20_000);
        assert_eq!(Filter::parse(&hostile), Err(FilterError::TooDeep));
        assert!(FilterError::TooDeep.to_string().contains("16"));
    }

    #[test]
    fn non_ascii_text_search_works() {
        let t = facts("transfer", "body=\"Grüße\"", &[]);
        assert!(Filter::parse("GRÜSSE").is_ok());
        assert!(Filter::parse("grüße").unwrap().matches(&t));
    }
}
