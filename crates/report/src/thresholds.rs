//! Threshold evaluation against the k6 view of (merged) metrics: at the end of a run, and
//! while it goes on for `abortOnFail` rules once their `delayAbortEval` has passed.
//!
//! A metric without values yet (no request with that tag, no sample of a trend) fails no
//! threshold, as in k6; the result says "no data". Except when the run sent requests and
//! none got a response: then a metric without values is a failure (a target that never
//! answers must not pass every threshold).

use crate::k6_metrics::{find_metric, latency_with_status, K6Metric, K6Values};
use barrage_metrics::RunMetrics;
use barrage_plan::{compare, Threshold};
use serde::Serialize;
use std::time::Duration;

/// One threshold expression, evaluated.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThresholdResult {
    /// The metric key as written (`http_req_duration{tag:ping}`).
    pub metric: String,
    /// The expression as written (`p(95)<200`).
    pub expression: String,
    /// The aggregation's value (`None`: the metric has no values).
    pub observed: Option<f64>,
    pub passed: bool,
    pub abort_on_fail: bool,
}

/// The run facts `run_duration` (seconds) and `run_completed` (1 or 0; unknown while the
/// run goes on) as gauges.
fn run_fact(name: &str, elapsed: Duration, completed: Option<bool>) -> Option<K6Metric> {
    let value = match name {
        "run_duration" => Some(elapsed.as_secs_f64()),
        "run_completed" => completed.map(|c| if c { 1.0 } else { 0.0 }),
        _ => return None,
    };
    Some(K6Metric {
        name: name.into(),
        tag: None,
        is_time: false,
        values: K6Values::Gauge {
            value,
            min: value.unwrap_or(0.0),
            max: value.unwrap_or(0.0),
        },
    })
}

/// Evaluates every rule of every threshold; `completed` is whether the run ran to its end
/// (`None` while it goes on).
pub fn evaluate(
    thresholds: &[Threshold],
    metrics: &RunMetrics,
    tags: &[String],
    elapsed: Duration,
    completed: Option<bool>,
) -> Vec<ThresholdResult> {
    let sent: u64 = metrics
        .tags
        .iter()
        .map(|t| t.requests() + t.interrupted())
        .sum();
    let answered: u64 = metrics.tags.iter().map(|t| t.responses()).sum();
    let unanswered = sent > 0 && answered == 0;
    let mut out = Vec::new();
    for threshold in thresholds {
        let by_status = threshold
            .status
            .as_ref()
            .map(|filter| latency_with_status(metrics, tags, threshold.tag.as_deref(), filter));
        let metric = by_status.unwrap_or_else(|| {
            run_fact(&threshold.metric, elapsed, completed).or_else(|| {
                find_metric(
                    metrics,
                    tags,
                    elapsed,
                    &threshold.metric,
                    threshold.tag.as_deref(),
                )
            })
        });
        for rule in &threshold.rules {
            let observed = metric.as_ref().and_then(|m| m.aggregate(rule.aggregation));
            out.push(ThresholdResult {
                metric: threshold.key.clone(),
                expression: rule.expression.clone(),
                observed,
                passed: observed.map_or(!unanswered, |v| compare(v, rule.op, rule.value)),
                abort_on_fail: rule.abort_on_fail,
            });
        }
    }
    out
}

/// While the run goes on: the first `abortOnFail` rule that fails at `elapsed` into the run
/// (past its `delayAbortEval`), described for the user.
pub fn abort_reason(
    thresholds: &[Threshold],
    metrics: &RunMetrics,
    tags: &[String],
    elapsed: Duration,
) -> Option<String> {
    let armed: Vec<Threshold> = thresholds
        .iter()
        .filter_map(|t| {
            let rules: Vec<_> = t
                .rules
                .iter()
                .filter(|r| r.abort_on_fail && r.delay_abort_eval.is_none_or(|d| elapsed >= d))
                .cloned()
                .collect();
            (!rules.is_empty()).then(|| Threshold { rules, ..t.clone() })
        })
        .collect();
    evaluate(&armed, metrics, tags, elapsed, None)
        .into_iter()
        .find(|r| !r.passed)
        .map(|r| {
            format!(
                "threshold `{}` on {} failed (observed {}) and has abortOnFail",
                r.expression,
                r.metric,
                r.observed.map_or("no data".into(), |v| format!("{v}"))
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{parse_expression, parse_key, ThresholdRule};

    fn threshold(key: &str, exprs: &[&str], abort: Option<Duration>) -> Threshold {
        let (metric, tag) = parse_key(key).unwrap();
        Threshold {
            key: key.into(),
            metric,
            tag,
            status: None,
            rules: exprs
                .iter()
                .map(|e| {
                    let (aggregation, op, value) = parse_expression(e).unwrap();
                    ThresholdRule {
                        expression: e.to_string(),
                        aggregation,
                        op,
                        value,
                        abort_on_fail: abort.is_some(),
                        delay_abort_eval: abort,
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn rules_pass_and_fail_on_observed_values() {
        let (_, metrics) = crate::summary::tests::sample();
        let tags = vec!["GET /".to_string()];
        let results = evaluate(
            &[
                threshold("http_req_duration", &["p(95)<100", "max<1.5"], None),
                threshold("http_reqs{tag:GET /}", &["count==101"], None),
                threshold("checks", &["rate>0.99"], None),
            ],
            &metrics,
            &tags,
            Duration::from_secs(2),
            Some(true),
        );
        let passed: Vec<bool> = results.iter().map(|r| r.passed).collect();
        assert_eq!(passed, [true, false, true, true]);
        assert!((results[1].observed.unwrap() - 1.99).abs() < 0.01);
        assert_eq!(results[3].observed, None, "no check ran: no data");
    }

    #[test]
    fn run_facts_are_gauges_of_the_run() {
        let (_, metrics) = crate::summary::tests::sample();
        let rules = [
            threshold("run_duration", &["value>=2", "value>2"], None),
            threshold("run_completed", &["value==1"], None),
        ];
        let observed = |completed| -> Vec<(Option<f64>, bool)> {
            evaluate(&rules, &metrics, &[], Duration::from_secs(2), completed)
                .iter()
                .map(|r| (r.observed, r.passed))
                .collect()
        };
        assert_eq!(
            observed(Some(true)),
            [(Some(2.0), true), (Some(2.0), false), (Some(1.0), true)]
        );
        assert_eq!(observed(Some(false))[2], (Some(0.0), false));
        // While the run goes on, whether it completes is not known yet.
        assert_eq!(observed(None)[2], (None, true));
    }

    #[test]
    fn abort_waits_for_the_delay() {
        let (_, metrics) = crate::summary::tests::sample();
        let tags = vec!["GET /".to_string()];
        let failing = [threshold(
            "http_req_failed",
            &["rate<0.01"],
            Some(Duration::from_secs(5)),
        )];
        assert_eq!(
            abort_reason(&failing, &metrics, &tags, Duration::from_secs(4)),
            None
        );
        let reason = abort_reason(&failing, &metrics, &tags, Duration::from_secs(5)).unwrap();
        assert!(
            reason.contains("`rate<0.01` on http_req_failed failed"),
            "{reason}"
        );
        let not_armed = [threshold("http_req_failed", &["rate<0.01"], None)];
        let mut plain = not_armed.clone();
        plain[0].rules[0].abort_on_fail = false;
        assert_eq!(
            abort_reason(&plain, &metrics, &tags, Duration::from_secs(9)),
            None
        );
    }
}
