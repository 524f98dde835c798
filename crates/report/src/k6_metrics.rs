//! The k6 view of a run: built-in metrics named like k6's (`http_req_duration`,
//! `http_req_failed`, `iterations`, `checks`, ...) computed from merged [`RunMetrics`], plus
//! the custom metrics, each aggregable the way thresholds and the summary ask (`avg`, `p(95)`,
//! `rate`, `count`, ...). Trends of times are in milliseconds, data in bytes.
//! `vus` and `vus_max` are gauges over the per-second VU series (value: the last second).

use barrage_metrics::{CustomValues, LatencyHistogram, RunMetrics, TagMetrics, Trend, VuSecond};
use barrage_plan::{Aggregation, MetricKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// A distribution: an HDR histogram of values × 1000 (µs for times, so values read in ms),
/// with the exact sum and extremes when they are known.
#[derive(Debug, Clone)]
pub struct TrendValues {
    histogram: LatencyHistogram,
    exact: Option<(f64, f64, f64)>,
}

impl TrendValues {
    fn of_micros(histogram: LatencyHistogram) -> Self {
        Self {
            histogram,
            exact: None,
        }
    }

    fn of_trend(trend: &Trend) -> Self {
        Self {
            histogram: trend.histogram.clone(),
            exact: Some((trend.sum, trend.min, trend.max)),
        }
    }

    pub fn count(&self) -> u64 {
        self.histogram.count()
    }

    /// One statistic; `None` without values or for an aggregation a trend has not.
    pub fn stat(&self, aggregation: Aggregation) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return (aggregation == Aggregation::Count).then_some(0.0);
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Some(match (aggregation, self.exact) {
            (Aggregation::Count, _) => n as f64,
            (Aggregation::Avg, Some((sum, _, _))) => sum / n as f64,
            (Aggregation::Avg, None) => self.histogram.mean_micros() / 1000.0,
            (Aggregation::Min, Some((_, min, _))) => min,
            (Aggregation::Min, None) => ms(self.histogram.min_micros()),
            (Aggregation::Max, Some((_, _, max))) => max,
            (Aggregation::Max, None) => ms(self.histogram.max_micros()),
            (Aggregation::Med, exact) => within(ms(self.histogram.percentile_micros(50.0)), exact),
            (Aggregation::Percentile(p), exact) => {
                within(ms(self.histogram.percentile_micros(p)), exact)
            }
            (Aggregation::Rate | Aggregation::Value, _) => return None,
        })
    }
}

/// A histogram percentile (the top of its bucket) kept within the exact extremes, when they
/// are known: the p(100) of 10, 20, 30 is 30, not 30.015.
fn within(value: f64, exact: Option<(f64, f64, f64)>) -> f64 {
    match exact {
        Some((_, min, max)) => value.clamp(min, max),
        None => value,
    }
}

/// A metric's values, by kind.
#[derive(Debug, Clone)]
pub enum K6Values {
    /// `count` over the run, `rate` per second.
    Counter {
        count: f64,
        rate: f64,
    },
    Gauge {
        value: Option<f64>,
        min: f64,
        max: f64,
    },
    /// `trues` of `total` values were non-zero.
    Rate {
        trues: u64,
        total: u64,
    },
    Trend(TrendValues),
}

/// One metric of the k6 view, over the whole run or one request tag.
#[derive(Debug, Clone)]
pub struct K6Metric {
    pub name: String,
    pub tag: Option<String>,
    /// Whether trend values are times (ms), for display.
    pub is_time: bool,
    pub values: K6Values,
}

impl K6Metric {
    pub fn kind(&self) -> MetricKind {
        match self.values {
            K6Values::Counter { .. } => MetricKind::Counter,
            K6Values::Gauge { .. } => MetricKind::Gauge,
            K6Values::Rate { .. } => MetricKind::Rate,
            K6Values::Trend(_) => MetricKind::Trend,
        }
    }

    /// The key thresholds use: `name` or `name{tag:T}`.
    pub fn key(&self) -> String {
        match &self.tag {
            Some(tag) => format!("{}{{tag:{tag}}}", self.name),
            None => self.name.clone(),
        }
    }

