//! Periodic merged metrics while a run goes on: each worker publishes a copy of its metrics
//! once a period (one lock per worker per period, never per request), and the caller merges
//! the latest copies for live thresholds and streamed per-second outputs.
//!
//! Off unless the caller enables it before the run, so runs that need no live view (quick
//! mode) pay nothing.

use barrage_metrics::RunMetrics;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often workers publish when snapshots are on.
pub const SNAPSHOT_PERIOD: Duration = Duration::from_millis(500);

/// One worker's latest copy.
#[derive(Debug)]
struct Published {
    metrics: RunMetrics,
    /// Time since the run started when the copy was taken.
    at: Duration,
}

/// The latest copy of every worker's metrics.
#[derive(Debug, Default)]
pub struct Snapshots {
    enabled: AtomicBool,
    /// Worker threads of the run, set when it starts.
    workers: AtomicUsize,
    slots: Mutex<Vec<Option<Published>>>,
}

/// Every worker's latest metrics, merged.
#[derive(Debug)]
pub struct LiveMetrics {
    pub metrics: RunMetrics,
    /// The oldest worker copy's age into the run: every second before `as_of` is complete
    /// in `metrics`, once a second's requests have finished.
    pub as_of: Duration,
}

impl Snapshots {
    /// Turns publishing on; call before the run starts.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Release);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    pub(crate) fn set_workers(&self, workers: usize) {
        self.workers.store(workers, Ordering::Release);
    }

    pub(crate) fn publish(&self, worker: usize, metrics: RunMetrics, at: Duration) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.len() <= worker {
            slots.resize_with(worker + 1, || None);
        }
        slots[worker] = Some(Published { metrics, at });
    }

    /// The merge of the latest copies; `None` before every worker published.
    pub fn merged(&self) -> Option<LiveMetrics> {
        let workers = self.workers.load(Ordering::Acquire);
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if workers == 0 || slots.len() < workers || slots.iter().take(workers).any(Option::is_none)
        {
            return None;
        }
        let mut merged: Option<RunMetrics> = None;
        let mut as_of = Duration::MAX;
        for published in slots.iter().flatten() {
            as_of = as_of.min(published.at);
            match &mut merged {
                None => merged = Some(published.metrics.clone()),
                Some(m) => m.merge(&published.metrics),
            }
        }
        Some(LiveMetrics {
            metrics: merged?,
            as_of,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{PhaseTimings, ResponseRecord};

    #[test]
    fn merges_the_latest_copy_of_every_worker() {
        let snapshots = Snapshots::default();
        let mut one = RunMetrics::new(1);
        one.record_response(&ResponseRecord {
            tag: 0,
            second: 0,
            latency: Duration::from_micros(100),
            phases: PhaseTimings::default(),
            status: 200,
            bytes_sent: 1,
            bytes_received: 1,
            body_bytes: 0,
            decoded_body_bytes: 0,
            expected_interval: None,
        });
        snapshots.set_workers(2);
        snapshots.publish(1, one.clone(), Duration::from_secs(2));
        assert!(snapshots.merged().is_none(), "worker 0 has not published");
        snapshots.publish(0, one.clone(), Duration::from_secs(1));
        snapshots.publish(1, one.clone(), Duration::from_secs(3));
        let live = snapshots.merged().unwrap();
        assert_eq!(live.metrics.total().responses(), 2);
        assert_eq!(live.as_of, Duration::from_secs(1));
    }
}
