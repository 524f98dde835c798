//! One frame of the live dashboard (`--dashboard`): what the page draws, as JSON, from the
//! merged snapshots — per-tag request counts, failed share and the latest second's
//! p95/p99, VUs and active clients, the thresholds so far and the generator self-check.

use barrage_metrics::RunMetrics;
use barrage_plan::Plan;
use barrage_report::SelfCheckSummary;
use serde_json::{json, Value};
use std::time::Duration;

/// The frame at `elapsed` (`complete_seconds` seconds fully merged); `done` on the last one.
pub fn frame(
    plan: &Plan,
    metrics: &RunMetrics,
    elapsed: Duration,
    active_clients: u64,
    done: bool,
) -> String {
    let complete_seconds = if done {
        metrics.series().seconds.len() as u64
    } else {
        elapsed.as_secs()
    };
    let latest = complete_seconds.checked_sub(1);
    let tags: Vec<Value> = metrics
        .tags
        .iter()
        .zip(&plan.tags)
        .map(|(tag, name)| {
            let recent = latest.and_then(|s| tag.latency_by_second.decoded_if_any(s));
            let ms = |p: f64| recent.as_ref().map(|h| h.percentile_micros(p) as f64 / 1e3);
            let requests = tag.requests();
            json!({
                "name": name,
                "requests": requests,
                "failed_rate": tag.failed_rate(),
                "p95_ms": ms(95.0),
                "p99_ms": ms(99.0),
            })
        })
        .collect();
    let thresholds: Vec<Value> = barrage_report::evaluate(
        &plan.metrics.thresholds,
        metrics,
        &plan.tags,
        elapsed,
        done.then_some(true),
    )
    .into_iter()
    .map(|r| {
        json!({
            "metric": r.metric,
            "expression": r.expression,
            "observed": r.observed,
            "passed": r.passed,
        })
    })
    .collect();
    let reasons = SelfCheckSummary::new(&metrics.self_check).trust_reasons();
    let self_check = if reasons.is_empty() {
        "trusted: the generator kept to its plan".to_string()
    } else {
        format!("untrustworthy: {}", reasons.join("; "))
    };
    json!({
        "name": plan.name,
        "t": elapsed.as_secs_f64(),
        "planned": plan.workload.duration().map(|d| d.as_secs_f64()),
        "stage": crate::progress::stage_at(&plan.workload, elapsed),
        "done": done,
        "vus": metrics.vus.last().vus,
        "active": active_clients,
        "tags": tags,
        "thresholds": thresholds,
        "self_check": self_check,
    })
    .to_string()
}
