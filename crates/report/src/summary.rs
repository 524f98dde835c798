//! The summary model: figures derived from merged metrics, serialisable as the JSON output.

use crate::k6::K6Summary;
use crate::self_check::SelfCheckSummary;
use barrage_metrics::{
    CheckCounts, LatencyHistogram, LatencyStats, RunMetrics, SecondBucket, SessionCounters,
    TagMetrics, VuSecond,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Facts about the run that the metrics do not carry.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub name: String,
    pub target: String,
    pub started_at: SystemTime,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub threads: usize,
    pub tags: Vec<String>,
    /// Open model: the arrivals the plan asked for and over how long (seconds).
    pub planned_arrivals: Option<PlannedArrivals>,
    /// The plan's thresholds, evaluated into the summary.
    pub thresholds: Vec<barrage_plan::Threshold>,
    /// The Trend statistics to show (`--summary-trend-stats`).
    pub trend_stats: Vec<barrage_plan::Aggregation>,
    /// What every `X-Request-Id` of the run starts with, when known.
    pub request_id_prefix: Option<String>,
    /// A merge of segments: how many, and which could not be trusted.
    pub segments: Option<barrage_results::MergedSegments>,
}

/// What an open workload planned, to compare with what was achieved.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlannedArrivals {
    pub expected: f64,
    pub seconds: f64,
}

/// Planned against achieved arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ArrivalSummary {
    pub planned: f64,
    pub planned_per_second: f64,
    /// Clients that arrived: started plus dropped.
    pub achieved: u64,
    pub achieved_per_second: f64,
}

/// Rows of hey's response time histogram: the fastest, nine equal steps, the slowest.
pub const HEY_HISTOGRAM_ROWS: usize = 11;

/// Average, fastest and slowest of one request phase, in seconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseSummary {
    pub count: u64,
    pub average_s: f64,
    pub fastest_s: f64,
    pub slowest_s: f64,
}

