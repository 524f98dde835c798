//! k6 `ramping-vus` and `constant-vus`: the number of VUs follows the stages.
//!
//! The run-wide target `T(t)` is split exactly over the workers: worker `i` of `W` runs
//! `T / W` VUs, plus one when `i < T % W`. A controller re-evaluates the target every
//! [`CONTROL_TICK`]; VU `j` of the worker runs iterations while `j` is below the worker's
//! target. A VU above the target finishes its iteration within `gracefulRampDown`, or is
//! interrupted (its session counts as interrupted and its connection is dropped). After the
//! last stage no iteration starts; running ones get `gracefulStop` (the core's hard stop).
//! VU `j` is made when the target first passes `j`, a batch per turn of the event loop
//! (`start.rs`): a ramp to a million VUs holds only the VUs it got to, and ends on time.

use super::start::start_batch;
use super::vu::{wait_until, VirtualUser};
use crate::worker::Worker;
use barrage_plan::{Stages, Striping};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often the controller re-reads the stages: the VU count lags them by at most this.
const CONTROL_TICK: Duration = Duration::from_millis(20);

/// This worker's part of a ramping-VUs workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RampShare {
    /// The run-wide VU target over time.
    pub schedule: Stages,
    /// A VU above the target finishes its iteration within this long (`gracefulRampDown`).
    pub ramp_down: Duration,
    /// The process's segment: its striped share of the run-wide target is what its workers
    /// split (so N segments' VUs sum to the target at every instant).
    pub segment: Striping,
    pub worker: u64,
    pub workers: u64,
}

impl RampShare {
    /// The run-wide target `at` into the run (linear within a stage, rounded down like k6).
    fn target_at(&self, at: Duration) -> u64 {
        self.schedule.value_at(at).floor().max(0.0) as u64
    }

    /// This worker's share of `total` VUs (run-wide).
    pub(crate) fn share_of(&self, total: u64) -> u64 {
        let total = self.segment.share(total);
        total / self.workers + u64::from(self.worker < total % self.workers)
    }
}

/// What the controller tells the VUs.
struct Control {
    target: Cell<u64>,
    ended: Cell<bool>,
    changed: Notify,
}

pub(crate) async fn drive(worker: Rc<Worker>, share: RampShare) {
    let peak = share.share_of(share.schedule.peak().floor().max(0.0) as u64);
    worker.set_vus_max(peak);
    let control = Rc::new(Control {
        target: Cell::new(share.share_of(share.target_at(Duration::ZERO))),
        ended: Cell::new(false),
        changed: Notify::new(),
    });
    let graceful_ramp_down = share.ramp_down;
    let mut vus = tokio::task::JoinSet::new();
    let mut made = 0;
    let end = worker.run.run_start + share.schedule.end();
    let mut tick = worker.run.run_start;
    loop {
        let now = Instant::now();
        if now >= end || !worker.running_at(now) {
            break;
        }
        let target = share.share_of(share.target_at(now - worker.run.run_start));
        if target != control.target.get() {
            // A VU start or stop was due by this tick: how late it comes is scheduler lag.
            worker.record_lag(tick);
            control.target.set(target);
            control.changed.notify_waiters();
        }
        if made < target.min(peak) {
            made = start_batch(&mut vus, made, target.min(peak), |index| {
                let (worker, control) = (Rc::clone(&worker), Rc::clone(&control));
                async move { virtual_user(&worker, &control, index, graceful_ramp_down).await }
            });
            if made < target.min(peak) {
                // More to make: the next batch after the made ones had their turn.
                tokio::task::yield_now().await;
                continue;
            }
        }
        tick = (tick + CONTROL_TICK).max(now);
        tokio::time::sleep_until(tick.min(end).into()).await;
    }
    control.ended.set(true);
    control.changed.notify_waiters();
    while vus.join_next().await.is_some() {}
}

async fn virtual_user(
    worker: &Worker,
    control: &Control,
    index: u64,
    graceful_ramp_down: Duration,
) {
    let mut vu = VirtualUser::new(worker);
    loop {
        wait_until(&control.changed, || {
            control.ended.get() || control.target.get() > index
        })
        .await;
        // Past the last stage (or stopped): done. Checked here as well as by the controller,
        // which may not have run yet — a VU that looped back would never yield to it.
        if control.ended.get() || !worker.may_start_at(Instant::now()) {
            return;
        }
        worker.client_started();
        loop {
            let now = Instant::now();
            if control.target.get() <= index || control.ended.get() || !worker.may_start_at(now) {
                break;
            }
            let ramped_down = async {
                wait_until(&control.changed, || control.target.get() <= index).await;
                tokio::time::sleep(graceful_ramp_down).await;
            };
            tokio::select! {
                biased;
                _ = vu.iterate(worker, now) => {}
                _ = ramped_down => {
                    vu.interrupted();
                    break;
                }
            }
        }
        worker.client_finished();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn worker_shares_add_up_to_the_target() {
        for total in 0..20 {
            let sum: u64 = (0..3)
                .map(|worker| {
                    RampShare {
                        schedule: Stages::from_targets(0.0, [(Duration::from_secs(1), 7.0)]),
                        ramp_down: Duration::ZERO,
                        segment: barrage_plan::Segment::WHOLE.striping(),
                        worker,
                        workers: 3,
                    }
                    .share_of(total)
                })
                .sum();
            assert_eq!(sum, total);
        }
    }
}
