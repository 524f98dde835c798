//! The scheduling core: worker threads with single-threaded runtimes, the run's clock and
//! deadline, cancellation, and the exact merge of every worker's metrics at the end.

use crate::compile::{CompileError, CompiledPlan};
use crate::control::{RunControl, MAX_WORKERS};
use crate::executor::{self, Assignment};
use crate::protocol::ConnectionSettings;
use crate::self_check;
use crate::snapshots::SNAPSHOT_PERIOD;
use crate::worker::{RunSettings, Worker, WorkerInit};
use barrage_metrics::RunMetrics;
use barrage_plan::{ConnectionModel, Plan, PlanError, Segment};
use rand::SeedableRng;
use std::rc::Rc;
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Why a run could not start or finish. The messages include their cause, so the variants
/// deliberately carry no `#[source]` (a chain printer would repeat it).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid plan: {0}")]
    Plan(PlanError),
    #[error("cannot run the plan: {0}")]
    Compile(CompileError),
    #[error("could not start worker threads: {0}")]
    Runtime(std::io::Error),
    #[error("a worker thread panicked")]
    WorkerPanicked,
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("the plan's iterations are the script `{0}`: run the script itself")]
    ScriptedWithoutVus(String),
}

impl From<PlanError> for EngineError {
    fn from(e: PlanError) -> Self {
        EngineError::Plan(e)
    }
}

impl From<CompileError> for EngineError {
    fn from(e: CompileError) -> Self {
        EngineError::Compile(e)
    }
}

impl From<std::io::Error> for EngineError {
    fn from(e: std::io::Error) -> Self {
        EngineError::Runtime(e)
    }
}

/// What a finished run hands back.
#[derive(Debug)]
pub struct RunOutcome {
    pub metrics: RunMetrics,
    /// From the first request's planned start to the last worker's end.
    pub elapsed: Duration,
    pub started_at: SystemTime,
    /// True when a stop request (Ctrl-C) ended the run before its plan did.
    pub interrupted: bool,
    pub threads: usize,
    /// What every `X-Request-Id` of this run starts with (`<8 hex digits>-`; the worker and
    /// a per-worker counter follow, in hex).
    pub request_id_prefix: String,
}

/// Worker threads to use: the plan's setting, or one per CPU this process may run on (so
/// `taskset -c 0 barrage ...` gives one worker).
fn worker_threads(plan: &Plan) -> usize {
    plan.options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, MAX_WORKERS)
}

/// Runs `plan` to its end and returns the merged metrics (a scripted test's setup and
/// teardown included, see `lifecycle.rs`). Blocks the calling thread; steer and watch the
/// run through `control` from another thread.
pub fn run(plan: &Plan, control: &RunControl) -> Result<RunOutcome, EngineError> {
    crate::lifecycle::run(plan, control)
}

/// Runs `plan`'s workload to its end and returns the merged metrics.
pub(crate) fn run_plan(plan: &Plan, control: &RunControl) -> Result<RunOutcome, EngineError> {
    plan.validate()?;
    if let (Some(file), None) = (&plan.options.scripted_body, &control.scripted) {
        return Err(EngineError::ScriptedWithoutVus(file.clone()));
    }
    if let Some(factory) = &control.scripted {
        factory.attach(&control.stop);
    }
    let compiled = Arc::new(CompiledPlan::compile(plan)?);
    let connection = ConnectionSettings::new(plan).map_err(|e| EngineError::Tls(e.to_string()))?;
    let addrs = Arc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(barrage_http::resolve(&connection.host, connection.port)),
    );
    let segment = plan.options.segment.clone().unwrap_or(Segment::WHOLE);
    let shares = executor::assign(&plan.workload, worker_threads(plan), &segment);
    let threads = shares.len();
    control.snapshots.set_workers(threads);
    let grace = plan.stop_grace();
    let started_at = SystemTime::now();
    // A placeholder until every worker is ready (see `StartGate`).
    let run_start = Instant::now();
    let gate = Arc::new(StartGate {
        barrier: Barrier::new(threads + 1),
        start: OnceLock::new(),
        hard_stop: plan.workload.hard_stop(),
        iterations_end: plan.workload.iterations_end(),
    });
    // Distinguishes this run's request ids from other runs' (not seeded: ids never steer
    // the schedule).
    let run_id = started_at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() ^ (d.as_secs() as u32))
        ^ std::process::id().rotate_left(16);

    let mut handles = Vec::with_capacity(threads);
    for (index, share) in shares.into_iter().enumerate() {
        let init = WorkerInit {
            run: RunSettings {
                index,
                plan: Arc::clone(&compiled),
                addrs: Arc::clone(&addrs),
                timeout: plan.options.request_timeout,
                // A new connection per request is keep-alive switched off.
                keep_alive: plan.options.keep_alive
                    && plan.options.connections.model != ConnectionModel::NewPerRequest,
                connection: connection.clone(),
                run_start,
                deadline: None,
                iterations_end: None,
                control: control.clone(),
            },
            iterations: share.iterations,
            workers: threads,
            segment: segment.clone(),
            run_id,
            rng: rand::rngs::SmallRng::seed_from_u64(
                segment.seed(plan.options.seed.unwrap_or(0x6261_7272_6167_6500))
                    ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
        };
        let assignment = share.assignment;
        let gate = Arc::clone(&gate);
        handles.push(
            std::thread::Builder::new()
                .name(format!("barrage-worker-{index}"))
                .spawn(move || run_worker(init, assignment, &gate, grace))?,
        );
    }
    // Every worker has its runtime and metrics: the run's clock starts now, so thread start-up
    // is neither scheduler lag nor latency.
    gate.barrier.wait();
    let started_at = SystemTime::now();
    let run_start = Instant::now();
    let _ = gate.start.set(run_start);
    gate.barrier.wait();
    let deadline = gate.hard_stop.map(|d| run_start + d);
    let mut metrics = compiled.new_metrics();
    let mut failure = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(worker_metrics)) => metrics.merge(&worker_metrics),
            Ok(Err(e)) => failure = Some(EngineError::Runtime(e)),
            Err(_) => failure = Some(EngineError::WorkerPanicked),
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let ended = Instant::now();
    let elapsed = deadline.map_or(ended, |d| ended.min(d)) - run_start;
    Ok(RunOutcome {
        metrics,
        elapsed,
        started_at,
        interrupted: control.stop.is_stopped(),
        threads,
        request_id_prefix: crate::worker::run_prefix(run_id),
    })
}

