//! The connection's links by name (AMQP 1.0 §2.6.1: "Links are named so that they can be
//! recovered when communication is interrupted"): what an attach must be judged against, its
//! name's links, found by key rather than by a scan of every link of the connection.
//!
//! Two questions an attach of link `name` (sent by `sender`) from `d` asks:
//! - is a link of that name and sender still attached by `d` (the name is in use)? Held:
//!   every known link with `d`'s handle set, by name, sending peer and `d`.
//! - which link does it answer, the partner having attached it and `d` not yet? Held: every
//!   link with the partner's handle set and no attach of `d`, by name, sending peer, `d` and
//!   session.
//!
//! The tracker re-indexes a link ([`LinkIndex::update`]) after each frame that changes its
//! handles or attaches, and drops it when the link is gone, so the index holds at most one
//! entry per tracked link and membership, and every lookup is a hash of the name and a step
//! into an ordered set (the first link by creation, as the checks want).

use std::collections::{BTreeMap, BTreeSet};

use crate::base::Dir;
use crate::hash::HashMap;
use crate::state::visits::visit;

use super::link::Link;

/// Per `[d][sender]` (`Dir::index`), the links of one name.
#[derive(Clone, Debug, Default)]
struct Named {
    /// Known links attached by `d`: link id -> session id.
    attached: [[BTreeMap<u64, u64>; 2]; 2],
    /// Links the partner of `d` attached and `d` has not: (session id, link id).
    awaiting: [[BTreeSet<(u64, u64)>; 2]; 2],
}

impl Named {
    fn is_empty(&self) -> bool {
        self.attached.iter().flatten().all(BTreeMap::is_empty)
            && self.awaiting.iter().flatten().all(BTreeSet::is_empty)
    }
}

/// A known link attached by `d`: its name is in use in `d`'s direction.
fn attached_by(l: &Link, d: Dir) -> bool {
    l.known && l.handle[d.index()].is_some()
}

/// A link attached by the partner of `d` that `d` has not attached: `d`'s attach answers it.
fn awaits(l: &Link, d: Dir) -> bool {
    l.attach[d.index()].is_none() && l.handle[d.flip().index()].is_some()
}

/// The links of a connection by name (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct LinkIndex {
    by_name: HashMap<String, Named>,
}

impl LinkIndex {
    /// Link `lid` of session `sid` is now as `l` says: its entries follow.
    pub fn update(&mut self, sid: u64, lid: u64, l: &Link) {
        let s = l.sender.index();
        let wanted = [Dir::C2S, Dir::S2C].map(|d| (attached_by(l, d), awaits(l, d)));
        let Some(named) = self.by_name.get_mut(l.name.as_str()) else {
            if wanted.iter().all(|&(a, w)| !a && !w) {
                return;
            }
            let named = self.by_name.entry(l.name.clone()).or_default();
            return place(named, sid, lid, s, wanted);
        };
        place(named, sid, lid, s, wanted);
        if named.is_empty() {
            self.by_name.remove(l.name.as_str());
        }
    }

    /// Link `lid` of session `sid` (named as `l`) is no longer tracked.
    pub fn remove(&mut self, sid: u64, lid: u64, l: &Link) {
        if let Some(named) = self.by_name.get_mut(l.name.as_str()) {
            place(named, sid, lid, l.sender.index(), [(false, false); 2]);
            if named.is_empty() {
                self.by_name.remove(l.name.as_str());
            }
        }
    }

    /// Bytes were missed: no link is known any more, so none holds its name in use.
    pub fn forget(&mut self) {
        self.by_name.retain(|_, named| {
            named.attached = Default::default();
            !named.is_empty()
        });
    }

    /// The first (by creation) known link `name`, sent by `sender`, that `d` has attached:
    /// (link id, session id).
    pub fn first_attached(&self, name: &str, d: Dir, sender: Dir) -> Option<(u64, u64)> {
        let first = self.by_name.get(name)?.attached[d.index()][sender.index()]
            .first_key_value()
            .map(|(l, s)| (*l, *s));
        visit(usize::from(first.is_some()));
        first
    }

    /// The first (by creation) link `name` of session `sid`, sent by `sender`, that `d`'s
    /// partner attached and `d` has not.
    pub fn first_awaiting(&self, sid: u64, name: &str, d: Dir, sender: Dir) -> Option<u64> {
        let first = self.by_name.get(name)?.awaiting[d.index()][sender.index()]
            .range((sid, 0)..=(sid, u64::MAX))
            .next()
            .map(|(_, l)| *l);
        visit(usize::from(first.is_some()));
        first
    }
}

/// Put `lid` in (or take it out of) each of `named`'s sets as `wanted[d]` says
/// (`(attached by d, awaiting d)`).
fn place(named: &mut Named, sid: u64, lid: u64, s: usize, wanted: [(bool, bool); 2]) {
    for (d, (attached, awaiting)) in wanted.into_iter().enumerate() {
        if attached {
            named.attached[d][s].insert(lid, sid);
        } else {
            named.attached[d][s].remove(&lid);
        }
        if awaiting {
            named.awaiting[d][s].insert((sid, lid));
        } else {
            named.awaiting[d][s].remove(&(sid, lid));
        }
    }
}
