//! k6 `constant-arrival-rate` and `ramping-arrival-rate`: iterations start on a schedule
//! that follows the rate stages, each on an idle VU of a pool. The pool starts with the
//! pre-allocated VUs and grows to `maxVUs`; an iteration due while every VU is busy and the
//! pool is full is dropped (counted, never queued). A VU keeps its connection between the
//! iterations it serves.
//!
//! Iteration `k` of the run starts when the integral of the rate reaches `k` (evenly spaced
//! at a constant rate, like k6). Worker `i` of `W` owns iterations `i, i+W, ...`.

use super::vu::VirtualUser;
use crate::worker::Worker;
use barrage_plan::ArrivalPool;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// This worker's part of an arrival-rate workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolShare {
    pub pool: ArrivalPool,
    pub first: u64,
    pub stride: u64,
    pub pre_allocated: u64,
    pub max_vus: u64,
}

/// When iteration `k` (from 0) is due, from the run start; `None` once the stages are over.
pub(crate) fn iteration_offset(pool: &ArrivalPool, k: u64) -> Option<Duration> {
    let unit = pool.time_unit.as_secs_f64();
    let mut left = k as f64;
    let mut rate_from = pool.start_rate / unit;
    let mut start = 0.0;
    for stage in &pool.stages {
        let length = stage.duration.as_secs_f64();
        let rate_to = stage.target / unit;
        let in_stage = (rate_from + rate_to) / 2.0 * length;
        if left < in_stage {
            // Solve rate_from * t + slope / 2 * t^2 = left for t in [0, length).
            let slope = (rate_to - rate_from) / length;
            let t = if slope.abs() < 1e-12 {
                left / rate_from
            } else {
                let disc = (rate_from * rate_from + 2.0 * slope * left).max(0.0);
                (disc.sqrt() - rate_from) / slope
            };
            return Some(Duration::from_secs_f64(start + t.clamp(0.0, length)));
        }
        left -= in_stage;
        start += length;
        rate_from = rate_to;
    }
    None
}

pub(crate) async fn drive(worker: Rc<Worker>, share: PoolShare) {
    let idle: Rc<RefCell<Vec<VirtualUser>>> = Rc::new(RefCell::new(
        (0..share.pre_allocated)
            .map(|_| VirtualUser::new(&worker))
            .collect(),
    ));
    let allocated = Rc::new(Cell::new(share.pre_allocated));
    worker.set_vus_max(allocated.get());
    let mut k = share.first;
    while let Some(offset) = iteration_offset(&share.pool, k) {
        k += share.stride;
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

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::RateStage;

    #[test]
    fn constant_rates_are_evenly_spaced_and_ramps_integrate() {
        let pool =
            ArrivalPool::constant(10.0, Duration::from_secs(2), Duration::from_secs(4), 1, 1);
        assert_eq!(iteration_offset(&pool, 0), Some(Duration::ZERO));
        assert_eq!(iteration_offset(&pool, 3), Some(Duration::from_millis(600)));
        assert_eq!(
            iteration_offset(&pool, 19),
            Some(Duration::from_millis(3800))
        );
        assert_eq!(iteration_offset(&pool, 20), None);
        let ramp = ArrivalPool {
            start_rate: 0.0,
            stages: vec![RateStage {
                duration: Duration::from_secs(10),
                target: 100.0,
            }],
            time_unit: Duration::from_secs(1),
            ..pool
        };
        // N(t) = 5 t^2: iteration 125 is due at 5 s, and 500 iterations in all.
        let at = iteration_offset(&ramp, 125).unwrap().as_secs_f64();
        assert!((at - 5.0).abs() < 1e-9, "{at}");
        assert!(iteration_offset(&ramp, 499).is_some());
        assert_eq!(iteration_offset(&ramp, 500), None);
    }
}