async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Publishes a copy of the worker's metrics when the last one was merged, looking once a
/// period (only when snapshots are on).
async fn publish_snapshots(worker: Rc<Worker>) {
    let mut ticks = tokio::time::interval(SNAPSHOT_PERIOD);
    let snapshots = &worker.run.control.snapshots;
    loop {
        ticks.tick().await;
        if !snapshots.wants(worker.run.index) {
            continue;
        }
        let copy = worker.metrics.borrow().clone();
        let at = worker.run.run_start.elapsed();
        snapshots.publish(worker.run.index, copy, at);
    }
}

/// Holds workers until all of them are ready, then hands them the run's start.
struct StartGate {
    /// Waited on twice by every worker and the core: all ready, then start set.
    barrier: Barrier,
    start: OnceLock<Instant>,
    hard_stop: Option<Duration>,
    iterations_end: Option<Duration>,
}

/// One worker thread: a current-thread runtime and a `LocalSet`, so clients share the
/// worker's state through `Rc`/`RefCell` instead of atomics and locks.
fn run_worker(
    init: WorkerInit,
    assignment: Assignment,
    gate: &StartGate,
    grace: Duration,
) -> std::io::Result<RunMetrics> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let mut worker = Worker::new(init);
    // Scripted VUs are made before the clock starts, as k6 initialises its VUs.
    worker.prepare_vus(assignment.initial_vus());
    // Passes the gate even when the runtime failed, so the core never waits forever.
    gate.barrier.wait();
    gate.barrier.wait();
    let runtime = runtime?;
    let run_start = *gate
        .start
        .get()
        .expect("the core sets the start between the waits");
    worker.run.run_start = run_start;
    worker.run.deadline = gate.hard_stop.map(|d| run_start + d);
    worker.run.iterations_end = gate.iterations_end.map(|d| run_start + d);
    let local = tokio::task::LocalSet::new();
    let deadline = worker.run.deadline;
    let stop = Arc::clone(&worker.run.control.stop);
    let worker = Rc::new(worker);
    let driven = Rc::clone(&worker);
    if worker.run.control.snapshots.enabled() {
        local.spawn_local(publish_snapshots(Rc::clone(&worker)));
    }
    let watched = Rc::clone(&worker);
    let cpu_clock = self_check::CpuClock::start();
    local.spawn_local(self_check::tick(Rc::clone(&worker)));
    local.block_on(&runtime, async move {
        let drive = executor::drive(driven, assignment);
        tokio::pin!(drive);
        let stopped = tokio::select! {
            _ = &mut drive => false,
            _ = stop.wait() => true,
            _ = until(deadline) => false,
        };
        if stopped {
            // A graceful stop: executors start nothing new, running iterations may finish
            // within the grace period (a second stop, or the deadline, cuts them off).
            tokio::select! {
                _ = &mut drive => {}
                _ = watched.all_clients_finished() => {}
                _ = tokio::time::sleep(grace) => {}
                _ = stop.wait_now() => {}
                _ = until(deadline) => {}
            }
        }
    });
    // Dropping the set cancels clients still in flight at the deadline or stop: their
    // unfinished requests are not counted, their sessions count as interrupted.
    drop(local);
    if let Some(sampler) = &worker.sampler {
        sampler.borrow_mut().flush();
    }
    let (cpu, waiting, wall) = cpu_clock.elapsed();

    let mut metrics = worker.metrics.take();
    metrics.self_check.set_times(cpu, waiting, wall);
    metrics
        .vus
        .fill_to(worker.second_of(Instant::now()).saturating_sub(1));
    // Every admitted session ended one way or was cut off: interrupted is what is left.
    let sessions = &mut metrics.sessions;
    let ended = sessions.completed + sessions.failed;
    debug_assert!(ended <= sessions.started, "{sessions:?}");
    sessions.interrupted = sessions.started.saturating_sub(ended);
    Ok(metrics)
}
