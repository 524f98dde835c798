//! The `--out prometheus-rw=URL` and `--out otlp=URL` outputs: their specs (checked before
//! the run), and the running exports that turn merged snapshots into pushed batches.

use crate::model::{points, CommonLabels, DEFAULT_PERCENTILES};
use crate::push::{Endpoint, PushReport, Pusher};
use crate::{otlp, remote_write};
use barrage_metrics::RunMetrics;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The `--out` kinds this crate serves, for usage messages.
pub const KINDS: &str = "prometheus-rw=URL (or experimental-prometheus-rw=URL), otlp=URL";

/// How often a batch goes out unless the spec says `interval=`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Shorter intervals would outrun the engine's snapshots.
pub const MIN_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    PrometheusRemoteWrite,
    Otlp,
}

impl ExportKind {
    fn name(self) -> &'static str {
        match self {
            Self::PrometheusRemoteWrite => "prometheus-rw",
            Self::Otlp => "otlp",
        }
    }
}

/// One export as given on the command line:
/// `KIND=URL[,interval=D][,testid=ID][,percentiles=P+P][,ca=FILE]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSpec {
    pub kind: ExportKind,
    pub url: url::Url,
    pub interval: Duration,
    pub testid: Option<String>,
    pub percentiles: Vec<f64>,
    /// `https://` endpoints: a PEM file of roots trusted besides the system's.
    pub ca: Option<std::path::PathBuf>,
}

impl ExportSpec {
    /// The TLS client for an `https://` endpoint (system roots plus `ca=`), `None` for
    /// `http://`.
    pub fn tls(&self) -> Result<Option<std::sync::Arc<rustls::ClientConfig>>, String> {
        if self.url.scheme() != "https" {
            return Ok(None);
        }
        barrage_http::client_config(&barrage_http::TlsSettings {
            ca_file: self.ca.clone(),
            alpn: barrage_http::Alpn::Http1,
            ..barrage_http::TlsSettings::default()
        })
        .map(Some)
        .map_err(|e| format!("ca: {e}"))
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("--out `{spec}`: {problem}")]
pub struct SpecError {
    spec: String,
    problem: String,
}

impl ExportSpec {
    /// `None` when `kind` is not one of this crate's; else the checked spec.
    pub fn parse(kind: &str, rest: &str) -> Option<Result<Self, SpecError>> {
        let kind = match kind {
            "prometheus-rw" | "experimental-prometheus-rw" => ExportKind::PrometheusRemoteWrite,
            "otlp" => ExportKind::Otlp,
            _ => return None,
        };
        let fail = |problem: String| SpecError {
            spec: format!("{}={rest}", kind.name()),
            problem,
        };
        Some(Self::parse_rest(kind, rest).map_err(fail))
    }

