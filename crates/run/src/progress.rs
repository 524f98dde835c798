//! The live progress line on a terminal: elapsed (of planned), stage or phase, requests,
//! rate, errors, clients, and — from the merged snapshots — the latest second's p95/p99, the
//! error rate so far and the thresholds' state so far (✓ all pass / ✗ some fail). One line,
//! redrawn in place, only when a person watches a TTY.

use barrage_engine::LiveSnapshot;
use barrage_metrics::{LatencyHistogram, RunMetrics};
use barrage_plan::{Admission, Bound, Plan, Workload};
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// What the merged snapshots say, refreshed once a second.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotStatus {
    /// p95 and p99 of the latest complete second, in milliseconds.
    pub recent_p95_p99_ms: Option<(f64, f64)>,
    /// Failed requests (errors and statuses ≥ 400) over all requests so far.
    pub error_rate: f64,
    /// Threshold rules passing and failing so far; `None` without thresholds.
    pub thresholds: Option<(usize, usize)>,
}

impl SnapshotStatus {
    pub fn of(plan: &Plan, metrics: &RunMetrics, complete_seconds: u64, elapsed: Duration) -> Self {
        let mut recent = LatencyHistogram::new();
        if let Some(second) = complete_seconds.checked_sub(1) {
            for tag in &metrics.tags {
                if let Some(h) = tag.latency_by_second.decoded_if_any(second) {
                    recent.merge(&h);
                }
            }
        }
        let recent_p95_p99_ms = (recent.count() > 0).then(|| {
            (
                recent.percentile_micros(95.0) as f64 / 1e3,
                recent.percentile_micros(99.0) as f64 / 1e3,
            )
        });
        let total = metrics.total();
        let error_rate = total.failed_rate();
        let thresholds = (!plan.metrics.thresholds.is_empty()).then(|| {
            let results = barrage_report::evaluate(
                &plan.metrics.thresholds,
                metrics,
                &plan.tags,
                elapsed,
                None,
            );
            let passed = results.iter().filter(|r| r.passed).count();
            (passed, results.len() - passed)
        });
        Self {
            recent_p95_p99_ms,
            error_rate,
            thresholds,
        }
    }

    fn describe(&self) -> String {
        let mut text = String::new();
        if let Some((p95, p99)) = self.recent_p95_p99_ms {
            text.push_str(&format!("  p95 {p95:.1}ms p99 {p99:.1}ms"));
        }
        text.push_str(&format!("  err {:.2}%", self.error_rate * 100.0));
        match self.thresholds {
            Some((passed, 0)) => text.push_str(&format!("  thresholds ✓ {passed}")),
            Some((passed, failed)) => text.push_str(&format!(
                "  thresholds ✗ {failed} failing, {passed} passing"
            )),
            None => {}
        }
        text
    }
}

/// "stage 2/3" (or "phase") at `elapsed`, for workloads that have stages or phases.
pub fn stage_at(workload: &Workload, elapsed: Duration) -> Option<String> {
    let word = match &workload.admission {
        _ if workload.bound != Bound::Duration => return None,
        Admission::PerArrival { .. } => "phase",
        Admission::Loop | Admission::GrowAndDrop { .. } => "stage",
        Admission::Paced { .. } | Admission::Recorded { .. } => return None,
    };
    let durations: Vec<Duration> = workload
        .schedule
        .pieces
        .iter()
        .map(|p| p.duration)
        .collect();
    if durations.len() < 2 {
        return None;
    }
    let mut end = Duration::ZERO;
    for (index, duration) in durations.iter().enumerate() {
        end += *duration;
        if elapsed < end {
            return Some(format!("{word} {}/{}", index + 1, durations.len()));
        }
    }
    Some("stopping".to_string())
}

/// The live progress line.
pub struct Progress {
    bar: ProgressBar,
    planned: Option<Duration>,
    workload: Workload,
    started: Instant,
    last: Cell<(Instant, u64)>,
}

impl Progress {
    pub fn new(plan: &Plan) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let now = Instant::now();
        Self {
            bar,
            planned: plan.workload.duration(),
            workload: plan.workload.clone(),
            started: now,
            last: Cell::new((now, 0)),
        }
    }

    pub fn update(&self, live: LiveSnapshot, status: Option<&SnapshotStatus>) {
        let now = Instant::now();
        let (last_at, last_count) = self.last.get();
        let done = live.responses + live.errors;
        let window = now.duration_since(last_at).as_secs_f64();
        let rate = if window > 0.0 {
            (done - last_count.min(done)) as f64 / window
        } else {
            0.0
        };
        self.last.set((now, done));
        let since_start = now.duration_since(self.started);
        let elapsed = since_start.as_secs_f64();
        let of = self
            .planned
            .map_or(String::new(), |p| format!("/{:.0}s", p.as_secs_f64()));
        let stage =
            stage_at(&self.workload, since_start).map_or(String::new(), |s| format!(" {s}"));
        let status = status.map_or(String::new(), SnapshotStatus::describe);
        self.bar.set_message(format!(
            "{elapsed:.1}s{of}{stage}  requests {done}  rate {rate:.0}/s  errors {}  clients {}{status}",
            live.errors, live.active_clients
        ));
        self.bar.tick();
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::Stages;

    #[test]
    fn names_the_phase_and_describes_the_status() {
        let workload = Workload::open(
            Stages::from_targets(
                10.0,
                [
                    (Duration::from_secs(2), 10.0),
                    (Duration::from_secs(3), 10.0),
                ],
            ),
            None,
            Duration::ZERO,
        );
        assert_eq!(
            stage_at(&workload, Duration::from_secs(1)).unwrap(),
            "phase 1/2"
        );
        assert_eq!(
            stage_at(&workload, Duration::from_secs(4)).unwrap(),
            "phase 2/2"
        );
        assert_eq!(
            stage_at(&workload, Duration::from_secs(6)).unwrap(),
            "stopping"
        );
        let status = SnapshotStatus {
            recent_p95_p99_ms: Some((12.34, 56.0)),
            error_rate: 0.0125,
            thresholds: Some((2, 1)),
        };
        assert_eq!(
            status.describe(),
            "  p95 12.3ms p99 56.0ms  err 1.25%  thresholds ✗ 1 failing, 2 passing"
        );
    }
}
