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
    pub tag: Bytes,
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
    pub tags: [HashMap<(u64, Bytes), u32>; 2],
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

    /// A delivery with delivery-tag `tag` is about to be looked up or tracked (sent by
    /// direction index `dd`) on a link whose greatest tracked tag so far is `top`. Unless
    /// `tag` is above it (and short enough to be kept as a [`ShortTag`]), the tag index is
    /// built (once per direction) from the unsettled deliveries: no tag of them repeats within
    /// its link until then, so it is the index the tracked deliveries would have made.
    /// Returns the tag as the link's new top while the index is not kept (None once it is).
    #[inline]
    pub fn index_unless_rising(
        &mut self,
        dd: usize,
        tag: &[u8],
        top: Option<ShortTag>,
    ) -> Option<ShortTag> {
        if self.indexed[dd] {
            return None;
        }
        let key = ShortTag::of(tag);
        if key.is_some() && (top.is_none() || key > top) {
            return key;
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
/// prefix before what extends it): the bytes zero-padded as one big-endian number, then the
/// length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShortTag {
    bytes: u128,
    len: u8,
}

impl ShortTag {
    /// `tag`, if it is 16 bytes or shorter.
    #[inline]
    pub fn of(tag: &[u8]) -> Option<ShortTag> {
        let mut b = [0u8; 16];
        b.get_mut(..tag.len())?.copy_from_slice(tag);
        Some(ShortTag {
            bytes: u128::from_be_bytes(b),
            len: tag.len() as u8,
        })
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
    use super::ShortTag;

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
    }
}
