//! The results file: everything a run measured, kept so reports can be re-rendered, runs
//! compared, and runs made on several machines merged exactly.
//!
//! Layout (docs/results-format.md): magic `BRRESULT`, a format version, then checksummed
//! sections — META (JSON run metadata), TOTL (per-tag HDR histograms and counters), SERI
//! (per-tag, per-second counters and HDR histograms), CHKS (checks, JSON), SESS (sessions
//! started and dropped per second), XMET (corrected latency, TLS phase, iteration durations,
//! VUs, generator self-check, custom metrics: `extra_codec.rs`) and the optional THRS
//! (thresholds, JSON) and CAPY (a capacity search, JSON). Readers skip sections they do not know. Histograms use HdrHistogram's V2 + DEFLATE
//! encoding, so the size grows with the run's duration and tags, not with its request count.

mod codec;
mod container;
mod extra_codec;
mod machine;
mod merge;
mod metrics_codec;

pub use container::{FORMAT_VERSION, MAGIC};
pub use machine::Machine;
pub use merge::merge;

use barrage_metrics::{CheckCounts, RunMetrics};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why a results file could not be read. Each is one line, for the CLI to print as is.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not a barrage results file (no BRRESULT magic)")]
    NotResults,
    #[error(
        "results format version {0} is not supported (this barrage reads version {FORMAT_VERSION})"
    )]
    UnsupportedVersion(u16),
    #[error(
        "results format version {0} was written by an older barrage, whose plan this one cannot read; report it with that barrage, or run the test again"
    )]
    OlderVersion(u16),
    #[error("truncated: the file ends inside {0}")]
    Truncated(String),
    #[error("corrupt section {section}: {reason}")]
    Corrupt { section: String, reason: String },
    #[error("missing section {0}")]
    Missing(&'static str),
    #[error("cannot merge: {0}")]
    Incompatible(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What an open workload planned, bit-exact (f64 bits), so reports re-render identically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedArrivalsBits {
    pub expected_f64_bits: u64,
    pub seconds_f64_bits: u64,
}

/// Facts about a run the metrics do not carry: the META section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// `run`, `quick`, or `merge`; picks the text layout of `barrage report`.
    pub command: String,
    pub name: String,
    pub target: String,
    pub barrage_version: String,
    /// The plan as run (after overrides and redaction), typed: a reader that cannot read it
    /// refuses the file rather than guessing.
    pub plan: barrage_plan::Plan,
    /// The definition file, when the run had one.
    #[serde(default)]
    pub script: Option<String>,
    /// Overrides given on the command line, by flag name.
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
    pub seed: Option<u64>,
    pub machine: Machine,
    pub started_at_unix_ns: u64,
    pub ended_at_unix_ns: u64,
    /// From the first request's planned start to the last worker's end.
    pub elapsed_ns: u64,
    pub interrupted: bool,
    pub threads: usize,
    pub tags: Vec<String>,
    pub planned_arrivals: Option<PlannedArrivalsBits>,
    /// For a merged file: the files it was made from.
    #[serde(default)]
    pub merged_from: Vec<String>,
    /// What every `X-Request-Id` the run sent starts with (absent in files written before
    /// it was stored, and in merges of several runs).
    #[serde(default)]
    pub request_id_prefix: Option<String>,
    /// When the run was one segment of a test (`--segment i/N`): which, and how its start
    /// lined up with the others'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentRun>,
    /// A merge of segments: how many, and which could not be trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<MergedSegments>,
}

/// One segment's run: its place in the test and its start against the planned one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRun {
    pub index: u64,
    pub count: u64,
    /// The wall-clock start asked for (`--start-at`).
    pub start_at_unix_ns: Option<u64>,
    /// The actual start minus the one asked for (nanoseconds; negative: early).
    pub start_offset_ns: Option<i64>,
    /// The kernel's clock source on the generator (`/sys/.../current_clocksource`).
    pub clock_source: Option<String>,
}

/// What a merge of segments was made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedSegments {
    pub count: u64,
    /// Segments (`i/N`) whose generator self-check failed.
    pub untrustworthy: Vec<String>,
    /// The largest difference between the segments' starts (nanoseconds).
    pub start_spread_ns: u64,
}

