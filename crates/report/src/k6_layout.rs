//! k6 v1's end-of-test layout, for k6 scripts: `█ THRESHOLDS`, then `█ TOTAL RESULTS` with
//! `checks_total`, `checks_succeeded` and `checks_failed` and a line per check, then the
//! metrics in k6's sections — CUSTOM (the script's own), HTTP, EXECUTION, NETWORK — showing
//! the metrics k6 shows by default (the `http_req_*` phases stay in the JSON outputs).

use crate::k6::{metric_values, render_thresholds_titled, K6Summary};
use crate::k6_metrics::{MetricSummary, BUILT_IN_METRICS};
use barrage_metrics::CheckCounts;
use std::fmt::Write;

/// k6's label column: 31 characters of name and dots before the `:`.
const LABEL_WIDTH: usize = 31;

const HTTP: &[&str] = &["http_req_duration", "http_req_failed", "http_reqs"];
const EXECUTION: &[&str] = &[
    "group_duration",
    "iteration_duration",
    "iterations",
    "dropped_iterations",
    "vus",
    "vus_max",
];
const NETWORK: &[&str] = &["data_received", "data_sent"];
/// barrage's run facts (gauges in the JSON outputs), not k6 metrics.
const RUN_FACTS: &[&str] = &["run_duration", "run_completed"];

fn line(out: &mut String, label: &str, values: &str) {
    let dots = ".".repeat(LABEL_WIDTH.saturating_sub(label.chars().count()));
    let _ = writeln!(out, "    {label}{dots}: {values}");
}

fn has_data(metric: &MetricSummary) -> bool {
    let zero = |key: &str| metric.values.get(key).is_none_or(|v| *v == 0.0);
    let no_drops = metric.name == "dropped_iterations" && zero("count");
    let no_groups = metric.name == "group_duration" && metric.values.is_empty();
    !(no_drops || no_groups)
}

fn section(out: &mut String, title: &str, metrics: &[&MetricSummary], stats: &[String]) {
    let shown: Vec<_> = metrics.iter().filter(|m| has_data(m)).collect();
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n    {title}");
    for metric in shown {
        line(out, &metric.name, &metric_values(metric, stats));
    }
}

/// The k6 sections of a k6 script's summary, as k6 v1 prints them.
pub fn render_k6_v1(k6: &K6Summary, checks: &[CheckCounts], elapsed_s: f64, out: &mut String) {
    render_thresholds_titled(k6, "█ THRESHOLDS", out);
    let _ = writeln!(out, "\n  █ TOTAL RESULTS\n");
    if !checks.is_empty() {
        let passed: u64 = checks.iter().map(|c| c.passed).sum();
        let failed: u64 = checks.iter().map(|c| c.failed).sum();
        let total = passed + failed;
        let share = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        let label = |name: &str| format!("{name}{}", ".".repeat(19 - name.len()));
        let _ = writeln!(
            out,
            "    {}: {total}  {:.6}/s",
            label("checks_total"),
            total as f64 / elapsed_s.max(f64::MIN_POSITIVE)
        );
        let _ = writeln!(
            out,
            "    {}: {:.2}% {passed} out of {total}",
            label("checks_succeeded"),
            share(passed)
        );
        let _ = writeln!(
            out,
            "    {}: {:.2}% {failed} out of {total}",
            label("checks_failed"),
            share(failed)
        );
        let _ = writeln!(out);
        for check in checks {
            let name = check.name.rsplit("::").next().unwrap_or(&check.name);
            if check.failed == 0 {
                let _ = writeln!(out, "    ✓ {name}");
            } else {
                let share = 100.0 * check.passed as f64 / (check.passed + check.failed) as f64;
                let _ = writeln!(
                    out,
                    "    ✗ {name}\n      ↳  {share:.0}% — ✓ {} / ✗ {}",
                    check.passed, check.failed
                );
            }
        }
    }
    let stats = &k6.trend_stats;
    // k6 v1 shows no `checks` line and none of the `http_req_*` phases by default.
    let builtin = |m: &&MetricSummary| {
        BUILT_IN_METRICS.contains(&m.name.as_str())
            || m.name == "group_duration"
            || RUN_FACTS.contains(&m.name.as_str())
    };
    let custom: Vec<&MetricSummary> = k6.metrics.iter().filter(|m| !builtin(m)).collect();
    section(out, "CUSTOM", &custom, stats);
    let of = |names: &[&str]| -> Vec<&MetricSummary> {
        let mut picked: Vec<&MetricSummary> = k6
            .metrics
            .iter()
            .filter(|m| names.contains(&m.name.as_str()))
            .collect();
        picked.sort_by_key(|m| names.iter().position(|n| *n == m.name));
        picked
    };
    section(out, "HTTP", &of(HTTP), stats);
    section(out, "EXECUTION", &of(EXECUTION), stats);
    section(out, "NETWORK", &of(NETWORK), stats);
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::MetricKind;
    use std::collections::BTreeMap;

    fn metric(name: &str, kind: MetricKind, values: &[(&str, f64)]) -> MetricSummary {
        MetricSummary {
            name: name.into(),
            tag: None,
            kind,
            is_time: kind == MetricKind::Trend,
            values: values
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn sections_and_totals_as_k6_v1_prints_them() {
        let k6 = K6Summary {
            metrics: vec![
                metric(
                    "http_reqs",
                    MetricKind::Counter,
                    &[("count", 2.0), ("rate", 1.0)],
                ),
                metric("http_req_blocked", MetricKind::Trend, &[("avg", 1.0)]),
                metric(
                    "http_req_duration",
                    MetricKind::Trend,
                    &[("avg", 2.0), ("max", 3.0)],
                ),
                metric(
                    "iterations",
                    MetricKind::Counter,
                    &[("count", 2.0), ("rate", 1.0)],
                ),
                metric(
                    "data_sent",
                    MetricKind::Counter,
                    &[("count", 148.0), ("rate", 74.0)],
                ),
                metric("took", MetricKind::Trend, &[("avg", 3.0), ("max", 3.0)]),
            ],
            trend_stats: vec!["avg".into(), "max".into()],
            ..K6Summary::default()
        };
        let checks = vec![
            CheckCounts {
                name: "is 200".into(),
                fatal: false,
                passed: 2,
                failed: 0,
                failed_values: Vec::new(),
            },
            CheckCounts {
                name: "g::inner".into(),
                fatal: false,
                passed: 0,
                failed: 2,
                failed_values: Vec::new(),
            },
        ];
        let mut out = String::new();
        render_k6_v1(&k6, &checks, 2.0, &mut out);
        let expected = [
            "  █ TOTAL RESULTS",
            "    checks_total.......: 4  2.000000/s",
            "    checks_succeeded...: 50.00% 2 out of 4",
            "    checks_failed......: 50.00% 2 out of 4",
            "    ✓ is 200",
            "    ✗ inner\n      ↳  0% — ✓ 0 / ✗ 2",
            "    CUSTOM\n    took...........................: avg=3.00ms max=3.00ms",
            "    HTTP\n    http_req_duration..............: avg=2.00ms max=3.00ms\n    http_reqs......................: 2  1.00/s",
            "    EXECUTION\n    iterations.....................: 2  1.00/s",
            "    NETWORK\n    data_sent......................: 148 B  74 B/s",
        ];
        for part in expected {
            assert!(out.contains(part), "{part}\n---\n{out}");
        }
        assert!(!out.contains("http_req_blocked"), "{out}");
    }
}
