//! Per-second time series of a run: requests, errors, bytes and latency extremes per second.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What happened during one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondBucket {
    pub responses: u64,
    pub errors: u64,
    pub bytes_received: u64,
    /// Sum of latencies in µs, so the mean per second merges exactly.
    pub latency_sum_us: u64,
    pub latency_max_us: u64,
}

impl SecondBucket {
    pub fn mean_latency_us(&self) -> f64 {
        if self.responses == 0 {
            0.0
        } else {
            self.latency_sum_us as f64 / self.responses as f64
        }
    }

    fn merge(&mut self, other: &SecondBucket) {
        self.responses += other.responses;
        self.errors += other.errors;
        self.bytes_received += other.bytes_received;
        self.latency_sum_us += other.latency_sum_us;
        self.latency_max_us = self.latency_max_us.max(other.latency_max_us);
    }
}

/// Seconds since the run started, each with its bucket. Index = second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub seconds: Vec<SecondBucket>,
}

/// Bounds the series to a day, so a corrupt clock cannot make it allocate without limit.
const MAX_SECONDS: u64 = 86_400;

impl Series {
    #[inline]
    fn bucket(&mut self, second: u64) -> &mut SecondBucket {
        let index = second.min(MAX_SECONDS) as usize;
        if index >= self.seconds.len() {
            self.seconds.resize(index + 1, SecondBucket::default());
        }
        &mut self.seconds[index]
    }

    #[inline]
    pub fn record_response(&mut self, second: u64, latency: Duration, bytes: u64) {
        let micros = latency.as_micros() as u64;
        let bucket = self.bucket(second);
        bucket.responses += 1;
        bucket.bytes_received += bytes;
        bucket.latency_sum_us += micros;
        bucket.latency_max_us = bucket.latency_max_us.max(micros);
    }

    #[inline]
    pub fn record_error(&mut self, second: u64) {
        self.bucket(second).errors += 1;
    }

    pub fn merge(&mut self, other: &Series) {
        if self.seconds.len() < other.seconds.len() {
            self.seconds
                .resize(other.seconds.len(), SecondBucket::default());
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(other.seconds.iter()) {
            mine.merge(theirs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_land_in_their_second_and_merge_exactly() {
        let mut a = Series::default();
        let mut b = Series::default();
        a.record_response(0, Duration::from_micros(10), 5);
        b.record_response(2, Duration::from_micros(30), 7);
        b.record_error(0);
        a.merge(&b);
        assert_eq!(a.seconds.len(), 3);
        assert_eq!(a.seconds[0].responses, 1);
        assert_eq!(a.seconds[0].errors, 1);
        assert_eq!(a.seconds[1], SecondBucket::default());
        assert_eq!(a.seconds[2].latency_max_us, 30);
    }
}
