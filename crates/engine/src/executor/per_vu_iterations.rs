//! k6 `per-vu-iterations`: each VU runs its own fixed number of iterations back to back,
//! until `maxDuration`. VUs start progressively (`start.rs`), until the run ends.

use super::start::run_clients;
use super::vu::VirtualUser;
use crate::worker::Worker;
use std::rc::Rc;
use std::time::Instant;

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64, iterations_per_vu: u64) {
    worker.set_vus_max(vus);
    let may_go_on = || worker.may_start_at(Instant::now());
    run_clients(vus, may_go_on, |_| {
        let worker = Rc::clone(&worker);
        async move {
            let mut vu = VirtualUser::new(&worker);
            worker.client_started();
            let mut now = Instant::now();
            for _ in 0..iterations_per_vu {
                if !worker.may_start_at(now) {
                    break;
                }
                now = vu.iterate(&worker, now).await;
            }
            worker.client_finished();
        }
    })
    .await;
}
