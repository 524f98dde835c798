//! The per-second virtual-user gauge (`vus`, `vus_max`): recorded by each worker without
//! locks, merged by summing second by second.

use serde::{Deserialize, Serialize};

/// VUs during one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VuSecond {
    /// The most VUs running at once during the second (k6 `vus`); merged runs add up each
    /// worker's figure, so a second in which workers peak at different moments can read
    /// slightly above the true peak.
    pub vus: u64,
    /// VUs allocated (pool size, or the stages' peak) during the second (k6 `vus_max`).
    pub vus_max: u64,
}

/// The gauge of one worker (or, merged, of the run). Index = second since the run start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VuSeries {
    pub seconds: Vec<VuSecond>,
    /// The current values, carried into seconds in which nothing changed.
    #[serde(skip)]
    current: VuSecond,
}

/// Bounds the series to a day, like the request series.
const MAX_SECONDS: u64 = 86_400;

impl VuSeries {
    /// Sets the current values at `second`; seconds since the last change keep the values
    /// they had.
    pub fn set(&mut self, second: u64, vus: u64, vus_max: u64) {
        self.fill_to(second);
        self.current = VuSecond { vus, vus_max };
        let bucket = self.seconds.last_mut().expect("filled");
        bucket.vus = bucket.vus.max(vus);
        bucket.vus_max = bucket.vus_max.max(vus_max);
    }

    /// Extends the series up to and including `second` with the current values.
    pub fn fill_to(&mut self, second: u64) {
        let index = second.min(MAX_SECONDS) as usize;
        while self.seconds.len() <= index {
            self.seconds.push(self.current);
        }
    }

    /// The highest `vus` and `vus_max` of the run.
    pub fn peak(&self) -> VuSecond {
        self.seconds
            .iter()
            .fold(VuSecond::default(), |p, s| VuSecond {
                vus: p.vus.max(s.vus),
                vus_max: p.vus_max.max(s.vus_max),
            })
    }

    /// The last second's values (what a k6 `vus` / `vus_max` gauge shows at the end).
    pub fn last(&self) -> VuSecond {
        self.seconds.last().copied().unwrap_or_default()
    }

    /// Moves every second `seconds` later; before its start a run had no VUs (see
    /// [`Series::delay`](crate::Series::delay)).
    pub fn delay(&mut self, seconds: usize) {
        if !self.seconds.is_empty() {
            let none = std::iter::repeat_n(VuSecond::default(), seconds);
            self.seconds.splice(0..0, none);
        }
    }

    /// Adds another worker's gauge second by second.
    /// A series shorter than the other counts with its current values past its end (a
    /// worker whose gauge stopped changing still has those VUs).
    pub fn merge(&mut self, other: &VuSeries) {
        let current = self.current;
        if self.seconds.len() < other.seconds.len() {
            self.seconds.resize(other.seconds.len(), current);
        }
        for (i, mine) in self.seconds.iter_mut().enumerate() {
            let theirs = other.seconds.get(i).copied().unwrap_or(other.current);
            mine.vus += theirs.vus;
            mine.vus_max += theirs.vus_max;
        }
        self.current.vus += other.current.vus;
        self.current.vus_max += other.current.vus_max;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_over_quiet_seconds_and_merge_by_sum() {
        let mut a = VuSeries::default();
        a.set(0, 1, 4);
        a.set(0, 3, 4);
        a.set(0, 2, 4);
        a.set(3, 0, 4);
        assert_eq!(
            a.seconds.iter().map(|s| s.vus).collect::<Vec<_>>(),
            vec![3, 2, 2, 2]
        );
        let mut b = VuSeries::default();
        b.set(1, 5, 5);
        b.fill_to(4);
        a.merge(&b);
        // `a` ends at second 3 with 0 VUs current: it adds 0 VUs (and 4 allocated) after.
        assert_eq!(
            a.seconds.iter().map(|s| s.vus).collect::<Vec<_>>(),
            vec![3, 7, 7, 7, 5]
        );
        assert_eq!(a.peak(), VuSecond { vus: 7, vus_max: 9 });
        assert_eq!(a.last(), VuSecond { vus: 5, vus_max: 9 });
    }
}
