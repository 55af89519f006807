//! RFC-1982 serial-number arithmetic on 32-bit sequence numbers (transfer-ids, delivery-ids,
//! delivery-counts), and [`Limit`]: "how far may the sender go", judged against every grant the
//! sender may still be acting on, because frames cross on the wire.
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
    /// How many more numbers after `at`, sent one after another, leave whether the grant is
    /// exceeded ([`Grant::exceeded_by`]) as it is at `at`: the next one changes it. `u32::MAX`
    /// for a grant of 2^31 or more that `at` does not exceed: no number within serial reach
    /// (RFC 1982) of `base` exceeds it.
    pub fn unchanged_after(self, at: u32) -> u32 {
        let dist = at.wrapping_sub(self.base);
        if self.exceeded_by(at) {
            // Exceeded while the distance stays below 2^31.
            0x7fff_ffff - dist
        } else if self.amount >= 0x8000_0000 {
            u32::MAX
        } else {
            // Exceeded again at distance `amount` (after wrapping, from a number before `base`).
            self.amount.wrapping_sub(dist).wrapping_sub(1)
        }
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

/// Most earlier grants kept beside the latest one; beyond, nothing is judged until the
/// sender shows which grant it acts on.
pub const MAX_UNSEEN_GRANTS: usize = 32;

/// What sending a sequence number means against the grants that may be in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The latest grant allows it.
    Allowed,
    /// Only an earlier, larger grant allows it: the partner lowered the grant, and the sender
    /// may not have seen that yet (the frames crossed). Not judged.
    InFlight,
    /// Every grant the sender may be acting on forbids it.
    Exceeded,
}

/// Every grant the sender may still be acting on: the latest, and the earlier ones it has not
/// demonstrably seen replaced. A receiver may lower credit or its window at any time (§2.6.7:
/// "If the link-credit is reduced by the receiver when transfers are in-flight, the receiver
/// MAY either handle the excess messages normally or detach the link"), and a sender that has
/// not yet read the new flow keeps sending against the old grant: so only a number beyond every
/// such grant is a violation.
///
/// Grants are kept as far as they matter: an earlier grant that a later one reaches as far
/// is dropped (whatever it allows, the later one allows), so the earlier ones are the larger
/// grants a lowering left behind, at most [`MAX_UNSEEN_GRANTS`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    /// The latest grant.
    pub cur: Option<Grant>,
    /// Earlier, larger grants the sender may still act on, oldest first.
    pub older: Vec<Grant>,
    /// Earlier grants were dropped unseen (more than [`MAX_UNSEEN_GRANTS`]): judge nothing
    /// beyond the latest grant until the sender shows it saw one.
    pub overflow: bool,
    /// An in-flight excess over the latest grant was already reported as not judged.
    pub in_flight_reported: bool,
}

impl Grant {
    /// The first number beyond the grant.
    pub fn end(self) -> u32 {
        self.base.wrapping_add(self.amount)
    }

    /// Whatever `o` allows, this grant allows too (it reaches at least as far, counted from
    /// `o`'s base, without wrapping).
    pub fn covers(self, o: Grant) -> bool {
        let from = i64::from(self.base.wrapping_sub(o.base) as i32);
        from + i64::from(self.amount) >= i64::from(o.amount)
    }
}

impl Limit {
    /// A new grant from the partner.
    pub fn update(&mut self, g: Grant) {
        if let Some(c) = self.cur.replace(g) {
            self.older.push(c);
        }
        // Drop the grants the new one reaches as far as.
        self.older.retain(|o| !g.covers(*o));
        if self.older.len() > MAX_UNSEEN_GRANTS {
            self.older.remove(0);
            self.overflow = true;
        }
        self.in_flight_reported = false;
    }

    /// The sender demonstrably acts on the grant reaching to `end` (its own flow echoes it):
    /// the grants before it no longer apply.
    pub fn seen_end(&mut self, end: u32) {
        let matches = |g: &Grant| g.end() == end;
        if self.cur.as_ref().is_some_and(matches) {
            self.older.clear();
            self.overflow = false;
        } else if let Some(i) = self.older.iter().position(matches) {
            self.older.drain(..i);
            self.overflow = false;
        }
    }

