//! Reports: turns merged run metrics into what people and machines read.
//!
//! [`Summary`] is the one model every renderer reads (`summary.rs`); `hey.rs` prints it in
//! hey's layout, `run.rs` the scenario layout with the k6 sections (`k6.rs`: thresholds,
//! checks, metrics) and, for replays, how statuses differ from the recording
//! (`recorded.rs`); `-o json` / `--json` serialise it as is. `k6_metrics.rs` computes
//! k6's metrics from `RunMetrics`, `thresholds.rs` evaluates thresholds on them; `junit.rs`
//! and `series_out.rs` (CSV, NDJSON) are the other outputs.

pub mod compare;
mod from_results;
mod hey;
mod html;
mod junit;
mod k6;
mod k6_data;
mod k6_layout;
mod k6_metrics;
mod recorded;
mod run;
mod self_check;
mod series_out;
mod summary;
mod thresholds;

pub use from_results::{render_text, run_info, summary_of, thresholds_section};
pub use hey::render_hey;
pub use html::{
    escape, page, passed, render_compare_html, render_html, Axis, Chart, ComparedRun, Line, PALETTE,
};
pub use junit::render_junit;
pub use k6::{format_ms, K6Summary};
pub use k6_data::{k6_summary_data, K6DataShape};
pub use k6_layout::render_k6_v1;
pub use k6_metrics::{
    find_metric, k6_metrics, K6Metric, K6Values, MetricSummary, DEFAULT_TREND_STATS,
};
pub use run::{render_k6_run, render_run, segments_line};
pub use self_check::{
    LagPercentiles, SelfCheckSummary, BUSY_MACHINE_WAIT_PERCENT, CPU_LIMIT, LAG_P99_LIMIT_US,
    STALL_SHARE_LIMIT,
};
pub use series_out::{ndjson_line, render_csv};
pub use summary::{ArrivalSummary, PhaseSummary, PlannedArrivals, RunInfo, Summary, TagSummary};
pub use thresholds::{abort_reason, evaluate, ThresholdResult};
