//! k6 `constant-arrival-rate` and `ramping-arrival-rate`: iterations start on a schedule
//! that follows the rate stages, each on an idle VU of a pool. The pool starts with the
//! pre-allocated VUs and grows to `maxVUs`; an iteration due while every VU is busy and the
//! pool is full is dropped (counted, never queued). A VU keeps its connection between the
//! iterations it serves.
//!
//! Iteration `k` of the run starts when the integral of the rate reaches `k`
//! ([`Stages::time_of`]: evenly spaced at a constant rate, like k6). Each worker owns a stripe of them ([`Stripe`]: its segment's, dealt round-robin).

use super::vu::VirtualUser;
use crate::worker::Worker;
use barrage_plan::{Stages, Stripe};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// This worker's part of an arrival-rate workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolShare {
    /// Iterations per second over time (the run's).
    pub rate: Stages,
    /// The run-wide iterations this worker owns.
    pub iterations: Stripe,
    pub pre_allocated: u64,
    pub max_vus: u64,
}

pub(crate) async fn drive(worker: Rc<Worker>, share: PoolShare) {
    let idle: Rc<RefCell<Vec<VirtualUser>>> = Rc::new(RefCell::new(
        (0..share.pre_allocated)
            .map(|_| VirtualUser::new(&worker))
            .collect(),
    ));
    let allocated = Rc::new(Cell::new(share.pre_allocated));
    worker.set_vus_max(allocated.get());
    let mut mine = 0;
    while let Some(offset) = share.rate.time_of(share.iterations.nth(mine) as f64) {
        mine += 1;
        let due = worker.run.run_start + offset;
        if !worker.may_start_at(due) {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        if worker.run.control.stop.is_stopped() {
            break;
        }
        worker.record_lag(due);
        let vu = idle.borrow_mut().pop();
        let mut vu = match vu {
            Some(vu) => vu,
            None if allocated.get() < share.max_vus => {
                allocated.set(allocated.get() + 1);
                worker.set_vus_max(allocated.get());
                VirtualUser::new(&worker)
            }
            None => {
                worker.session_dropped();
                continue;
            }
        };
        worker.client_started();
        let (vu_worker, idle) = (Rc::clone(&worker), Rc::clone(&idle));
        tokio::task::spawn_local(async move {
            // Latency counts from the due time: the schedule, not the VU, sets the pace.
            vu.iterate_from(&vu_worker, due).await;
            vu_worker.client_finished();
            idle.borrow_mut().push(vu);
        });
    }
    // The schedule is over: running iterations may finish until the hard stop (gracefulStop).
    worker.all_clients_finished().await;
}
