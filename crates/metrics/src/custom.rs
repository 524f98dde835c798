//! Custom metrics a definition declares (Counter, Gauge, Rate, Trend): per-worker storage
//! with an exact merge. A Trend is an HDR histogram (3 significant digits) of the values in
//! thousandths, plus their exact sum, minimum and maximum.

use crate::LatencyHistogram;
use serde::{Deserialize, Serialize};

/// The kind of a custom metric (the plan's `MetricKind`, without depending on the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CustomKind {
    Counter,
    Gauge,
    Rate,
    Trend,
}

/// Values of one custom metric.
#[derive(Debug, Clone)]
pub enum CustomValues {
    Counter {
        sum: f64,
        samples: u64,
    },
    Gauge {
        /// The last value set, and when (µs since the run started): the merge keeps the
        /// latest one.
        last: Option<(u64, f64)>,
        min: f64,
        max: f64,
    },
    Rate {
        /// Non-zero values.
        trues: u64,
        samples: u64,
    },
    Trend(Trend),
}

/// A distribution of values. Percentiles come from the histogram (values below 0 count as
/// 0 there, above 3.6 million as 3.6 million); mean, min and max are exact.
#[derive(Debug, Clone, Default)]
pub struct Trend {
    /// Values × 1000, so milliseconds are kept to the microsecond.
    pub histogram: LatencyHistogram,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
}

impl Trend {
    pub fn count(&self) -> u64 {
        self.histogram.count()
    }

    pub fn record(&mut self, value: f64) {
        let first = self.count() == 0;
        self.histogram
            .record_micros((value * 1000.0).round().max(0.0) as u64);
        self.sum += value;
        self.min = if first { value } else { self.min.min(value) };
        self.max = if first { value } else { self.max.max(value) };
    }

    pub fn merge(&mut self, other: &Trend) {
        if other.count() == 0 {
            return;
        }
        let first = self.count() == 0;
        self.histogram.merge(&other.histogram);
        self.sum += other.sum;
        self.min = if first {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = if first {
            other.max
        } else {
            self.max.max(other.max)
        };
    }

    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum / self.count() as f64
        }
    }

    /// The value at `percentile` (0–100).
    pub fn percentile(&self, percentile: f64) -> f64 {
        self.histogram.percentile_micros(percentile) as f64 / 1000.0
    }
}

/// One custom metric: its name, kind and values.
#[derive(Debug, Clone)]
pub struct CustomMetric {
    pub name: String,
    pub kind: CustomKind,
    pub values: CustomValues,
}

impl CustomMetric {
    pub fn new(name: impl Into<String>, kind: CustomKind) -> Self {
        let values = match kind {
            CustomKind::Counter => CustomValues::Counter {
                sum: 0.0,
                samples: 0,
            },
            CustomKind::Gauge => CustomValues::Gauge {
                last: None,
                min: 0.0,
                max: 0.0,
            },
            CustomKind::Rate => CustomValues::Rate {
                trues: 0,
                samples: 0,
            },
            CustomKind::Trend => CustomValues::Trend(Trend::default()),
        };
        Self {
            name: name.into(),
            kind,
            values,
        }
    }

    /// Adds one value; `at_us` (µs since the run started) orders gauge values.
    #[inline]
    pub fn record(&mut self, value: f64, at_us: u64) {
        match &mut self.values {
            CustomValues::Counter { sum, samples } => {
                *sum += value;
                *samples += 1;
            }
            CustomValues::Gauge { last, min, max } => {
                if last.is_none() {
                    (*min, *max) = (value, value);
                } else {
                    *min = min.min(value);
                    *max = max.max(value);
                }
                *last = Some((at_us, value));
            }
            CustomValues::Rate { trues, samples } => {
                *trues += u64::from(value != 0.0 && !value.is_nan());
                *samples += 1;
            }
            CustomValues::Trend(trend) => trend.record(value),
        }
    }

