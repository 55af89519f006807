//! Settlement latencies in bounded memory: an HDR histogram (two significant digits: a
//! percentile is within 1% of the true one) from 1 µs to a day, a longer one counted as a day.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The longest latency told apart, in µs (a day); longer ones are counted as this.
const MAX_US: u64 = 86_400_000_000;

/// Latencies of one kind of settlement.
#[derive(Clone, Debug)]
pub struct Latency {
    histogram: Histogram<u32>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            // 1..=MAX_US at 2 digits is a valid configuration: cannot fail.
            histogram: Histogram::new_with_bounds(1, MAX_US, 2)
                .unwrap_or_else(|_| unreachable!("valid histogram bounds")),
        }
    }
}

impl Latency {
    /// Count one latency (a negative one, a capture's clock stepping back, counts as 0).
    pub fn record(&mut self, us: i64) {
        self.histogram.saturating_record(us.max(0) as u64);
    }

    /// How many were counted.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Count another's latencies too.
    pub fn add(&mut self, other: &Latency) {
        // Same bounds on both sides: cannot fail.
        let _ = self.histogram.add(&other.histogram);
    }

    /// The percentiles, or `None` when nothing was counted.
    pub fn summary(&self) -> Option<Percentiles> {
        let h = &self.histogram;
        if h.is_empty() {
            return None;
        }
        Some(Percentiles {
            count: h.len(),
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
            mean_us: h.mean().round() as u64,
        })
    }
}

/// A latency distribution in a few numbers (µs; within 1%: the histogram's precision).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    /// How many were counted.
    pub count: u64,
    /// The least.
    pub min_us: u64,
    /// The median.
    pub p50_us: u64,
    /// The 90th percentile.
    pub p90_us: u64,
    /// The 99th percentile.
    pub p99_us: u64,
    /// The greatest.
    pub max_us: u64,
    /// The mean.
    pub mean_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_the_histograms_precision() {
        let mut l = Latency::default();
        assert_eq!(l.summary(), None);
        for us in 1..=1000 {
            l.record(us);
        }
        l.record(-5);
        let s = l.summary().unwrap();
        assert_eq!(s.count, 1001);
        assert_eq!(s.min_us, 0);
        assert!((495..=505).contains(&s.p50_us), "{s:?}");
        assert!((980..=1000).contains(&s.p99_us), "{s:?}");
        assert!((995..=1010).contains(&s.max_us), "{s:?}");
        // A latency past a day counts as a day.
        l.record(i64::MAX);
        assert!(l.summary().unwrap().max_us >= MAX_US * 99 / 100);
    }
}
