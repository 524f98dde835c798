//! A worker: the per-thread state every client on that thread shares (metrics, budget, clock,
//! random numbers, buffer pools, scratch space, row cursors, request ids).

use crate::compile::CompiledPlan;
use crate::control::{LiveSlot, RunControl};
use crate::protocol::{ConnectionSettings, WorkerConnections};
use crate::samples::Sampler;
use crate::session::binds::RowCursors;
use crate::session::Scratch;
use barrage_http::{Captured, ReadBuffers};
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
    /// What every worker of the run shares, fixed for the run.
    pub run: RunSettings,
    /// Iterations this worker may still start, when the run is count-bounded.
    remaining: Cell<Option<u64>>,
    pub metrics: RefCell<RunMetrics>,
    pub rng: RefCell<SmallRng>,
    active_clients: Cell<u64>,
    /// VUs allocated (k6 `vus_max`); at least the active ones.
    vus_max: Cell<u64>,
    idle: Notify,
    /// Read buffers, lent to exchanges in flight only.
    pub read_buffers: ReadBuffers,
    /// Buffers requests are built in (held while the request is written).
    pub request_buffers: Pool<Vec<u8>>,
    /// Response captures for requests with extractions (boxed: a request in flight holds one
    /// pointer, not the buffers, in its future).
    pub captures: Pool<Box<Captured>>,
    /// Scratch space for synchronous work between awaits.
    pub scratch: RefCell<Scratch>,
    /// Sequential row-pick cursors, one per data source.
    pub rows: RowCursors,
    pub request_ids: RequestIds,
    /// Keeps a random share of requests when the sample log is on.
    pub sampler: Option<RefCell<Sampler>>,
    /// The shared pool, source-address cursor and re-resolved addresses.
    pub connections: WorkerConnections,
    /// Scripted runs: the response headers a scripted response carries.
    pub scripted_headers: Vec<String>,
    /// Scripted runs: check name → index in this worker's check counts (scripts name their
    /// checks as they run; metrics merge checks by name).
    script_checks: RefCell<std::collections::HashMap<String, usize>>,
    /// Scripted runs: VUs made before the run started (k6 initialises its VUs before the
    /// test), taken by this worker's virtual users at their first iteration.
    pub prepared_vus: RefCell<Vec<Box<dyn crate::scripted::ScriptedVu>>>,
}

/// Buffers larger than this are freed rather than pooled after use.
const POOLED_BYTES: usize = 1 << 20;

/// Reusable objects handed out and taken back between awaits (a `Vec` used as a stack).
#[derive(Debug, Default)]
pub(crate) struct Pool<T> {
    free: RefCell<Vec<T>>,
    /// The fewest objects resting in the pool since the last [`Pool::trim`].
    idle_low: Cell<usize>,
}

impl<T: Default> Pool<T> {
    pub(crate) fn take(&self) -> T {
        let mut free = self.free.borrow_mut();
        let item = free.pop().unwrap_or_default();
        self.idle_low.set(self.idle_low.get().min(free.len()));
        item
    }

    /// Frees the objects nobody took since the last trim (see `ReadBuffers::trim`); returns
    /// how many.
    pub(crate) fn trim(&self) -> usize {
        let Ok(mut free) = self.free.try_borrow_mut() else {
            return 0;
        };
        let unused = self.idle_low.get().min(free.len());
        free.drain(..unused);
        self.idle_low.set(free.len());
        unused
    }

    /// Takes `item` back unless it holds more than [`POOLED_BYTES`] (`bytes` says how much).
    pub(crate) fn give(&self, item: T, bytes: usize) {
        if bytes <= POOLED_BYTES {
            self.free.borrow_mut().push(item);
        }
    }
}

/// Returns the allocator's free pages to the system (glibc keeps freed small blocks in its
/// arenas, so RSS would not fall after the pools are trimmed).
fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and locks each arena it trims; it is safe to
    // call from any thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What every request id of the run with id `run` starts with: `<run>-`, 8 hex digits.
pub(crate) fn run_prefix(run: u32) -> String {
    format!("{run:08x}-")
}

/// What every request id of worker `worker` of run `run` starts with: `<run>-<worker>-`; the
/// counter follows in hex.
pub(crate) fn worker_prefix(run: u32, worker: usize) -> String {
    format!("{}{worker:x}-", run_prefix(run))
}

/// `X-Request-Id` values: `<run>-<worker>-<counter>` in hex, unique within a run (and, by
/// the random run part, most likely across runs), without any shared counter. The text is
/// kept and its counter incremented in place, digit by digit; the counter is also kept as a
/// number, so the sample log can write an id again without holding its text.
#[derive(Debug)]
pub(crate) struct RequestIds {
    id: RefCell<IdText>,
}

