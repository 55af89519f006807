//! RFC-1982 serial-number arithmetic on 32-bit sequence numbers (transfer-ids, delivery-ids,
//! delivery-counts), and [`Limit`]: "how far may the sender go" as the partner last said it,
//! judged leniently across one update because frames cross on the wire.
//!
//! Pure arithmetic; wrapping, never overflowing.

/// `a` comes strictly after `b` (RFC-1982, 32 bits).
pub fn after(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

/// `x` lies in the serial range `first..=last`.
pub fn in_range(x: u32, first: u32, last: u32) -> bool {
    x.wrapping_sub(first) <= last.wrapping_sub(first)
}

/// A grant: from `base`, `amount` more may be sent (a session's next-incoming-id +
/// incoming-window, or a link's delivery-count + link-credit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Sequence number the grant counts from.
    pub base: u32,
    /// How many past `base`.
    pub amount: u32,
}

impl Grant {
    /// Whether sending sequence number `at` goes beyond the grant. Numbers before `base` (not
    /// possible for a consistent peer) are not judged.
    pub fn exceeded_by(self, at: u32) -> bool {
        let dist = at.wrapping_sub(self.base);
        dist < 0x8000_0000 && dist >= self.amount
    }
    /// What remains after `at` (negative when exceeded), for display.
    pub fn remaining(self, at: u32) -> i64 {
        let dist = at.wrapping_sub(self.base);
        if dist < 0x8000_0000 {
            i64::from(self.amount) - i64::from(dist)
        } else {
            i64::from(self.amount)
        }
    }
}

/// The latest grant and the one before it. A frame crossing the latest update on the wire was
/// sent under the previous grant, so only a number beyond both is a violation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    /// The latest grant.
    pub cur: Option<Grant>,
    /// The grant before it.
    pub prev: Option<Grant>,
}

impl Limit {
    /// A new grant from the partner.
    pub fn update(&mut self, g: Grant) {
        self.prev = self.cur.replace(g);
    }
    /// Whether sending `at` breaks every grant that could be in force. No grant yet: `at`
    /// breaks the implicit zero grant only when `zero_when_none`.
    pub fn exceeded_by(&self, at: u32, zero_when_none: bool) -> bool {
        match (self.cur, self.prev) {
            (None, _) => zero_when_none,
            (Some(c), None) => c.exceeded_by(at),
            (Some(c), Some(p)) => c.exceeded_by(at) && p.exceeded_by(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_compare_wraps() {
        assert!(after(1, 0));
        assert!(after(0, u32::MAX));
        assert!(!after(5, 5));
        assert!(!after(0, 1));
        assert!(in_range(u32::MAX, u32::MAX - 1, 1));
        assert!(!in_range(2, u32::MAX - 1, 1));
    }

    #[test]
    fn grants_count_from_their_base_and_tolerate_one_crossing_update() {
        let g = Grant {
            base: u32::MAX,
            amount: 2,
        };
        assert!(!g.exceeded_by(u32::MAX));
        assert!(!g.exceeded_by(0));
        assert!(g.exceeded_by(1));
        let huge = Grant {
            base: 10,
            amount: u32::MAX,
        };
        assert!(!huge.exceeded_by(9_000_000));
        let mut l = Limit::default();
        assert!(l.exceeded_by(0, true));
        l.update(Grant {
            base: 0,
            amount: 10,
        });
        l.update(Grant { base: 0, amount: 0 });
        assert!(
            !l.exceeded_by(5, true),
            "in flight under the previous grant"
        );
        assert!(l.exceeded_by(10, true));
    }
}