    /// Sending `at`, against the grants that may be in force. No grant yet: `at` breaks the
    /// implicit zero grant only when `zero_when_none`.
    pub fn judge(&self, at: u32, zero_when_none: bool) -> Judged {
        let Some(c) = self.cur else {
            return if zero_when_none {
                Judged::Exceeded
            } else {
                Judged::Allowed
            };
        };
        if !c.exceeded_by(at) {
            Judged::Allowed
        } else if self.overflow || self.older.iter().any(|g| !g.exceeded_by(at)) {
            Judged::InFlight
        } else {
            Judged::Exceeded
        }
    }

    /// Whether sending `at` breaks every grant that could be in force.
    pub fn exceeded_by(&self, at: u32, zero_when_none: bool) -> bool {
        self.judge(at, zero_when_none) == Judged::Exceeded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unchanged_after` agrees with sending number after number until `exceeded_by` flips:
    /// grants small and of 2^31 or more, from numbers before, inside, at the end of and far
    /// past the grant, across the wrap of 32 bits.
    #[test]
    fn unchanged_after_counts_the_numbers_before_exceeded_by_flips() {
        for base in [0, 7, u32::MAX - 2] {
            for amount in [0, 1, 5, 0x8000_0000, u32::MAX] {
                let g = Grant { base, amount };
                let starts = (0..12u32)
                    .map(|d| base.wrapping_sub(4).wrapping_add(d))
                    .chain((0..4u32).map(|d| base.wrapping_add(0x7fff_fffc + d)));
                for at in starts {
                    let stepped = (1..=64u32)
                        .take_while(|&j| g.exceeded_by(at.wrapping_add(j)) == g.exceeded_by(at))
                        .count() as u32;
                    let told = g.unchanged_after(at);
                    if stepped < 64 {
                        assert_eq!(told, stepped, "base {base} amount {amount} at {at}");
                    } else {
                        assert!(told >= 64, "base {base} amount {amount} at {at}: {told}");
                    }
                }
            }
        }
    }

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
        assert_eq!(
            l.judge(5, true),
            Judged::InFlight,
            "under the previous grant"
        );
        assert!(l.exceeded_by(10, true));
        // A repeated lowering keeps the larger grant the sender may still act on.
        l.update(Grant { base: 0, amount: 0 });
        assert_eq!(l.judge(9, true), Judged::InFlight);
        // The sender's own flow shows it acts on the lowered grant: the old one is gone.
        l.seen_end(0);
        assert_eq!(l.judge(5, true), Judged::Exceeded);
        // A larger grant replaces every smaller one.
        l.update(Grant { base: 0, amount: 3 });
        l.update(Grant {
            base: 0,
            amount: 20,
        });
        assert!(l.older.is_empty());
        assert_eq!(l.judge(19, true), Judged::Allowed);
        // A huge window is not "covered" by a small one because its end wrapped.
        let huge = Grant {
            base: 0,
            amount: u32::MAX,
        };
        assert!(
            !Grant {
                base: 0,
                amount: 10
            }
            .covers(huge)
        );
        assert!(huge.covers(Grant {
            base: 5,
            amount: 10
        }));
    }

    #[test]
    fn lowerings_beyond_the_bound_judge_nothing_until_seen() {
        let mut l = Limit::default();
        for k in 0..(MAX_UNSEEN_GRANTS as u32 + 5) {
            l.update(Grant {
                base: 0,
                amount: 1000 - k,
            });
        }
        assert!(l.older.len() <= MAX_UNSEEN_GRANTS && l.overflow);
        assert_eq!(l.judge(2000, true), Judged::InFlight);
        l.seen_end(1000 - (MAX_UNSEEN_GRANTS as u32 + 4));
        assert_eq!(l.judge(2000, true), Judged::Exceeded);
    }
}
