//! Execution segments: segment `i` of `N` equal parts of a test, so N processes (machines,
//! pods) together run exactly the whole test. Counts are striped (VU, iteration, slot and row
//! `k` belongs to segment `k mod N`, k6's striping for equal segments), so the N segments'
//! shares of any count sum to it exactly, at every instant of a ramp; rates are divided by N
//! (independent Poisson streams whose union is the whole test's process); each segment draws
//! from its own random streams, derived from the run's seed.

use serde::{Deserialize, Serialize};

/// Part `index` (from 0) of `count` equal parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub index: u64,
    pub count: u64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SegmentError {
    #[error("`{0}` is not i/N (e.g. 0/4: the first of 4 segments)")]
    NotIndexOfCount(String),
    #[error("`{0}`: the index must be below the segment count (from 0)")]
    IndexTooLarge(String),
    #[error("`{0}` is not a fraction, decimal or percentage between 0 and 1")]
    BadValue(String),
    #[error("`{0}` is not a:b with a < b")]
    NotARange(String),
    #[error("`{0}`: barrage runs equal segments (a:b = i/N:(i+1)/N, e.g. 1/4:2/4)")]
    Unequal(String),
    #[error("the segment `{segment}` is not one of the sequence `{sequence}`")]
    NotInSequence { segment: String, sequence: String },
}

/// A value in [0, 1] as a fraction `num/den`: `1/4`, `0.25`, `25%`, `0`, `1`.
fn rational(text: &str) -> Result<(u128, u128), SegmentError> {
    let bad = || SegmentError::BadValue(text.to_string());
    let t = text.trim();
    let (num, den) = if let Some((n, d)) = t.split_once('/') {
        let n: u128 = n.trim().parse().map_err(|_| bad())?;
        let d: u128 = d.trim().parse().map_err(|_| bad())?;
        (n, d)
    } else {
        let (number, scale) = match t.strip_suffix('%') {
            Some(p) => (p.trim(), 100u128),
            None => (t, 1),
        };
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        if frac.len() > 18 || (whole.is_empty() && frac.is_empty()) {
            return Err(bad());
        }
        let digits = format!("{whole}{frac}");
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u128 = digits.parse().map_err(|_| bad())?;
        (n, 10u128.pow(frac.len() as u32) * scale)
    };
    if den == 0 || num > den {
        return Err(bad());
    }
    Ok((num, den))
}

