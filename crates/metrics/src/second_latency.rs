//! Per-second latency histograms of one tag with bounded memory: only the current second's
//! histogram is live; finished seconds are folded into HdrHistogram's compressed V2 encoding
//! (a few hundred bytes each), shared between copies (a live snapshot copies them every
//! second), and merge exactly.

use crate::sealed_seconds::SealedSeconds;
use crate::{HistogramDecodeError, LatencyHistogram};
use std::sync::Arc;

/// Bounds the seconds kept to a day, like the per-second counters.
const MAX_SECONDS: u64 = 86_400;

/// Latency histograms second by second. Index = second since the run started.
#[derive(Debug, Clone, Default)]
pub struct SecondLatency {
    /// The second being recorded and its histogram.
    live: Option<(u64, LatencyHistogram)>,
    /// Finished seconds, encoded; `None` is a second without responses.
    sealed: SealedSeconds,
}

impl SecondLatency {
    /// Records one latency in `second`. Responses are recorded at their completion, so seconds
    /// almost always come in order; a late one re-opens its sealed second (rare, exact).
    #[inline]
    pub fn record_micros(&mut self, second: u64, micros: u64) {
        let second = second.min(MAX_SECONDS);
        match &mut self.live {
            Some((live, histogram)) if *live == second => histogram.record_micros(micros),
            Some((live, _)) if *live > second => {
                let mut histogram = self.decoded(second);
                histogram.record_micros(micros);
                self.store(second, &histogram);
            }
            _ => {
                let mut histogram = self.seal_live().unwrap_or_default();
                histogram.reset();
                if let Some(existing) = self.sealed_bytes(second) {
                    histogram.merge(&decode_own(existing));
                }
                histogram.record_micros(micros);
                self.live = Some((second, histogram));
            }
        }
    }

    /// Encodes the live second, so every second is in its stored form. Returns the live
    /// histogram for reuse.
    fn seal_live(&mut self) -> Option<LatencyHistogram> {
        let (second, histogram) = self.live.take()?;
        self.store(second, &histogram);
        Some(histogram)
    }

    /// Puts every second into its encoded form (the results file writes those bytes).
    pub fn seal(&mut self) {
        self.seal_live();
    }

    /// The encoded bytes of `second`; `None` when it had no responses.
    fn sealed_bytes(&self, second: u64) -> Option<&[u8]> {
        self.sealed.get(second as usize).map(|bytes| &bytes[..])
    }

    fn store(&mut self, second: u64, histogram: &LatencyHistogram) {
        let bytes = (!histogram.is_empty()).then(|| {
            let mut bytes = Vec::new();
            histogram.encode_into(&mut bytes);
            Arc::from(bytes)
        });
        self.sealed.set(second as usize, bytes);
    }

    /// Seconds covered (the last second with a histogram, plus one).
    pub fn len(&self) -> usize {
        let live = self.live.as_ref().map_or(0, |(s, _)| *s as usize + 1);
        self.sealed.len().max(live)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The histogram of `second` (empty when nothing was recorded then).
    pub fn decoded(&self, second: u64) -> LatencyHistogram {
        match &self.live {
            Some((live, histogram)) if *live == second => histogram.clone(),
            _ => self
                .sealed_bytes(second)
                .map_or_else(LatencyHistogram::new, decode_own),
        }
    }

    /// The histogram of `second`, or `None` when nothing was recorded then.
    pub fn decoded_if_any(&self, second: u64) -> Option<LatencyHistogram> {
        match &self.live {
            Some((live, histogram)) if *live == second => Some(histogram.clone()),
            _ => self.sealed_bytes(second).map(decode_own),
        }
    }

    /// The encoded seconds, index = second; an empty slice is a second without responses.
    /// Call [`seal`](Self::seal) first, or the live second is missing.
    pub fn encoded(&self) -> Vec<&[u8]> {
        self.sealed
            .iter()
            .map(|bytes| bytes.map_or(&[][..], |b| &b[..]))
            .collect()
    }

    /// Builds the series from encoded seconds (as [`encoded`](Self::encoded) returned them).
    /// Each is checked to be a compressed V2 histogram of its stated length; decoding them all
    /// here would double the cost of reading a file, whose checksums already vouch for the
    /// bytes (a crafted second that still fails to decode reads as empty, never a panic).
    pub fn from_encoded(sealed: Vec<Vec<u8>>) -> Result<Self, HistogramDecodeError> {
        if sealed.len() as u64 > MAX_SECONDS + 1 {
            return Err(HistogramDecodeError(format!(
                "{} seconds, at most {} expected",
                sealed.len(),
                MAX_SECONDS + 1
            )));
        }
        for (second, bytes) in sealed.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
            let cookie_and_length = bytes
                .get(..8)
                .map(|h| (&h[..4], u32::from_be_bytes([h[4], h[5], h[6], h[7]])));
            match cookie_and_length {
                Some((cookie, len))
                    if cookie == COMPRESSED_V2_COOKIE && len as usize + 8 == bytes.len() => {}
                _ => {
                    return Err(HistogramDecodeError(format!(
                        "second {second} is not a compressed V2 histogram"
                    )))
                }
            }
        }
        let mut seconds = SealedSeconds::default();
        for (second, bytes) in sealed.into_iter().enumerate() {
            seconds.set(second, (!bytes.is_empty()).then(|| Arc::from(bytes)));
        }
        Ok(Self {
            live: None,
            sealed: seconds,
        })
    }

