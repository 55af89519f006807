//! Entries by key for the per-frame paths (channels by number, consumers by tag): one vector,
//! the entry found last looked at first, a scan while there are few and a hash index once
//! there are more.
//!
//! A connection's frames mostly name the channel (and the consumer) the frame before named,
//! so most look-ups compare one key and hash nothing; a peer opening many channels or
//! consumers still finds each in O(1) through the index. Iteration follows the vector, not the
//! keys: callers that show entries in key order sort them.

use std::borrow::Borrow;
use std::hash::Hash;

use crate::hash::HashMap;

/// Up to this many entries are found by scanning; past it, through the index.
const SCAN: usize = 8;

/// Entries by key (see the module doc).
#[derive(Clone, Debug)]
pub struct Slots<K, V> {
    entries: Vec<(K, V)>,
    /// Where each key is in `entries`, kept from the time they were more than [`SCAN`].
    index: Option<HashMap<K, usize>>,
    /// Where the entry found or added last is (may be out of range after a removal).
    hint: usize,
}

impl<K, V> Default for Slots<K, V> {
    fn default() -> Self {
        Slots {
            entries: Vec::new(),
            index: None,
            hint: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V> Slots<K, V> {
    /// Where `key` is in `entries`.
    #[inline]
    fn position<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some((k, _)) = self.entries.get(self.hint)
            && k.borrow() == key
        {
            return Some(self.hint);
        }
        self.search(key)
    }

    /// [`Slots::position`] past the hint.
    #[inline(never)]
    fn search<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|(k, _)| k.borrow() == key),
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.position(key).map(|i| &self.entries[i].1)
    }

    /// [`Slots::get_mut`], the entry looked at first tested by `same` before equality: a test
    /// cheaper than equality that implies it (the same bytes at the same address).
    #[inline]
    pub fn get_mut_by(&mut self, key: &K, same: impl Fn(&K) -> bool) -> Option<&mut V> {
        if self.entries.get(self.hint).is_some_and(|(k, _)| same(k)) {
            return Some(&mut self.entries[self.hint].1);
        }
        self.get_mut(key)
    }

    /// The value of `key`, to change; it is looked at first next time.
    #[inline]
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.position(key)?;
        self.hint = i;
        Some(&mut self.entries[i].1)
    }

    /// Whether `key` has an entry.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.position(key).is_some()
    }

    /// The value of `key`, made by `make` when there is none.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        if self.entries.get(self.hint).is_some_and(|(k, _)| *k == key) {
            return &mut self.entries[self.hint].1;
        }
        self.find_or_insert_with(key, make)
    }

    /// [`Slots::get_or_insert_with`] past the hint.
    #[inline(never)]
    fn find_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.search(&key) {
            Some(i) => i,
            None => self.push(key, make()),
        };
        self.hint = i;
        &mut self.entries[i].1
    }

    /// Sets the value of `key`; the value it replaces, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => {
                self.hint = i;
                Some(std::mem::replace(&mut self.entries[i].1, value))
            }
            None => {
                self.push(key, value);
                None
            }
        }
    }

    /// Adds an entry for a key that has none; where it went.
    fn push(&mut self, key: K, value: V) -> usize {
        let i = self.entries.len();
        match &mut self.index {
            Some(index) => {
                index.insert(key.clone(), i);
            }
            None if i >= SCAN => {
                let mut index = HashMap::default();
                index.reserve(i + 1);
                for (j, (k, _)) in self.entries.iter().enumerate() {
                    index.insert(k.clone(), j);
                }
                index.insert(key.clone(), i);
                self.index = Some(index);
            }
            None => {}
        }
        self.entries.push((key, value));
        self.hint = i;
        i
    }

    /// Takes the entry of `key` out; its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.position(key)?;
        let (k, v) = self.entries.swap_remove(i);
        if let Some(index) = &mut self.index {
            index.remove::<K>(&k);
            if let Some((moved, _)) = self.entries.get(i) {
                index.insert(moved.clone(), i);
            }
        }
        Some(v)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every entry, to change, in no particular order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Every value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Every value, to change, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Takes every entry out.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (K, V)> {
        self.index = None;
        self.hint = 0;
        self.entries.drain(..)
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.index = None;
        self.hint = 0;
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on `Slots` and on a `BTreeMap` leave the same entries, across the
    /// change from scanning to the index.
    #[test]
    fn slots_hold_what_a_map_holds() {
        let mut slots: Slots<u16, u32> = Slots::default();
        let mut map = std::collections::BTreeMap::new();
        let mut x: u32 = 12345;
        for step in 0..5000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let key = ((x >> 16) % 40) as u16;
            match (x >> 8) % 5 {
                0 | 1 => assert_eq!(slots.insert(key, step), map.insert(key, step)),
                2 => assert_eq!(slots.remove(&key), map.remove(&key)),
                3 => {
                    *slots.get_or_insert_with(key, || 7) += 1;
                    *map.entry(key).or_insert(7) += 1;
                }
                _ => assert_eq!(slots.get_mut(&key).copied(), map.get(&key).copied()),
            }
            assert_eq!(slots.len(), map.len());
            if step % 97 == 0 {
                let mut held: Vec<(u16, u32)> = slots.iter().map(|(k, v)| (*k, *v)).collect();
                held.sort();
                let want: Vec<(u16, u32)> = map.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(held, want);
            }
            if step == 2500 {
                let drained: usize = slots.drain().count();
                assert_eq!(drained, map.len());
                map.clear();
            }
        }
    }

    #[test]
    fn byte_keys_are_found_by_slice() {
        let mut slots: Slots<Vec<u8>, u8> = Slots::default();
        for i in 0..20u8 {
            slots.insert(vec![b'c', i], i);
        }
        assert_eq!(slots.get(&[b'c', 13][..]), Some(&13));
        assert_eq!(slots.remove(&[b'c', 0][..]), Some(0));
        assert!(!slots.contains_key(&[b'c', 0][..]));
        assert_eq!(slots.get(&[b'c', 19][..]), Some(&19));
    }
}
