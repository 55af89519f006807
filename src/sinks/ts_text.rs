//! Event times as text for a stream of events: [`Timestamp::rfc3339`]'s exact output, with the
//! date formatted only when the day changes and the time of day by plain arithmetic (the
//! general formatter costs more than the rest of a small frame's JSONL line).

use crate::event::Timestamp;

/// Microseconds in a day.
const DAY: i64 = 86_400_000_000;

/// The text of the last timestamp asked for, and the date it fell on.
#[derive(Debug, Default)]
pub struct TsText {
    last: Option<Timestamp>,
    text: String,
    /// The day (since the epoch) `prefix` is the date of.
    day: Option<i64>,
    /// `YYYY-MM-DDT`.
    prefix: String,
}

impl TsText {
    /// `ts.rfc3339()`.
    pub fn get(&mut self, ts: Timestamp) -> &str {
        if self.last != Some(ts) {
            self.last = Some(ts);
            self.format(ts);
        }
        &self.text
    }

    fn format(&mut self, ts: Timestamp) {
        let day = ts.0.div_euclid(DAY);
        if self.day != Some(day) {
            self.day = None;
            // The date as the general formatter writes it; anything but the usual
            // `YYYY-MM-DDT00:00:00.000000Z` (out of range, five-digit years) is left to it.
            let start = day.checked_mul(DAY).map(|t| Timestamp(t).rfc3339());
            match start {
                Some(s) if s.len() == 27 && s.ends_with("T00:00:00.000000Z") => {
                    self.prefix.clear();
                    self.prefix.push_str(s.get(..11).unwrap_or_default());
                    self.day = Some(day);
                }
                _ => {
                    self.text = ts.rfc3339();
                    return;
                }
            }
        }
        self.text.clear();
        self.text.push_str(&self.prefix);
        time_of_day_into(&mut self.text, ts);
        self.text.push('Z');
    }
}

/// Append `HH:MM:SS.uuuuuu`, the time of day (UTC) of `ts`, two digits at a time: the trace's
/// clock, and the JSONL time after its date.
pub fn time_of_day_into(out: &mut String, ts: Timestamp) {
    let micros = ts.0.rem_euclid(DAY) as u64;
    let secs = micros / 1_000_000;
    let sub = micros % 1_000_000;
    let mut clock = *b"00:00:00.000000";
    for (at, n) in [
        (0, secs / 3600),
        (3, secs / 60 % 60),
        (6, secs % 60),
        (9, sub / 10_000),
        (11, sub / 100 % 100),
        (13, sub % 100),
    ] {
        clock[at] = b'0' + (n / 10 % 10) as u8;
        clock[at + 1] = b'0' + (n % 10) as u8;
    }
    debug_assert!(clock.is_ascii());
    // SAFETY: digits, `:` and `.` only: ASCII, which is UTF-8. (A UTF-8 check of these 15
    // bytes would cost more than writing them.)
    out.push_str(unsafe { std::str::from_utf8_unchecked(&clock) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_general_formatter() {
        let mut t = TsText::default();
        let mut x: i64 = 0x2545_f491_4f6c_dd1d;
        let mut cases = vec![
            0,
            -1,
            1,
            DAY - 1,
            DAY,
            -DAY,
            1_764_417_600_123_456,
            951_782_400_000_000,     // 2000-02-29
            253_402_300_799_999_999, // 9999-12-31T23:59:59.999999
            253_402_300_800_000_000, // out of range: the integer
            -62_167_219_200_000_000, // 0000-01-01
            -62_167_219_200_000_001, // year -1
            i64::MAX,
            i64::MIN,
        ];
        for _ in 0..2000 {
            // xorshift: times all over the representable range, and close to each other.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(x % 300_000_000_000_000_000);
            cases.push(1_764_417_600_000_000 + x % (3 * DAY));
        }
        for c in cases {
            assert_eq!(t.get(Timestamp(c)), Timestamp(c).rfc3339(), "{c}");
        }
    }
}