    /// What a threshold computes; `None` when the metric has no values yet or the
    /// aggregation does not apply.
    pub fn aggregate(&self, aggregation: Aggregation) -> Option<f64> {
        match (&self.values, aggregation) {
            (K6Values::Counter { count, .. }, Aggregation::Count) => Some(*count),
            (K6Values::Counter { rate, .. }, Aggregation::Rate) => Some(*rate),
            (K6Values::Gauge { value, .. }, Aggregation::Value) => *value,
            (K6Values::Gauge { value, min, .. }, Aggregation::Min) => value.map(|_| *min),
            (K6Values::Gauge { value, max, .. }, Aggregation::Max) => value.map(|_| *max),
            (K6Values::Rate { trues, total }, Aggregation::Rate) => {
                (*total > 0).then(|| *trues as f64 / *total as f64)
            }
            (K6Values::Trend(trend), aggregation) => trend.stat(aggregation),
            _ => None,
        }
    }

    /// The values as JSON-friendly pairs: trends with `trend_stats`, others their own.
    pub fn values_map(&self, trend_stats: &[Aggregation]) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        match &self.values {
            K6Values::Counter { count, rate } => {
                out.insert("count".into(), *count);
                out.insert("rate".into(), *rate);
            }
            K6Values::Gauge { value, min, max } => {
                if let Some(value) = value {
                    out.insert("value".into(), *value);
                    out.insert("min".into(), *min);
                    out.insert("max".into(), *max);
                }
            }
            K6Values::Rate { trues, total } => {
                if let Some(rate) = self.aggregate(Aggregation::Rate) {
                    out.insert("rate".into(), rate);
                }
                out.insert("passes".into(), *trues as f64);
                out.insert("fails".into(), (total - trues) as f64);
            }
            K6Values::Trend(trend) => {
                out.insert("count".into(), trend.count() as f64);
                for stat in trend_stats {
                    if let Some(v) = trend.stat(*stat) {
                        out.insert(stat.label(), v);
                    }
                }
            }
        }
        out
    }
}

/// One metric in the JSON summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MetricSummary {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(rename = "type")]
    pub kind: MetricKind,
    /// Trends of times are in milliseconds.
    pub is_time: bool,
    pub values: BTreeMap<String, f64>,
}

impl MetricSummary {
    pub fn of(metric: &K6Metric, trend_stats: &[Aggregation]) -> Self {
        Self {
            name: metric.name.clone(),
            tag: metric.tag.clone(),
            kind: metric.kind(),
            is_time: metric.is_time,
            values: metric.values_map(trend_stats),
        }
    }
}

/// k6's built-in metric names; every other metric of the summary is a custom one.
pub(crate) const BUILT_IN_METRICS: [&str; 17] = [
    "http_reqs",
    "http_req_duration",
    "http_req_failed",
    "http_req_blocked",
    "http_req_connecting",
    "http_req_tls_handshaking",
    "http_req_sending",
    "http_req_waiting",
    "http_req_receiving",
    "data_sent",
    "data_received",
    "iterations",
    "iteration_duration",
    "vus",
    "vus_max",
    "checks",
    "dropped_iterations",
];

/// The default Trend columns, k6's plus p(99).
pub const DEFAULT_TREND_STATS: [Aggregation; 7] = [
    Aggregation::Avg,
    Aggregation::Min,
    Aggregation::Med,
    Aggregation::Max,
    Aggregation::Percentile(90.0),
    Aggregation::Percentile(95.0),
    Aggregation::Percentile(99.0),
];

