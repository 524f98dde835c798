//! Execution segments: segment `i` of a sequence of `N` parts of a test (equal, or k6's
//! unequal `--execution-segment-sequence`), so N processes (machines, pods) together run
//! exactly the whole test. Counts are striped with k6's algorithm (VU, iteration, slot and row
//! `k` belongs to one segment; for equal parts, segment `k mod N`), so the N segments' shares
//! of any count sum to it exactly, at every instant of a ramp; rates are multiplied by the
//! segment's length (independent Poisson streams whose union is the whole test's process);
//! each segment draws from its own random streams, derived from the run's seed.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Part `index` (from 0) of a sequence of `count` parts: equal parts, or the parts between
/// `points` (the sequence's boundaries `0 = p0 < p1 < ... < pN = 1` as `[num, den]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub index: u64,
    pub count: u64,
    /// Unequal parts' boundaries (empty: `count` equal parts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<[u64; 2]>,
}

/// Sequences whose striping period (the lengths' least common denominator) is above this are
/// refused: the striping walks one period.
const MAX_PERIOD: u128 = 1_000_000;

/// The run-wide indexes (slots, arrival-rate iterations, data rows) one worker of one segment
/// owns: the segment's own indexes in order, dealt round-robin to the segment's workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripe {
    /// The segment's positions within one period of `period` indexes, ascending.
    positions: Arc<[u64]>,
    period: u64,
    /// This worker's first item among the segment's, and the step between its items.
    first: u64,
    step: u64,
}

/// A segment's striping, computed once: its positions within each period of indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Striping {
    positions: Arc<[u64]>,
    period: u64,
}

impl Striping {
    /// The segment's share of `total`: its striped indexes below `total`, so the shares of
    /// all segments sum to `total` and never shrink as it grows.
    pub fn share(&self, total: u64) -> u64 {
        let below = total % self.period;
        (total / self.period) * self.positions.len() as u64
            + self.positions.iter().filter(|&&p| p < below).count() as u64
    }

    /// The run-wide indexes worker `worker` of the segment's `workers` owns.
    pub fn stripe(&self, worker: u64, workers: u64) -> Stripe {
        Stripe {
            positions: Arc::clone(&self.positions),
            period: self.period,
            first: worker,
            step: workers.max(1),
        }
    }
}

impl Stripe {
    /// The run-wide index of this worker's `m`-th item.
    #[inline]
    pub fn nth(&self, m: u64) -> u64 {
        let j = self.first + m * self.step;
        let n = self.positions.len() as u64;
        (j / n) * self.period + self.positions[(j % n) as usize]
    }
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
    #[error("`{0}`: the sequence's parts need a common denominator of at most 1000000")]
    TooFine(String),
    #[error("`{0}` is not an increasing list of values from 0 to 1 (e.g. 0,1/3,1)")]
    BadSequence(String),
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

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn reduced((num, den): (u128, u128)) -> (u128, u128) {
    let g = gcd(num, den).max(1);
    (num / g, den / g)
}

/// `a < b` for fractions.
fn less((an, ad): (u128, u128), (bn, bd): (u128, u128)) -> bool {
    an * bd < bn * ad
}

impl Segment {
    /// The whole test (no segmentation).
    pub const WHOLE: Segment = Segment {
        index: 0,
        count: 1,
        points: Vec::new(),
    };

    /// Part `index` of `count` equal parts.
    pub fn equal(index: u64, count: u64) -> Segment {
        Segment {
            index,
            count,
            points: Vec::new(),
        }
    }

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
        Ok(Segment::equal(index, count))
    }

    /// k6's `--execution-segment a:b` with an optional `--execution-segment-sequence
    /// 0,a,b,...,1`. Without a sequence, an equal part `i/N:(i+1)/N` is part `i` of `N` equal
    /// parts, and any other segment is filled around like k6 does (`0,a,b,1`).
    pub fn from_k6(segment: &str, sequence: Option<&str>) -> Result<Segment, SegmentError> {
        let (a, b) = segment
            .split_once(':')
            .ok_or_else(|| SegmentError::NotARange(segment.to_string()))?;
        let (a, b) = (reduced(rational(a)?), reduced(rational(b)?));
        if !less(a, b) {
            return Err(SegmentError::NotARange(segment.to_string()));
        }
        let points: Vec<(u128, u128)> = match sequence {
            Some(sequence) => {
                let points = sequence
                    .split(',')
                    .map(|p| rational(p).map(reduced))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut full = points.clone();
                // k6 fills a sequence that does not start at 0 or end at 1.
                if full.first().is_some_and(|p| p.0 != 0) {
                    full.insert(0, (0, 1));
                }
                if full.last().is_some_and(|p| p.0 != p.1) {
                    full.push((1, 1));
                }
                if full.len() < 2 || full.windows(2).any(|w| !less(w[0], w[1])) {
                    return Err(SegmentError::BadSequence(sequence.to_string()));
                }
                full
            }
            None => {
                // An equal part i/N:(i+1)/N of N parts.
                let width = reduced((b.0 * a.1 - a.0 * b.1, a.1 * b.1));
                if width.0 == 1 && (a.0 * width.1).is_multiple_of(a.1) && width.1 <= 1_000_000 {
                    let count = width.1 as u64;
                    return Ok(Segment::equal((a.0 * width.1 / a.1) as u64, count));
                }
                let mut full = vec![(0, 1)];
                full.extend([a, b].into_iter().filter(|p| p.0 != 0 && p.0 != p.1));
                full.push((1, 1));
                full
            }
        };
        let index = points
            .windows(2)
            .position(|w| w[0] == a && w[1] == b)
            .ok_or_else(|| SegmentError::NotInSequence {
                segment: segment.to_string(),
                sequence: sequence.unwrap_or("").to_string(),
            })?;
        let count = (points.len() - 1) as u64;
        let equal = points
            .iter()
            .enumerate()
            .all(|(k, &(n, d))| n * u128::from(count) == k as u128 * d);
        let found = if equal {
            Segment::equal(index as u64, count)
        } else {
            Segment {
                index: index as u64,
                count,
                points: points.iter().map(|&(n, d)| [n as u64, d as u64]).collect(),
            }
        };
        found
            .period()
            .map(|_| found.clone())
            .ok_or_else(|| SegmentError::TooFine(segment.to_string()))
    }