#[derive(Debug)]
struct IdText {
    bytes: [u8; 64],
    len: usize,
    /// Where the counter's digits start.
    counter: usize,
    /// The counter's value: the id is the prefix, then this in lowercase hex.
    number: u64,
}

impl IdText {
    fn increment(&mut self) {
        self.number += 1;
        for digit in self.bytes[self.counter..self.len].iter_mut().rev() {
            match *digit {
                b'f' => *digit = b'0',
                b'9' => {
                    *digit = b'a';
                    return;
                }
                _ => {
                    *digit += 1;
                    return;
                }
            }
        }
        // Every digit was `f`: one more digit (the counter never gets near 48 digits).
        if self.len < self.bytes.len() {
            self.bytes[self.len] = b'0';
            self.bytes[self.counter] = b'1';
            self.len += 1;
        }
    }
}

impl RequestIds {
    pub(crate) fn new(run: u32, worker: usize) -> Self {
        let prefix = worker_prefix(run, worker);
        let mut id = IdText {
            bytes: [0; 64],
            len: prefix.len() + 1,
            counter: prefix.len(),
            number: 0,
        };
        id.bytes[..prefix.len()].copy_from_slice(prefix.as_bytes());
        id.bytes[prefix.len()] = b'0';
        Self {
            id: RefCell::new(id),
        }
    }

    /// Hands the next id to `use_id`; returns its counter (the id is this worker's prefix,
    /// then the counter in lowercase hex).
    #[inline]
    pub(crate) fn with_next(&self, use_id: impl FnOnce(&[u8])) -> u64 {
        let mut id = self.id.borrow_mut();
        use_id(&id.bytes[..id.len]);
        let number = id.number;
        id.increment();
        number
    }
}

/// Run-wide settings every worker gets, fixed for the run.
pub(crate) struct RunSettings {
    pub index: usize,
    pub plan: Arc<CompiledPlan>,
    /// Resolved once per run; a failed lookup makes every request a DNS error.
    pub addrs: Arc<Result<Vec<SocketAddr>, ErrorKind>>,
    pub timeout: Duration,
    pub keep_alive: bool,
    /// How connections are opened (TLS, HTTP version) and shared.
    pub connection: ConnectionSettings,
    pub run_start: Instant,
    pub deadline: Option<Instant>,
    /// No iteration starts at or after this (the deadline less `gracefulStop`).
    pub iterations_end: Option<Instant>,
    pub control: RunControl,
}

pub(crate) struct WorkerInit {
    pub run: RunSettings,
    pub iterations: Option<u64>,
    pub rng: SmallRng,
    /// Worker threads in the run (for sequential row picks).
    pub workers: usize,
    /// The process's segment of the test: its rows are `k ≡ i (mod N)`, so segments never
    /// pick each other's rows.
    pub segment: barrage_plan::Segment,
    /// Random per run, the first part of every request id.
    pub run_id: u32,
}

impl Worker {
    /// Scripted runs: makes `count` VUs before the run starts, as k6 initialises its VUs
    /// before the test. A VU that cannot start stops the run (the front end says why).
    pub(crate) fn prepare_vus(&self, count: u64) {
        let Some(factory) = &self.run.control.scripted else {
            return;
        };
        let mut prepared = self.prepared_vus.borrow_mut();
        for _ in 0..count {
            if self.run.control.stop.is_stopped() {
                return;
            }
            match factory.create() {
                Ok(vu) => prepared.push(vu),
                Err(problem) => {
                    eprintln!("barrage: a VU could not start: {problem}");
                    self.run.control.stop.stop();
                    return;
                }
            }
        }
    }

    pub(crate) fn new(init: WorkerInit) -> Self {
        let metrics = init.run.plan.new_metrics();
        Self {
            read_buffers: ReadBuffers::new(),
            request_buffers: Pool::default(),
            captures: Pool::default(),
            scratch: RefCell::new(Scratch::default()),
            rows: RowCursors::new(
                init.run.plan.data.len(),
                init.segment
                    .stripe(init.run.index as u64, init.workers as u64),
            ),
            request_ids: RequestIds::new(init.run_id, init.run.index),
            sampler: init.run.control.samples.as_ref().map(|sink| {
                RefCell::new(Sampler::new(
                    Arc::clone(sink),
                    init.run.index,
                    worker_prefix(init.run_id, init.run.index),
                ))
            }),
            connections: WorkerConnections::new(&init.run.connection),
            scripted_headers: crate::scripted::CAPTURED_HEADERS
                .iter()
                .map(|h| (*h).to_string())
                .collect(),
            script_checks: RefCell::default(),
            prepared_vus: RefCell::default(),
            run: init.run,
            remaining: Cell::new(init.iterations),
            metrics: RefCell::new(metrics),
            rng: RefCell::new(init.rng),
            active_clients: Cell::new(0),
            vus_max: Cell::new(0),
            idle: Notify::new(),
        }
    }