impl PhaseSummary {
    fn of(histogram: &LatencyHistogram) -> Self {
        Self {
            count: histogram.count(),
            average_s: histogram.mean_micros() / 1e6,
            fastest_s: histogram.min_micros() as f64 / 1e6,
            slowest_s: histogram.max_micros() as f64 / 1e6,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistogramBucket {
    pub upper_s: f64,
    pub count: u64,
}

/// Per-tag figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TagSummary {
    pub tag: String,
    pub requests: u64,
    pub responses: u64,
    pub errors: u64,
    /// Requests still open when the run ended: sent, never answered (not errors).
    pub interrupted_requests: u64,
    /// Extractions that found nothing (the variable stayed unset).
    pub extraction_failures: u64,
    /// Status code → responses of this tag.
    pub status_codes: BTreeMap<u16, u64>,
    /// Error kind → this tag's requests that failed so.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Request bytes on the wire (a failed request counts what was prepared to send).
    pub bytes_sent: u64,
    /// Response bytes on the wire: heads and bodies.
    pub bytes_received: u64,
    pub latency: LatencyStats,
    /// Closed models: the latency corrected for coordinated omission (see `Summary`).
    pub latency_corrected: Option<LatencyStats>,
    /// This tag second by second.
    pub per_second: Vec<SecondBucket>,
}

/// Everything a report shows. Field names are the JSON output's, so they are stable API.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The barrage version that wrote this summary.
    pub version: &'static str,
    pub name: String,
    pub target: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_at_unix_s: f64,
    pub total_s: f64,
    pub interrupted: bool,
    pub threads: usize,
    /// What every `X-Request-Id` header of the run starts with (`<8 hex digits>-`, then the
    /// worker and a per-worker counter in hex): grep a target's logs for it. `None` for files
    /// written before it was stored, and for merges of several runs.
    pub request_id_prefix: Option<String>,
    /// A merge of a test's segments (`barrage merge`): how many, which were untrustworthy
    /// and how far apart they started. Absent for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<barrage_results::MergedSegments>,
    /// Requests that ended: responses plus errors.
    pub requests: u64,
    /// Requests answered with an HTTP response (any status).
    pub responses: u64,
    pub errors: u64,
    /// Requests still open when the run ended (its end, a second stop signal, a grace period
    /// that ran out): sent, never answered. Not in `requests` or `errors`, as hey and k6
    /// count none of them; a run where every request ended so got no response at all.
    pub interrupted_requests: u64,
    /// Responses per second over the run.
    pub requests_per_second: f64,
    /// Iterations (sessions) that ran to their end.
    pub iterations: u64,
    pub sessions: SessionCounters,
    pub connections_opened: u64,
    /// Of `connections_opened`: over TLS, and speaking HTTP/2.
    pub connections_tls: u64,
    pub connections_h2: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Body bytes of all responses ("Total data").
    pub total_data_bytes: u64,
    /// The same after content decoding (gzip, deflate, br): what the application saw.
    pub decoded_data_bytes: u64,
    pub size_per_request_bytes: u64,
    /// Latency from each request's intended start to its last response byte.
    pub latency: LatencyStats,
    /// Closed models only: the latency corrected for coordinated omission. A request slower
    /// than its VU's mean iteration time also stands for the requests the VU would have sent
    /// meanwhile (HdrHistogram `record_correct`, wrk2 style). `latency` is the raw figure;
    /// open and arrival-rate models need no correction (they count from the planned start).
    pub latency_corrected: Option<LatencyStats>,
    pub histogram: Vec<HistogramBucket>,
    pub details: BTreeMap<&'static str, PhaseSummary>,
    /// Status code → responses.
    pub status_codes: BTreeMap<u16, u64>,
    /// Error kind → count.
    pub errors_by_kind: BTreeMap<String, u64>,
    pub tags: Vec<TagSummary>,
    /// Checks and asserts by name, passed and failed.
    pub checks: Vec<CheckCounts>,
    pub arrivals: Option<ArrivalSummary>,
    pub per_second: Vec<SecondBucket>,
    /// k6's view: metrics, per-tag metrics, thresholds.
    #[serde(flatten)]
    pub k6: K6Summary,
    /// VUs second by second: `vus` the most running at once, `vus_max` allocated.
    pub vus: Vec<VuSecond>,
    pub vus_peak: VuSecond,
    /// The generator's measurements of itself.
    pub self_check: SelfCheckSummary,
    /// False when the self-check shows the generator distorted the latency figures.
    pub trustworthy: bool,
    pub trust_reasons: Vec<String>,
}

fn corrected(histogram: &LatencyHistogram) -> Option<LatencyStats> {
    (!histogram.is_empty()).then(|| histogram.stats())
}

/// Error kind name → count, for the kinds seen.
fn errors_by_kind(tag: &TagMetrics) -> BTreeMap<String, u64> {
    tag.errors_by_kind()
        .map(|(kind, n)| (kind.name().to_string(), n))
        .collect()
}

fn tag_summary(name: &str, tag: &TagMetrics) -> TagSummary {
    TagSummary {
        tag: name.to_string(),
        requests: tag.requests(),
        responses: tag.responses(),
        errors: tag.error_count(),
        interrupted_requests: tag.interrupted(),
        extraction_failures: tag.extraction_failures,
        status_codes: tag.status.iter().collect(),
        errors_by_kind: errors_by_kind(tag),
        bytes_sent: tag.bytes_sent,
        bytes_received: tag.bytes_received,
        latency: tag.latency.stats(),
        latency_corrected: corrected(&tag.latency_corrected),
        per_second: tag.series.seconds.clone(),
    }
}

impl Summary {
    /// `tag: count` of the requests still open at the end, per tag, when there are several.
    pub fn interrupted_by_tag(&self) -> Vec<String> {
        self.tags
            .iter()
            .filter(|t| t.interrupted_requests > 0 && self.tags.len() > 1)
            .map(|t| format!("{}: {}", t.tag, t.interrupted_requests))
            .collect()
    }

