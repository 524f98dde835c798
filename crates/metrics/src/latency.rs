//! Latency histograms: HDR, microsecond resolution, 3 significant digits, never a sample list.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::Write as _;
use std::time::Duration;

/// A stored histogram that cannot be read back: not HdrHistogram's V2 format, or recorded with
/// other bounds than barrage's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramDecodeError(pub String);

impl std::fmt::Display for HistogramDecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad latency histogram: {}", self.0)
    }
}

impl std::error::Error for HistogramDecodeError {}

/// HdrHistogram's cookie of a DEFLATE-compressed V2 histogram.
pub const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Largest latency tracked exactly: one hour. Longer values are clamped to it.
pub const MAX_TRACKABLE_MICROS: u64 = 3_600_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram of durations in microseconds. Memory is fixed by its range, not by the number
/// of values recorded.
///
/// The counts (~188 KB) are allocated at the first value: many histograms of a run stay
/// empty (TLS times over plain HTTP, the corrected latency of an open model), and a live
/// snapshot copies every histogram of a worker each second, an empty one for nothing.
pub struct LatencyHistogram {
    inner: Option<Histogram<u64>>,
}

impl Clone for LatencyHistogram {
    /// An empty histogram's copy allocates nothing, even when the original has its counts.
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.as_ref().filter(|h| !h.is_empty()).cloned(),
        }
    }
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.read() == other.read()
    }
}

fn empty_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_MICROS, SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid")
}

