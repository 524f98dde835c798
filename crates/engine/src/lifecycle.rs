//! k6's lifecycle stages around a scripted test: `setup()` once before the load and
//! `teardown(data)` once after it, each run as a one-VU, one-iteration run of the same plan
//! (same client, connections and metrics code). Their requests, checks and custom samples
//! count into the test's metrics, as in k6; their single iteration does not count as one.

use crate::control::RunControl;
use crate::scheduler::{run_plan, EngineError, RunOutcome};
use crate::scripted::{Phase, SharedVuFactory};
use barrage_metrics::RunMetrics;
use barrage_plan::{Plan, Workload, DEFAULT_GRACEFUL_STOP};
use std::time::Duration;

/// How long `setup()` and `teardown()` may run (k6's `setupTimeout`/`teardownTimeout`
/// default).
pub const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `plan` with its scripted VUs' setup before and teardown after, when the script has
/// them. A setup that stops the run (a failed `setup()`, `test.abort()`) skips the load and
/// the teardown.
pub fn run(plan: &Plan, control: &RunControl) -> Result<RunOutcome, EngineError> {
    let (setup, teardown) = match &control.scripted {
        Some(factory) => (factory.phase(Phase::Setup), factory.phase(Phase::Teardown)),
        None => (None, None),
    };
    if setup.is_none() && teardown.is_none() {
        return run_plan(plan, control);
    }
    let mut before = None;
    if let Some(setup) = setup {
        let outcome = run_phase(plan, control, setup)?;
        if control.stop.is_stopped() {
            return Ok(outcome);
        }
        before = Some(outcome.metrics);
    }
    let mut outcome = run_plan(plan, control)?;
    if let Some(teardown) = teardown {
        let after = run_phase(plan, control, teardown)?;
        outcome.metrics.merge(&requests_only(after.metrics));
    }
    if let Some(before) = before {
        outcome.metrics.merge(&requests_only(before));
    }
    Ok(outcome)
}

/// One iteration of `factory`'s single VU on one worker.
fn run_phase(
    plan: &Plan,
    control: &RunControl,
    factory: SharedVuFactory,
) -> Result<RunOutcome, EngineError> {
    let mut once = plan.clone();
    once.workload = Workload::counted(1, 1, false, PHASE_TIMEOUT, DEFAULT_GRACEFUL_STOP);
    once.options.threads = Some(1);
    once.options.segment = None;
    let control = RunControl {
        scripted: Some(factory),
        ..control.clone()
    };
    run_plan(&once, &control)
}

/// A stage's metrics without its iteration and VU counts (k6 counts neither for setup and
/// teardown).
fn requests_only(mut metrics: RunMetrics) -> RunMetrics {
    metrics.sessions = Default::default();
    metrics.sessions_per_second.clear();
    metrics.iteration_duration = Default::default();
    metrics.vus = Default::default();
    metrics.self_check = Default::default();
    metrics
}
