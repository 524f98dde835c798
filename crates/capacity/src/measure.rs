//! One step's measurement: the figures of its measurement window (the seconds after the
//! warm-up), taken from the run's per-second counters and merged per-second HDR histograms —
//! exact, never averaged percentiles — and the generator's self-check of that step.

use crate::slo::Slo;
use barrage_metrics::{ErrorKind, LatencyHistogram, RunMetrics};
use barrage_report::{SelfCheckSummary, CPU_LIMIT, LAG_P99_LIMIT_US};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Scheduler lag beyond this share of the SLO's latency limit means the generator's own delay
/// decides the verdict.
pub const LAG_SHARE_OF_SLO: f64 = 0.25;
/// More than this share of late self-check ticks: the generator's event loop could not keep up.
pub const STALL_SHARE_LIMIT: f64 = 0.05;

/// The seconds of a step's run that count: `[warmup, warmup + measure)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub warmup_s: u64,
    pub measure_s: u64,
}

/// What the generator measured of itself during one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorCheck {
    pub max_worker_cpu_percent: f64,
    pub cpu_wait_percent: f64,
    /// How late planned starts began (p99): the generator, or a busy client pool.
    pub lag_p99_us: u64,
    /// How late the workers' 10 ms tick fired (p99): the generator's own event loop.
    #[serde(default)]
    pub tick_p99_us: u64,
    pub stalls: u64,
    pub ticks: u64,
    /// Connections that failed for want of file descriptors (EMFILE/ENFILE) on this machine.
    pub fd_errors: u64,
    /// Iterations the plan's client limit (maxVUs, max clients) dropped.
    pub dropped: u64,
    /// The self-check's own reasons not to trust the figures (empty: trusted).
    pub untrusted: Vec<String>,
}

/// A window's request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub requests: u64,
    pub responses: u64,
    pub failed: u64,
    pub interrupted: u64,
}

/// One run of one step: the measurement window's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// Arrivals per second, or virtual users.
    pub load: f64,
    pub started_at_unix_ns: u64,
    /// Requests whose figures fall in the window (answered, failed, or still open at the end).
    pub requests: u64,
    pub responses: u64,
    /// Errors and responses with status ≥ 400 (`http_req_failed`).
    pub failed: u64,
    /// Still open when the step ended: counted in the latency histogram at the step's drain
    /// time (a lower bound of their latency).
    pub interrupted: u64,
    /// Responses per second over the window.
    pub throughput: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// The window's latency histogram (HdrHistogram V2 + DEFLATE, base64): merged exactly
    /// across repeats and segments.
    pub latency: String,
    pub generator: GeneratorCheck,
    /// Segments step on a wall-clock grid: how long after its slot's end this run ended
    /// (0: within its slot). Past it, the segments' steps no longer line up.
    #[serde(default)]
    pub overrun_ms: u64,
}

impl Measure {
    /// The window's figures from a step run's metrics. `drain` is how long requests in
    /// flight were given after the step's last start.
    pub fn of(
        load: f64,
        started_at_unix_ns: u64,
        metrics: &RunMetrics,
        window: Window,
        drain: Duration,
    ) -> Measure {
        let seconds = window.warmup_s..window.warmup_s + window.measure_s;
        let mut latency = LatencyHistogram::new();
        let (mut responses, mut errors, mut status_failed, mut interrupted) = (0, 0, 0, 0);
        for tag in &metrics.tags {
            for second in seconds.clone() {
                if let Some(h) = tag.latency_by_second.decoded_if_any(second) {
                    latency.merge(&h);
                }
                if let Some(bucket) = tag.series.seconds.get(second as usize) {
                    responses += bucket.responses;
                    errors += bucket.errors;
                    status_failed += bucket.status_classes[3] + bucket.status_classes[4];
                    interrupted += bucket.interrupted;
                }
            }
        }
        latency.record_micros_n(drain.as_micros() as u64, interrupted);
        let total = metrics.total();
        let check = SelfCheckSummary::new(&metrics.self_check);
        let generator = GeneratorCheck {
            max_worker_cpu_percent: check.max_worker_cpu_percent,
            cpu_wait_percent: check.cpu_wait_percent,
            lag_p99_us: check.scheduler_lag.p99_us,
            tick_p99_us: check.tick_overshoot.p99_us,
            stalls: check.stalls,
            ticks: check.tick_overshoot.count,
            fd_errors: total.errors[ErrorKind::LocalFdLimit.index()],
            dropped: metrics.sessions.dropped,
            untrusted: check.trust_reasons(),
        };
        let counts = Counts {
            requests: responses + errors + interrupted,
            responses,
            failed: errors + status_failed,
            interrupted,
        };
        Measure::from_histogram(
            load,
            started_at_unix_ns,
            &latency,
            counts,
            window.measure_s as f64,
            generator,
        )
    }

