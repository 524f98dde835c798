//! What the closed-model executors share: a virtual user (its client, kept with its
//! connection across iterations, and its pacing for the coordinated-omission correction), and
//! waiting on a worker-local value that changes.

use crate::client::Client;
use crate::scripted::ScriptedVu;
use crate::worker::Worker;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A virtual user: runs iterations back to back on one client.
pub(crate) struct VirtualUser {
    pub(crate) client: Client,
    /// Scripted runs: the VU's script, taken from the worker's VUs made before the run (or
    /// made at its first iteration beyond them; `Err`: making it failed, every iteration
    /// then fails at once).
    scripted: Option<Result<Box<dyn ScriptedVu>, ()>>,
    iterations: u32,
    busy: Duration,
}

impl VirtualUser {
    pub(crate) fn new(worker: &Worker) -> Self {
        Self {
            client: Client::new(worker),
            scripted: None,
            iterations: 0,
            busy: Duration::ZERO,
        }
    }

    /// The VU's pacing: its mean iteration time so far (zero before its first iteration).
    /// In a closed loop a stalled response delays every request the VU would have sent
    /// meanwhile; this interval is what the correction assumes it would have kept.
    fn expected_interval(&self) -> Duration {
        if self.iterations == 0 {
            Duration::ZERO
        } else {
            self.busy / self.iterations
        }
    }

    /// Runs one iteration starting `now` (counted as started here); returns when it ended
    /// (a VU looping back to back starts its next one then).
    pub(crate) async fn iterate(&mut self, worker: &Worker, now: Instant) -> Instant {
        worker.session_started(now);
        self.client.expected_interval = Some(self.expected_interval());
        let ended = self.run(worker, now).await;
        if self.iterations < u32::MAX {
            self.iterations += 1;
            self.busy += ended.saturating_duration_since(now);
        }
        ended
    }

    /// Runs one iteration scheduled for `due` (an arrival): latency counts from `due`, and no
    /// correction applies since the schedule does not wait for responses.
    pub(crate) async fn iterate_from(&mut self, worker: &Worker, due: Instant) {
        worker.session_started(due);
        self.client.expected_interval = None;
        self.run(worker, due).await;
    }

    /// One iteration: the script's when the run is scripted, else a session of the plan.
    async fn run(&mut self, worker: &Worker, start: Instant) -> Instant {
        let Some(factory) = &worker.run.control.scripted else {
            let session = worker.run.plan.pick_session(&mut self.client.rng);
            // Inline requests: a VU's future holds them either way (it loops iterations).
            return self
                .client
                .run_iteration::<crate::client::Inline>(worker, session, start)
                .await;
        };
        let scripted = self.scripted.get_or_insert_with(|| {
            let prepared = worker.prepared_vus.borrow_mut().pop();
            prepared.map(Ok).unwrap_or_else(|| {
                factory
                    .create()
                    .map_err(|problem| eprintln!("barrage: a VU could not start: {problem}"))
            })
        });
        match scripted {
            Ok(vu) => {
                let iteration = u64::from(self.iterations);
                self.client
                    .run_scripted(worker, vu.as_mut(), iteration, start)
                    .await
            }
            Err(()) => {
                worker.session_failed();
                Instant::now()
            }
        }
    }

    /// Called when an iteration was cut off: its connection may be mid-exchange.
    pub(crate) fn interrupted(&mut self) {
        self.client.connection = None;
    }
}

/// Resolves once `ready()` holds, re-checking whenever `notify` wakes its waiters.
pub(crate) async fn wait_until(notify: &Notify, ready: impl Fn() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if ready() {
            return;
        }
        notified.await;
    }
}
