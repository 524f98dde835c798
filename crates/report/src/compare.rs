//! Comparing runs: per-tag throughput and latency percentiles of a baseline group against
//! other groups, each group's spread as a mean with a min–max band, and regression rules.

use crate::summary_of;
use barrage_results::ResultsFile;
use std::fmt::Write;

/// The figures compared, in display order. Latencies in ms; `errors%` of requests.
pub const METRICS: [&str; 7] = ["rps", "p50", "p90", "p95", "p99", "max", "errors%"];

/// The name of the all-tags row.
pub const ALL_TAGS: &str = "(all tags)";

/// One run's figures: `(tag, [value per METRICS])`, all tags first.
#[derive(Debug, Clone)]
pub struct RunFigures {
    pub label: String,
    pub tags: Vec<(String, [f64; METRICS.len()])>,
}

impl RunFigures {
    pub fn of(label: &str, results: &ResultsFile) -> Self {
        let summary = summary_of(results, &crate::DEFAULT_TREND_STATS);
        let seconds = summary.total_s.max(f64::MIN_POSITIVE);
        let row = |requests: u64, errors: u64, l: &barrage_metrics::LatencyStats| {
            let ms = |p: f64| l.percentile(p).unwrap_or(0) as f64 / 1e3;
            [
                requests as f64 / seconds,
                ms(50.0),
                ms(90.0),
                ms(95.0),
                ms(99.0),
                l.max_us as f64 / 1e3,
                if requests == 0 {
                    0.0
                } else {
                    errors as f64 * 100.0 / requests as f64
                },
            ]
        };
        let mut tags = vec![(
            ALL_TAGS.to_string(),
            row(summary.requests, summary.errors, &summary.latency),
        )];
        for t in &summary.tags {
            tags.push((t.tag.clone(), row(t.requests, t.errors, &t.latency)));
        }
        Self {
            label: label.to_string(),
            tags,
        }
    }

    fn value(&self, tag: &str, metric: usize) -> Option<f64> {
        self.tags
            .iter()
            .find(|(t, _)| t == tag)
            .map(|(_, values)| values[metric])
    }
}

/// Runs of the same definition and configuration, repeated to see the noise.
#[derive(Debug, Clone)]
pub struct Group {
    pub label: String,
    pub runs: Vec<RunFigures>,
}

/// Mean and min–max of one figure over a group's runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Band {
    fn of(values: &[f64]) -> Option<Band> {
        if values.is_empty() {
            return None;
        }
        Some(Band {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            runs: values.len(),
        })
    }
}

/// One figure of one tag: baseline against a candidate group.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub tag: String,
    pub metric: &'static str,
    pub baseline: Band,
    pub candidate: Band,
    /// Change of the candidate's mean from the baseline's, in percent.
    pub change_pct: f64,
}

fn band(group: &Group, tag: &str, metric: usize) -> Option<Band> {
    let values: Vec<f64> = group
        .runs
        .iter()
        .filter_map(|r| r.value(tag, metric))
        .collect();
    Band::of(&values)
}

/// Deltas of `candidate` against `baseline` for every tag both have, every metric.
pub fn deltas(baseline: &Group, candidate: &Group) -> Vec<Delta> {
    let mut out = Vec::new();
    let tags: Vec<String> = baseline
        .runs
        .first()
        .map(|r| r.tags.iter().map(|(t, _)| t.clone()).collect())
        .unwrap_or_default();
    for tag in tags {
        for (m, metric) in METRICS.iter().enumerate() {
            let (Some(b), Some(c)) = (band(baseline, &tag, m), band(candidate, &tag, m)) else {
                continue;
            };
            let change_pct = if b.mean == 0.0 {
                if c.mean == 0.0 {
                    0.0
                } else {
                    f64::INFINITY.copysign(c.mean)
                }
            } else {
                (c.mean - b.mean) / b.mean * 100.0
            };
            out.push(Delta {
                tag: tag.clone(),
                metric,
                baseline: b,
                candidate: c,
                change_pct,
            });
        }
    }
    out
}

/// One `--fail-on` rule, `METRIC:+N%` or `METRIC:-N%`, on one of `metrics`: the metric and
/// the signed limit in percent (the one syntax of every comparison's rules).
pub fn parse_rule(rule: &str, metrics: &[&'static str]) -> Result<(&'static str, f64), String> {
    let bad = || {
        format!(
            "`{rule}` must look like METRIC:+N% or METRIC:-N% (metrics: {})",
            metrics.join(", ")
        )
    };
    let (metric, limit) = rule.split_once(':').ok_or_else(bad)?;
    let metric = metrics
        .iter()
        .find(|m| m.eq_ignore_ascii_case(metric.trim()))
        .ok_or_else(bad)?;
    let limit = limit.trim();
    if !(limit.starts_with('+') || limit.starts_with('-')) {
        return Err(bad());
    }
    let limit_pct: f64 = limit
        .strip_suffix('%')
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    if !limit_pct.is_finite() || limit_pct == 0.0 {
        return Err(bad());
    }
    Ok((metric, limit_pct))
}

/// A regression rule: `p95:+10%` (fail when p95 rises more than 10%), `rps:-5%` (fail when
/// throughput falls more than 5%).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub metric: &'static str,
    pub limit_pct: f64,
}

