//! A byte stream that counts what has been read of it, for a progress bar (the TUI's first
//! pass over a capture file shows how far it has read).

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `src`, adding the bytes each read returns to `read`.
pub struct Counted {
    src: Box<dyn Read + Send>,
    read: Arc<AtomicU64>,
}

impl Counted {
    /// Count the reads of `src` into `read`.
    pub fn new(src: Box<dyn Read + Send>, read: Arc<AtomicU64>) -> Counted {
        Counted { src, read }
    }
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_byte_read() {
        let read = Arc::new(AtomicU64::new(0));
        let mut c = Counted::new(Box::new(&b"hello world"[..]), read.clone());
        let mut out = Vec::new();
        c.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"hello world");
        assert_eq!(read.load(Ordering::Relaxed), 11);
    }
}
