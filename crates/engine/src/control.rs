//! Run control shared with the caller: a stop signal (Ctrl-C) and live counters for progress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Asks a run to stop. [`StopSignal::stop`] is graceful: nothing new starts, and running
/// iterations get the grace period; [`StopSignal::stop_now`] cuts them off at once.
#[derive(Debug, Default)]
pub struct StopSignal {
    stopped: AtomicBool,
    notify: Notify,
    now: AtomicBool,
    notify_now: Notify,
}

impl StopSignal {
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Stops without waiting for running iterations (a second Ctrl-C).
    pub fn stop_now(&self) {
        self.now.store(true, Ordering::Release);
        self.notify_now.notify_waiters();
        self.stop();
    }

    pub fn is_stopped_now(&self) -> bool {
        self.now.load(Ordering::Acquire)
    }

    /// Resolves once [`StopSignal::stop_now`] has been called.
    pub async fn wait_now(&self) {
        let notified = self.notify_now.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.is_stopped_now() {
            return;
        }
        notified.await;
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Resolves once [`StopSignal::stop`] has been called.
    pub async fn wait(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Register before checking the flag so a stop between the two is not missed.
        notified.as_mut().enable();
        if self.is_stopped() {
            return;
        }
        notified.await;
    }
}

/// Most worker threads a run uses; live slots are allocated up front for them.
pub(crate) const MAX_WORKERS: usize = 256;

/// One worker's live figures, on its own cache line: only that worker writes it.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct LiveSlot {
    responses: AtomicU64,
    errors: AtomicU64,
    active_clients: AtomicU64,
}

impl LiveSlot {
    /// Single-writer increments: a load and a store, no locked read-modify-write.
    #[inline]
    fn bump(counter: &AtomicU64, by: u64) {
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn add_response(&self) {
        Self::bump(&self.responses, 1);
    }

    #[inline]
    pub(crate) fn add_error(&self) {
        Self::bump(&self.errors, 1);
    }

    pub(crate) fn set_active_clients(&self, n: u64) {
        self.active_clients.store(n, Ordering::Relaxed);
    }
}

/// Counters the caller can read at any time while a run goes on, for live progress.
#[derive(Debug)]
pub struct LiveCounters {
    slots: Box<[LiveSlot]>,
}

impl Default for LiveCounters {
    fn default() -> Self {
        Self {
            slots: (0..MAX_WORKERS).map(|_| LiveSlot::default()).collect(),
        }
    }
}

/// A point-in-time sum of the live counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveSnapshot {
    pub responses: u64,
    pub errors: u64,
    pub active_clients: u64,
}

impl LiveCounters {
    pub(crate) fn slot(&self, worker: usize) -> &LiveSlot {
        &self.slots[worker]
    }

    pub fn snapshot(&self) -> LiveSnapshot {
        let mut s = LiveSnapshot::default();
        for slot in self.slots.iter() {
            s.responses += slot.responses.load(Ordering::Relaxed);
            s.errors += slot.errors.load(Ordering::Relaxed);
            s.active_clients += slot.active_clients.load(Ordering::Relaxed);
        }
        s
    }
}

/// What the caller keeps to steer and watch a run.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    pub stop: Arc<StopSignal>,
    pub live: Arc<LiveCounters>,
    /// Periodic copies of every worker's metrics, when enabled before the run starts.
    pub snapshots: Arc<crate::snapshots::Snapshots>,
    /// The opt-in per-request sample log.
    pub samples: Option<Arc<crate::samples::SampleSink>>,
    /// Scripted iterations (the k6 front end): VUs run this instead of the plan's sessions.
    pub scripted: Option<crate::scripted::SharedVuFactory>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_wakes_a_waiter_registered_before_or_after() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let signal = Arc::new(StopSignal::default());
        rt.block_on(async {
            let waiter = {
                let s = signal.clone();
                tokio::spawn(async move { s.wait().await })
            };
            tokio::task::yield_now().await;
            signal.stop();
            waiter.await.unwrap();
            // Already stopped: returns at once.
            signal.wait().await;
        });
        assert!(signal.is_stopped());
    }

    #[test]
    fn snapshot_sums_slots() {
        let live = LiveCounters::default();
        live.slot(0).add_response();
        live.slot(3).add_response();
        live.slot(3).add_error();
        live.slot(1).set_active_clients(7);
        assert_eq!(
            live.snapshot(),
            LiveSnapshot {
                responses: 2,
                errors: 1,
                active_clients: 7
            }
        );
    }
}
