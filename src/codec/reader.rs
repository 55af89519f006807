//! A bounds-checked cursor over `bytes::Bytes`.
//!
//! Every read either succeeds or returns a [`DecodeError`] positioned at the absolute stream
//! offset where it failed. Slices are zero-copy (`Bytes::slice`). Nothing here ever panics or
//! allocates on the strength of a length the input merely claims.

use bytes::Bytes;

use super::error::{DecodeError, ErrorKind};

/// A cursor over one buffer, remembering where that buffer starts in its stream.
#[derive(Clone, Debug)]
pub struct Reader {
    buf: Bytes,
    pos: usize,
    /// Absolute offset of `buf[0]` in the direction's byte stream.
    base: u64,
}

impl Reader {
    /// A reader over `buf`, whose first byte sits at absolute offset `base`.
    pub fn new(buf: Bytes, base: u64) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// A reader over `buf` positioned at `pos` (clamped to its length), where `buf[0]` sits at
    /// absolute offset `base`. Lets a decoder read a frame's body in place, without slicing
    /// (and refcounting) a sub-buffer; [`Reader::into_buffer`] hands `buf` back afterwards.
    pub fn at(buf: Bytes, pos: usize, base: u64) -> Self {
        let pos = pos.min(buf.len());
        Reader { buf, pos, base }
    }

    /// The underlying buffer, given back.
    pub fn into_buffer(self) -> Bytes {
        self.buf
    }

    /// Absolute offset of the next byte to be read.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Position relative to the start of this reader's buffer.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not yet read (a borrow: no refcount), for decoders that parse small
    /// fixed-width values straight from the slice and then [`Reader::skip`] them.
    #[inline]
    pub fn unread(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// The whole underlying buffer (zero-copy clone).
    pub fn buffer(&self) -> &Bytes {
        &self.buf
    }

    /// An error of `kind` positioned at the current offset.
    pub fn error(&self, kind: ErrorKind) -> DecodeError {
        DecodeError::new(self.offset(), kind)
    }

    fn need(&self, n: usize) -> Result<(), DecodeError> {
        if self.remaining() < n {
            Err(self.error(ErrorKind::Truncated {
                needed: n as u64,
                available: self.remaining() as u64,
            }))
        } else {
            Ok(())
        }
    }

    /// Peek at the next byte without consuming it.
    pub fn peek_u8(&self) -> Result<u8, DecodeError> {
        self.need(1)?;
        Ok(self.buf[self.pos])
    }

    /// Read one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = self.peek_u8()?;
        self.pos += 1;
        Ok(b)
    }

    /// Read `N` bytes into an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.need(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    /// Big-endian u16.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_be_bytes)
    }

    /// Big-endian u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_be_bytes)
    }

    /// Big-endian u64.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_be_bytes)
    }

    /// Take `n` bytes as a zero-copy slice. Fails (without allocating) when fewer remain.
    pub fn bytes(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        self.need(n)?;
        let out = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(out)
    }

    /// Like [`Reader::bytes`] for a length read from the wire as u32/u64.
    pub fn bytes_len(&mut self, n: u64) -> Result<Bytes, DecodeError> {
        if n > self.remaining() as u64 {
            return Err(self.error(ErrorKind::Truncated {
                needed: n,
                available: self.remaining() as u64,
            }));
        }
        self.bytes(n as usize)
    }

    /// A sub-reader over the next `n` bytes (which are consumed from this one).
    pub fn sub(&mut self, n: u64) -> Result<Reader, DecodeError> {
        let base = self.offset();
        let buf = self.bytes_len(n)?;
        Ok(Reader::new(buf, base))
    }

    /// Everything left, consumed.
    pub fn rest(&mut self) -> Bytes {
        let out = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        out
    }

    /// Skip `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.need(n)?;
        self.pos += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_tracks_absolute_offset() {
        let mut r = Reader::new(Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7]), 100);
        assert_eq!(r.u16().unwrap(), 0x0102);
        assert_eq!(r.offset(), 102);
        assert_eq!(r.u32().unwrap(), 0x0304_0506);
        let err = r.u16().unwrap_err();
        assert_eq!(err.offset, 106);
        assert!(matches!(
            err.kind,
            ErrorKind::Truncated {
                needed: 2,
                available: 1
            }
        ));
    }

    #[test]
    fn huge_claimed_length_fails_without_allocating() {
        let mut r = Reader::new(Bytes::from_static(&[0; 13]), 0);
        assert!(r.bytes_len(u64::MAX).is_err());
        assert!(r.sub(1 << 32).is_err());
        assert_eq!(r.remaining(), 13);
    }
}