    /// Adds `other` (the same metric of another worker) exactly.
    pub fn merge(&mut self, other: &CustomMetric) {
        match (&mut self.values, &other.values) {
            (
                CustomValues::Counter { sum, samples },
                CustomValues::Counter { sum: s, samples: n },
            ) => {
                *sum += s;
                *samples += n;
            }
            (
                CustomValues::Gauge { last, min, max },
                CustomValues::Gauge {
                    last: Some(theirs),
                    min: their_min,
                    max: their_max,
                },
            ) => match last {
                None => {
                    (*min, *max) = (*their_min, *their_max);
                    *last = Some(*theirs);
                }
                Some(mine) => {
                    *min = min.min(*their_min);
                    *max = max.max(*their_max);
                    if theirs.0 > mine.0 {
                        *mine = *theirs;
                    }
                }
            },
            (
                CustomValues::Rate { trues, samples },
                CustomValues::Rate {
                    trues: t,
                    samples: n,
                },
            ) => {
                *trues += t;
                *samples += n;
            }
            (CustomValues::Trend(mine), CustomValues::Trend(theirs)) => mine.merge(theirs),
            _ => {}
        }
    }
}

/// Every custom metric of a run, in declaration order; steps refer to them by index.
#[derive(Debug, Clone, Default)]
pub struct CustomMetrics {
    pub metrics: Vec<CustomMetric>,
}

impl CustomMetrics {
    pub fn new<N: Into<String>>(decls: impl IntoIterator<Item = (N, CustomKind)>) -> Self {
        Self {
            metrics: decls
                .into_iter()
                .map(|(name, kind)| CustomMetric::new(name, kind))
                .collect(),
        }
    }

    #[inline]
    pub fn record(&mut self, index: usize, value: f64, at_us: u64) {
        self.metrics[index].record(value, at_us);
    }

    /// Aligned by index like checks; a longer `other` brings its metrics along.
    pub fn merge(&mut self, other: &CustomMetrics) {
        for (i, theirs) in other.metrics.iter().enumerate() {
            match self.metrics.get_mut(i) {
                Some(mine) => mine.merge(theirs),
                None => self.metrics.push(theirs.clone()),
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&CustomMetric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> CustomMetrics {
        CustomMetrics::new([
            ("c", CustomKind::Counter),
            ("g", CustomKind::Gauge),
            ("r", CustomKind::Rate),
            ("t", CustomKind::Trend),
        ])
    }

    #[test]
    fn merging_two_halves_equals_one_recorder() {
        let mut halves = [all_kinds(), all_kinds()];
        let mut whole = all_kinds();
        for i in 0..1000u64 {
            let value = (i % 37) as f64 * 1.5;
            for metric in 0..4 {
                halves[(i % 2) as usize].record(metric, value, i);
                whole.record(metric, value, i);
            }
        }
        let [mut merged, other] = halves;
        merged.merge(&other);
        for (m, w) in merged.metrics.iter().zip(whole.metrics.iter()) {
            match (&m.values, &w.values) {
                (CustomValues::Trend(a), CustomValues::Trend(b)) => {
                    assert_eq!(a.histogram.stats(), b.histogram.stats());
                    assert_eq!((a.sum, a.min, a.max), (b.sum, b.min, b.max));
                }
                (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            }
        }
        let CustomValues::Gauge { last, min, max } = &merged.metrics[1].values else {
            panic!()
        };
        assert_eq!(
            (*last, *min, *max),
            (Some((999, 999.0 % 37.0 * 1.5)), 0.0, 54.0)
        );
    }

    #[test]
    fn rates_count_non_zero_and_trends_keep_exact_mean_and_extremes() {
        let mut m = all_kinds();
        for v in [0.0, 1.0, 2.0, 0.0] {
            m.record(2, v, 0);
        }
        assert!(matches!(
            m.metrics[2].values,
            CustomValues::Rate {
                trues: 2,
                samples: 4
            }
        ));
        for v in [10.0, 20.0, 30.5] {
            m.record(3, v, 0);
        }
        let CustomValues::Trend(t) = &m.metrics[3].values else {
            panic!()
        };
        assert_eq!((t.count(), t.min, t.max), (3, 10.0, 30.5));
        assert!((t.mean() - 20.1666).abs() < 1e-3);
        assert!(
            (t.percentile(50.0) - 20.0).abs() < 0.02,
            "{}",
            t.percentile(50.0)
        );
    }
}
