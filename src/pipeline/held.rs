//! The relayed bytes of one direction that the inspector has not finished with: the tail of an
//! incomplete frame, and within a chunk the bytes not yet emitted. Kept as the chunks they
//! arrived in (no copy).

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

/// Bytes held from an absolute offset the owner keeps (`Side::held_offset`).
#[derive(Debug, Default)]
pub(super) struct Held {
    chunks: VecDeque<Bytes>,
    len: usize,
}

impl Held {
    /// Append a chunk.
    pub(super) fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.len += b.len();
            self.chunks.push_back(b);
        }
    }

    /// Bytes held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `n` bytes from `from` (both clamped to what is held), without taking them: zero-copy
    /// when they lie in one chunk, one copy when they span several (a frame that straddled
    /// reads).
    pub(super) fn peek(&self, from: usize, n: usize) -> Bytes {
        let from = from.min(self.len);
        let n = n.min(self.len - from);
        let mut skip = from;
        let mut parts = self.chunks.iter();
        let first = loop {
            match parts.next() {
                Some(c) if skip >= c.len() => skip -= c.len(),
                Some(c) => break c,
                None => return Bytes::new(),
            }
        };
        if first.len() - skip >= n {
            return first.slice(skip..skip + n);
        }
        let mut out = BytesMut::with_capacity(n);
        out.extend_from_slice(&first[skip..]);
        for c in parts {
            let want = n - out.len();
            if want == 0 {
                break;
            }
            out.extend_from_slice(&c[..want.min(c.len())]);
        }
        out.freeze()
    }

    /// Forget the first `n` bytes.
    pub(super) fn drop_front(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            if front.len() > n {
                let _ = front.split_to(n);
                break;
            }
            n -= front.len();
            self.chunks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_and_take_see_the_bytes_in_order_across_chunks() {
        let mut h = Held::default();
        h.push(Bytes::from_static(b"abc"));
        h.push(Bytes::from_static(b""));
        h.push(Bytes::from_static(b"defg"));
        h.push(Bytes::from_static(b"h"));
        let all = b"abcdefgh";
        for from in 0..=8 {
            for n in 0..=9 {
                let want = &all[from.min(8)..(from + n).min(8)];
                assert_eq!(&h.peek(from, n)[..], want, "from {from} n {n}");
            }
        }
        h.drop_front(2);
        assert_eq!(&h.peek(0, 3)[..], b"cde");
        h.drop_front(4);
        assert_eq!(h.len(), 2);
        assert_eq!(&h.peek(0, 9)[..], b"gh");
        h.drop_front(5);
        assert!(h.is_empty());
    }
}