    pub fn new(info: &RunInfo, metrics: &RunMetrics) -> Self {
        let total = metrics.total();
        let total_s = info.elapsed.as_secs_f64();
        let responses = total.responses();
        let details = BTreeMap::from([
            ("connect", PhaseSummary::of(&total.connect)),
            ("tls", PhaseSummary::of(&total.tls)),
            ("write", PhaseSummary::of(&total.write)),
            ("wait", PhaseSummary::of(&total.wait)),
            ("read", PhaseSummary::of(&total.read)),
        ]);
        let self_check = SelfCheckSummary::new(&metrics.self_check);
        let trust_reasons = self_check.trust_reasons();
        Summary {
            version: env!("CARGO_PKG_VERSION"),
            name: info.name.clone(),
            target: info.target.clone(),
            started_at_unix_s: info
                .started_at
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            total_s,
            interrupted: info.interrupted,
            threads: info.threads,
            request_id_prefix: info.request_id_prefix.clone(),
            segments: info.segments.clone(),
            requests: total.requests(),
            responses,
            errors: total.error_count(),
            interrupted_requests: total.interrupted(),
            requests_per_second: if total_s > 0.0 {
                responses as f64 / total_s
            } else {
                0.0
            },
            iterations: metrics.sessions.completed,
            sessions: metrics.sessions,
            connections_opened: metrics.connections_opened,
            connections_tls: metrics.connections_tls,
            connections_h2: metrics.connections_h2,
            bytes_sent: total.bytes_sent,
            bytes_received: total.bytes_received,
            total_data_bytes: total.body_bytes,
            decoded_data_bytes: total.decoded_body_bytes,
            size_per_request_bytes: total.body_bytes.checked_div(responses).unwrap_or(0),
            latency: total.latency.stats(),
            latency_corrected: corrected(&total.latency_corrected),
            histogram: total
                .latency
                .hey_buckets(HEY_HISTOGRAM_ROWS)
                .into_iter()
                .map(|(upper, count)| HistogramBucket {
                    upper_s: upper as f64 / 1e6,
                    count,
                })
                .collect(),
            details,
            status_codes: total.status.iter().collect(),
            errors_by_kind: errors_by_kind(&total),
            tags: metrics
                .tags
                .iter()
                .enumerate()
                .map(|(i, tag)| {
                    let name = info.tags.get(i).map_or("?", String::as_str);
                    tag_summary(name, tag)
                })
                .collect(),
            checks: metrics.checks.clone(),
            arrivals: info.planned_arrivals.map(|planned| {
                let achieved = metrics.sessions.started + metrics.sessions.dropped;
                let seconds = planned.seconds.max(f64::MIN_POSITIVE);
                // A run stopped early (Ctrl-C) had arrivals for its elapsed time only.
                let ran = info.elapsed.as_secs_f64().clamp(f64::MIN_POSITIVE, seconds);
                ArrivalSummary {
                    planned: planned.expected,
                    planned_per_second: planned.expected / seconds,
                    achieved,
                    achieved_per_second: achieved as f64 / ran,
                }
            }),
            per_second: metrics.series().seconds,
            k6: K6Summary::new(
                metrics,
                &info.tags,
                info.elapsed,
                &info.thresholds,
                &info.trend_stats,
                !info.interrupted,
            ),
            vus: metrics.vus.seconds.clone(),
            vus_peak: metrics.vus.peak(),
            self_check,
            trustworthy: trust_reasons.is_empty(),
            trust_reasons,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("summary serialises")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord};

    pub(crate) fn sample() -> (RunInfo, RunMetrics) {
        let mut metrics = RunMetrics::new(1);
        for i in 0..100u64 {
            metrics.record_response(&ResponseRecord {
                tag: 0,
                second: i / 50,
                latency: Duration::from_micros(1000 + i * 10),
                expected_interval: None,
                phases: PhaseTimings {
                    connect: (i == 0).then_some(Duration::from_micros(200)),
                    tls: None,
                    write: Duration::from_micros(5),
                    wait: Duration::from_micros(900),
                    read: Duration::from_micros(3),
                },
                status: if i < 90 { 200 } else { 503 },
                bytes_sent: 50,
                bytes_received: 120,
                body_bytes: 20,
                decoded_body_bytes: 20,
            });
        }
        metrics.record_error(0, 1, ErrorKind::Timeout, 50);
        metrics.sessions.completed = 101;
        metrics.connections_opened = 1;
        let info = RunInfo {
            name: "quick".into(),
            target: "http://127.0.0.1:1/".into(),
            started_at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            elapsed: Duration::from_secs(2),
            interrupted: false,
            threads: 1,
            tags: vec!["GET /".into()],
            planned_arrivals: None,
            thresholds: Vec::new(),
            trend_stats: crate::k6_metrics::DEFAULT_TREND_STATS.to_vec(),
            request_id_prefix: Some("1a2b3c4d-".into()),
            segments: None,
        };
        (info, metrics)
    }

    #[test]
    fn summary_derives_headline_figures() {
        let (info, metrics) = sample();
        let s = Summary::new(&info, &metrics);
        assert_eq!((s.requests, s.responses, s.errors), (101, 100, 1));
        assert!((s.requests_per_second - 50.0).abs() < 1e-9);
        assert_eq!(s.status_codes, BTreeMap::from([(200, 90), (503, 10)]));
        assert_eq!(s.errors_by_kind.get("timeout"), Some(&1));
        assert_eq!((s.total_data_bytes, s.size_per_request_bytes), (2000, 20));
        assert_eq!(s.details["connect"].count, 1);
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 100);
        assert_eq!(s.per_second.len(), 2);
        let tag_seconds = &s.tags[0].per_second;
        assert_eq!(tag_seconds.iter().map(|b| b.responses).sum::<u64>(), 100);
        assert_eq!(tag_seconds[1].status_classes, [0, 40, 0, 0, 10]);
        assert_eq!(tag_seconds[1].errors_by_kind.iter().sum::<u64>(), 1);
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["status_codes"]["503"], 10);
        assert_eq!(json["latency"]["count"], 100);
        assert_eq!(json["request_id_prefix"], "1a2b3c4d-");
    }

