//! Per-second time series of one tag: responses, status classes, errors by kind, bytes both
//! ways and latency extremes per second, mergeable exactly.

use crate::ErrorKind;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What happened to one tag during one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondBucket {
    pub responses: u64,
    pub errors: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Sum of latencies in µs, so the mean per second merges exactly.
    pub latency_sum_us: u64,
    pub latency_max_us: u64,
    /// Responses by status class: `[1xx, 2xx, 3xx, 4xx, 5xx]`.
    pub status_classes: [u64; 5],
    /// Errors by kind (serialised as a map of the kinds seen).
    #[serde(with = "errors_by_kind")]
    pub errors_by_kind: [u64; ErrorKind::COUNT],
    /// Requests still open when the run ended, counted in the second they were due to start
    /// (not errors, not responses; absent from series written before it existed).
    #[serde(default)]
    pub interrupted: u64,
}

impl SecondBucket {
    pub fn merge(&mut self, other: &SecondBucket) {
        self.responses += other.responses;
        self.errors += other.errors;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.latency_sum_us += other.latency_sum_us;
        self.latency_max_us = self.latency_max_us.max(other.latency_max_us);
        for (mine, theirs) in self.status_classes.iter_mut().zip(other.status_classes) {
            *mine += theirs;
        }
        for (mine, theirs) in self.errors_by_kind.iter_mut().zip(other.errors_by_kind) {
            *mine += theirs;
        }
        self.interrupted += other.interrupted;
    }

    /// Whether anything happened to the tag this second: a request ended or was cut off.
    pub fn is_empty(&self) -> bool {
        self.responses + self.errors + self.interrupted == 0
    }
}

/// `[u64; ErrorKind::COUNT]` as `{"timeout": 3, ...}` (kinds with a zero count left out).
mod errors_by_kind {
    use crate::ErrorKind;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(
        counts: &[u64; ErrorKind::COUNT],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            ErrorKind::ALL
                .iter()
                .filter(|k| counts[k.index()] > 0)
                .map(|k| (k.name(), counts[k.index()])),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<[u64; ErrorKind::COUNT], D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(deserializer)?;
        let mut counts = [0; ErrorKind::COUNT];
        for (name, n) in map {
            let kind = ErrorKind::ALL
                .iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| D::Error::custom(format!("unknown error kind `{name}`")))?;
            counts[kind.index()] = n;
        }
        Ok(counts)
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
    pub fn record_response(
        &mut self,
        second: u64,
        latency: Duration,
        status: u16,
        bytes_sent: u64,
        bytes_received: u64,
    ) {
        let micros = latency.as_micros() as u64;
        let bucket = self.bucket(second);
        bucket.responses += 1;
        bucket.bytes_sent += bytes_sent;
        bucket.bytes_received += bytes_received;
        bucket.latency_sum_us += micros;
        bucket.latency_max_us = bucket.latency_max_us.max(micros);
        // The HTTP layer only passes statuses 100–599.
        if let Some(class) = bucket
            .status_classes
            .get_mut(usize::from(status / 100).wrapping_sub(1))
        {
            *class += 1;
        }
    }

    #[inline]
    pub fn record_error(&mut self, second: u64, kind: ErrorKind, bytes_sent: u64) {
        let bucket = self.bucket(second);
        bucket.errors += 1;
        bucket.bytes_sent += bytes_sent;
        bucket.errors_by_kind[kind.index()] += 1;
    }

    /// A request due to start in `second` that the run's end cut off, never answered.
    pub fn record_interrupted(&mut self, second: u64) {
        self.bucket(second).interrupted += 1;
    }

    /// Moves every second `seconds` later: a run that started that much after another,
    /// put on the other's clock. The caller keeps the result within a day.
    pub fn delay(&mut self, seconds: usize) {
        if !self.seconds.is_empty() {
            let empty = std::iter::repeat_n(SecondBucket::default(), seconds);
            self.seconds.splice(0..0, empty);
        }
    }

    /// Response bytes that arrived for a request that then failed (cut off by its
    /// timeout, reset mid-body): they crossed the wire all the same.
    #[inline]
    pub fn record_received(&mut self, second: u64, bytes_received: u64) {
        self.bucket(second).bytes_received += bytes_received;
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
        a.record_response(0, Duration::from_micros(10), 200, 3, 5);
        b.record_response(2, Duration::from_micros(30), 503, 4, 7);
        b.record_error(0, ErrorKind::Timeout, 3);
        b.record_interrupted(2);
        a.record_interrupted(2);
        a.merge(&b);
        assert_eq!(a.seconds.len(), 3);
        assert_eq!((a.seconds[0].responses, a.seconds[0].errors), (1, 1));
        assert_eq!(a.seconds[0].bytes_sent, 6);
        assert_eq!(a.seconds[0].status_classes, [0, 1, 0, 0, 0]);
        assert_eq!(a.seconds[0].errors_by_kind[ErrorKind::Timeout.index()], 1);
        assert_eq!(a.seconds[1], SecondBucket::default());
        assert_eq!(a.seconds[2].latency_max_us, 30);
        assert_eq!(a.seconds[2].status_classes, [0, 0, 0, 0, 1]);
        assert_eq!(a.seconds[2].interrupted, 2);
        assert_eq!(a.seconds[2].errors, 0);
    }

    #[test]
    fn buckets_serialise_error_kinds_by_name_and_read_back() {
        let mut s = Series::default();
        s.record_error(0, ErrorKind::Refused, 0);
        s.record_error(0, ErrorKind::Refused, 0);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["seconds"][0]["errors_by_kind"],
            serde_json::json!({"refused": 2})
        );
        let back: Series = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, s);
        // A series written before `interrupted` existed still reads, as none.
        let mut old = json;
        old["seconds"][0]
            .as_object_mut()
            .unwrap()
            .remove("interrupted");
        let back: Series = serde_json::from_value(old).unwrap();
        assert_eq!(back, s);
    }
}