impl RunMeta {
    pub fn started_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.started_at_unix_ns)
    }

    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }

    /// `(expected arrivals, over seconds)` for open workloads.
    pub fn planned_arrivals(&self) -> Option<(f64, f64)> {
        self.planned_arrivals.map(|p| {
            (
                f64::from_bits(p.expected_f64_bits),
                f64::from_bits(p.seconds_f64_bits),
            )
        })
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `2026-11-23T08:47:40Z`-style parts of a Unix time, UTC (days-to-civil, Howard Hinnant).
pub fn utc_parts(unix_s: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a Unix time in nanoseconds.
pub fn utc_text(unix_ns: u64) -> String {
    let (y, mo, d, h, mi, s) = utc_parts(unix_ns / 1_000_000_000);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// One run's results, in memory.
#[derive(Debug, Clone)]
pub struct ResultsFile {
    pub meta: RunMeta,
    pub metrics: RunMetrics,
    /// Threshold verdicts with observed values (THRS), written by the thresholds feature.
    pub thresholds: Option<serde_json::Value>,
    /// The load generator's self-check figures and verdict (SELF).
    pub self_check: Option<serde_json::Value>,
    /// Clients (VUs) active, per second since the run started: the peak of the controller's
    /// samples in that second (ACTV; sampled, so a sub-second burst can be missed).
    pub active_clients: Option<Vec<u64>>,
    /// A capacity search (`barrage capacity`): every step, the knee and the verdict (CAPY,
    /// JSON of `barrage_capacity::Search`; the metrics are its steps one after another).
    pub capacity: Option<serde_json::Value>,
}

const META: [u8; 4] = *b"META";
const TOTALS: [u8; 4] = *b"TOTL";
const SERIES: [u8; 4] = *b"SERI";
const CHECKS: [u8; 4] = *b"CHKS";
const SESSIONS: [u8; 4] = *b"SESS";
const THRESHOLDS: [u8; 4] = *b"THRS";
const SELF_CHECK: [u8; 4] = *b"SELF";
const ACTIVE: [u8; 4] = *b"ACTV";
const EXTRA: [u8; 4] = *b"XMET";
const INTERRUPTED: [u8; 4] = *b"INTR";
const STATUS_LATENCY: [u8; 4] = *b"STLT";
const VERDICTS: [u8; 4] = *b"VERD";
const CAPACITY: [u8; 4] = *b"CAPY";

fn corrupt(section: &str, reason: impl std::fmt::Display) -> ResultsError {
    ResultsError::Corrupt {
        section: section.into(),
        reason: reason.to_string(),
    }
}

impl ResultsFile {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut sections = vec![
            (META, json(&self.meta)),
            (TOTALS, metrics_codec::encode_totals(&self.metrics)),
            (SERIES, metrics_codec::encode_series(&self.metrics)),
            (CHECKS, json(&self.metrics.checks)),
            (SESSIONS, metrics_codec::encode_sessions(&self.metrics)),
            (EXTRA, extra_codec::encode_extra(&self.metrics)),
            (
                INTERRUPTED,
                metrics_codec::encode_interrupted(&self.metrics),
            ),
        ];
        if let Some(by_status) = extra_codec::encode_status_latency(&self.metrics) {
            sections.push((STATUS_LATENCY, by_status));
        }
        if let Some(verdicts) = extra_codec::encode_verdicts(&self.metrics) {
            sections.push((VERDICTS, verdicts));
        }
        if let Some(t) = &self.thresholds {
            sections.push((THRESHOLDS, json(t)));
        }
        if let Some(s) = &self.self_check {
            sections.push((SELF_CHECK, json(s)));
        }
        if let Some(active) = &self.active_clients {
            sections.push((ACTIVE, metrics_codec::encode_counts(active)));
        }
        if let Some(capacity) = &self.capacity {
            sections.push((CAPACITY, json(capacity)));
        }
        container::write(&sections)
    }

    pub fn from_bytes(data: &[u8]) -> Result<Self, ResultsError> {
        let mut meta = None;
        let mut metrics = RunMetrics::default();
        let mut sessions = RunMetrics::default();
        let (mut totals, mut series, mut checks) = (false, None, None);
        let mut thresholds = None;
        let mut self_check = None;
        let mut active_clients = None;
        let mut extra = None;
        let mut interrupted = None;
        let mut status_latency = None;
        let mut verdicts = None;
        let mut capacity = None;
        for section in container::read(data)? {
            match section.kind {
                META => {
                    meta = Some(
                        serde_json::from_slice::<RunMeta>(section.payload)
                            .map_err(|e| corrupt("META", e))?,
                    )
                }
                TOTALS => {
                    metrics_codec::decode_totals(section.payload, &mut metrics)
                        .map_err(|e| corrupt("TOTL", e))?;
                    totals = true;
                }
                SERIES => series = Some(section.payload),
                SESSIONS => metrics_codec::decode_sessions(section.payload, &mut sessions)
                    .map_err(|e| corrupt("SESS", e))?,
                CHECKS => {
                    checks = Some(
                        serde_json::from_slice::<Vec<CheckCounts>>(section.payload)
                            .map_err(|e| corrupt("CHKS", e))?,
                    )
                }
                THRESHOLDS => {
                    thresholds = Some(
                        serde_json::from_slice(section.payload).map_err(|e| corrupt("THRS", e))?,
                    )
                }
                SELF_CHECK => {
                    self_check = Some(
                        serde_json::from_slice(section.payload).map_err(|e| corrupt("SELF", e))?,
                    )
                }
                ACTIVE => {
                    active_clients = Some(
                        metrics_codec::decode_counts(section.payload)
                            .map_err(|e| corrupt("ACTV", e))?,
                    )
                }
                EXTRA => extra = Some(section.payload),
                INTERRUPTED => interrupted = Some(section.payload),
                STATUS_LATENCY => status_latency = Some(section.payload),
                VERDICTS => verdicts = Some(section.payload),
                CAPACITY => {
                    capacity = Some(
                        serde_json::from_slice(section.payload).map_err(|e| corrupt("CAPY", e))?,
                    )
                }
                _ => {} // a later version's section: skipped
            }
        }
        let meta = meta.ok_or(ResultsError::Missing("META"))?;
        if !totals {
            return Err(ResultsError::Missing("TOTL"));
        }
        let series = series.ok_or(ResultsError::Missing("SERI"))?;
        metrics_codec::decode_series(series, &mut metrics).map_err(|e| corrupt("SERI", e))?;
        // Files written before INTR have no per-second count of requests cut off by the end.
        if let Some(interrupted) = interrupted {
            metrics_codec::decode_interrupted(interrupted, &mut metrics)
                .map_err(|e| corrupt("INTR", e))?;
        }
        metrics.checks = checks.ok_or(ResultsError::Missing("CHKS"))?;
        metrics.sessions_per_second = sessions.sessions_per_second;
        if let Some(extra) = extra {
            extra_codec::decode_extra(extra, &mut metrics).map_err(|e| corrupt("XMET", e))?;
        }
        if let Some(by_status) = status_latency {
            extra_codec::decode_status_latency(by_status, &mut metrics)
                .map_err(|e| corrupt("STLT", e))?;
        }
        if let Some(verdicts) = verdicts {
            extra_codec::decode_verdicts(verdicts, &mut metrics).map_err(|e| corrupt("VERD", e))?;
        }
        if meta.tags.len() != metrics.tags.len() {
            return Err(corrupt(
                "META",
                format!(
                    "{} tag names for {} tags",
                    meta.tags.len(),
                    metrics.tags.len()
                ),
            ));
        }
        Ok(Self {
            meta,
            metrics,
            thresholds,
            self_check,
            active_clients,
            capacity,
        })
    }

    /// Writes the file (creating its directory), through a temporary name so a reader never
    /// sees half a file.
    pub fn write(&self, path: &Path) -> Result<(), ResultsError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let partial = path.with_extension("partial");
        {
            use std::io::Write;
            let mut file = create_private(&partial)?;
            file.write_all(&self.to_bytes())?;
        }
        std::fs::rename(&partial, path)?;
        Ok(())
    }

    pub fn read(path: &Path) -> Result<Self, ResultsError> {
        Self::from_bytes(&std::fs::read(path)?)
    }
}

/// Opens `path` for writing, creating it readable and writable by its owner only (0600):
/// results, reports and history may describe a private system. An existing file keeps its
/// contents (and mode) until it is written: the caller truncates it then.
pub fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Creates (or truncates) `path` for writing, owner-only (0600) when created.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let file = open_private(path)?;
    file.set_len(0)?;
    Ok(file)
}

/// A JSON section payload.
fn json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("plain data serialises")
}

#[cfg(test)]
mod tests;
