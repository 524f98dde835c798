//! Latency as a Prometheus native histogram: the merged HDR histogram re-bucketed into
//! sparse exponential buckets (schema 3: each bucket 2^(1/8) ≈ 9 % wider than the one
//! before), in seconds, k6's base unit. Sent by remote write when the server accepts native
//! histograms; the percentile gauges are sent either way.

use barrage_metrics::LatencyHistogram;

/// Bucket boundaries are 2^(i·2^-SCHEMA): schema 3 is eight buckets per doubling.
pub const SCHEMA: i32 = 3;

/// A native histogram's content: integer counts, positive buckets only (latencies are ≥ 0).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeHistogram {
    pub count: u64,
    /// Sum of the observations in seconds.
    pub sum: f64,
    /// Observations of exactly zero.
    pub zero_count: u64,
    /// Runs of consecutive buckets: (offset from the previous run's end, or the first
    /// bucket's index for the first run; length).
    pub spans: Vec<(i32, u32)>,
    /// Each bucket's count minus the previous bucket's, across all spans.
    pub deltas: Vec<i64>,
}

/// The index of the bucket holding `seconds` (> 0): the smallest i with
/// `seconds ≤ 2^(i / 2^SCHEMA)`.
fn bucket_index(seconds: f64) -> i32 {
    let per_doubling = f64::from(1 << SCHEMA);
    let mut index = (seconds.log2() * per_doubling).ceil() as i32;
    // Guard the float edge: the bound of the chosen bucket must hold the value, the one
    // below must not.
    while 2f64.powf(f64::from(index) / per_doubling) < seconds {
        index += 1;
    }
    while 2f64.powf(f64::from(index - 1) / per_doubling) >= seconds {
        index -= 1;
    }
    index
}

impl NativeHistogram {
    /// Re-buckets a latency histogram (µs values) into native buckets.
    ///
    /// The HDR values come in ascending order, so they fill the native buckets in order: a
    /// bucket's index and bound are worked out once, when the first value past the previous
    /// bound arrives, not once per HDR value (this runs every flush).
    pub fn from_latency(latency: &LatencyHistogram) -> Self {
        let per_doubling = f64::from(1 << SCHEMA);
        // (index, count) of the non-empty buckets, ascending, and the open bucket's bound.
        let mut buckets: Vec<(i32, u64)> = Vec::new();
        let mut bound = f64::NEG_INFINITY;
        let (mut count, mut sum, mut zero_count) = (0, 0.0, 0);
        for (micros, n) in latency.recorded() {
            count += n;
            let seconds = micros as f64 / 1e6;
            sum += seconds * n as f64;
            if micros == 0 {
                zero_count += n;
                continue;
            }
            if seconds > bound || buckets.is_empty() {
                let index = bucket_index(seconds);
                bound = 2f64.powf(f64::from(index) / per_doubling);
                buckets.push((index, 0));
            }
            buckets.last_mut().expect("a bucket is open").1 += n;
        }
        let mut spans: Vec<(i32, u32)> = Vec::new();
        let mut deltas = Vec::with_capacity(buckets.len());
        let (mut previous_index, mut previous_count) = (None::<i32>, 0i64);
        for &(index, n) in &buckets {
            match previous_index {
                Some(last) if index == last + 1 => spans.last_mut().expect("a span").1 += 1,
                Some(last) => spans.push((index - last - 1, 1)),
                None => spans.push((index, 1)),
            }
            deltas.push(n as i64 - previous_count);
            previous_count = n as i64;
            previous_index = Some(index);
        }
        Self {
            count,
            sum,
            zero_count,
            spans,
            deltas,
        }
    }

    /// `(upper bound in seconds, count)` of every non-empty bucket, the zero bucket first:
    /// the inverse of the span/delta encoding, for checks.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::new();
        if self.zero_count > 0 {
            out.push((0.0, self.zero_count));
        }
        let (mut index, mut count, mut deltas) = (0i32, 0i64, self.deltas.iter());
        for (i, &(offset, length)) in self.spans.iter().enumerate() {
            index = if i == 0 { offset } else { index + offset + 1 };
            for step in 0..length {
                if step > 0 {
                    index += 1;
                }
                count += deltas.next().copied().unwrap_or(0);
                let bound = 2f64.powf(f64::from(index) / f64::from(1 << SCHEMA));
                out.push((bound, count as u64));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_bounds_hold_their_values() {
        assert_eq!(bucket_index(1.0), 0);
        assert_eq!(bucket_index(2.0), 8);
        assert_eq!(bucket_index(0.5), -8);
        assert_eq!(bucket_index(1.0001), 1);
        for micros in [1u64, 7, 100, 999, 20_000, 1_234_567] {
            let seconds = micros as f64 / 1e6;
            let i = bucket_index(seconds);
            let bound = |i: i32| 2f64.powf(f64::from(i) / 8.0);
            assert!(bound(i - 1) < seconds && seconds <= bound(i), "{micros}");
        }
    }

    #[test]
    fn buckets_match_one_lookup_per_value() {
        let mut latency = LatencyHistogram::new();
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            latency.record_micros((x >> 33) % 2_000_000 + 1);
        }
        let mut expected = std::collections::BTreeMap::<i32, u64>::new();
        for (micros, n) in latency.recorded().filter(|(m, _)| *m > 0) {
            *expected
                .entry(bucket_index(micros as f64 / 1e6))
                .or_default() += n;
        }
        let native = NativeHistogram::from_latency(&latency);
        let got: Vec<u64> = native.buckets().iter().map(|b| b.1).collect();
        assert_eq!(got, expected.values().copied().collect::<Vec<_>>());
        assert_eq!(native.count, 20_000);
    }

    #[test]
    fn counts_sum_and_buckets_follow_the_hdr_histogram() {
        let mut latency = LatencyHistogram::new();
        latency.record_micros_n(0, 2);
        latency.record_micros_n(20_000, 10); // 20 ms
        latency.record_micros_n(21_000, 5); // the next bucket up: 20 ms ≤ 20.2 ms < 21 ms ≤ 22 ms
        latency.record_micros_n(400_000, 1); // far away: a second span
        let native = NativeHistogram::from_latency(&latency);
        assert_eq!(native.count, 18);
        assert_eq!(native.zero_count, 2);
        assert!(
            (native.sum - (0.2 + 0.105 + 0.4)).abs() < 0.001,
            "{}",
            native.sum
        );
        // 20 and 21 ms in neighbouring buckets (one span), 400 ms in a second span.
        assert_eq!(
            native.spans,
            vec![(-45, 2), (-10 - (-44) - 1, 1)],
            "{native:?}"
        );
        assert_eq!(native.deltas, vec![10, -5, -4]);
        let buckets = native.buckets();
        assert_eq!(buckets[0], (0.0, 2));
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 18);
        // Every observation sits under its bucket's bound and above the one below.
        let last = buckets.last().unwrap();
        assert_eq!(last.1, 1);
        assert!(
            last.0 >= 0.4 && last.0 / 2f64.powf(1.0 / 8.0) < 0.4,
            "{last:?}"
        );
        assert!(buckets
            .iter()
            .skip(1)
            .all(|(bound, _)| *bound >= 0.02 * 0.999));
    }
}