    /// The parts' lengths as fractions `(num, den)`, in sequence order.
    fn lengths(&self) -> Vec<(u128, u128)> {
        if self.points.is_empty() {
            return vec![(1, u128::from(self.count.max(1))); self.count.max(1) as usize];
        }
        self.points
            .windows(2)
            .map(|w| {
                let (a, b) = (
                    (u128::from(w[0][0]), u128::from(w[0][1])),
                    (u128::from(w[1][0]), u128::from(w[1][1])),
                );
                reduced((b.0 * a.1 - a.0 * b.1, a.1 * b.1))
            })
            .collect()
    }

    /// The striping period: the least common denominator of the parts' lengths.
    fn period(&self) -> Option<u128> {
        let mut lcd: u128 = 1;
        for (_, den) in self.lengths() {
            lcd = lcd / gcd(lcd, den) * den;
            if lcd > MAX_PERIOD {
                return None;
            }
        }
        Some(lcd)
    }

    /// This segment's positions within one period, by k6's striping: walk the period's
    /// indexes; each goes to the first part (largest first) that is due one — a part of
    /// length n/lcd takes index i once i reaches (taken · lcd / n) — so each part's indexes
    /// are spread as evenly as possible.
    pub fn striping(&self) -> Striping {
        let (positions, period) = self.positions();
        Striping {
            positions: positions.into(),
            period,
        }
    }

    fn positions(&self) -> (Vec<u64>, u64) {
        if self.points.is_empty() {
            return (vec![self.index], self.count.max(1));
        }
        let lcd = self.period().unwrap_or(1);
        let lengths = self.lengths();
        let mut order: Vec<(u128, usize)> = lengths
            .iter()
            .enumerate()
            .map(|(i, &(num, den))| (num * (lcd / den), i))
            .collect();
        // Stable: equal parts keep their sequence order.
        order.sort_by_key(|&(norm, _)| std::cmp::Reverse(norm));
        let mut taken = vec![0u128; order.len()];
        let mut mine = Vec::new();
        for i in 0..lcd {
            for (sorted, &(norm, original)) in order.iter().enumerate() {
                let num = taken[sorted] * lcd;
                if i > num / norm || (i == num / norm && num.is_multiple_of(norm)) {
                    taken[sorted] += 1;
                    if original as u64 == self.index {
                        mine.push(i as u64);
                    }
                    break;
                }
            }
        }
        (mine, lcd as u64)
    }

    /// This segment's share of `total` (VUs, iterations, clients): the count of the striped
    /// indexes below `total` that are this segment's, so the shares of all segments sum to
    /// `total` and never shrink as it grows.
    pub fn share(&self, total: u64) -> u64 {
        if self.points.is_empty() {
            return total / self.count + u64::from(self.index < total % self.count);
        }
        self.striping().share(total)
    }

    /// This segment's fraction of a rate: its length.
    pub fn fraction(&self) -> f64 {
        if self.points.is_empty() {
            return 1.0 / self.count as f64;
        }
        let (num, den) = self.lengths()[self.index as usize];
        num as f64 / den as f64
    }

