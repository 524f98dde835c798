//! Per-second latency histograms of one tag with bounded memory: only the current second's
//! histogram is live; finished seconds are folded into HdrHistogram's compressed V2 encoding
//! (a few hundred bytes each), and merge exactly.

use crate::{HistogramDecodeError, LatencyHistogram};

/// Bounds the seconds kept to a day, like the per-second counters.
const MAX_SECONDS: u64 = 86_400;

/// Latency histograms second by second. Index = second since the run started.
#[derive(Debug, Clone, Default)]
pub struct SecondLatency {
    /// The second being recorded and its histogram.
    live: Option<(u64, LatencyHistogram)>,
    /// Finished seconds, encoded; an empty entry is a second without responses.
    sealed: Vec<Vec<u8>>,
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
                if let Some(existing) = self.sealed_bytes(second).filter(|b| !b.is_empty()) {
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

    fn sealed_bytes(&self, second: u64) -> Option<&Vec<u8>> {
        self.sealed.get(second as usize)
    }

    fn store(&mut self, second: u64, histogram: &LatencyHistogram) {
        let index = second as usize;
        if self.sealed.len() <= index {
            self.sealed.resize(index + 1, Vec::new());
        }
        let slot = &mut self.sealed[index];
        slot.clear();
        if !histogram.is_empty() {
            histogram.encode_into(slot);
        }
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
            _ => match self.sealed_bytes(second) {
                Some(bytes) if !bytes.is_empty() => decode_own(bytes),
                _ => LatencyHistogram::new(),
            },
        }
    }

    /// The histogram of `second`, or `None` when nothing was recorded then.
    pub fn decoded_if_any(&self, second: u64) -> Option<LatencyHistogram> {
        match &self.live {
            Some((live, histogram)) if *live == second => Some(histogram.clone()),
            _ => self
                .sealed_bytes(second)
                .filter(|b| !b.is_empty())
                .map(|b| decode_own(b)),
        }
    }

    /// The encoded seconds, index = second; an empty slice is a second without responses.
    /// Call [`seal`](Self::seal) first, or the live second is missing.
    pub fn encoded(&self) -> &[Vec<u8>] {
        &self.sealed
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
        Ok(Self { live: None, sealed })
    }

    /// Moves every second `seconds` later (see [`Series::delay`](crate::Series::delay)).
    pub fn delay(&mut self, seconds: usize) {
        self.seal_live();
        if !self.sealed.is_empty() {
            self.sealed
                .splice(0..0, std::iter::repeat_n(Vec::new(), seconds));
        }
    }

    /// Adds every second of `other` into this one: exact.
    pub fn merge(&mut self, other: &SecondLatency) {
        self.seal_live();
        for second in 0..other.len() as u64 {
            let theirs_live = matches!(&other.live, Some((s, _)) if *s == second);
            let theirs_bytes = other.sealed_bytes(second).filter(|b| !b.is_empty());
            if !theirs_live && theirs_bytes.is_none() {
                continue;
            }
            let mine_empty = self.sealed_bytes(second).is_none_or(|b| b.is_empty());
            if mine_empty && !theirs_live {
                // Nothing to add to: the encoded bytes are the same either way.
                let bytes = theirs_bytes.cloned().unwrap_or_default();
                let index = second as usize;
                if self.sealed.len() <= index {
                    self.sealed.resize(index + 1, Vec::new());
                }
                self.sealed[index] = bytes;
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
        let back = SecondLatency::from_encoded(whole.encoded().to_vec()).unwrap();
        assert_eq!(figures(&back), figures(&whole));
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
        let mut cut = s.encoded()[0].clone();
        cut.pop();
        assert!(SecondLatency::from_encoded(vec![cut]).is_err());
        // Right envelope, garbage inside: an empty second, not a panic.
        let mut garbage = s.encoded()[0].clone();
        for b in &mut garbage[8..] {
            *b = 0x55;
        }
        let read = SecondLatency::from_encoded(vec![garbage]).unwrap();
        assert!(read.decoded(0).is_empty());
    }
}