    /// A measure from its window's histogram and counts, over `seconds`.
    pub fn from_histogram(
        load: f64,
        started_at_unix_ns: u64,
        latency: &LatencyHistogram,
        counts: Counts,
        seconds: f64,
        generator: GeneratorCheck,
    ) -> Measure {
        let mut encoded = Vec::new();
        latency.encode_into(&mut encoded);
        Measure {
            load,
            started_at_unix_ns,
            requests: counts.requests,
            responses: counts.responses,
            failed: counts.failed,
            interrupted: counts.interrupted,
            throughput: counts.responses as f64 / seconds.max(1e-9),
            p50_us: latency.percentile_micros(50.0),
            p90_us: latency.percentile_micros(90.0),
            p95_us: latency.percentile_micros(95.0),
            p99_us: latency.percentile_micros(99.0),
            max_us: latency.max_micros(),
            latency: base64::engine::general_purpose::STANDARD.encode(&encoded),
            generator,
            overrun_ms: 0,
        }
    }

    /// The window's latency histogram (empty when the stored bytes do not decode).
    pub fn histogram(&self) -> LatencyHistogram {
        base64::engine::general_purpose::STANDARD
            .decode(&self.latency)
            .ok()
            .and_then(|bytes| LatencyHistogram::decode(&bytes).ok())
            .unwrap_or_default()
    }

    /// Failed requests over requests, percent.
    pub fn error_percent(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.failed as f64 * 100.0 / self.requests as f64
        }
    }
}

/// Why the generator, not the target, limited a step, with the fix to suggest; `None` when
/// it kept up.
pub fn generator_limit(check: &GeneratorCheck, slo: &Slo) -> Option<(String, String)> {
    let mut reasons = Vec::new();
    let mut fixes = Vec::new();
    if check.fd_errors > 0 {
        reasons.push(format!(
            "{} connections failed for want of file descriptors",
            check.fd_errors
        ));
        fixes.push("raise `ulimit -n`, or spread the clients over more segments (--segment i/N) and source addresses (--local-addrs)");
    }
    // A worker on a CPU, or ready and waiting for one that another process holds, nearly
    // all the time: it had no more CPU to give (its own, or its share of a busy core).
    let demand = check.max_worker_cpu_percent + check.cpu_wait_percent;
    if check.max_worker_cpu_percent >= CPU_LIMIT * 100.0 {
        reasons.push(format!(
            "generator CPU at {:.0}% on its busiest worker thread",
            check.max_worker_cpu_percent
        ));
        fixes.push("more worker threads (--threads), or more generators (--segment i/N)");
    } else if demand >= CPU_LIMIT * 100.0 {
        reasons.push(format!(
            "generator starved of CPU: its worker threads ran {:.0}% and waited for a CPU other processes held {:.0}% of the step",
            check.max_worker_cpu_percent, check.cpu_wait_percent
        ));
        fixes.push("cores of its own for the generator (taskset, an idle machine), more worker threads (--threads), or more generators (--segment i/N)");
    }
    // The tick, not the scheduler lag: a paced plan's starts are also late when every client
    // waits on a slow target — the target's doing, and latency counts from the planned start
    // anyway. A late tick is the generator's own event loop.
    let lag_limit = slo.latency_limit_us().map_or(LAG_P99_LIMIT_US as f64, |l| {
        (l * LAG_SHARE_OF_SLO).max(LAG_P99_LIMIT_US as f64)
    });
    let stall_share = check.stalls as f64 / check.ticks.max(1) as f64;
    if check.tick_p99_us as f64 > lag_limit || stall_share > STALL_SHARE_LIMIT {
        let busy = if check.cpu_wait_percent >= barrage_report::BUSY_MACHINE_WAIT_PERCENT {
            format!(
                "; its threads waited {:.0}% of the step for a CPU other processes held",
                check.cpu_wait_percent
            )
        } else {
            String::new()
        };
        reasons.push(format!(
            "generator event loop late by {:.1} ms at p99 (limit {:.1} ms), {} stalls in {} ticks{busy}",
            check.tick_p99_us as f64 / 1e3,
            lag_limit / 1e3,
            check.stalls,
            check.ticks
        ));
        fixes.push(if busy.is_empty() {
            "more worker threads (--threads), or more generators (--segment i/N)"
        } else {
            "a machine or cores of its own for the generator (taskset), more worker threads (--threads), or more generators (--segment i/N)"
        });
    }
    if reasons.is_empty() {
        return None;
    }
    fixes.dedup();
    Some((reasons.join("; "), fixes.join("; ")))
}