/// What an unallocated histogram reads as.
static EMPTY: std::sync::LazyLock<Histogram<u64>> = std::sync::LazyLock::new(empty_histogram);

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count())
            .finish()
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram; allocates nothing until a value is recorded.
    pub fn new() -> Self {
        Self { inner: None }
    }

    #[inline]
    fn read(&self) -> &Histogram<u64> {
        self.inner.as_ref().unwrap_or(&EMPTY)
    }

    #[inline]
    fn write(&mut self) -> &mut Histogram<u64> {
        self.inner.get_or_insert_with(empty_histogram)
    }

    #[inline]
    pub fn record_micros(&mut self, micros: u64) {
        self.write()
            .saturating_record(micros.min(MAX_TRACKABLE_MICROS));
    }

    /// Records `micros` `count` times (e.g. the zero connect times of reused connections).
    pub fn record_micros_n(&mut self, micros: u64, count: u64) {
        self.write()
            .saturating_record_n(micros.min(MAX_TRACKABLE_MICROS), count);
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
        let inner = self.write();
        inner
            .record_correct(micros, interval)
            .unwrap_or_else(|_| inner.saturating_record(micros));
    }

    /// Adds every count of `other` to this histogram: exact, order-independent.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let Some(theirs) = other.inner.as_ref().filter(|h| !h.is_empty()) else {
            return;
        };
        if self.inner.is_none() {
            self.inner = Some(theirs.clone());
            return;
        }
        self.write()
            .add(theirs)
            .expect("histograms share bounds, so adding cannot fail");
    }

    pub fn count(&self) -> u64 {
        self.inner.as_ref().map_or(0, Histogram::len)
    }

    /// Empties the histogram, keeping its memory.
    pub fn reset(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.reset();
        }
    }

    /// Appends the histogram in HdrHistogram's V2 + DEFLATE encoding (what other HdrHistogram
    /// tools read). The encoding only covers counts up to the largest value, so it is small
    /// and, for equal contents, byte-identical.
    ///
    /// Written like HdrHistogram's `V2DeflateSerializer` (cookie, length, zlib stream of the V2
    /// bytes) but with the fast DEFLATE level and per-thread buffers: workers seal a second per
    /// tag every second and merges re-encode seconds, so the encoder's cost counts; the level
    /// only changes the size a little, and every V2 reader reads it.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        thread_local! {
            static ENCODER: RefCell<(V2Serializer, Vec<u8>)> =
                RefCell::new((V2Serializer::new(), Vec::new()));
        }
        ENCODER.with(|cell| {
            let (serializer, plain) = &mut *cell.borrow_mut();
            plain.clear();
            serializer
                .serialize(self.read(), plain)
                .expect("writing to a Vec cannot fail");
            let start = out.len();
            out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
            out.extend_from_slice(&[0; 4]);
            let mut zlib = flate2::write::ZlibEncoder::new(&mut *out, flate2::Compression::fast());
            zlib.write_all(plain)
                .and_then(|()| zlib.finish().map(drop))
                .expect("writing to a Vec cannot fail");
            let len = (out.len() - start - 8) as u32;
            out[start + 4..start + 8].copy_from_slice(&len.to_be_bytes());
        });
    }

    /// Reads a histogram written by [`encode_into`](Self::encode_into); refuses other bounds,
    /// so merging what it returns cannot fail.
    pub fn decode(bytes: &[u8]) -> Result<Self, HistogramDecodeError> {
        thread_local! {
            static DECODER: RefCell<Deserializer> = RefCell::new(Deserializer::new());
        }
        let mut reader = bytes;
        let inner: Histogram<u64> = DECODER
            .with(|d| d.borrow_mut().deserialize(&mut reader))
            .map_err(|e| HistogramDecodeError(format!("{e:?}")))?;
        if (inner.low(), inner.high(), inner.sigfig())
            != (1, MAX_TRACKABLE_MICROS, SIGNIFICANT_DIGITS)
        {
            return Err(HistogramDecodeError(format!(
                "bounds {}..{} at {} digits, expected 1..{MAX_TRACKABLE_MICROS} at {SIGNIFICANT_DIGITS}",
                inner.low(),
                inner.high(),
                inner.sigfig()
            )));
        }
        if !reader.is_empty() {
            return Err(HistogramDecodeError(format!(
                "{} bytes after the histogram",
                reader.len()
            )));
        }
        Ok(Self { inner: Some(inner) })
    }

    /// `(value µs, count)` for every distinct recorded value (the value being the highest
    /// equivalent of its bucket), lowest first.
    pub fn recorded(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let inner = self.read();
        inner.iter_recorded().map(|v| {
            (
                inner.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    pub fn min_micros(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.read().min()
        }
    }

    pub fn max_micros(&self) -> u64 {
        self.read().max()
    }

    pub fn mean_micros(&self) -> f64 {
        self.read().mean()
    }

    pub fn stdev_micros(&self) -> f64 {
        self.read().stdev()
    }

    /// The value at `percentile` (0–100), in microseconds.
    pub fn percentile_micros(&self, percentile: f64) -> u64 {
        self.read().value_at_percentile(percentile)
    }

    /// hey's "response time histogram": `rows` marks from the fastest to the slowest value
    /// (hey has 11: the fastest, nine equal steps, the slowest), each value counted at the
    /// first mark at or above it. Returns `(mark µs, count)` pairs.
    pub fn hey_buckets(&self, rows: usize) -> Vec<(u64, u64)> {
        if self.is_empty() || rows < 2 {
            return Vec::new();
        }
        let low = self.min_micros();
        let high = self.max_micros().max(low);
        let steps = (rows - 1) as f64;
        let width = (high - low) as f64 / steps;
        let mut out: Vec<(u64, u64)> = (0..rows)
            .map(|i| ((low as f64 + width * i as f64).round() as u64, 0))
            .collect();
        out[rows - 1].0 = high;
        let inner = self.read();
        for value in inner.iter_recorded() {
            let v = inner
                .median_equivalent(value.value_iterated_to())
                .clamp(low, high);
            let index = if width == 0.0 || v <= low {
                0
            } else {
                (((v - low) as f64 / width).ceil() as usize).min(rows - 1)
            };
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
    fn hey_buckets_hold_every_value_at_the_first_mark_at_or_above_it() {
        let mut h = LatencyHistogram::new();
        for v in [100u64, 200, 300, 400, 1000, 1000, 1000] {
            h.record_micros(v);
        }
        let buckets = h.hey_buckets(11);
        assert_eq!(buckets.len(), 11);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 7);
        assert_eq!(
            buckets[0],
            (100, 1),
            "the fastest value has a row of its own"
        );
        assert_eq!(buckets[1], (190, 0));
        assert_eq!(buckets[2], (280, 1));
        assert_eq!(buckets[10], (1000, 3));
        let mut one = LatencyHistogram::new();
        one.record_micros(500);
        assert_eq!(one.hey_buckets(11)[0].1, 1);
        assert!(LatencyHistogram::new().hey_buckets(11).is_empty());
    }

    #[test]
    fn encoding_round_trips_and_refuses_garbage() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 5, 900, 900, 120_000, MAX_TRACKABLE_MICROS] {
            h.record_micros(v);
        }
        let mut bytes = Vec::new();
        h.encode_into(&mut bytes);
        let back = LatencyHistogram::decode(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.stats(), h.stats());
        let mut empty = Vec::new();
        LatencyHistogram::new().encode_into(&mut empty);
        assert!(LatencyHistogram::decode(&empty).unwrap().is_empty());
        assert!(LatencyHistogram::decode(&bytes[..bytes.len() / 2]).is_err());
        assert!(LatencyHistogram::decode(b"nope").is_err());
        // HdrHistogram's own encoder (default DEFLATE level) reads back the same.
        let mut theirs = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(h.read(), &mut theirs)
            .unwrap();
        assert_eq!(LatencyHistogram::decode(&theirs).unwrap(), h);
        let mut other = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&Histogram::<u64>::new(2).unwrap(), &mut other)
            .unwrap();
        assert!(LatencyHistogram::decode(&other).is_err());
    }

    #[test]
    fn empty_histogram_reports_zeroes() {
        let s = LatencyHistogram::new().stats();
        assert_eq!((s.count, s.min_us, s.max_us), (0, 0, 0));
    }

    #[test]
    fn empty_histograms_hold_no_counts_and_merge_exactly() {
        let empty = LatencyHistogram::new();
        assert!(empty.inner.is_none(), "nothing allocated before a value");
        let mut used = LatencyHistogram::new();
        used.record_micros(250);
        used.reset();
        assert!(used.inner.is_some(), "reset keeps the memory");
        assert!(
            used.clone().inner.is_none(),
            "an empty copy allocates nothing"
        );
        assert_eq!(used, empty);
        let mut one = LatencyHistogram::new();
        one.record_micros(120);
        one.record_micros(9_000);
        let mut merged = LatencyHistogram::new();
        merged.merge(&empty);
        assert!(merged.inner.is_none());
        merged.merge(&one);
        merged.merge(&used);
        merged.merge(&one);
        let mut whole = LatencyHistogram::new();
        for micros in [120, 9_000, 120, 9_000] {
            whole.record_micros(micros);
        }
        assert_eq!(merged.count(), 4);
        assert_eq!(merged, whole);
        assert_eq!(merged.stats(), whole.stats());
        let mut bytes = Vec::new();
        empty.encode_into(&mut bytes);
        assert!(LatencyHistogram::decode(&bytes).unwrap().is_empty());
    }
}
