//! [`IdMap`]: values by a `u64` id, each at a slot that does not change while it is held. A
//! caller that remembers where a value sits (the route an AMQP 1.0 peer's run of transfers
//! caches to its session and link; the connection a router fed last) reaches it by slot, with
//! no hash look-up; any other look-up is by id, as in a hash map.
//!
//! Ids are the owner's own (never chosen by a peer). A slot freed by a removal is reused, so
//! the slots never outnumber the most entries held at once.

use crate::hash::HashMap;

/// Values by id, each at a fixed slot while held (see the module documentation).
#[derive(Clone, Debug)]
pub struct IdMap<V> {
    /// The entries, each with its id; None: a free slot.
    slots: Vec<Option<(u64, V)>>,
    /// The free slots.
    free: Vec<usize>,
    /// Id -> slot.
    by_id: HashMap<u64, usize>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::default(),
        }
    }
}

impl<V> IdMap<V> {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// No entry.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The slot of `id`, if held.
    #[inline]
    pub fn slot(&self, id: &u64) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: &u64) -> Option<&V> {
        let i = self.slot(id)?;
        self.slots.get(i)?.as_ref().map(|(_, v)| v)
    }

    /// The value of `id`, to change.
    #[inline]
    pub fn get_mut(&mut self, id: &u64) -> Option<&mut V> {
        let i = self.slot(id)?;
        self.slots.get_mut(i)?.as_mut().map(|(_, v)| v)
    }

    /// The value of `id` if it is at `slot` (None if `slot` is free or holds another id).
    #[inline]
    pub fn at_mut(&mut self, slot: usize, id: u64) -> Option<&mut V> {
        match self.slots.get_mut(slot) {
            Some(Some((k, v))) if *k == id => Some(v),
            _ => None,
        }
    }

    /// The value of `id`, looked for at `slot` first, else by id.
    #[inline]
    pub fn at_or_get_mut(&mut self, slot: Option<usize>, id: u64) -> Option<&mut V> {
        let i = match slot {
            Some(i) if matches!(self.slots.get(i), Some(Some((k, _))) if *k == id) => i,
            _ => self.slot(&id)?,
        };
        self.slots.get_mut(i)?.as_mut().map(|(_, v)| v)
    }

    /// Whether `id` is held.
    pub fn contains_key(&self, id: &u64) -> bool {
        self.by_id.contains_key(id)
    }

    /// The value of `id`, looked for at `slot` first, else by id, else made by `make`; with
    /// the slot it is at.
    #[inline]
    pub fn get_or_insert_with(
        &mut self,
        slot: Option<usize>,
        id: u64,
        make: impl FnOnce() -> V,
    ) -> (usize, &mut V) {
        let i = match slot {
            Some(i) if matches!(self.slots.get(i), Some(Some((k, _))) if *k == id) => i,
            _ => match self.slot(&id) {
                Some(i) => i,
                None => self.vacant(id),
            },
        };
        (i, &mut self.slots[i].get_or_insert_with(|| (id, make())).1)
    }

    /// Put `v` at `id`; the value it replaces, if any.
    pub fn insert(&mut self, id: u64, v: V) -> Option<V> {
        if let Some(&i) = self.by_id.get(&id)
            && let Some(Some((_, old))) = self.slots.get_mut(i)
        {
            return Some(std::mem::replace(old, v));
        }
        let i = self.vacant(id);
        self.slots[i] = Some((id, v));
        None
    }

    /// A free slot (reused, or a new one), now `id`'s (which has none), still empty.
    #[cold]
    fn vacant(&mut self, id: u64) -> usize {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.by_id.insert(id, i);
        i
    }

    /// The slots, held or free: never more than the most entries held at once.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Take `id` out; its value.
    pub fn remove(&mut self, id: &u64) -> Option<V> {
        let i = self.by_id.remove(id)?;
        let (_, v) = self.slots.get_mut(i)?.take()?;
        self.free.push(i);
        Some(v)
    }

    /// Every entry (in slot order).
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &V)> {
        self.into_iter()
    }

    /// Every entry, to change (in slot order).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&u64, &mut V)> {
        self.slots.iter_mut().flatten().map(|(k, v)| (&*k, v))
    }

    /// Every value (in slot order).
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Every value, to change (in slot order).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.iter_mut().map(|(_, v)| v)
    }
}

/// An entry as [`IdMap::iter`] shows it.
fn entry<V>((k, v): &(u64, V)) -> (&u64, &V) {
    (k, v)
}

impl<'a, V> IntoIterator for &'a IdMap<V> {
    type Item = (&'a u64, &'a V);
    type IntoIter = std::iter::Map<
        std::iter::Flatten<std::slice::Iter<'a, Option<(u64, V)>>>,
        fn(&'a (u64, V)) -> (&'a u64, &'a V),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.slots.iter().flatten().map(entry::<V>)
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;
    use std::collections::BTreeMap;

    use crate::base::test_rng::Rng;

    #[test]
    fn an_id_map_agrees_with_a_map_and_its_slots_find_what_ids_find() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut m = IdMap::default();
        let mut b = BTreeMap::new();
        let mut next = 0u64;
        let mut most = 0;
        for step in 0..20_000u64 {
            let r = rng.next();
            let any = (r >> 16) % (next + 3);
            match r % 6 {
                0 | 1 => {
                    next += 1;
                    assert_eq!(m.insert(next, step), b.insert(next, step));
                }
                2 => assert_eq!(m.insert(any, step), b.insert(any, step)),
                3 => assert_eq!(m.remove(&any), b.remove(&any)),
                _ => {
                    if let (Some(x), Some(y)) = (m.get_mut(&any), b.get_mut(&any)) {
                        *x += 1;
                        *y += 1;
                    }
                    assert_eq!(m.get(&any), b.get(&any));
                }
            }
            most = most.max(b.len());
            assert_eq!(m.len(), b.len());
            assert_eq!(m.contains_key(&any), b.contains_key(&any));
            // A slot finds its own id only; a wrong or stale slot falls back to the id.
            let slot = m.slot(&any);
            assert_eq!(slot.is_some(), b.contains_key(&any));
            if let Some(i) = slot {
                assert_eq!(m.at_mut(i, any).copied(), b.get(&any).copied());
                assert_eq!(m.at_mut(i, any.wrapping_add(1)), None);
            }
            let stale = (r >> 40) as usize % (m.slots.len() + 1);
            let want = b.get(&any).copied();
            assert_eq!(m.at_or_get_mut(Some(stale), any).copied(), want);
            assert_eq!(m.at_or_get_mut(None, any).copied(), want);
            if step % 499 == 0 {
                let mut got: Vec<(u64, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
                got.sort_unstable();
                let want: Vec<(u64, u64)> = b.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(got, want);
                assert_eq!((&m).into_iter().count(), b.len());
                assert_eq!(m.values().count(), b.len());
            }
        }
        assert!(m.slots.len() <= most, "{} slots for {most}", m.slots.len());
        for v in m.values_mut() {
            *v = 0;
        }
        assert!(m.iter().all(|(_, v)| *v == 0));
        assert!(!m.is_empty());
    }
}
