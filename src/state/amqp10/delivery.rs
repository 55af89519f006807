//! Deliveries (AMQP 1.0 §2.6.12 - §2.6.14): an unsettled delivery as the session tracks it, and
//! the delivery in progress on a link (a multi-transfer delivery, `more=true`).
//!
//! Pure data; bytes are zero-copy slices of the frames. Unsettled deliveries are ordered by
//! delivery-id, so a disposition's range is found by key (its size is what it settles, not
//! what is outstanding).

use std::ops::Bound::{self, Included, Unbounded};

use bytes::Bytes;

use crate::hash::HashMap;
use crate::state::seq_map::SeqMap;
use crate::state::visits::visit;

use crate::codec::amqp10::ReceiverSettleMode;

/// One unsettled delivery (sent unsettled, not yet settled by either end).
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The link it travels on.
    pub link: u64,
    /// Its delivery-tag.
    pub tag: TagKey,
    /// The transfer asked for this receiver settle mode.
    pub rcv_settle_mode: Option<ReceiverSettleMode>,
    /// All its transfers have been sent.
    pub complete: bool,
}

/// The delivery whose transfers are still coming (`more=true` so far).
#[derive(Clone, Debug)]
pub struct Partial {
    /// From the first transfer.
    pub delivery_id: Option<u32>,
    /// From the first transfer.
    pub tag: Option<Bytes>,
    /// From the first transfer.
    pub message_format: Option<u32>,
    /// Any transfer so far was settled.
    pub settled: bool,
    /// Transfers so far.
    pub transfers: u32,
    /// Its completion does not add to the count the receiver provably knows: it resumes a
    /// delivery, or the sender's flow stated a count while it was in progress (the count it
    /// stated may already include it).
    pub uncounted: bool,
    /// Its first transfer resumed a delivery (its payload may continue a message begun on an
    /// earlier attachment of the link).
    pub resumed: bool,
}

/// A session's unsettled deliveries and delivery-ids, per sending peer (index: `Dir::index`).
#[derive(Clone, Debug, Default)]
pub struct Deliveries {
    /// Unsettled deliveries by delivery-id.
    pub unsettled: [SeqMap<u32, Delivery>; 2],
    /// (link id, tag) -> delivery-id of the unsettled deliveries, once `indexed` (empty
    /// before).
    pub tags: [HashMap<(u64, TagKey), u32>; 2],
    /// `tags` is kept. Until a link's tracked delivery-tags stop rising (each greater than
    /// the one before, as [`Link::top_tag`](super::link::Link::top_tag) follows), no two
    /// unsettled deliveries of a link can share a tag, and a new tag above its link's top is
    /// held by none: the index is built from the unsettled deliveries only when a tag is not.
    pub indexed: [bool; 2],
    /// The last new delivery-id.
    pub last_id: [Option<u32>; 2],
}

impl Deliveries {
    /// The unsettled deliveries sent by direction index `dd` within `first..=last` (serial
    /// numbers: the range may wrap), in the order they were sent.
    pub fn in_range(
        &self,
        dd: usize,
        first: u32,
        last: u32,
    ) -> impl Iterator<Item = (u32, &Delivery)> {
        let map = &self.unsettled[dd];
        let (low, high) = spans(first, last);
        map.range(low)
            .chain(high.into_iter().flat_map(move |r| map.range(r)))
            .map(|(id, d)| (*id, d))
    }

    /// Settle the unsettled deliveries sent by direction index `dd` within `first..=last`
    /// (serial numbers: the range may wrap), in the order they were sent: each is shown to
    /// `each`, then forgotten with its tag. The range is taken out at once (a run of the
    /// ordered map), not looked up id by id.
    pub fn settle_range(
        &mut self,
        dd: usize,
        first: u32,
        last: u32,
        mut each: impl FnMut(u32, &Delivery),
    ) {
        let (map, tags) = (&mut self.unsettled[dd], &mut self.tags[dd]);
        let indexed = self.indexed[dd];
        let (low, high) = spans(first, last);
        let mut n = 0;
        for r in std::iter::once(low).chain(high) {
            for (id, d) in map.drain_range(r) {
                each(id, &d);
                if indexed {
                    tags.remove(&(d.link, d.tag));
                }
                n += 1;
            }
        }
        visit(n);
    }

    /// Delivery `id` sent by direction index `dd` is settled: forget it and its tag.
    pub fn settle(&mut self, dd: usize, id: u32) {
        if let Some(old) = self.unsettled[dd].remove(&id)
            && self.indexed[dd]
        {
            self.tags[dd].remove(&(old.link, old.tag));
        }
    }

    /// A delivery with delivery-tag `tag` ([`ShortTag::of`] its bytes) is about to be looked
    /// up or tracked (sent by direction index `dd`) on a link whose greatest tracked tag so far
    /// is `top`. Unless `tag` is above it (and short enough to be kept as a [`ShortTag`]), the
    /// tag index is built (once per direction) from the unsettled deliveries: no tag of them
    /// repeats within its link until then, so it is the index the tracked deliveries would have
    /// made. Returns the tag as the link's new top while the index is not kept (None once it
    /// is).
    #[inline]
    pub fn index_unless_rising(
        &mut self,
        dd: usize,
        tag: Option<ShortTag>,
        top: Option<ShortTag>,
    ) -> Option<ShortTag> {
        if self.indexed[dd] {
            return None;
        }
        match (tag, top) {
            (Some(k), Some(t)) if k > t => return tag,
            (Some(_), None) => return tag,
            _ => {}
        }
        self.index(dd);
        None
    }

