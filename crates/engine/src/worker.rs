//! A worker: the per-thread state every client on that thread shares (metrics, budget, clock).

use crate::compile::CompiledPlan;
use crate::control::{LiveSlot, RunControl};
use barrage_metrics::{ErrorKind, ResponseRecord, RunMetrics};
use rand::rngs::SmallRng;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Per-thread state; clients hold it through an `Rc` and never cross threads, so plain
/// `Cell`/`RefCell` suffice where a shared design would need locks.
pub(crate) struct Worker {
    pub index: usize,
    pub plan: Arc<CompiledPlan>,
    /// Resolved once per run; a failed lookup makes every request a DNS error.
    pub addrs: Arc<Result<Vec<SocketAddr>, ErrorKind>>,
    pub timeout: Duration,
    pub keep_alive: bool,
    pub run_start: Instant,
    pub deadline: Option<Instant>,
    pub control: RunControl,
    /// Iterations this worker may still start, when the run is count-bounded.
    remaining: Cell<Option<u64>>,
    pub metrics: RefCell<RunMetrics>,
    pub rng: RefCell<SmallRng>,
    active_clients: Cell<u64>,
    idle: Notify,
}

pub(crate) struct WorkerInit {
    pub index: usize,
    pub plan: Arc<CompiledPlan>,
    pub addrs: Arc<Result<Vec<SocketAddr>, ErrorKind>>,
    pub timeout: Duration,
    pub keep_alive: bool,
    pub run_start: Instant,
    pub deadline: Option<Instant>,
    pub control: RunControl,
    pub iterations: Option<u64>,
    pub rng: SmallRng,
}

impl Worker {
    pub(crate) fn new(init: WorkerInit) -> Self {
        let metrics = RunMetrics::new(init.plan.tag_count);
        Self {
            index: init.index,
            plan: init.plan,
            addrs: init.addrs,
            timeout: init.timeout,
            keep_alive: init.keep_alive,
            run_start: init.run_start,
            deadline: init.deadline,
            control: init.control,
            remaining: Cell::new(init.iterations),
            metrics: RefCell::new(metrics),
            rng: RefCell::new(init.rng),
            active_clients: Cell::new(0),
            idle: Notify::new(),
        }
    }

    fn live(&self) -> &LiveSlot {
        self.control.live.slot(self.index)
    }

    /// Whether the run is still on: not stopped, not past its deadline at `now`.
    #[inline]
    pub(crate) fn running_at(&self, now: Instant) -> bool {
        !self.control.stop.is_stopped() && self.deadline.is_none_or(|d| now < d)
    }

    /// Claims one iteration from the budget; false once it is spent.
    #[inline]
    pub(crate) fn claim_iteration(&self) -> bool {
        match self.remaining.get() {
            None => true,
            Some(0) => false,
            Some(n) => {
                self.remaining.set(Some(n - 1));
                true
            }
        }
    }

    #[inline]
    pub(crate) fn second_of(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.run_start).as_secs()
    }

    #[inline]
    pub(crate) fn record_response(&self, record: &ResponseRecord) {
        self.metrics.borrow_mut().record_response(record);
        self.live().add_response();
    }

    #[inline]
    pub(crate) fn record_error(&self, tag: usize, at: Instant, kind: ErrorKind, bytes_sent: u64) {
        self.metrics
            .borrow_mut()
            .record_error(tag, self.second_of(at), kind, bytes_sent);
        self.live().add_error();
    }

    pub(crate) fn session_started(&self) {
        self.metrics.borrow_mut().sessions.started += 1;
    }

    pub(crate) fn session_completed(&self) {
        self.metrics.borrow_mut().sessions.completed += 1;
    }

    pub(crate) fn session_dropped(&self) {
        self.metrics.borrow_mut().sessions.dropped += 1;
    }

    /// Clients running a session right now on this worker.
    pub(crate) fn active_clients(&self) -> u64 {
        self.active_clients.get()
    }

    /// Resolves once no client is active on this worker.
    pub(crate) async fn all_clients_finished(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.active_clients.get() == 0 {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn connection_opened(&self) {
        self.metrics.borrow_mut().connections_opened += 1;
    }

    pub(crate) fn client_started(&self) {
        self.active_clients.set(self.active_clients.get() + 1);
        self.live().set_active_clients(self.active_clients.get());
    }

    pub(crate) fn client_finished(&self) {
        self.active_clients
            .set(self.active_clients.get().saturating_sub(1));
        self.live().set_active_clients(self.active_clients.get());
    }
}
