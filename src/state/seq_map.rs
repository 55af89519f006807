//! [`SeqMap`] and [`SeqSet`]: ordered maps and sets of numeric keys that mostly arrive in
//! increasing order (AMQP 1.0 delivery-ids, AMQP 0-9-1 delivery tags and publish sequence
//! numbers), held as one sorted ring buffer of `(key, value)`.
//!
//! A new key above the last one is a `push_back`; a settlement of the oldest is a
//! `pop_front`; any other key is found by binary search and inserted or removed in place
//! (shifting the shorter side). A range (a disposition's `first..=last`, an ack with
//! `multiple`) is one contiguous run, taken out with one `drain`. Keys are ordered by their
//! numeric value, as a `BTreeMap`'s are: serial-number wrap-around is the caller's to split
//! into two ranges. Unbounded by itself: every owner caps how many keys it keeps.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

/// An ordered map of `K` to `V` held sorted in a ring buffer (see the module doc).
#[derive(Clone, Debug)]
pub struct SeqMap<K, V> {
    entries: VecDeque<(K, V)>,
}

impl<K, V> Default for SeqMap<K, V> {
    fn default() -> Self {
        SeqMap {
            entries: VecDeque::new(),
        }
    }
}

impl<K: Ord + Copy, V> SeqMap<K, V> {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forget every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// `Ok(i)`: `key` is at `i`; `Err(i)`: it would go at `i`. The ends are looked at first:
    /// keys mostly come after the last and leave from the first.
    #[inline]
    fn find(&self, key: &K) -> Result<usize, usize> {
        let n = self.entries.len();
        match self.entries.back() {
            None => return Err(0),
            Some((last, _)) if last < key => return Err(n),
            Some((last, _)) if last == key => return Ok(n - 1),
            _ => {}
        }
        match self.entries.front() {
            Some((first, _)) if first == key => Ok(0),
            Some((first, _)) if key < first => Err(0),
            _ => self.entries.binary_search_by(|(k, _)| k.cmp(key)),
        }
    }

    /// Put `value` at `key`; the value it replaces, if any. A key after the last (or into an
    /// empty map) is pushed at once.
    #[inline(always)]
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.entries.back().is_none_or(|(last, _)| *last < key) {
            self.entries.push_back((key, value));
            return None;
        }
        self.insert_within(key, value)
    }

    /// [`SeqMap::insert`] of a key not after the last.
    fn insert_within(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) if i == self.entries.len() => {
                self.entries.push_back((key, value));
                None
            }
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// The value at `key`.
    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        let i = self.find(key).ok()?;
        self.entries.get(i).map(|(_, v)| v)
    }

    /// The value at `key`, to change.
    #[inline]
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = self.find(key).ok()?;
        self.entries.get_mut(i).map(|(_, v)| v)
    }

    /// Whether `key` is held.
    #[inline]
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Take the entry at `key` out; its value. The first key is popped at once.
    #[inline(always)]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        if let Some((first, _)) = self.entries.front()
            && first == key
        {
            return self.entries.pop_front().map(|(_, v)| v);
        }
        self.remove_within(key)
    }

    /// [`SeqMap::remove`] of a key other than the first.
    fn remove_within(&mut self, key: &K) -> Option<V> {
        let i = self.find(key).ok()?;
        self.entries.remove(i).map(|(_, v)| v)
    }

    /// The positions `lo..hi` of the keys within `range` (empty when it holds none, or when
    /// its start is past its end). A start at or before the first key and an end at or past
    /// the last (a range from the oldest, or through the newest) are known without a search.
    #[inline]
    fn span(&self, range: &impl RangeBounds<K>) -> (usize, usize) {
        let (Some((first, _)), Some((last, _))) = (self.entries.front(), self.entries.back())
        else {
            return (0, 0);
        };
        let lo = match range.start_bound() {
            Bound::Included(k) if k <= first => 0,
            Bound::Excluded(k) if k < first => 0,
            Bound::Included(k) => self.entries.partition_point(|(x, _)| x < k),
            Bound::Excluded(k) => self.entries.partition_point(|(x, _)| x <= k),
            Bound::Unbounded => 0,
        };
        let hi = match range.end_bound() {
            Bound::Included(k) if k >= last => self.entries.len(),
            Bound::Excluded(k) if k > last => self.entries.len(),
            Bound::Included(k) => self.entries.partition_point(|(x, _)| x <= k),
            Bound::Excluded(k) => self.entries.partition_point(|(x, _)| x < k),
            Bound::Unbounded => self.entries.len(),
        };
        (lo, hi.max(lo))
    }

    /// The entries with keys within `range`, in key order.
    pub fn range(&self, range: impl RangeBounds<K>) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        let (lo, hi) = self.span(&range);
        self.entries.range(lo..hi).map(|(k, v)| (k, v))
    }

    /// Take the entries with keys within `range` out, in key order (all of them, whether or
    /// not the iterator is run to its end).
    pub fn drain_range(&mut self, range: impl RangeBounds<K>) -> impl Iterator<Item = (K, V)> + '_ {
        let (lo, hi) = self.span(&range);
        self.entries.drain(lo..hi)
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every value, in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }
}