    /// Moves every second `seconds` later (see [`Series::delay`](crate::Series::delay)).
    pub fn delay(&mut self, seconds: usize) {
        self.seal_live();
        self.sealed.delay(seconds);
    }

    /// Adds every second of `other` into this one: exact.
    pub fn merge(&mut self, other: &SecondLatency) {
        self.seal_live();
        for second in 0..other.len() as u64 {
            let theirs_live = matches!(&other.live, Some((s, _)) if *s == second);
            let theirs_bytes = other.sealed.get(second as usize);
            if !theirs_live && theirs_bytes.is_none() {
                continue;
            }
            let mine_empty = self.sealed_bytes(second).is_none();
            if mine_empty && !theirs_live {
                // Nothing to add to: the encoded bytes are the same either way, so share them.
                self.sealed.set(second as usize, theirs_bytes.cloned());
                continue;
            }
            let mut histogram = self.decoded(second);
            histogram.merge(&other.decoded(second));
            self.store(second, &histogram);
        }
    }
}

const COMPRESSED_V2_COOKIE: [u8; 4] = crate::latency::V2_COMPRESSED_COOKIE.to_be_bytes();

/// Decodes bytes this type encoded itself, or that passed `from_encoded`'s checks; bytes that
/// still do not decode (only a crafted file gets here) read as an empty second.
fn decode_own(bytes: &[u8]) -> LatencyHistogram {
    LatencyHistogram::decode(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(s: &SecondLatency) -> Vec<crate::LatencyStats> {
        (0..s.len() as u64).map(|i| s.decoded(i).stats()).collect()
    }

    #[test]
    fn seconds_merge_exactly_whatever_the_split() {
        let mut halves = [SecondLatency::default(), SecondLatency::default()];
        let mut whole = SecondLatency::default();
        for i in 0..30_000u64 {
            let second = i / 1000;
            let micros = 200 + (i * 7919) % 50_000;
            halves[i.is_multiple_of(3) as usize].record_micros(second, micros);
            whole.record_micros(second, micros);
        }
        // A late response re-opens its second.
        halves[0].record_micros(3, 123);
        whole.record_micros(3, 123);
        let [mut merged, other] = halves;
        merged.merge(&other);
        assert_eq!(merged.len(), 30);
        assert_eq!(figures(&merged), figures(&whole));
        assert_eq!(merged.decoded(3).count(), 1001);
        merged.seal();
        whole.seal();
        assert_eq!(merged.encoded(), whole.encoded());
        let back =
            SecondLatency::from_encoded(whole.encoded().iter().map(|b| b.to_vec()).collect())
                .unwrap();
        assert_eq!(figures(&back), figures(&whole));
    }

    #[test]
    fn a_snapshot_copy_does_not_grow_with_the_run() {
        use crate::sealed_seconds::tests::chunk_copies;
        // What a worker does under a live output: record a second, copy its metrics, go on.
        // Per copy, the sealed seconds are shared (no encoded byte copied) and the next
        // second's seal copies at most one chunk of pointers, whether the run is 10 s or 2 h.
        let copies_per_snapshot = |run_seconds: u64| {
            let mut s = SecondLatency::default();
            for second in 0..run_seconds {
                for i in 0..50 {
                    s.record_micros(second, 100 + i * 37);
                }
            }
            let mut counts = Vec::new();
            for second in run_seconds..run_seconds + 5 {
                let before = chunk_copies();
                let copy = s.clone();
                s.record_micros(second, 500);
                counts.push(chunk_copies() - before);
                for old in 0..run_seconds.saturating_sub(1) as usize {
                    assert!(Arc::ptr_eq(
                        copy.sealed.get(old).unwrap(),
                        s.sealed.get(old).unwrap()
                    ));
                }
            }
            counts
        };
        let short = copies_per_snapshot(10);
        let long = copies_per_snapshot(7_200);
        assert!(short.iter().all(|&c| c <= 1), "{short:?}");
        assert!(long.iter().all(|&c| c <= 1), "{long:?}");
    }

    #[test]
    fn a_sealed_second_is_small() {
        let mut s = SecondLatency::default();
        for i in 0..50_000u64 {
            s.record_micros(0, 500 + (i * 7919) % 20_000);
        }
        s.record_micros(1, 1);
        let size = s.encoded()[0].len();
        assert!(size < 4096, "one second took {size} bytes");
        assert!(SecondLatency::from_encoded(vec![b"junk".to_vec()]).is_err());
        let mut cut = s.encoded()[0].to_vec();
        cut.pop();
        assert!(SecondLatency::from_encoded(vec![cut]).is_err());
        // Right envelope, garbage inside: an empty second, not a panic.
        let mut garbage = s.encoded()[0].to_vec();
        for b in &mut garbage[8..] {
            *b = 0x55;
        }
        let read = SecondLatency::from_encoded(vec![garbage]).unwrap();
        assert!(read.decoded(0).is_empty());
    }
}
