//! A small deterministic generator (xorshift64) for the unit tests that compare two
//! implementations on many generated inputs: the same inputs every run, no dependency.

use bytes::Bytes;

/// Xorshift64 from a non-zero seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next 64 pseudo-random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Up to `max` pseudo-random bytes.
    pub(crate) fn bytes(&mut self, max: u64) -> Bytes {
        let n = self.below(max + 1);
        (0..n)
            .map(|_| self.next() as u8)
            .collect::<Vec<u8>>()
            .into()
    }
}