    /// Build the tag index of direction index `dd` from its unsettled deliveries.
    #[cold]
    #[inline(never)]
    fn index(&mut self, dd: usize) {
        self.indexed[dd] = true;
        let tags = &mut self.tags[dd];
        for (id, d) in self.unsettled[dd].iter() {
            tags.insert((d.link, d.tag.clone()), *id);
        }
        visit(self.unsettled[dd].len());
    }
}

/// A delivery-tag of at most 16 bytes, ordered as the tags' bytes are (byte by byte, a
/// prefix before what extends it): the bytes zero-padded as one big-endian number (its high
/// and low halves), then the length. Two tags are equal exactly when their bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShortTag {
    high: u64,
    low: u64,
    len: u8,
}

impl ShortTag {
    /// The empty tag.
    pub const EMPTY: ShortTag = ShortTag {
        high: 0,
        low: 0,
        len: 0,
    };

    /// `tag`, if it is 16 bytes or shorter.
    #[inline]
    pub fn of(tag: &[u8]) -> Option<ShortTag> {
        let mut b = [0u8; 16];
        b.get_mut(..tag.len())?.copy_from_slice(tag);
        let n = u128::from_be_bytes(b);
        Some(ShortTag {
            high: (n >> 64) as u64,
            low: n as u64,
            len: tag.len() as u8,
        })
    }
}

/// A delivery-tag as the session keeps it: by value when 16 bytes or shorter (no reference
/// to the frame it came in), else the frame's bytes. Each tag has one form (by its length), so
/// two are equal exactly when their bytes are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TagKey {
    /// A tag of 16 bytes or fewer.
    Short(ShortTag),
    /// A longer tag.
    Long(Bytes),
}

impl TagKey {
    /// The key of `tag` (an absent tag is the empty one), given its [`ShortTag`] `short`.
    #[inline]
    pub fn of(tag: Option<&Bytes>, short: Option<ShortTag>) -> TagKey {
        match (short, tag) {
            (Some(s), _) => TagKey::Short(s),
            (None, Some(b)) => TagKey::Long(b.clone()),
            (None, None) => TagKey::Short(ShortTag::EMPTY),
        }
    }

    /// The [`ShortTag`] of `tag`, the empty one when absent (None: longer than 16 bytes).
    #[inline]
    pub fn short_of(tag: Option<&Bytes>) -> Option<ShortTag> {
        match tag {
            Some(b) => ShortTag::of(b),
            None => Some(ShortTag::EMPTY),
        }
    }
}

/// A key range as a pair of bounds.
type Span = (Bound<u32>, Bound<u32>);

/// The delivery-ids `first..=last` as key ranges in the order sent: one, or two when the
/// serial range wraps (`first..` then `..=last`).
fn spans(first: u32, last: u32) -> (Span, Option<Span>) {
    if first <= last {
        ((Included(first), Included(last)), None)
    } else {
        (
            (Included(first), Unbounded),
            Some((Unbounded, Included(last))),
        )
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{ShortTag, TagKey};

    #[test]
    fn short_tags_are_ordered_as_their_bytes() {
        let tags: [&[u8]; 9] = [
            b"",
            b"\0",
            b"\0\0",
            b"\0\x01",
            b"a",
            b"a\0",
            b"ab",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in tags {
            for b in tags {
                assert_eq!(
                    ShortTag::of(a).cmp(&ShortTag::of(b)),
                    a.cmp(b),
                    "{a:?} {b:?}"
                );
            }
        }
        assert_eq!(ShortTag::of(&[7; 17]), None);
        assert_eq!(ShortTag::of(b""), Some(ShortTag::EMPTY));
    }

    #[test]
    fn tag_keys_are_equal_exactly_when_their_tags_are() {
        let mut tags: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1], vec![1, 0]];
        for n in [15, 16, 17, 18, 40] {
            tags.push(vec![7; n]);
            let mut v = vec![7; n];
            v[n - 1] = 8;
            tags.push(v);
            let mut v = vec![7; n];
            v[0] = 0;
            tags.push(v);
        }
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        for a in &tags {
            let key = |t: &[u8]| {
                let b = Bytes::copy_from_slice(t);
                TagKey::of(Some(&b), TagKey::short_of(Some(&b)))
            };
            let ka = key(a);
            assert_eq!(matches!(ka, TagKey::Short(_)), a.len() <= 16, "{a:?}");
            for b in &tags {
                assert_eq!(ka == key(b), a == b, "{a:?} {b:?}");
            }
            if a.is_empty() {
                assert_eq!(
                    ka,
                    TagKey::of(None, TagKey::short_of(None)),
                    "absent = empty"
                );
            }
            let again = key(a);
            assert_eq!(state.hash_one(&ka), state.hash_one(&again), "{a:?}");
        }
    }
}