impl Segment {
    /// The whole test (no segmentation).
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// `i/N` (`--segment`).
    pub fn parse(text: &str) -> Result<Segment, SegmentError> {
        let bad = || SegmentError::NotIndexOfCount(text.to_string());
        let (i, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > 1_000_000 {
            return Err(bad());
        }
        if index >= count {
            return Err(SegmentError::IndexTooLarge(text.to_string()));
        }
        Ok(Segment { index, count })
    }

    /// k6's `--execution-segment a:b` with an optional `--execution-segment-sequence
    /// 0,a,b,...,1`; the segment must be one of N equal parts.
    pub fn from_k6(segment: &str, sequence: Option<&str>) -> Result<Segment, SegmentError> {
        let (a, b) = segment
            .split_once(':')
            .ok_or_else(|| SegmentError::NotARange(segment.to_string()))?;
        let (an, ad) = rational(a)?;
        let (bn, bd) = rational(b)?;
        // b - a = (bn·ad - an·bd) / (ad·bd), which must be 1/N with a = i/N.
        let width_num = (bn * ad).checked_sub(an * bd).filter(|w| *w > 0);
        let width_num = width_num.ok_or_else(|| SegmentError::NotARange(segment.to_string()))?;
        let width_den = ad * bd;
        let unequal = || SegmentError::Unequal(segment.to_string());
        if width_den % width_num != 0 {
            return Err(unequal());
        }
        let count = width_den / width_num;
        // a · N must be a whole number i.
        if (an * count) % ad != 0 || count > 1_000_000 {
            return Err(unequal());
        }
        let found = Segment {
            index: (an * count / ad) as u64,
            count: count as u64,
        };
        if let Some(sequence) = sequence {
            let points = sequence
                .split(',')
                .map(rational)
                .collect::<Result<Vec<_>, _>>()?;
            let equal_parts = points.len() as u128 == count + 1
                && points
                    .iter()
                    .enumerate()
                    .all(|(k, (n, d))| n * count == k as u128 * d);
            if !equal_parts {
                return Err(SegmentError::NotInSequence {
                    segment: segment.to_string(),
                    sequence: sequence.to_string(),
                });
            }
        }
        Ok(found)
    }

    /// This segment's share of `total` (VUs, iterations, clients): the striped count, so the
    /// shares of all segments sum to `total`.
    pub fn share(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// This segment's fraction of a rate.
    pub fn fraction(&self) -> f64 {
        1.0 / self.count as f64
    }

    /// Where worker `worker` of this segment's `workers` starts in a run-wide sequence
    /// (slots, iterations, rows) and its stride: segment `i`'s items are `k ≡ i (mod N)`,
    /// dealt round-robin to its workers.
    pub fn stripe(&self, worker: u64, workers: u64) -> (u64, u64) {
        (
            self.index + self.count * worker,
            self.count * workers.max(1),
        )
    }

    /// This segment's seed, derived from the run's: every segment its own random streams.
    pub fn seed(&self, seed: u64) -> u64 {
        if self.count == 1 {
            return seed;
        }
        // SplitMix64 of the seed and the segment: distinct segments, distinct streams.
        let mut z = seed
            ^ self
                .index
                .wrapping_add(1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_every_count_sum_exactly() {
        for count in 1..=7u64 {
            for total in 0..50u64 {
                let sum: u64 = (0..count)
                    .map(|index| Segment { index, count }.share(total))
                    .sum();
                assert_eq!(sum, total, "{total} over {count}");
            }
        }
        let s = Segment::parse("1/4").unwrap();
        assert_eq!((s.share(5), s.share(6), s.share(1)), (1, 2, 0));
        assert_eq!(s.stripe(2, 3), (9, 12));
    }

    #[test]
    fn k6_segments_are_equal_parts() {
        let s = |a: &str, seq: Option<&str>| Segment::from_k6(a, seq);
        assert_eq!(s("0:1/4", None), Ok(Segment { index: 0, count: 4 }));
        assert_eq!(s("25%:0.5", None), Ok(Segment { index: 1, count: 4 }));
        assert_eq!(
            s("2/3:1", Some("0,1/3,2/3,1")),
            Ok(Segment { index: 2, count: 3 })
        );
        assert_eq!(s("0:1", None), Ok(Segment::WHOLE));
        assert!(matches!(s("0:0.3", None), Err(SegmentError::Unequal(_))));
        assert!(matches!(s("0.1:0.6", None), Err(SegmentError::Unequal(_))));
        assert!(matches!(
            s("1/2:1/4", None),
            Err(SegmentError::NotARange(_))
        ));
        assert!(matches!(s("0:2", None), Err(SegmentError::BadValue(_))));
        assert!(matches!(
            s("0:1/2", Some("0,1/3,1")),
            Err(SegmentError::NotInSequence { .. })
        ));
    }

    #[test]
    fn index_of_count_is_checked_and_seeds_differ() {
        assert_eq!(Segment::parse("3/4"), Ok(Segment { index: 3, count: 4 }));
        assert!(matches!(
            Segment::parse("4/4"),
            Err(SegmentError::IndexTooLarge(_))
        ));
        for bad in ["4", "a/4", "1/0", "-1/4"] {
            assert!(Segment::parse(bad).is_err(), "{bad}");
        }
        let seeds: std::collections::HashSet<u64> = (0..4)
            .map(|index| Segment { index, count: 4 }.seed(7))
            .collect();
        assert_eq!(seeds.len(), 4);
        assert_eq!(Segment::WHOLE.seed(7), 7);
    }
}
