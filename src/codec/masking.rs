//! What the protocols' own masking of their messages shares: filling byte ranges with the
//! mask byte, and knowing which bytes were already searched for credentials.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::credential;

/// The byte used to mask credentials, at the same length as the secret.
pub const MASK_BYTE: u8 = b'*';

/// Memory the frame completing a message was found free of credentials in, so that the
/// message, sliced out of it when it is a message of one frame, is not searched again.
#[derive(Clone, Debug, Default)]
pub struct Searched {
    /// Bytes with no URL password (the frame's): a payload or body wholly inside them holds
    /// none either, since every password found in a part of some bytes is found in those
    /// bytes.
    pub urls: Option<Range<*const u8>>,
    /// The payload a protocol's frame hook found no credential of its own in (a
    /// single-transfer AMQP 1.0 frame with no put-token's token): a message payload of
    /// exactly those bytes holds none either (the search depends on the bytes alone).
    pub token: Option<Range<*const u8>>,
}

impl Searched {
    /// The URL passwords in `b`, unless `b` lies within bytes already found free of them.
    #[inline]
    pub fn urls(&self, b: &Bytes) -> Vec<Range<usize>> {
        if self.holds(b) {
            return Vec::new();
        }
        credential::url_passwords(b)
    }

    /// True when `b` lies within bytes already found free of URL passwords.
    #[inline]
    pub fn holds(&self, b: &[u8]) -> bool {
        match &self.urls {
            Some(s) => s.start <= b.as_ptr() && b.as_ptr_range().end <= s.end,
            None => false,
        }
    }
}

/// `bytes` with `ranges` (clamped to it) filled with [`MASK_BYTE`].
pub fn fill(bytes: &Bytes, ranges: &[Range<usize>]) -> Bytes {
    let mut out = BytesMut::from(&bytes[..]);
    for r in ranges {
        let end = r.end.min(out.len());
        let start = r.start.min(end);
        out[start..end].fill(MASK_BYTE);
    }
    out.freeze()
}
