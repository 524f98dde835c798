//! Reports: turns merged run metrics into what people and machines read.
//!
//! [`Summary`] is the one model every renderer reads (`summary.rs`); `hey.rs` prints it in
//! hey's layout, and `-o json` serialises it as is.

mod hey;
mod junit;
mod k6;
mod k6_metrics;
mod run;
mod series_out;
mod summary;
mod thresholds;

pub use hey::render_hey;
pub use junit::render_junit;
pub use k6::{format_ms, K6Summary};
pub use k6_metrics::{
    find_metric, k6_metrics, K6Metric, K6Values, MetricSummary, DEFAULT_TREND_STATS,
};
pub use run::render_run;
pub use series_out::{ndjson_line, render_csv};
pub use summary::{ArrivalSummary, PhaseSummary, PlannedArrivals, RunInfo, Summary, TagSummary};
pub use thresholds::{abort_reason, evaluate, ThresholdResult};