    #[test]
    fn each_tag_has_its_own_status_codes_errors_and_bytes() {
        let (mut info, _) = sample();
        info.tags = vec!["ok".into(), "missing".into()];
        let mut metrics = RunMetrics::new(2);
        for (tag, status, sent, received) in
            [(0, 200, 40, 100), (0, 200, 40, 100), (1, 404, 55, 70)]
        {
            metrics.record_response(&ResponseRecord {
                tag,
                second: 0,
                latency: Duration::from_micros(900),
                expected_interval: None,
                phases: PhaseTimings::default(),
                status,
                bytes_sent: sent,
                bytes_received: received,
                body_bytes: 10,
                decoded_body_bytes: 10,
            });
        }
        metrics.record_error(1, 0, ErrorKind::Refused, 55);
        let s = Summary::new(&info, &metrics);
        let (ok, missing) = (&s.tags[0], &s.tags[1]);
        assert_eq!(ok.status_codes, BTreeMap::from([(200, 2)]));
        assert_eq!(missing.status_codes, BTreeMap::from([(404, 1)]));
        assert!(ok.errors_by_kind.is_empty());
        assert_eq!(
            missing.errors_by_kind,
            BTreeMap::from([("refused".to_string(), 1)])
        );
        assert_eq!((ok.bytes_sent, ok.bytes_received), (80, 200));
        assert_eq!((missing.bytes_sent, missing.bytes_received), (110, 70));
        // The tags add up to the run's figures.
        assert_eq!(s.bytes_sent, ok.bytes_sent + missing.bytes_sent);
        assert_eq!(s.bytes_received, ok.bytes_received + missing.bytes_received);
        assert_eq!(s.status_codes, BTreeMap::from([(200, 2), (404, 1)]));
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(
            json["tags"][1]["status_codes"],
            serde_json::json!({"404": 1})
        );
        assert_eq!(
            json["tags"][1]["errors_by_kind"],
            serde_json::json!({"refused": 1})
        );
        assert_eq!(json["tags"][0]["errors_by_kind"], serde_json::json!({}));
        assert_eq!(json["tags"][0]["bytes_sent"], 80);
    }
}
