//! The diagnoses of a run, as `check`, the proxy's and replay's verdicts and `stats` report
//! them: each diagnosis once (its start and end events joined by its identity), in order of
//! connection and start. Bounded: past [`MAX_KEPT`] diagnoses, later ones are only counted.

use std::collections::{BTreeMap, HashMap};

use crate::event::{ConnId, Diagnosis, Timestamp};

/// Diagnoses kept whole, at most.
pub const MAX_KEPT: usize = 10_000;

/// The identity of a diagnosis (see [`Diagnosis::key`]).
type Key = (&'static str, ConnId, String, Timestamp);

/// A run's diagnoses (see the module doc).
#[derive(Debug, Default)]
pub struct Diagnoses {
    kept: Vec<Diagnosis>,
    index: HashMap<Key, usize>,
    /// Diagnoses started, by check id (kept or not).
    by_id: BTreeMap<&'static str, u64>,
}

fn key(d: &Diagnosis) -> Key {
    (d.check.id, d.conn, d.name.clone(), d.since)
}

impl Diagnoses {
    /// Take a diagnosis event: a start is kept, an end completes the start it ends.
    pub fn take(&mut self, d: &Diagnosis) {
        let k = key(d);
        if let Some(&i) = self.index.get(&k) {
            if d.ended.is_some() {
                self.kept[i] = d.clone();
            }
            return;
        }
        if d.ended.is_none() {
            *self.by_id.entry(d.check.id).or_default() += 1;
        }
        self.keep(k, d);
    }

    fn keep(&mut self, k: Key, d: &Diagnosis) {
        if self.kept.len() < MAX_KEPT {
            self.index.insert(k, self.kept.len());
            self.kept.push(d.clone());
        }
    }

    /// Add another thread's (their connections never overlap).
    pub fn absorb(&mut self, other: Diagnoses) {
        for d in other.kept {
            let k = key(&d);
            if !self.index.contains_key(&k) {
                self.keep(k, &d);
            }
        }
        for (id, n) in other.by_id {
            *self.by_id.entry(id).or_default() += n;
        }
    }

    /// Every diagnosis kept, by connection, start time, id and name.
    pub fn list(&self) -> Vec<&Diagnosis> {
        let mut v: Vec<&Diagnosis> = self.kept.iter().collect();
        v.sort_by(|a, b| {
            (a.conn, a.at, a.check.id, &a.name).cmp(&(b.conn, b.at, b.check.id, &b.name))
        });
        v
    }

    /// How many started, by check id.
    pub fn counts(&self) -> &BTreeMap<&'static str, u64> {
        &self.by_id
    }

    /// How many started in all.
    pub fn total(&self) -> u64 {
        self.by_id.values().sum()
    }

    /// Those `ids` names (`all`: every one): what `--fail-on-diagnosis` fails on.
    pub fn failing(&self, ids: &[String]) -> u64 {
        self.by_id
            .iter()
            .filter(|(id, _)| ids.iter().any(|i| i == "all" || i == *id))
            .map(|(_, n)| n)
            .sum()
    }

    /// A diagnosis in one line: `conn 1 link "q" c2s: amqp10.link.no-credit since T (held
    /// 31.000 s, cleared): detail`, its name and detail escaped.
    pub fn line(d: &Diagnosis) -> String {
        use crate::base::escape::Escaped;
        let end = match &d.ended {
            Some(e) => format!(
                "held {:.3} s, {}",
                d.held_us(e.ts) as f64 / 1e6,
                e.why.as_str()
            ),
            None => "still held".into(),
        };
        format!(
            "conn {} {}: {} since {} ({end}): {}",
            d.conn,
            Escaped(&d.name),
            d.check.id,
            d.since.rfc3339(),
            Escaped(&d.detail)
        )
    }
}
