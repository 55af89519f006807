//! `--metrics-top-links N`: the AMQP 1.0 links with the most traffic get a `link` label of
//! their own, at most `N` of them; everything else is summed under `link="other"`.
//!
//! A counter never goes down, so a link once labelled keeps its series, and what a link
//! carried before it was labelled stays in `other`. Which links are labelled: traffic is
//! counted per link name in a table of at most [`CANDIDATES_PER_SLOT`] × `N` names (when it is
//! full, the name with the least traffic makes room and its count is inherited, as in the
//! space-saving algorithm: a heavy link cannot be starved by many small ones), and every
//! [`REVIEW_US`] of event time the heaviest names not yet labelled take the free slots. Memory
//! is bounded by `N` whatever the number of links; names are escaped and cut to
//! [`MAX_NAME`] characters before they become a label.

use std::sync::Arc;

use crate::base::escape::Escaped;
use crate::hash::HashMap;

/// Names counted per label slot.
pub const CANDIDATES_PER_SLOT: usize = 8;
/// How often free slots are given to the heaviest links, in µs of event time.
pub const REVIEW_US: i64 = 1_000_000;
/// The longest link label, in characters (a longer name is cut, ending with `…`).
pub const MAX_NAME: usize = 128;
/// The label of the links summed.
pub const OTHER: &str = "other";

/// Which links are labelled (see the module doc).
#[derive(Debug)]
pub(super) struct TopLinks {
    slots: usize,
    /// Labelled names, with their label.
    labelled: HashMap<Arc<str>, Arc<str>>,
    /// Traffic per name not labelled, at most `slots * CANDIDATES_PER_SLOT`.
    candidates: HashMap<Arc<str>, u64>,
    next_review: Option<i64>,
}

impl TopLinks {
    /// Up to `slots` links labelled.
    pub(super) fn new(slots: usize) -> Self {
        TopLinks {
            slots,
            labelled: HashMap::default(),
            candidates: HashMap::default(),
            next_review: None,
        }
    }

    /// `bytes` of link `name` at `ts` (µs): the label they count under (`None`: [`OTHER`]).
    pub(super) fn label(&mut self, name: &Arc<str>, bytes: u64, ts: i64) -> Option<Arc<str>> {
        self.review(ts);
        if let Some(l) = self.labelled.get(name) {
            return Some(l.clone());
        }
        if self.labelled.len() < self.slots {
            self.count(name, bytes);
        }
        None
    }

    fn count(&mut self, name: &Arc<str>, bytes: u64) {
        if let Some(n) = self.candidates.get_mut(name) {
            *n += bytes;
            return;
        }
        let cap = self.slots.saturating_mul(CANDIDATES_PER_SLOT).max(1);
        let mut inherited = 0;
        if self.candidates.len() >= cap
            && let Some((least, n)) = self
                .candidates
                .iter()
                .min_by_key(|(_, n)| **n)
                .map(|(k, n)| (k.clone(), *n))
        {
            self.candidates.remove(&least);
            inherited = n;
        }
        self.candidates.insert(name.clone(), inherited + bytes);
    }

    /// Free slots to the heaviest candidates, once per [`REVIEW_US`].
    fn review(&mut self, ts: i64) {
        let due = *self.next_review.get_or_insert(ts + REVIEW_US);
        if ts < due {
            return;
        }
        self.next_review = Some(ts + REVIEW_US);
        let free = self.slots.saturating_sub(self.labelled.len());
        if free == 0 {
            self.candidates = HashMap::default();
            return;
        }
        let mut heavy: Vec<(Arc<str>, u64)> = self.candidates.drain().collect();
        heavy.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (name, _) in heavy.into_iter().take(free) {
            let label = label_of(&name);
            self.labelled.insert(name, label);
        }
    }
}

/// A link name as a label value: escaped as every wire string in a text output, and cut.
fn label_of(name: &str) -> Arc<str> {
    let escaped = Escaped(name).to_string();
    if escaped.chars().count() <= MAX_NAME {
        return Arc::from(escaped);
    }
    let mut cut: String = escaped.chars().take(MAX_NAME - 1).collect();
    cut.push('…');
    Arc::from(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heaviest_links_get_the_slots_and_keep_them() {
        let mut top = TopLinks::new(2);
        let (a, b, c) = (Arc::from("a"), Arc::from("b"), Arc::from("c"));
        assert_eq!(top.label(&a, 10, 0), None);
        assert_eq!(top.label(&b, 500, 1), None);
        assert_eq!(top.label(&c, 300, 2), None);
        // The review gives the two slots to b and c; a stays summed.
        assert_eq!(top.label(&b, 1, REVIEW_US).as_deref(), Some("b"));
        assert_eq!(top.label(&c, 1, REVIEW_US + 1).as_deref(), Some("c"));
        assert_eq!(top.label(&a, 1_000_000, REVIEW_US + 2), None);
        assert_eq!(top.label(&a, 1, 5 * REVIEW_US), None);
        assert!(top.candidates.is_empty());
    }

    #[test]
    fn many_small_links_neither_grow_the_table_nor_starve_a_heavy_one() {
        let mut top = TopLinks::new(1);
        let heavy: Arc<str> = Arc::from("heavy");
        for i in 0..10_000 {
            top.label(&Arc::from(format!("small{i}")), 1, 1);
            if i % 2 == 0 {
                top.label(&heavy, 5, 1);
            }
            assert!(top.candidates.len() <= CANDIDATES_PER_SLOT);
        }
        assert_eq!(
            top.label(&heavy, 1, 2 * REVIEW_US).as_deref(),
            Some("heavy")
        );
    }

    #[test]
    fn a_wire_name_is_escaped_and_cut() {
        assert_eq!(&*label_of("a\u{1b}b"), Escaped("a\u{1b}b").to_string());
        let long = label_of(&"n".repeat(1000));
        assert_eq!(long.chars().count(), MAX_NAME);
        assert!(long.ends_with('…'));
    }
}