/// An ordered set of `K`: a [`SeqMap`] with no values.
#[derive(Clone, Debug)]
pub struct SeqSet<K> {
    map: SeqMap<K, ()>,
}

impl<K> Default for SeqSet<K> {
    fn default() -> Self {
        SeqSet {
            map: SeqMap::default(),
        }
    }
}

impl<K: Ord + Copy> SeqSet<K> {
    /// An empty set (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Forget every key.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Add `key`; whether it was not held.
    pub fn insert(&mut self, key: K) -> bool {
        self.map.insert(key, ()).is_none()
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// Take `key` out; whether it was held.
    pub fn remove(&mut self, key: &K) -> bool {
        self.map.remove(key).is_some()
    }

    /// Take the keys within `range` out, in order (all of them, whether or not the iterator
    /// is run to its end).
    pub fn drain_range(&mut self, range: impl RangeBounds<K>) -> impl Iterator<Item = K> + '_ {
        self.map.drain_range(range).map(|(k, ())| k)
    }

    /// Every key, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &K> {
        self.map.iter().map(|(k, ())| k)
    }
}

impl<K: Ord + Copy> Extend<K> for SeqSet<K> {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for k in keys {
            self.insert(k);
        }
    }
}

impl<K> IntoIterator for SeqSet<K> {
    type Item = K;
    type IntoIter =
        std::iter::Map<std::collections::vec_deque::IntoIter<(K, ())>, fn((K, ())) -> K>;