fn per_second(count: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

fn counter(name: &str, tag: Option<&str>, count: f64, elapsed: Duration) -> K6Metric {
    K6Metric {
        name: name.into(),
        tag: tag.map(str::to_string),
        is_time: false,
        values: K6Values::Counter {
            count,
            rate: per_second(count, elapsed),
        },
    }
}

fn trend(name: &str, tag: Option<&str>, histogram: LatencyHistogram) -> K6Metric {
    K6Metric {
        name: name.into(),
        tag: tag.map(str::to_string),
        is_time: true,
        values: K6Values::Trend(TrendValues::of_micros(histogram)),
    }
}

/// A phase recorded only on some responses, with 0 for the others (k6 gives every request
/// a value: a reused connection took 0 to connect).
fn with_zeros(histogram: &LatencyHistogram, responses: u64) -> LatencyHistogram {
    let mut h = histogram.clone();
    let zeros = responses.saturating_sub(h.count());
    if zeros > 0 {
        h.record_micros_n(0, zeros);
    }
    h
}

/// The `http_*` and `data_*` metrics of `tag` (all tags merged when `name` is `None`).
fn http_metrics(tag: &TagMetrics, name: Option<&str>, elapsed: Duration) -> Vec<K6Metric> {
    let responses = tag.responses();
    let failed = tag.failed_requests();
    let connecting = with_zeros(&tag.connect, responses);
    let tls = with_zeros(&tag.tls, responses);
    vec![
        counter("http_reqs", name, tag.requests() as f64, elapsed),
        trend("http_req_duration", name, tag.latency.clone()),
        K6Metric {
            name: "http_req_failed".into(),
            tag: name.map(str::to_string),
            is_time: false,
            values: K6Values::Rate {
                trues: failed,
                total: tag.judged_requests(),
            },
        },
        trend("http_req_blocked", name, connecting.clone()),
        trend("http_req_connecting", name, connecting),
        trend("http_req_tls_handshaking", name, tls),
        trend("http_req_sending", name, tag.write.clone()),
        trend("http_req_waiting", name, tag.wait.clone()),
        trend("http_req_receiving", name, tag.read.clone()),
        counter("data_sent", name, tag.bytes_sent as f64, elapsed),
        counter("data_received", name, tag.bytes_received as f64, elapsed),
    ]
}

/// A VU gauge over the per-second series: the last second's value, and the extremes.
fn vu_gauge(name: &str, seconds: &[VuSecond], read: fn(&VuSecond) -> u64) -> K6Metric {
    let values = seconds.iter().map(read);
    K6Metric {
        name: name.into(),
        tag: None,
        is_time: false,
        values: K6Values::Gauge {
            value: seconds.last().map(|s| read(s) as f64),
            min: values.clone().min().unwrap_or(0) as f64,
            max: values.max().unwrap_or(0) as f64,
        },
    }
}

/// Every metric of the run over all tags: built-in ones, then the custom ones.
pub fn k6_metrics(metrics: &RunMetrics, elapsed: Duration) -> Vec<K6Metric> {
    let mut out = http_metrics(&metrics.total(), None, elapsed);
    let sessions = &metrics.sessions;
    out.push(counter(
        "iterations",
        None,
        (sessions.completed + sessions.failed) as f64,
        elapsed,
    ));
    out.push(trend(
        "iteration_duration",
        None,
        metrics.iteration_duration.clone(),
    ));
    out.push(counter(
        "dropped_iterations",
        None,
        sessions.dropped as f64,
        elapsed,
    ));
    out.push(vu_gauge("vus", &metrics.vus.seconds, |s| s.vus));
    out.push(vu_gauge("vus_max", &metrics.vus.seconds, |s| s.vus_max));
    let (passed, failed) = metrics
        .checks
        .iter()
        .fold((0, 0), |(p, f), c| (p + c.passed, f + c.failed));
    out.push(K6Metric {
        name: "checks".into(),
        tag: None,
        is_time: false,
        values: K6Values::Rate {
            trues: passed,
            total: passed + failed,
        },
    });
    for custom in &metrics.custom.metrics {
        let values = match &custom.values {
            CustomValues::Counter { sum, .. } => K6Values::Counter {
                count: *sum,
                rate: per_second(*sum, elapsed),
            },
            CustomValues::Gauge { last, min, max } => K6Values::Gauge {
                value: last.map(|(_, v)| v),
                min: *min,
                max: *max,
            },
            CustomValues::Rate { trues, samples } => K6Values::Rate {
                trues: *trues,
                total: *samples,
            },
            CustomValues::Trend(t) => K6Values::Trend(TrendValues::of_trend(t)),
        };
        out.push(K6Metric {
            name: custom.name.clone(),
            tag: None,
            is_time: false,
            values,
        });
    }
    out
}

/// The per-tag metrics of every tag, tag by tag.
pub fn k6_tag_metrics(metrics: &RunMetrics, tags: &[String], elapsed: Duration) -> Vec<K6Metric> {
    metrics
        .tags
        .iter()
        .enumerate()
        .flat_map(|(i, tag)| {
            let name = tags.get(i).map_or("?", String::as_str);
            http_metrics(tag, Some(name), elapsed)
        })
        .collect()
}

/// The metric a threshold names, over all tags or one.
pub fn find_metric(
    metrics: &RunMetrics,
    tags: &[String],
    elapsed: Duration,
    name: &str,
    tag: Option<&str>,
) -> Option<K6Metric> {
    match tag {
        None => k6_metrics(metrics, elapsed)
            .into_iter()
            .find(|m| m.name == name),
        Some(tag) => {
            let index = tags.iter().position(|t| t == tag)?;
            http_metrics(metrics.tags.get(index)?, Some(tag), elapsed)
                .into_iter()
                .find(|m| m.name == name)
        }
    }
}

/// `http_req_duration` of the responses whose status passes `filter`, of one tag or all:
/// merged from the latency kept per status (none when the run kept none).
pub fn latency_with_status(
    metrics: &RunMetrics,
    tags: &[String],
    tag: Option<&str>,
    filter: &barrage_plan::StatusFilter,
) -> Option<K6Metric> {
    if !metrics.latency_by_status {
        return None;
    }
    let mut merged = LatencyHistogram::default();
    let chosen: Vec<&barrage_metrics::TagMetrics> = match tag {
        None => metrics.tags.iter().collect(),
        Some(name) => vec![metrics.tags.get(tags.iter().position(|t| t == name)?)?],
    };
    for t in chosen {
        merged.merge(&t.latency_where(|status| filter.matches(status)));
    }
    Some(trend("http_req_duration", tag, merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::CustomKind;

    fn get<'a>(all: &'a [K6Metric], name: &str) -> &'a K6Metric {
        all.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn built_in_metrics_follow_k6_definitions() {
        let (_, mut metrics) = crate::summary::tests::sample();
        metrics.sessions.failed = 4;
        metrics.iteration_duration.record_micros(2_000);
        let all = k6_metrics(&metrics, Duration::from_secs(2));
        // 100 responses (10 of them 503) and 1 timeout.
        let reqs = get(&all, "http_reqs");
        assert_eq!(reqs.aggregate(Aggregation::Count), Some(101.0));
        assert_eq!(reqs.aggregate(Aggregation::Rate), Some(50.5));
        let failed = get(&all, "http_req_failed")
            .aggregate(Aggregation::Rate)
            .unwrap();
        assert!((failed - 11.0 / 101.0).abs() < 1e-12);
        let duration = get(&all, "http_req_duration");
        assert!((duration.aggregate(Aggregation::Min).unwrap() - 1.0).abs() < 0.01);
        assert!((duration.aggregate(Aggregation::Max).unwrap() - 1.99).abs() < 0.01);
        // One new connection (200 µs), 99 reused (0).
        let blocked = get(&all, "http_req_blocked");
        assert_eq!(blocked.aggregate(Aggregation::Count), Some(100.0));
        assert_eq!(blocked.aggregate(Aggregation::Med), Some(0.0));
        assert!((blocked.aggregate(Aggregation::Max).unwrap() - 0.2).abs() < 0.001);
        assert_eq!(
            get(&all, "http_req_tls_handshaking").aggregate(Aggregation::Max),
            Some(0.0)
        );
        assert_eq!(
            get(&all, "iterations").aggregate(Aggregation::Count),
            Some(105.0)
        );
        assert_eq!(
            get(&all, "iteration_duration").aggregate(Aggregation::Avg),
            Some(2.0)
        );
        assert_eq!(
            get(&all, "data_sent").aggregate(Aggregation::Count),
            Some(5050.0)
        );
        assert_eq!(
            get(&all, "checks").aggregate(Aggregation::Rate),
            None,
            "no checks ran"
        );
    }

    #[test]
    fn custom_metrics_and_tags_are_found() {
        let (_, mut metrics) = crate::summary::tests::sample();
        metrics.custom = barrage_metrics::CustomMetrics::new([
            ("errors", CustomKind::Rate),
            ("ttfb", CustomKind::Trend),
        ]);
        for i in 0..10 {
            metrics.custom.record(0, f64::from(u8::from(i < 3)), 0);
            metrics.custom.record(1, f64::from(i) * 10.0, 0);
        }
        let tags = vec!["GET /".to_string()];
        let elapsed = Duration::from_secs(2);
        let errors = find_metric(&metrics, &tags, elapsed, "errors", None).unwrap();
        assert_eq!(errors.aggregate(Aggregation::Rate), Some(0.3));
        let ttfb = find_metric(&metrics, &tags, elapsed, "ttfb", None).unwrap();
        assert_eq!(ttfb.aggregate(Aggregation::Avg), Some(45.0));
        assert_eq!(ttfb.aggregate(Aggregation::Max), Some(90.0));
        let tagged = find_metric(&metrics, &tags, elapsed, "http_reqs", Some("GET /")).unwrap();
        assert_eq!(tagged.key(), "http_reqs{tag:GET /}");
        assert_eq!(tagged.aggregate(Aggregation::Count), Some(101.0));
        assert!(find_metric(&metrics, &tags, elapsed, "http_reqs", Some("nope")).is_none());
        let map = ttfb.values_map(&DEFAULT_TREND_STATS);
        assert_eq!(map["count"], 10.0);
        assert_eq!(map["min"], 0.0);
        assert!(map.contains_key("p(95)"));
        assert_eq!(ttfb.aggregate(Aggregation::Percentile(100.0)), Some(90.0));
    }
}