    fn parse_rest(kind: ExportKind, rest: &str) -> Result<Self, String> {
        let mut parts = rest.split(',');
        let url_text = parts.next().unwrap_or_default();
        let url = url::Url::parse(url_text).map_err(|e| {
            format!(
                "`{url_text}` is not a URL ({e}); give one like http://127.0.0.1:9090/api/v1/write"
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "only http:// and https:// endpoints are supported, not {}://",
                url.scheme()
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(format!("`{url_text}` names no host"));
        }
        let mut spec = Self {
            kind,
            url,
            interval: DEFAULT_INTERVAL,
            testid: None,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            ca: None,
        };
        for option in parts {
            let (key, value) = option
                .split_once('=')
                .ok_or_else(|| format!("`{option}`: expected KEY=VALUE after the URL"))?;
            match key {
                "interval" => {
                    spec.interval = barrage_plan::parse_duration(value)
                        .ok()
                        .filter(|d| *d >= MIN_INTERVAL)
                        .ok_or_else(|| {
                            format!(
                                "interval `{value}`: give a duration of at least 500ms, like 1s"
                            )
                        })?;
                }
                "testid" if !value.is_empty() => spec.testid = Some(value.to_string()),
                "ca" if !value.is_empty() => spec.ca = Some(value.into()),
                "percentiles" => {
                    spec.percentiles = value
                        .split('+')
                        .map(|p| p.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0))
                        .collect::<Option<Vec<_>>>()
                        .filter(|ps| !ps.is_empty())
                        .ok_or_else(|| {
                            format!("percentiles `{value}`: give numbers in (0, 100] joined by +, like 95+99")
                        })?;
                }
                _ => {
                    return Err(format!(
                        "unknown option `{key}` (known: interval, testid, percentiles, ca)"
                    ))
                }
            }
        }
        if spec.ca.is_some() && spec.url.scheme() != "https" {
            return Err("ca= is for https:// endpoints".into());
        }
        // An unreadable or empty CA file is found now, before any load.
        spec.tls()?;
        Ok(spec)
    }
}

struct Export {
    spec: ExportSpec,
    common: CommonLabels,
    pusher: Pusher,
    last_flush: Option<Instant>,
}

/// The exports of one run.
pub struct LiveExports {
    exports: Vec<Export>,
    tags: Vec<String>,
    started_unix_ns: u64,
}

fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A test id for runs that name none: the start time, readable and unique enough per
/// machine.
pub fn default_testid(started: SystemTime) -> String {
    format!("barrage-{}", unix_ns(started) / 1_000_000)
}

impl LiveExports {
    /// Starts a sender per spec. `segment` labels every series when the run is one segment
    /// of a distributed test.
    pub fn start(
        specs: Vec<ExportSpec>,
        tags: &[String],
        segment: Option<String>,
    ) -> std::io::Result<Self> {
        let started = SystemTime::now();
        let exports = specs
            .into_iter()
            .map(|spec| {
                let headers = match spec.kind {
                    ExportKind::PrometheusRemoteWrite => remote_write::HEADERS,
                    ExportKind::Otlp => otlp::HEADERS,
                };
                let pusher = Pusher::start(Endpoint {
                    url: spec.url.clone(),
                    headers,
                    tls: spec.tls().map_err(std::io::Error::other)?,
                })?;
                let common = CommonLabels {
                    testid: spec
                        .testid
                        .clone()
                        .unwrap_or_else(|| default_testid(started)),
                    segment: segment.clone(),
                };
                Ok(Export {
                    spec,
                    common,
                    pusher,
                    last_flush: None,
                })
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            exports,
            tags: tags.to_vec(),
            started_unix_ns: unix_ns(started),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.exports.is_empty()
    }

    /// The shortest interval asked for: how often the caller should offer snapshots.
    pub fn period(&self) -> Option<Duration> {
        self.exports.iter().map(|e| e.spec.interval).min()
    }

    /// One line per export naming where it goes and its test id, for the run's header.
    pub fn describe(&self) -> Vec<String> {
        self.exports
            .iter()
            .map(|e| {
                format!(
                    "{} → {} (testid={})",
                    e.spec.kind.name(),
                    e.spec.url,
                    e.common.testid
                )
            })
            .collect()
    }

    /// Offers the latest merged metrics; each export whose interval has passed queues a batch.
    pub fn offer(&mut self, metrics: &RunMetrics) {
        let now = Instant::now();
        for index in 0..self.exports.len() {
            let due = self.exports[index].last_flush.is_none_or(|at| {
                now.duration_since(at) + Duration::from_millis(50)
                    >= self.exports[index].spec.interval
            });
            if due {
                self.flush(index, metrics);
                self.exports[index].last_flush = Some(now);
            }
        }
    }

    fn flush(&self, index: usize, metrics: &RunMetrics) {
        let export = &self.exports[index];
        let points = points(metrics, &self.tags, &export.spec.percentiles);
        let now = unix_ns(SystemTime::now());
        match export.spec.kind {
            ExportKind::PrometheusRemoteWrite => {
                // Latency as native histograms too, unless the server refuses them: then the
                // same batch goes without, as it does for the rest of the run.
                let now_ms = (now / 1_000_000) as i64;
                let plain = remote_write::write_request(&points, &export.common, now_ms);
                let mut rich = plain.clone();
                remote_write::add_native_histograms(
                    &mut rich,
                    metrics,
                    &self.tags,
                    &export.common,
                    now_ms,
                );
                export
                    .pusher
                    .push_with_fallback(remote_write::encode(&rich), remote_write::encode(&plain));
            }
            ExportKind::Otlp => export.pusher.push(otlp::encode(&otlp::export_request(
                &points,
                &export.common,
                self.started_unix_ns,
                now,
            ))),
        }
    }

    /// Sends the run's final metrics, drains the queues (bounded) and returns the lines to
    /// print: for remote write, which form latency took; one warning per export that lost
    /// batches.
    pub fn finish(self, final_metrics: &RunMetrics) -> Vec<String> {
        for index in 0..self.exports.len() {
            self.flush(index, final_metrics);
        }
        let mut lines = Vec::new();
        for export in self.exports {
            let name = export.spec.kind.name();
            let url = export.spec.url.clone();
            let report = export.pusher.finish();
            lines.extend(latency_form(name, &url, &report));
            lines.extend(warning(name, &url, &report));
        }
        lines
    }
}

/// Which form remote write's latency took, once the endpoint answered a batch.
fn latency_form(name: &str, url: &url::Url, report: &PushReport) -> Option<String> {
    let form = match (report.rich_accepted?, &report.rich_refusal) {
        (true, _) => format!(
            "latency as native histograms ({}) and percentile gauges",
            remote_write::DURATION_HISTOGRAM
        ),
        (false, refusal) => format!(
            "latency as percentile gauges only: the server refused native histograms ({})",
            refusal.as_deref().unwrap_or("no reason given")
        ),
    };
    Some(format!("--out {name} {url}: {form}"))
}

fn warning(name: &str, url: &url::Url, report: &PushReport) -> Option<String> {
    if report.dropped == 0 && report.failed == 0 {
        return None;
    }
    let total = report.sent + report.dropped + report.failed;
    Some(format!(
        "warning: --out {name} {url}: {} of {total} batches not delivered ({} dropped, {} failed){}",
        report.dropped + report.failed,
        report.dropped,
        report.failed,
        report
            .last_error
            .as_ref()
            .map_or(String::new(), |e| format!("; last error: {e}"))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(kind: &str, rest: &str) -> Result<ExportSpec, String> {
        ExportSpec::parse(kind, rest)
            .unwrap()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn specs_are_checked_before_the_run() {
        assert!(ExportSpec::parse("ndjson", "x").is_none());
        let spec = parse(
            "experimental-prometheus-rw",
            "http://127.0.0.1:9090/api/v1/write,interval=2s,testid=t7,percentiles=50+99.9",
        )
        .unwrap();
        assert_eq!(spec.kind, ExportKind::PrometheusRemoteWrite);
        assert_eq!(spec.interval, Duration::from_secs(2));
        assert_eq!(spec.testid.as_deref(), Some("t7"));
        assert_eq!(spec.percentiles, vec![50.0, 99.9]);
        for (rest, message) in [
            ("not a url", "is not a URL"),
            ("ftp://x/v1/metrics", "only http:// and https://"),
            ("http://x/,ca=/etc/hostname", "ca= is for https://"),
            (
                "https://x/,ca=/nonexistent.pem",
                "ca: cannot read `/nonexistent.pem`",
            ),
            ("http://x/,interval=1ms", "at least 500ms"),
            ("http://x/,percentiles=101", "percentiles"),
            ("http://x/,color=red", "unknown option `color`"),
            ("http://x/,oops", "KEY=VALUE"),
        ] {
            let e = parse("otlp", rest).unwrap_err();
            assert!(e.contains(message), "{rest}: {e}");
            assert!(e.starts_with("--out `otlp="), "{e}");
        }
    }

    #[test]
    fn the_warning_counts_undelivered_batches() {
        let url = url::Url::parse("http://127.0.0.1:1/w").unwrap();
        assert_eq!(warning("otlp", &url, &PushReport::default()), None);
        let report = PushReport {
            sent: 3,
            dropped: 2,
            failed: 1,
            last_error: Some("HTTP 500: no".into()),
            ..PushReport::default()
        };
        let line = warning("otlp", &url, &report).unwrap();
        assert!(
            line.contains(
                "3 of 6 batches not delivered (2 dropped, 1 failed); last error: HTTP 500"
            ),
            "{line}"
        );
    }
}
