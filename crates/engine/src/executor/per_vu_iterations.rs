//! k6 `per-vu-iterations`: each VU runs its own fixed number of iterations back to back,
//! until `maxDuration`.

use super::vu::VirtualUser;
use crate::worker::Worker;
use std::rc::Rc;
use std::time::Instant;
use tokio::task::JoinSet;

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64, iterations_per_vu: u64) {
    worker.set_vus_max(vus);
    let mut clients = JoinSet::new();
    for _ in 0..vus {
        let worker = Rc::clone(&worker);
        clients.spawn_local(async move {
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
        });
    }
    while clients.join_next().await.is_some() {}
}
