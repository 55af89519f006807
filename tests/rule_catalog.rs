//! A rule missing from the catalog cannot fire: every `Rule` the source defines (each
//! `pub static NAME: Rule` in the rules files) is in `state::rules::catalog()`, which
//! the rule table of docs/rules.md, `--ignore`, `--severity` and the baselines are checked against. A rule
//! added to a tracker and forgotten in its file's `RULES` list fails here.

use std::path::Path;

/// The ids of the rules `src` defines: the first string literal after each
/// `pub static NAME: Rule`.
fn defined_ids(src: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("pub static ") {
        rest = &rest[at + "pub static ".len()..];
        let Some(colon) = rest.find(':') else { break };
        let name = rest[..colon].trim().to_string();
        let after = rest[colon + 1..].trim_start();
        if !after.starts_with("Rule =") {
            continue;
        }
        let Some(open) = after.find('"') else { break };
        let Some(len) = after[open + 1..].find('"') else {
            break;
        };
        out.push((name, after[open + 1..open + 1 + len].to_string()));
    }
    out
}

#[test]
fn every_rule_the_source_defines_is_in_the_catalog() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut defined = Vec::new();
    for file in [
        "src/state/rules.rs",
        "src/state/amqp10/rules.rs",
        "src/state/amqp091/rules.rs",
    ] {
        let src = std::fs::read_to_string(root.join(file)).unwrap();
        let ids = defined_ids(&src);
        assert!(!ids.is_empty(), "{file} defines no rule?");
        defined.extend(ids.into_iter().map(|(name, id)| (file, name, id)));
    }
    let missing: Vec<_> = defined
        .iter()
        .filter(|(_, _, id)| amqpeek::state::rules::by_id(id).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "defined but not in the catalog: {missing:?}"
    );
    // And the catalog holds nothing the source does not define.
    let catalog = amqpeek::state::rules::catalog().count();
    assert_eq!(
        catalog,
        defined.len(),
        "catalog {catalog} rules, source {}",
        defined.len()
    );
}
