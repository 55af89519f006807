//! A circular byte buffer of fixed capacity: records are appended at its tail and leave from
//! its head, so the ring's memory is this one allocation however many records come and go
//! (no allocator churn, no fragmentation growing it past its size). Its memory is reserved at
//! once and becomes resident only as records fill it.

/// Where a record sits in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    start: usize,
    len: usize,
}

/// The buffer.
#[derive(Debug)]
pub(super) struct Circular {
    buf: Vec<u8>,
    cap: usize,
    head: usize,
    used: usize,
}

impl Circular {
    /// An empty buffer that will hold at most `cap` bytes.
    pub(super) fn new(cap: usize) -> Self {
        Circular {
            // Reserved once, so that filling it never copies it into a larger one (pages not
            // written yet are not resident).
            buf: Vec::with_capacity(cap),
            cap,
            head: 0,
            used: 0,
        }
    }

    /// The most bytes it holds.
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes it can still take without freeing any.
    pub(super) fn free(&self) -> usize {
        self.cap - self.used
    }

    /// Append `data` (at most [`Circular::free`] bytes): where it went.
    pub(super) fn push(&mut self, data: &[u8]) -> Option<Slot> {
        if data.len() > self.free() {
            return None;
        }
        let tail = (self.head + self.used) % self.cap.max(1);
        if self.buf.len() < self.cap && tail == self.buf.len() {
            // Still filling for the first time: grow as far as this record needs (or to the
            // capacity, once it would wrap).
            let room = self.cap - self.buf.len();
            if data.len() <= room {
                self.buf.extend_from_slice(data);
                self.used += data.len();
                return Some(Slot {
                    start: tail,
                    len: data.len(),
                });
            }
            self.buf.resize(self.cap, 0);
        }
        let first = data.len().min(self.cap - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
        self.used += data.len();
        Some(Slot {
            start: tail,
            len: data.len(),
        })
    }

    /// Free the oldest record, `slot` (records leave in the order they came).
    pub(super) fn pop(&mut self, slot: Slot) {
        debug_assert_eq!(slot.start, self.head);
        self.head = (slot.start + slot.len) % self.cap.max(1);
        self.used -= slot.len;
        if self.used == 0 {
            self.head = 0;
            if self.buf.len() < self.cap {
                self.buf.clear(); // keeps the reservation
            }
        }
    }

    /// The bytes of `slot`, in one or two parts (when it wraps).
    pub(super) fn get(&self, slot: Slot) -> (&[u8], &[u8]) {
        let end = slot.start + slot.len;
        if end <= self.buf.len() {
            (&self.buf[slot.start..end], &[])
        } else {
            let wrapped = end - self.cap;
            (&self.buf[slot.start..], &self.buf[..wrapped])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_wrap_around_and_read_back_whole() {
        let mut c = Circular::new(10);
        let a = c.push(b"abcd").unwrap();
        let b = c.push(b"efgh").unwrap();
        assert!(c.push(b"ijk").is_none());
        c.pop(a);
        let d = c.push(b"ijklm").unwrap();
        assert_eq!(c.get(b), (&b"efgh"[..], &b""[..]));
        assert_eq!(c.get(d), (&b"ij"[..], &b"klm"[..]));
        assert_eq!(c.buf.len(), 10);
        c.pop(b);
        c.pop(d);
        assert_eq!(c.free(), 10);
    }
}
