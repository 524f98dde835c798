//! The k6-style part of a run's summary: the model (thresholds evaluated, every metric with
//! its values, per tag too) and its text in k6's layout — THRESHOLDS with ✓/✗ and the
//! observed value, checks per name, then each metric on a dotted line.

use crate::k6_metrics::{k6_metrics, k6_tag_metrics, MetricSummary};
use crate::thresholds::{evaluate, ThresholdResult};
use barrage_metrics::{CheckCounts, RunMetrics};
use barrage_plan::{Aggregation, MetricKind, Threshold};
use serde::Serialize;
use std::fmt::Write;
use std::time::Duration;

/// The k6 view of a run, part of the JSON summary.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct K6Summary {
    /// Every metric over the whole run, built-in then custom.
    pub metrics: Vec<MetricSummary>,
    /// The `http_*` and `data_*` metrics of each request tag.
    pub tag_metrics: Vec<MetricSummary>,
    pub thresholds: Vec<ThresholdResult>,
    /// The Trend statistics shown (`--summary-trend-stats`).
    pub trend_stats: Vec<String>,
    /// Why the run was stopped early by an `abortOnFail` threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted_by_threshold: Option<String>,
}

impl K6Summary {
    /// A threshold's observed value as shown (`p(95)=12.3ms`, `no data`).
    pub fn observed_text(&self, result: &ThresholdResult) -> String {
        observed(result, self.metric_of_key(&result.metric))
    }

    /// The metric a threshold key names: `name`, `name{tag:T}`, or a k6 script's
    /// `name{key:T}` (a request tag's value, see the k6 front end's `request_tags.rs`).
    pub fn metric_of_key(&self, key: &str) -> Option<&MetricSummary> {
        let (base, tag) = match key.split_once('{') {
            Some((base, filter)) => {
                let value = filter
                    .trim_end_matches('}')
                    .split_once(':')
                    .map(|(_, v)| v.trim());
                (base.trim(), value)
            }
            None => (key.trim(), None),
        };
        match tag {
            None => self
                .metrics
                .iter()
                .find(|m| m.name == base && m.tag.is_none()),
            Some(tag) => self
                .tag_metrics
                .iter()
                .find(|m| m.name == base && m.tag.as_deref() == Some(tag)),
        }
    }

    /// A metric's statistic as shown: times as times, rates as percentages, data as bytes.
    pub fn shown(metric: &MetricSummary, stat: &str, v: f64) -> String {
        show(metric, stat, v)
    }

    pub fn new(
        metrics: &RunMetrics,
        tags: &[String],
        elapsed: Duration,
        thresholds: &[Threshold],
        trend_stats: &[Aggregation],
        completed: bool,
    ) -> Self {
        Self {
            metrics: k6_metrics(metrics, elapsed)
                .iter()
                .map(|m| MetricSummary::of(m, trend_stats))
                .collect(),
            tag_metrics: k6_tag_metrics(metrics, tags, elapsed)
                .iter()
                .map(|m| MetricSummary::of(m, trend_stats))
                .collect(),
            thresholds: evaluate(thresholds, metrics, tags, elapsed, Some(completed)),
            trend_stats: trend_stats.iter().map(Aggregation::label).collect(),
            aborted_by_threshold: None,
        }
    }

    pub fn thresholds_failed(&self) -> bool {
        self.thresholds.iter().any(|t| !t.passed)
    }
}

