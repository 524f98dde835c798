//! Measurements of a run: per-tag HDR histograms and counters, per-second series, all mergeable.
//!
//! Each engine worker thread owns one [`RunMetrics`] and records into it without locks; the
//! engine merges the workers' metrics at the end (and periodically for live views). Merging
//! is exact — histograms add bucket by bucket, counters add — so merged figures equal those of
//! one recorder that saw every request. That property is what makes distributed runs correct.

mod custom;
mod error_kind;
mod latency;
mod run;
mod sealed_seconds;
mod second_latency;
mod self_check;
mod series;
mod vus;

pub use custom::{CustomKind, CustomMetric, CustomMetrics, CustomValues, Trend};
pub use error_kind::ErrorKind;
pub use latency::{
    HistogramDecodeError, LatencyHistogram, LatencyStats, MAX_TRACKABLE_MICROS,
    STANDARD_PERCENTILES,
};
pub use run::{
    failed_by_default, CheckCounts, FailedValue, PhaseTimings, ResponseRecord, RunMetrics,
    SessionCounters, SessionSecond, StatusCounts, TagMetrics, VerdictOverrides,
};
pub use second_latency::SecondLatency;
pub use self_check::{SelfCheckMetrics, STALL, TICK};
pub use series::{SecondBucket, Series};
pub use vus::{VuSecond, VuSeries};
