//! Periodic merged metrics while a run goes on: each worker publishes a copy of its metrics
//! (one lock per worker per period, never per request), and the caller merges the copies for
//! live thresholds and streamed per-second outputs.
//!
//! Off unless the caller enables it before the run, so runs that need no live view (quick
//! mode) pay nothing. When on, the cost is a fixed amount per second whatever the request
//! rate, so it is kept to one copy per worker per merge: a worker copies its metrics only
//! once the previous copy was taken, and a merge takes every worker's fresh copy (moved, not
//! cloned) and folds the others into the first. Between merges the last result is shared.

use barrage_metrics::RunMetrics;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often workers look whether a fresh copy is wanted, when snapshots are on.
pub const SNAPSHOT_PERIOD: Duration = Duration::from_millis(500);

/// One worker's copy, not yet merged.
#[derive(Debug)]
struct Published {
    metrics: RunMetrics,
    /// Time since the run started when the copy was taken.
    at: Duration,
}

#[derive(Debug, Default)]
struct State {
    /// Every worker's fresh copy, `None` once merged (the worker then publishes again).
    fresh: Vec<Option<Published>>,
    /// The last merge, shared until every worker has published again.
    merged: Option<Arc<LiveMetrics>>,
}

/// The workers' copies and their latest merge.
#[derive(Debug, Default)]
pub struct Snapshots {
    enabled: AtomicBool,
    /// Worker threads of the run, set when it starts.
    workers: AtomicUsize,
    state: Mutex<State>,
}

/// Every worker's metrics, merged.
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

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `worker`'s last copy was merged (or it has none yet): only then is a new copy
    /// worth taking.
    pub(crate) fn wants(&self, worker: usize) -> bool {
        self.state()
            .fresh
            .get(worker)
            .is_none_or(|slot| slot.is_none())
    }

    pub(crate) fn publish(&self, worker: usize, metrics: RunMetrics, at: Duration) {
        let mut state = self.state();
        if state.fresh.len() <= worker {
            state.fresh.resize_with(worker + 1, || None);
        }
        state.fresh[worker] = Some(Published { metrics, at });
    }

    /// The merge of the workers' copies: a new merge once every worker has published since
    /// the last one, else the last one again; `None` before every worker published.
    pub fn merged(&self) -> Option<Arc<LiveMetrics>> {
        let workers = self.workers.load(Ordering::Acquire);
        let mut state = self.state();
        let all_fresh = workers > 0
            && state.fresh.len() >= workers
            && state.fresh.iter().take(workers).all(Option::is_some);
        if !all_fresh {
            return state.merged.clone();
        }
        let mut merged: Option<RunMetrics> = None;
        let mut as_of = Duration::MAX;
        for published in state
            .fresh
            .iter_mut()
            .take(workers)
            .filter_map(Option::take)
        {
            as_of = as_of.min(published.at);
            match &mut merged {
                None => merged = Some(published.metrics),
                Some(m) => m.merge(&published.metrics),
            }
        }
        let live = Arc::new(LiveMetrics {
            metrics: merged?,
            as_of,
        });
        state.merged = Some(Arc::clone(&live));
        Some(live)
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

    #[test]
    fn a_worker_copies_again_only_after_its_copy_was_merged() {
        let snapshots = Snapshots::default();
        let mut one = RunMetrics::new(1);
        one.sessions.started = 1;
        snapshots.set_workers(2);
        assert!(snapshots.wants(0) && snapshots.wants(1));
        snapshots.publish(0, one.clone(), Duration::from_secs(1));
        assert!(!snapshots.wants(0), "its copy waits for the merge");
        assert!(snapshots.merged().is_none());
        snapshots.publish(1, one.clone(), Duration::from_secs(1));
        let first = snapshots.merged().unwrap();
        assert_eq!(first.metrics.sessions.started, 2);
        assert!(
            snapshots.wants(0) && snapshots.wants(1),
            "both copies were merged"
        );
        // Until every worker published again, the last merge is shared, not redone.
        one.sessions.started = 5;
        snapshots.publish(0, one.clone(), Duration::from_secs(2));
        let again = snapshots.merged().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        snapshots.publish(1, one, Duration::from_secs(3));
        let second = snapshots.merged().unwrap();
        assert_eq!(second.metrics.sessions.started, 10);
        assert_eq!(second.as_of, Duration::from_secs(2));
    }
}
