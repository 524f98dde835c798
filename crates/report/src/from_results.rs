//! Reports from a results file: the same `Summary` (and text) as the run printed at its end,
//! because the run itself renders through here from the results it is about to write.

use crate::{render_hey, render_run, PlannedArrivals, RunInfo, Summary, ThresholdResult};
use barrage_plan::Aggregation;
use barrage_results::{ResultsFile, RunMeta};

/// The run facts a `Summary` needs, from the results file's metadata; the thresholds come
/// from the plan it holds, and are evaluated again on the stored metrics.
pub fn run_info(meta: &RunMeta, trend_stats: &[Aggregation]) -> RunInfo {
    let thresholds = meta.plan.metrics.thresholds.clone();
    RunInfo {
        name: meta.name.clone(),
        target: meta.target.clone(),
        started_at: meta.started_at(),
        elapsed: meta.elapsed(),
        interrupted: meta.interrupted,
        threads: meta.threads,
        tags: meta.tags.clone(),
        planned_arrivals: meta
            .planned_arrivals()
            .map(|(expected, seconds)| PlannedArrivals { expected, seconds }),
        thresholds,
        trend_stats: trend_stats.to_vec(),
        request_id_prefix: meta.request_id_prefix.clone(),
        segments: meta.segments.clone(),
    }
}

/// The summary the run printed at its end, with the Trend columns `trend_stats`.
pub fn summary_of(results: &ResultsFile, trend_stats: &[Aggregation]) -> Summary {
    let mut summary = Summary::new(&run_info(&results.meta, trend_stats), &results.metrics);
    summary.k6.aborted_by_threshold = results
        .thresholds
        .as_ref()
        .and_then(|t| t.get("aborted_by_threshold"))
        .and_then(|reason| reason.as_str())
        .map(str::to_string);
    summary
}

/// The THRS section: why an `abortOnFail` rule stopped the run (if one did) and every rule's
/// verdict with its observed value. `None` when there is nothing to say.
pub fn thresholds_section(
    aborted_by: Option<&str>,
    verdicts: &[ThresholdResult],
) -> Option<serde_json::Value> {
    (aborted_by.is_some() || !verdicts.is_empty()).then(|| {
        serde_json::json!({
            "aborted_by_threshold": aborted_by,
            "thresholds": verdicts,
        })
    })
}

/// The text summary the run printed: hey's layout for `quick`, the scenario layout otherwise.
pub fn render_text(results: &ResultsFile, summary: &Summary) -> String {
    if results.meta.command == "quick" {
        render_hey(summary)
    } else {
        render_run(summary)
    }
}