/// A time in ms as k6 prints it: `512µs`, `12.34ms`, `1.5s`, `2m3s`.
pub fn format_ms(ms: f64) -> String {
    if ms == 0.0 {
        "0s".into()
    } else if ms < 1.0 {
        format!("{:.0}µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else if ms < 60_000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else {
        let secs = (ms / 1000.0).round() as u64;
        format!("{}m{}s", secs / 60, secs % 60)
    }
}

/// A plain number: whole numbers without decimals, others with up to 4.
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let text = format!("{v:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} {}", UNITS[0])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn is_data(name: &str) -> bool {
    name == "data_sent" || name == "data_received"
}

/// The value of one statistic as shown: times as times, rates as percentages.
fn show(metric: &MetricSummary, stat: &str, v: f64) -> String {
    match metric.kind {
        MetricKind::Trend if metric.is_time && stat != "count" => format_ms(v),
        MetricKind::Rate if stat == "rate" => format!("{:.2}%", v * 100.0),
        MetricKind::Counter if is_data(&metric.name) && stat == "count" => format_bytes(v),
        _ => format_number(v),
    }
}

fn observed(result: &ThresholdResult, metric: Option<&MetricSummary>) -> String {
    let Some(v) = result.observed else {
        return if result.passed {
            "no data".into()
        } else {
            "no data: requests were sent, none got a response".into()
        };
    };
    let stat = result
        .expression
        .split(['<', '>', '=', '!'])
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let shown = match metric {
        Some(m) => show(m, &stat, v),
        None => format_number(v),
    };
    format!("{stat}={shown}")
}

/// `THRESHOLDS`: each metric with its rules, ✓ or ✗ and the observed value.
pub fn render_thresholds(summary: &K6Summary, out: &mut String) {
    render_thresholds_titled(summary, "THRESHOLDS", out);
}

/// [`render_thresholds`] under `title`.
pub(crate) fn render_thresholds_titled(summary: &K6Summary, title: &str, out: &mut String) {
    if summary.thresholds.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n  {title}\n");
    let mut last_metric: Option<&str> = None;
    for result in &summary.thresholds {
        if last_metric != Some(result.metric.as_str()) {
            if last_metric.is_some() {
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "    {}", result.metric);
            last_metric = Some(&result.metric);
        }
        let mark = if result.passed { "✓" } else { "✗" };
        let _ = writeln!(
            out,
            "    {mark} '{}' {}",
            result.expression,
            summary.observed_text(result)
        );
    }
    if let Some(reason) = &summary.aborted_by_threshold {
        let _ = writeln!(out, "\n    run aborted: {reason}");
    }
}

/// Checks (and asserts) by name, with passes and failures.
pub fn render_checks(checks: &[CheckCounts], out: &mut String) {
    if checks.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n  CHECKS\n");
    for check in checks {
        let total = check.passed + check.failed;
        let kind = if check.fatal { " (assert)" } else { "" };
        if total == 0 {
            // A check that never ran (its request never got a response) passed nothing.
            let _ = writeln!(out, "    - {}{kind}  never evaluated", check.name);
        } else if check.failed == 0 {
            let _ = writeln!(out, "    ✓ {}{kind}", check.name);
        } else {
            let share = 100.0 * check.passed as f64 / total.max(1) as f64;
            let _ = writeln!(
                out,
                "    ✗ {}{kind}\n     ↳  {share:.0}% — ✓ {} / ✗ {}",
                check.name, check.passed, check.failed
            );
        }
    }
}

/// One metric on a dotted line, k6's way.
fn metric_line(metric: &MetricSummary, trend_stats: &[String], label_width: usize) -> String {
    let label = match &metric.tag {
        Some(tag) => format!("{}{{tag:{tag}}}", metric.name),
        None => metric.name.clone(),
    };
    let dots = ".".repeat((label_width + 3).saturating_sub(label.chars().count()));
    format!("    {label}{dots}: {}", metric_values(metric, trend_stats))
}

/// A metric's values as its summary line shows them.
pub(crate) fn metric_values(metric: &MetricSummary, trend_stats: &[String]) -> String {
    let v = |key: &str| metric.values.get(key).copied();
    let values = match metric.kind {
        MetricKind::Trend => trend_stats
            .iter()
            .map(|stat| match v(stat) {
                Some(value) => format!("{stat}={}", show(metric, stat, value)),
                None => format!("{stat}=-"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        MetricKind::Rate => {
            let passes = v("passes").unwrap_or(0.0);
            let fails = v("fails").unwrap_or(0.0);
            format!(
                "{}  {} out of {}",
                v("rate").map_or("-".into(), |r| show(metric, "rate", r)),
                format_number(passes),
                format_number(passes + fails)
            )
        }
        MetricKind::Counter => {
            let count = v("count").unwrap_or(0.0);
            let rate = v("rate").unwrap_or(0.0);
            if is_data(&metric.name) {
                format!("{}  {}/s", format_bytes(count), format_bytes(rate))
            } else {
                format!("{}  {:.2}/s", format_number(count), rate)
            }
        }
        MetricKind::Gauge => match v("value") {
            Some(value) => format!(
                "{}  min={} max={}",
                format_number(value),
                format_number(v("min").unwrap_or(value)),
                format_number(v("max").unwrap_or(value))
            ),
            None => "-".into(),
        },
    };
    values
}

/// Every metric: built-in `http_*`, execution, then custom ones.
pub fn render_metrics(summary: &K6Summary, out: &mut String) {
    let width = summary
        .metrics
        .iter()
        .map(|m| m.name.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "\n  METRICS\n");
    for metric in &summary.metrics {
        // As k6 does: no `checks` line without checks, no `dropped_iterations` without drops.
        let empty = |key: &str| metric.values.get(key).is_none_or(|v| *v == 0.0);
        if (metric.name == "checks" && empty("passes") && empty("fails"))
            || (metric.name == "dropped_iterations" && empty("count"))
        {
            continue;
        }
        let _ = writeln!(out, "{}", metric_line(metric, &summary.trend_stats, width));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k6_metrics::DEFAULT_TREND_STATS;

    fn threshold(key: &str, expr: &str) -> Threshold {
        Threshold::parse(key, expr).unwrap()
    }

    #[test]
    fn text_shows_thresholds_checks_and_metrics_like_k6() {
        let (_, mut metrics) = crate::summary::tests::sample();
        metrics.checks = vec![
            CheckCounts {
                name: "is 200".into(),
                fatal: false,
                passed: 90,
                failed: 10,
                failed_values: Vec::new(),
            },
            CheckCounts {
                name: "has body".into(),
                fatal: false,
                passed: 100,
                failed: 0,
                failed_values: Vec::new(),
            },
        ];
        let tags = vec!["GET /".to_string()];
        let summary = K6Summary::new(
            &metrics,
            &tags,
            Duration::from_secs(2),
            &[
                threshold("http_req_duration", "p(95)<100"),
                threshold("http_req_failed{tag:GET /}", "rate<0.01"),
            ],
            &DEFAULT_TREND_STATS,
            true,
        );
        assert!(summary.thresholds_failed());
        let mut text = String::new();
        render_thresholds(&summary, &mut text);
        render_checks(&metrics.checks, &mut text);
        render_metrics(&summary, &mut text);
        assert!(
            text.contains("    http_req_duration\n    ✓ 'p(95)<100' p(95)=1."),
            "{text}"
        );
        assert!(
            text.contains("    http_req_failed{tag:GET /}\n    ✗ 'rate<0.01' rate=10.89%"),
            "{text}"
        );
        assert!(text.contains("    ✓ has body"), "{text}");
        assert!(
            text.contains("    ✗ is 200\n     ↳  90% — ✓ 90 / ✗ 10"),
            "{text}"
        );
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("http_req_duration..."))
            .unwrap();
        assert!(
            line.contains(": avg=1.") && line.contains(" p(99)="),
            "{line}"
        );
        assert!(text.contains("http_reqs"), "{text}");
        assert!(text.contains(": 101  50.50/s"), "{text}");
        assert!(text.contains(": 10.89%  11 out of 101"), "{text}");
        assert!(
            !text.contains("dropped_iterations"),
            "no drops, no line: {text}"
        );
        assert!(text.contains("checks......"), "{text}");
        assert_eq!(format_ms(0.5), "500µs");
        assert_eq!(format_ms(1500.0), "1.50s");
        assert_eq!(format_bytes(5050.0), "5.0 kB");
    }
}
