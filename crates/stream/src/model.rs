//! What every live export carries: the run's merged metrics turned into named, labelled
//! points (k6's remote-write names, so k6's Grafana dashboards work), one set per flush.
//!
//! Counters are cumulative since the run start; latency is exported as chosen percentiles
//! (gauges, in seconds, k6's base unit), computed exactly from the merged HDR histograms.

use barrage_metrics::RunMetrics;

/// Counter (cumulative, monotonic) or gauge (a current value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    Counter,
    Gauge,
}

/// One value of one series at one flush.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub name: String,
    pub kind: PointKind,
    /// Label pairs besides the common ones, e.g. `("name", "login")`.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// Labels every series of a run carries: the test id, and the segment when the run is one
/// segment of a distributed test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommonLabels {
    pub testid: String,
    pub segment: Option<String>,
}

impl CommonLabels {
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![("testid".to_string(), self.testid.clone())];
        if let Some(segment) = &self.segment {
            pairs.push(("segment".to_string(), segment.clone()));
        }
        pairs
    }
}

/// The latency percentiles exported by default: p(95) and p(99).
pub const DEFAULT_PERCENTILES: &[f64] = &[95.0, 99.0];

/// The suffix k6 gives a percentile series: `p99`, `p95`, `p99_9`.
pub fn percentile_suffix(percentile: f64) -> String {
    let text = format!("{percentile}");
    format!("p{}", text.replace('.', "_"))
}

/// Every point of one flush: per-tag request counters, failure rate, latency percentiles,
/// bytes, and run-wide iterations, dropped iterations and VUs.
pub fn points(metrics: &RunMetrics, tags: &[String], percentiles: &[f64]) -> Vec<Point> {
    let mut out = Vec::new();
    for (index, tag) in metrics.tags.iter().enumerate() {
        let name = tags
            .get(index)
            .cloned()
            .unwrap_or_else(|| format!("tag{index}"));
        let labels = vec![("name".to_string(), name)];
        let point = |metric: &str, kind, value: f64| Point {
            name: format!("k6_{metric}"),
            kind,
            labels: labels.clone(),
            value,
        };
        let requests = tag.requests();
        out.push(point(
            "http_reqs_total",
            PointKind::Counter,
            requests as f64,
        ));
        out.push(point(
            "http_req_failed_rate",
            PointKind::Gauge,
            tag.failed_rate(),
        ));
        out.push(point(
            "data_sent_total",
            PointKind::Counter,
            tag.bytes_sent as f64,
        ));
        out.push(point(
            "data_received_total",
            PointKind::Counter,
            tag.bytes_received as f64,
        ));
        for (kind, count) in tag.errors_by_kind() {
            let mut labels = labels.clone();
            labels.push(("kind".to_string(), kind.to_string()));
            out.push(Point {
                name: "barrage_errors_total".into(),
                kind: PointKind::Counter,
                labels,
                value: count as f64,
            });
        }
        if tag.latency.count() > 0 {
            for &p in percentiles {
                let seconds = tag.latency.percentile_micros(p) as f64 / 1e6;
                out.push(point(
                    &format!("http_req_duration_{}", percentile_suffix(p)),
                    PointKind::Gauge,
                    seconds,
                ));
            }
        }
    }
    let run_point = |name: &str, kind, value: f64| Point {
        name: format!("k6_{name}"),
        kind,
        labels: Vec::new(),
        value,
    };
    out.push(run_point(
        "iterations_total",
        PointKind::Counter,
        metrics.sessions.completed as f64,
    ));
    out.push(run_point(
        "dropped_iterations_total",
        PointKind::Counter,
        metrics.sessions.dropped as f64,
    ));
    let vus = metrics.vus.last();
    out.push(run_point("vus", PointKind::Gauge, vus.vus as f64));
    out.push(run_point("vus_max", PointKind::Gauge, vus.vus_max as f64));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{PhaseTimings, ResponseRecord};
    use std::time::Duration;

    fn record(metrics: &mut RunMetrics, tag: usize, micros: u64, status: u16) {
        metrics.record_response(&ResponseRecord {
            tag,
            second: 0,
            latency: Duration::from_micros(micros),
            phases: PhaseTimings::default(),
            status,
            bytes_sent: 10,
            bytes_received: 100,
            body_bytes: 0,
            decoded_body_bytes: 0,
            expected_interval: None,
        });
    }

    fn value(points: &[Point], name: &str, tag: &str) -> f64 {
        points
            .iter()
            .find(|p| p.name == name && p.labels.iter().any(|(k, v)| k == "name" && v == tag))
            .unwrap_or_else(|| panic!("no {name}{{name={tag}}}"))
            .value
    }

    #[test]
    fn per_tag_counters_rates_and_percentiles() {
        let mut metrics = RunMetrics::new(2);
        for micros in 1..=100 {
            record(&mut metrics, 0, micros * 1000, 200);
        }
        record(&mut metrics, 1, 5000, 503);
        let tags = vec!["home".to_string(), "login".to_string()];
        let points = points(&metrics, &tags, &[50.0, 99.9]);
        assert_eq!(value(&points, "k6_http_reqs_total", "home"), 100.0);
        assert_eq!(value(&points, "k6_http_reqs_total", "login"), 1.0);
        assert_eq!(value(&points, "k6_http_req_failed_rate", "login"), 1.0);
        assert_eq!(value(&points, "k6_http_req_failed_rate", "home"), 0.0);
        assert_eq!(value(&points, "k6_data_sent_total", "home"), 1000.0);
        let p50 = value(&points, "k6_http_req_duration_p50", "home");
        assert!((p50 - 0.050).abs() < 0.001, "{p50}");
        let p999 = value(&points, "k6_http_req_duration_p99_9", "home");
        assert!((p999 - 0.100).abs() < 0.001, "{p999}");
        let counter = points
            .iter()
            .find(|p| p.name == "k6_http_reqs_total")
            .unwrap();
        assert_eq!(counter.kind, PointKind::Counter);
    }

    #[test]
    fn common_labels_carry_the_segment_only_when_set() {
        let mut labels = CommonLabels {
            testid: "t1".into(),
            segment: None,
        };
        assert_eq!(labels.pairs().len(), 1);
        labels.segment = Some("2/4".into());
        assert_eq!(labels.pairs()[1], ("segment".into(), "2/4".into()));
        assert_eq!(percentile_suffix(99.0), "p99");
        assert_eq!(percentile_suffix(99.9), "p99_9");
    }

    #[test]
    fn the_grafana_dashboard_queries_only_exported_names() {
        let dashboard = include_str!("../../../docs/grafana-barrage-remote-write.json");
        let mut metrics = RunMetrics::new(1);
        record(&mut metrics, 0, 1000, 200);
        metrics.tags[0].errors[0] = 1;
        let exported: Vec<String> = points(&metrics, &["t".into()], DEFAULT_PERCENTILES)
            .into_iter()
            .map(|p| p.name)
            .collect();
        let mut queried = 0;
        for word in dashboard.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("k6_") || word.starts_with("barrage_") {
                assert!(exported.iter().any(|e| e == word), "{word} is not exported");
                queried += 1;
            }
        }
        assert!(queried >= 10, "{queried}");
    }
}
