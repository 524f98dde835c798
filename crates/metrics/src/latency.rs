//! Latency histograms: HDR, microsecond resolution, 3 significant digits, never a sample list.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Largest latency tracked exactly: one hour. Longer values are clamped to it.
pub const MAX_TRACKABLE_MICROS: u64 = 3_600_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram of durations in microseconds. Memory is fixed by its range, not by the number
/// of values recorded.
#[derive(Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.inner.len())
            .finish()
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let inner = Histogram::new_with_bounds(1, MAX_TRACKABLE_MICROS, SIGNIFICANT_DIGITS)
            .expect("static histogram bounds are valid");
        Self { inner }
    }

    #[inline]
    pub fn record_micros(&mut self, micros: u64) {
        self.inner
            .saturating_record(micros.min(MAX_TRACKABLE_MICROS));
    }

    #[inline]
    pub fn record(&mut self, duration: Duration) {
        self.record_micros(duration.as_micros().min(u128::from(MAX_TRACKABLE_MICROS)) as u64);
    }

    /// Records `duration` and, when it is longer than `expected_interval`, the values
    /// `duration - k * expected_interval` down to the interval: the latencies the requests
    /// a stalled closed-loop sender never sent would have seen (HdrHistogram's
    /// `record_correct`, wrk2's coordinated-omission correction).
    pub fn record_corrected(&mut self, duration: Duration, expected_interval: Duration) {
        let micros = duration.as_micros().min(u128::from(MAX_TRACKABLE_MICROS)) as u64;
        if expected_interval.is_zero() {
            // No pacing known yet (a VU's first iteration): nothing to fill in.
            self.record_micros(micros);
            return;
        }
        // At most this many values per record, so one long stall costs bounded time.
        const MAX_FILLED: u64 = 100_000;
        let interval = (expected_interval.as_micros() as u64)
            .max(1)
            .max(micros / MAX_FILLED);
        self.inner
            .record_correct(micros, interval)
            .unwrap_or_else(|_| self.inner.saturating_record(micros));
    }

    /// Adds every count of `other` to this histogram: exact, order-independent.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.inner
            .add(&other.inner)
            .expect("histograms share bounds, so adding cannot fail");
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    pub fn min_micros(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.inner.min()
        }
    }

    pub fn max_micros(&self) -> u64 {
        self.inner.max()
    }

    pub fn mean_micros(&self) -> f64 {
        self.inner.mean()
    }

    pub fn stdev_micros(&self) -> f64 {
        self.inner.stdev()
    }

    /// The value at `percentile` (0–100), in microseconds.
    pub fn percentile_micros(&self, percentile: f64) -> u64 {
        self.inner.value_at_percentile(percentile)
    }

    /// Counts of recorded values grouped into `buckets` equal-width bins between the fastest and
    /// slowest value (hey's "response time histogram"). Returns `(upper bound µs, count)` pairs.
    pub fn linear_buckets(&self, buckets: usize) -> Vec<(u64, u64)> {
        if self.is_empty() || buckets == 0 {
            return Vec::new();
        }
        let low = self.min_micros();
        let high = self.max_micros().max(low + 1);
        let width = (high - low) as f64 / buckets as f64;
        let mut out: Vec<(u64, u64)> = (1..=buckets)
            .map(|i| ((low as f64 + width * i as f64).round() as u64, 0))
            .collect();
        for value in self.inner.iter_recorded() {
            let v = self.inner.highest_equivalent(value.value_iterated_to());
            let index = (((v.saturating_sub(low)) as f64 / width) as usize).min(buckets - 1);
            out[index].1 += value.count_at_value();
        }
        out
    }

    /// Mean, extremes and the standard percentile set, for reports.
    pub fn stats(&self) -> LatencyStats {
        LatencyStats {
            count: self.count(),
            min_us: self.min_micros(),
            mean_us: self.mean_micros(),
            stdev_us: self.stdev_micros(),
            max_us: self.max_micros(),
            percentiles: STANDARD_PERCENTILES
                .iter()
                .map(|&p| (p, self.percentile_micros(p)))
                .collect(),
        }
    }
}

/// Percentiles every report shows.
pub const STANDARD_PERCENTILES: [f64; 10] =
    [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

/// A summary of one histogram, ready to print or serialise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub max_us: u64,
    /// `(percentile, value µs)` pairs.
    pub percentiles: Vec<(f64, u64)>,
}

impl LatencyStats {
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (*q - p).abs() < 1e-9)
            .map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrected_records_fill_in_what_a_stalled_sender_missed() {
        let mut h = LatencyHistogram::new();
        h.record_corrected(Duration::from_micros(100), Duration::from_micros(1000));
        assert_eq!(h.count(), 1, "faster than the interval: recorded as is");
        h.record_corrected(Duration::from_millis(5), Duration::ZERO);
        assert_eq!(h.count(), 2, "no interval known: recorded as is");
        h.record_corrected(Duration::from_micros(10_000), Duration::from_micros(1000));
        // 10 ms, then 9, 8, ... 1 ms: the requests one every 1 ms would have seen.
        assert_eq!(h.count(), 12);
        assert!((h.percentile_micros(50.0) as i64 - 5_000).abs() < 600);
        let mut long = LatencyHistogram::new();
        long.record_corrected(Duration::from_secs(3600), Duration::from_micros(1));
        assert_eq!(long.count(), 100_000, "bounded filling");
    }

    #[test]
    fn percentiles_are_within_three_significant_digits() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000u64 {
            h.record_micros(v);
        }
        let p50 = h.percentile_micros(50.0) as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.001, "{p50}");
        assert_eq!(h.min_micros(), 1);
        assert!((h.max_micros() as f64 - 10_000.0).abs() <= 10.0);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        );
        for v in 0..5000u64 {
            let x = (v * 7919) % 100_000 + 1;
            if v % 2 == 0 {
                a.record_micros(x)
            } else {
                b.record_micros(x)
            }
            all.record_micros(x);
        }
        a.merge(&b);
        assert_eq!(a.stats(), all.stats());
    }

    #[test]
    fn huge_values_are_clamped_not_lost() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_secs(10 * 3600));
        assert_eq!(h.count(), 1);
        assert!(h.max_micros() >= MAX_TRACKABLE_MICROS * 999 / 1000);
    }

    #[test]
    fn linear_buckets_hold_every_value() {
        let mut h = LatencyHistogram::new();
        for v in [100u64, 200, 300, 400, 1000, 1000, 1000] {
            h.record_micros(v);
        }
        let buckets = h.linear_buckets(10);
        assert_eq!(buckets.len(), 10);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 7);
        assert_eq!(buckets[0].1, 1);
        assert_eq!(buckets[9].1, 3);
    }

    #[test]
    fn empty_histogram_reports_zeroes() {
        let s = LatencyHistogram::new().stats();
        assert_eq!((s.count, s.min_us, s.max_us), (0, 0, 0));
    }
}