impl Rule {
    /// Parses a comma-separated list of rules; the error says what is wrong with which one.
    pub fn parse_list(text: &str) -> Result<Vec<Rule>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|rule| {
                let (metric, limit_pct) = parse_rule(rule, &METRICS)?;
                Ok(Rule { metric, limit_pct })
            })
            .collect()
    }

    pub fn broken_by(&self, delta: &Delta) -> bool {
        delta.metric == self.metric
            && if self.limit_pct > 0.0 {
                delta.change_pct > self.limit_pct
            } else {
                delta.change_pct < self.limit_pct
            }
    }
}

fn figure(metric: &str, v: f64) -> String {
    match metric {
        "rps" => format!("{v:.1}"),
        "errors%" => format!("{v:.2}%"),
        _ => format!("{v:.2}ms"),
    }
}

fn band_text(metric: &str, b: &Band) -> String {
    if b.runs > 1 {
        format!(
            "{} ({}–{})",
            figure(metric, b.mean),
            figure(metric, b.min),
            figure(metric, b.max)
        )
    } else {
        figure(metric, b.mean)
    }
}

/// The comparison as text; rule breaks are marked and listed.
pub fn render_compare(groups: &[Group], rules: &[Rule]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut broken = Vec::new();
    let Some((baseline, others)) = groups.split_first() else {
        return (out, broken);
    };
    let runs = |g: &Group| {
        g.runs
            .iter()
            .map(|r| r.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "baseline {}: {}", baseline.label, runs(baseline));
    for group in others {
        let _ = writeln!(out, "\n{} vs baseline: {}", group.label, runs(group));
        let mut rows = vec![vec![
            "tag".to_string(),
            "metric".into(),
            "baseline".into(),
            group.label.clone(),
            "change".into(),
            String::new(),
        ]];
        for d in deltas(baseline, group) {
            let breaks: Vec<&Rule> = rules.iter().filter(|r| r.broken_by(&d)).collect();
            for rule in &breaks {
                broken.push(format!(
                    "{} {} {:+.1}% (rule {}:{:+}%), {} vs baseline",
                    d.tag, d.metric, d.change_pct, rule.metric, rule.limit_pct, group.label
                ));
            }
            rows.push(vec![
                d.tag.clone(),
                d.metric.to_string(),
                band_text(d.metric, &d.baseline),
                band_text(d.metric, &d.candidate),
                format!("{:+.1}%", d.change_pct),
                if breaks.is_empty() { "" } else { "REGRESSION" }.into(),
            ]);
        }
        let widths: Vec<usize> = (0..6)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for row in rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
                .collect();
            let _ = writeln!(out, "{}", line.join("  ").trim_end());
        }
    }
    (out, broken)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, rps: f64, p95: f64) -> RunFigures {
        RunFigures {
            label: label.into(),
            tags: vec![(ALL_TAGS.into(), [rps, 1.0, 2.0, p95, 4.0, 5.0, 0.0])],
        }
    }

    #[test]
    fn groups_give_bands_and_rules_catch_regressions_only() {
        let base = Group {
            label: "A".into(),
            runs: vec![run("1", 100.0, 10.0), run("2", 110.0, 12.0)],
        };
        let slower = Group {
            label: "B".into(),
            runs: vec![run("3", 90.0, 14.0)],
        };
        let d = deltas(&base, &slower);
        let p95 = d.iter().find(|d| d.metric == "p95").unwrap();
        assert_eq!(
            (p95.baseline.min, p95.baseline.max, p95.baseline.mean),
            (10.0, 12.0, 11.0)
        );
        assert!((p95.change_pct - 27.27).abs() < 0.01, "{}", p95.change_pct);
        let rules = Rule::parse_list("p95:+10%, rps:-5%").unwrap();
        let (text, broken) = render_compare(&[base.clone(), slower], &rules);
        assert_eq!(broken.len(), 2, "{text}");
        assert!(text.contains("REGRESSION"));
        assert!(text.contains("11.00ms (10.00ms–12.00ms)"), "{text}");
        let same = Group {
            label: "C".into(),
            runs: vec![run("4", 104.0, 11.5)],
        };
        assert!(render_compare(&[base, same], &rules).1.is_empty());
    }

    #[test]
    fn bad_rules_name_the_rule() {
        for bad in [
            "p95",
            "p95:10%",
            "p95:+10",
            "speed:+5%",
            "p95:+x%",
            "p95:+0%",
        ] {
            let e = Rule::parse_list(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