    /// The keys, in order.
    fn into_iter(self) -> Self::IntoIter {
        self.map.entries.into_iter().map(|(k, ())| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    use crate::base::test_rng::Rng;

    fn same<K: Ord + Copy + std::fmt::Debug>(s: &SeqMap<K, u64>, b: &BTreeMap<K, u64>) {
        assert_eq!(s.len(), b.len());
        let got: Vec<(K, u64)> = s.iter().map(|(k, v)| (*k, *v)).collect();
        let want: Vec<(K, u64)> = b.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn in_order_out_of_order_and_ranges_agree_with_a_btreemap() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut s = SeqMap::new();
        let mut b = BTreeMap::new();
        let mut next = 0u32;
        for step in 0..20_000u64 {
            let r = rng.next();
            match r % 8 {
                // Mostly the next key up, sometimes a key anywhere below or above it.
                0..=3 => {
                    next += 1 + (r >> 32) as u32 % 3;
                    assert_eq!(s.insert(next, step), b.insert(next, step));
                }
                4 => {
                    let k = (r >> 16) as u32 % (next + 10);
                    assert_eq!(s.insert(k, step), b.insert(k, step));
                }
                5 => {
                    let k = (r >> 16) as u32 % (next + 10);
                    assert_eq!(s.remove(&k), b.remove(&k));
                    assert_eq!(s.contains_key(&k), b.contains_key(&k));
                }
                6 => {
                    let first = b.keys().next().copied().unwrap_or(0);
                    let last = first + (r >> 40) as u32 % 6;
                    let got: Vec<_> = s.drain_range(first..=last).collect();
                    let ids: Vec<u32> = b.range(first..=last).map(|(k, _)| *k).collect();
                    let want: Vec<_> = ids.iter().map(|k| (*k, b.remove(k).unwrap())).collect();
                    assert_eq!(got, want);
                }
                _ => {
                    let k = (r >> 16) as u32 % (next + 10);
                    if let (Some(x), Some(y)) = (s.get_mut(&k), b.get_mut(&k)) {
                        *x += 1;
                        *y += 1;
                    }
                    assert_eq!(s.get(&k), b.get(&k));
                    let lo = k.saturating_sub(5);
                    let got: Vec<_> = s.range(lo..k).map(|(k, v)| (*k, *v)).collect();
                    let want: Vec<_> = b.range(lo..k).map(|(k, v)| (*k, *v)).collect();
                    assert_eq!(got, want);
                }
            }
            if step % 997 == 0 {
                same(&s, &b);
            }
        }
        same(&s, &b);
        assert!(!b.is_empty());
    }

    #[test]
    fn keys_at_the_top_of_the_range_are_ordered_by_value_without_wrapping() {
        // Serial numbers near u32::MAX, then past it: 0.. sorts first, as in a BTreeMap.
        let mut s = SeqMap::new();
        let keys = [u32::MAX - 2, u32::MAX - 1, u32::MAX, 0, 1, 2];
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(s.insert(*k, i as u64), None);
        }
        let order: Vec<u32> = s.iter().map(|(k, _)| *k).collect();
        assert_eq!(order, [0, 1, 2, u32::MAX - 2, u32::MAX - 1, u32::MAX]);
        let high: Vec<u32> = s.range(u32::MAX - 1..).map(|(k, _)| *k).collect();
        assert_eq!(high, [u32::MAX - 1, u32::MAX]);
        let taken: Vec<u32> = s
            .drain_range(u32::MAX - 1..=u32::MAX)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(taken, [u32::MAX - 1, u32::MAX]);
        let low: Vec<u32> = s.drain_range(..=1).map(|(k, _)| k).collect();
        assert_eq!(low, [0, 1]);
        assert_eq!(
            s.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            [2, u32::MAX - 2]
        );
        // u64 tags at the very top: an inclusive range to u64::MAX needs no `+ 1`.
        let mut t = SeqSet::new();
        t.extend([u64::MAX, 7, u64::MAX - 1, 7]);
        assert_eq!(t.len(), 3);
        assert_eq!(
            t.drain_range(..=u64::MAX).collect::<Vec<_>>(),
            [7, u64::MAX - 1, u64::MAX]
        );
        assert!(t.is_empty());
    }

    #[test]
    fn ranges_of_every_bound_kind_within_and_beyond_the_ends_agree_with_a_btreemap() {
        // Bounds at, just inside and just outside the first and last keys (the spans known
        // without a search) and anywhere between, included, excluded or unbounded.
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..400u64 {
            let mut s = SeqMap::new();
            let mut b = BTreeMap::new();
            let n = rng.below(12);
            let mut k = 10 + rng.below(5) as u32;
            for v in 0..n {
                k += 1 + rng.below(3) as u32;
                s.insert(k, v);
                b.insert(k, v);
            }
            let (lo_key, hi_key) = (b.keys().next().copied(), b.keys().last().copied());
            let pick = |rng: &mut Rng| -> Bound<u32> {
                let near = match rng.below(3) {
                    0 => lo_key.unwrap_or(10),
                    1 => hi_key.unwrap_or(40),
                    _ => rng.below(60) as u32,
                };
                let key = (near + rng.below(3) as u32).saturating_sub(1);
                match rng.below(5) {
                    0 => Bound::Unbounded,
                    1 | 2 => Bound::Included(key),
                    _ => Bound::Excluded(key),
                }
            };
            for _ in 0..40 {
                let range = (pick(&mut rng), pick(&mut rng));
                let valid = match range {
                    (Bound::Included(a) | Bound::Excluded(a), Bound::Included(z))
                    | (Bound::Included(a), Bound::Excluded(z)) => a <= z,
                    (Bound::Excluded(a), Bound::Excluded(z)) => a < z,
                    _ => true,
                };
                let got: Vec<_> = s.range(range).map(|(k, v)| (*k, *v)).collect();
                let want: Vec<_> = if valid {
                    b.range(range).map(|(k, v)| (*k, *v)).collect()
                } else {
                    Vec::new()
                };
                assert_eq!(got, want, "round {round}: {range:?} of {b:?}");
            }
            if let Some(first) = lo_key {
                let taken: Vec<_> = s.drain_range(first..).map(|(k, _)| k).collect();
                assert_eq!(taken, b.keys().copied().collect::<Vec<_>>());
                assert!(s.is_empty());
            }
        }
    }

    #[test]
    fn empty_and_reversed_ranges_take_nothing() {
        let mut s: SeqMap<u32, ()> = SeqMap::new();
        assert_eq!(s.drain_range(3..=9).count(), 0);
        s.insert(5, ());
        s.insert(6, ());
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 9..=3;
        assert_eq!(s.range(reversed).count(), 0);
        assert_eq!(s.drain_range(7..).count(), 0);
        assert_eq!(s.drain_range(..5).count(), 0);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_set_agrees_with_a_btreeset() {
        let mut rng = Rng(12345);
        let mut s = SeqSet::new();
        let mut b = BTreeSet::new();
        for i in 0..5_000u64 {
            let r = rng.next();
            let k = if r.is_multiple_of(3) { r % 64 } else { i };
            match r % 5 {
                0 => assert_eq!(s.remove(&k), b.remove(&k)),
                1 => {
                    let rest = b.split_off(&(k + 1));
                    let want: Vec<u64> = std::mem::replace(&mut b, rest).into_iter().collect();
                    assert_eq!(s.drain_range(..=k).collect::<Vec<_>>(), want);
                }
                _ => assert_eq!(s.insert(k), b.insert(k)),
            }
            assert_eq!(s.contains(&k), b.contains(&k));
            assert_eq!(s.len(), b.len());
        }
        assert_eq!(
            s.clone().into_iter().collect::<Vec<_>>(),
            b.iter().copied().collect::<Vec<_>>()
        );
        assert_eq!(
            s.iter().copied().collect::<Vec<_>>(),
            b.into_iter().collect::<Vec<_>>()
        );
    }
}