    /// The run-wide indexes (slots, iterations, rows) worker `worker` of this segment's
    /// `workers` owns.
    pub fn stripe(&self, worker: u64, workers: u64) -> Stripe {
        self.striping().stripe(worker, workers)
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
    /// `i/N` for equal parts; `a:b` (k6's form) for a part of an unequal sequence.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (
            self.points.get(self.index as usize),
            self.points.get(self.index as usize + 1),
        ) {
            (Some([an, ad]), Some([bn, bd])) => write!(f, "{an}/{ad}:{bn}/{bd}"),
            _ => write!(f, "{}/{}", self.index, self.count),
        }
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
                    .map(|index| Segment::equal(index, count).share(total))
                    .sum();
                assert_eq!(sum, total, "{total} over {count}");
            }
        }
        let s = Segment::parse("1/4").unwrap();
        assert_eq!((s.share(5), s.share(6), s.share(1)), (1, 2, 0));
        let stripe = s.stripe(2, 3);
        assert_eq!((stripe.nth(0), stripe.nth(1)), (9, 21));
    }

    #[test]
    fn k6_equal_segments_are_equal_parts() {
        let s = |a: &str, seq: Option<&str>| Segment::from_k6(a, seq);
        assert_eq!(s("0:1/4", None), Ok(Segment::equal(0, 4)));
        assert_eq!(s("25%:0.5", None), Ok(Segment::equal(1, 4)));
        assert_eq!(s("2/3:1", Some("0,1/3,2/3,1")), Ok(Segment::equal(2, 3)));
        assert_eq!(s("0:1", None), Ok(Segment::WHOLE));
        // Not an equal part: filled around like k6 (0, a, b, 1).
        let filled = s("0.1:0.6", None).unwrap();
        assert_eq!((filled.index, filled.count), (1, 3));
        assert_eq!(filled.points, vec![[0, 1], [1, 10], [3, 5], [1, 1]]);
        assert_eq!(filled.to_string(), "1/10:3/5");
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

    /// Every sequence's segments: the parts of the whole, each from its k6 form.
    fn sequence(text: &str) -> Vec<Segment> {
        let points: Vec<&str> = text.split(',').collect();
        points
            .windows(2)
            .map(|w| Segment::from_k6(&format!("{}:{}", w[0], w[1]), Some(text)).unwrap())
            .collect()
    }

    #[test]
    fn unequal_segments_stripe_like_k6() {
        // k6's own example (lib/execution_segment.go): 0:1/2, 1/2:3/4, 3/4:1 take indexes
        // 0 2 4 6 ..., 1 5 9 ..., 3 7 11 ...
        let parts = sequence("0,1/2,3/4,1");
        let firsts: Vec<Vec<u64>> = parts
            .iter()
            .map(|p| {
                let stripe = p.stripe(0, 1);
                (0..3).map(|m| stripe.nth(m)).collect()
            })
            .collect();
        assert_eq!(firsts, vec![vec![0, 2, 4], vec![1, 5, 9], vec![3, 7, 11]]);
        // Its scaling table: 1..=12 shared as 1 1 2 2 3 3 ..., 0 1 1 1 1 2 ..., 0 0 0 1 1 1 ...
        let shares: Vec<Vec<u64>> = parts
            .iter()
            .map(|p| (1..=12).map(|v| p.share(v)).collect())
            .collect();
        assert_eq!(shares[0], vec![1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        assert_eq!(shares[1], vec![0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]);
        assert_eq!(shares[2], vec![0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(parts[1].fraction(), 0.25);
        assert_eq!(parts[1].to_string(), "1/2:3/4");
    }

    #[test]
    fn unequal_segments_sum_exactly_to_the_whole() {
        for text in ["0,1/3,1", "0,1/2,3/4,1", "0,0.1,0.35,0.6,1", "0,1/7,2/5,1"] {
            let parts = sequence(text);
            let rates: f64 = parts.iter().map(Segment::fraction).sum();
            assert!((rates - 1.0).abs() < 1e-12, "{text}: {rates}");
            for total in 0..200u64 {
                let sum: u64 = parts.iter().map(|p| p.share(total)).sum();
                assert_eq!(sum, total, "{text}: {total}");
            }
            // Every index belongs to exactly one worker of one segment.
            let mut seen: Vec<u64> = parts
                .iter()
                .flat_map(|p| {
                    (0..3).flat_map(move |w| {
                        let stripe = p.stripe(w, 3);
                        (0..).map(move |m| stripe.nth(m)).take_while(|&k| k < 500)
                    })
                })
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..500).collect::<Vec<_>>(), "{text}");
        }
        assert!(matches!(
            Segment::from_k6("0:1/3", Some("0,1/3,1/2,1/3")),
            Err(SegmentError::BadSequence(_))
        ));
        assert!(matches!(
            Segment::from_k6("0:1/999983", Some("0,1/999983,1/999979,1")),
            Err(SegmentError::TooFine(_))
        ));
    }

    #[test]
    fn index_of_count_is_checked_and_seeds_differ() {
        assert_eq!(Segment::parse("3/4"), Ok(Segment::equal(3, 4)));
        assert!(matches!(
            Segment::parse("4/4"),
            Err(SegmentError::IndexTooLarge(_))
        ));
        for bad in ["4", "a/4", "1/0", "-1/4"] {
            assert!(Segment::parse(bad).is_err(), "{bad}");
        }
        let seeds: std::collections::HashSet<u64> = (0..4)
            .map(|index| Segment::equal(index, 4).seed(7))
            .collect();
        assert_eq!(seeds.len(), 4);
        assert_eq!(Segment::WHOLE.seed(7), 7);
    }
}
