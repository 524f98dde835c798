//! Closed-model executor (quick `-n`/`-z`, k6 `shared-iterations`): each VU starts its next
//! iteration as soon as the previous one ends; a count-bounded run shares the worker's
//! iteration budget among its VUs. Clients start progressively (`start.rs`), until the run
//! ends or the budget is spent.

use super::start::run_clients;
use super::vu::VirtualUser;
use crate::worker::Worker;
use std::rc::Rc;
use std::time::Instant;

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64) {
    worker.set_vus_max(vus);
    let may_go_on = || worker.may_start_at(Instant::now()) && worker.has_iterations();
    run_clients(vus, may_go_on, |_| {
        let worker = Rc::clone(&worker);
        async move { virtual_user(&worker).await }
    })
    .await;
}

async fn virtual_user(worker: &Worker) {
    let mut vu = VirtualUser::new(worker);
    worker.client_started();
    // Back to back: the next iteration starts when the last one ended (one clock reading).
    let mut now = Instant::now();
    while worker.may_start_at(now) && worker.claim_iteration() {
        now = vu.iterate(worker, now).await;
    }
    worker.client_finished();
}
