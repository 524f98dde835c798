//! Closed-model executor (quick `-n`/`-z`, k6 `shared-iterations`): each VU starts its next
//! iteration as soon as the previous one ends; a count-bounded run shares the worker's
//! iteration budget among its VUs. Clients start progressively, a batch per turn of the
//! event loop: a million-client run starts sending at once and stops on time, and holds
//! only the clients it got to start (each costs memory and, connected, a descriptor).

use super::vu::VirtualUser;
use crate::worker::Worker;
use std::rc::Rc;
use std::time::Instant;
use tokio::task::JoinSet;

/// Clients started per turn of the event loop; the started ones run their first iterations
/// before the next batch is made.
const START_BATCH: u64 = 256;

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64) {
    worker.set_vus_max(vus);
    let mut clients = JoinSet::new();
    let mut started = 0;
    while started < vus && worker.may_start_at(Instant::now()) && worker.has_iterations() {
        let batch = START_BATCH.min(vus - started);
        for _ in 0..batch {
            let worker = Rc::clone(&worker);
            clients.spawn_local(async move { virtual_user(&worker).await });
        }
        started += batch;
        if started < vus {
            tokio::task::yield_now().await;
        }
    }
    while clients.join_next().await.is_some() {}
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