    fn live(&self) -> &LiveSlot {
        self.run.control.live.slot(self.run.index)
    }

    /// Whether the run is still on: not stopped, not past its deadline at `now`.
    #[inline]
    pub(crate) fn running_at(&self, now: Instant) -> bool {
        !self.run.control.stop.is_stopped() && self.run.deadline.is_none_or(|d| now < d)
    }

    /// Whether a new iteration may start at `now`: running, and before the iterations end.
    #[inline]
    pub(crate) fn may_start_at(&self, now: Instant) -> bool {
        self.running_at(now) && self.run.iterations_end.is_none_or(|end| now < end)
    }

    /// Resolves once no new iteration may start: the iterations' end passed, or the run was
    /// stopped.
    pub(crate) async fn iterations_over(&self) {
        let end = async {
            match self.run.iterations_end {
                Some(end) => tokio::time::sleep_until(end.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = end => {}
            _ = self.run.control.stop.wait() => {}
        }
    }

    /// Notes that something planned for `planned` starts now (scheduler lag).
    #[inline]
    pub(crate) fn record_lag(&self, planned: Instant) {
        self.metrics
            .borrow_mut()
            .self_check
            .record_lag(Instant::now().saturating_duration_since(planned));
    }

    /// Frees pooled buffers no request needed since the last call, and gives the freed pages
    /// back to the system. The pools hold what as many requests as were ever in flight at once
    /// needed (a read buffer, a capture with its inflater and output buffer: about 70 KiB per
    /// session of a scripted run); a burst — a stalled machine piling up sessions — would
    /// otherwise stay in RSS for the rest of the run (RELIABILITY.md, "Soak").
    pub(crate) fn trim_pools(&self) {
        let freed = self.read_buffers.trim() + self.request_buffers.trim() + self.captures.trim();
        if freed > 0 {
            give_back_free_memory();
        }
    }

    /// Notes how late the self-check tick fired, and refreshes the VU gauge.
    pub(crate) fn record_tick(&self, overshoot: Duration) {
        let second = self.second_of(Instant::now());
        let mut metrics = self.metrics.borrow_mut();
        metrics.self_check.record_tick(overshoot);
        metrics.vus.fill_to(second);
    }

    /// Sets the VUs allocated on this worker (k6 `vus_max`).
    pub(crate) fn set_vus_max(&self, vus: u64) {
        self.vus_max.set(vus);
        self.update_vu_gauge();
    }

    fn update_vu_gauge(&self) {
        let active = self.active_clients.get();
        let second = self.second_of(Instant::now());
        self.metrics
            .borrow_mut()
            .vus
            .set(second, active, self.vus_max.get().max(active));
    }

    /// Whether the iteration budget (if any) still has iterations to hand out.
    pub(crate) fn has_iterations(&self) -> bool {
        self.remaining.get() != Some(0)
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

    fn millis_into_run(&self) -> f64 {
        self.run.run_start.elapsed().as_secs_f64() * 1000.0
    }

    #[inline]
    pub(crate) fn second_of(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.run.run_start).as_secs()
    }

    /// Records a response: `record` is the response itself, for the sample log;
    /// `counted` what the metrics count for it (the response, or, when the plan counts
    /// redirect chains, the chain it ends, or nothing for a hop in the middle of one);
    /// `request_id` is the counter of the request's `X-Request-Id` (`None` when the plan
    /// set its own header), for the sample log.
    ///
    /// `chain` is the record of the whole redirect chain when this response ends one (the
    /// response itself when nothing redirected): hey's CSV writes a row per chain.
    #[inline]
    pub(crate) fn record_response(
        &self,
        record: &ResponseRecord,
        counted: Option<&ResponseRecord>,
        request_id: Option<u64>,
        chain: Option<&ResponseRecord>,
    ) {
        if let Some(counted) = counted {
            self.metrics.borrow_mut().record_response(counted);
            self.live().add_response();
        }
        if let Some(sampler) = &self.sampler {
            sampler
                .borrow_mut()
                .response(record, chain, request_id, self.millis_into_run());
        }
    }

    /// Records a failed request (`request_id` as for [`Worker::record_response`]) and the
    /// response bytes that arrived before it failed.
    #[inline]
    pub(crate) fn record_error(
        &self,
        tag: usize,
        at: Instant,
        kind: ErrorKind,
        bytes_sent: u64,
        bytes_received: u64,
        request_id: Option<u64>,
    ) {
        let second = self.second_of(at);
        let mut metrics = self.metrics.borrow_mut();
        metrics.record_error(tag, second, kind, bytes_sent);
        if bytes_received > 0 {
            metrics.record_error_received(tag, second, bytes_received);
        }
        drop(metrics);
        self.live().add_error();
        if let Some(sampler) = &self.sampler {
            sampler
                .borrow_mut()
                .error(tag, kind, request_id, self.millis_into_run());
        }
    }

    /// A session admitted `at` (its start, or its arrival when scheduled).
    pub(crate) fn session_started(&self, at: Instant) {
        let second = self.second_of(at);
        self.metrics.borrow_mut().record_session_start(second);
    }

    pub(crate) fn session_completed(&self) {
        self.metrics.borrow_mut().sessions.completed += 1;
    }

    /// A session ended early by a failed assert or an `abort_on_error` request.
    pub(crate) fn session_failed(&self) {
        self.metrics.borrow_mut().sessions.failed += 1;
    }

    #[inline]
    pub(crate) fn record_check(&self, metric: usize, passed: bool) {
        self.metrics.borrow_mut().record_check(metric, passed);
    }

    /// Adds `value` to custom metric `metric`.
    #[inline]
    /// Counts one evaluation of the scripted check `name`.
    pub(crate) fn record_script_check(&self, name: &str, passed: bool) {
        let mut checks = self.script_checks.borrow_mut();
        let mut metrics = self.metrics.borrow_mut();
        let index = match checks.get(name) {
            Some(&index) => index,
            None => {
                metrics
                    .checks
                    .push(barrage_metrics::CheckCounts::new(name.to_string(), false));
                let index = metrics.checks.len() - 1;
                checks.insert(name.to_string(), index);
                index
            }
        };
        metrics.record_check(index, passed);
    }

    pub(crate) fn record_custom(&self, metric: usize, value: f64) {
        let at = Instant::now()
            .saturating_duration_since(self.run.run_start)
            .as_micros() as u64;
        self.metrics.borrow_mut().custom.record(metric, value, at);
    }

    /// A session (iteration) ended, after `took`.
    #[inline]
    pub(crate) fn record_iteration(&self, took: Duration) {
        self.metrics.borrow_mut().iteration_duration.record(took);
    }

    pub(crate) fn record_extraction_failures(&self, tag: usize, failures: u64) {
        self.metrics.borrow_mut().tags[tag].extraction_failures += failures;
    }

    pub(crate) fn session_dropped(&self) {
        let second = self.second_of(Instant::now());
        self.metrics.borrow_mut().record_session_dropped(second);
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
        self.update_vu_gauge();
    }

    pub(crate) fn client_finished(&self) {
        self.active_clients
            .set(self.active_clients.get().saturating_sub(1));
        self.live().set_active_clients(self.active_clients.get());
        self.update_vu_gauge();
        if self.active_clients.get() == 0 {
            // Wakes the open executor waiting for the last session after arrivals ended.
            self.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_hex_counters() {
        let ids = RequestIds::new(0xabc, 3);
        let texts: Vec<String> = (0..300u64)
            .map(|i| {
                let mut text = String::new();
                let number = ids.with_next(|id| text = String::from_utf8(id.to_vec()).unwrap());
                // The counter is the id's last part, as the sample log writes it.
                assert_eq!(number, i);
                assert_eq!(text, format!("{}{number:x}", worker_prefix(0xabc, 3)));
                text
            })
            .collect();
        assert_eq!(texts[0], "00000abc-3-0");
        assert_eq!(texts[10], "00000abc-3-a");
        assert_eq!(texts[17], "00000abc-3-11");
        assert_eq!(texts[255], "00000abc-3-ff");
        assert_eq!(texts[256], "00000abc-3-100");
        assert_eq!(texts[299], format!("00000abc-3-{:x}", 299));
    }

    #[test]
    fn a_pool_trim_frees_what_rested_since_the_last_trim() {
        let pool: Pool<Vec<u8>> = Pool::default();
        let burst: Vec<Vec<u8>> = (0..10).map(|_| pool.take()).collect();
        for item in burst {
            pool.give(item, 0);
        }
        assert_eq!(pool.trim(), 0, "all 10 were taken since the start");
        for _ in 0..3 {
            let item = pool.take();
            pool.give(item, 0);
        }
        assert_eq!(pool.trim(), 9, "one was enough since the last trim");
        assert_eq!(pool.free.borrow().len(), 1);
    }
}
