//! Closed-model executor: each VU starts its next iteration as soon as the previous one ends.

use crate::client::Client;
use crate::worker::Worker;
use std::rc::Rc;
use std::time::Instant;
use tokio::task::JoinSet;

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64) {
    let mut clients = JoinSet::new();
    for _ in 0..vus {
        let worker = Rc::clone(&worker);
        clients.spawn_local(async move { virtual_user(&worker).await });
    }
    while clients.join_next().await.is_some() {}
}

async fn virtual_user(worker: &Worker) {
    let mut client = Client::default();
    worker.client_started();
    loop {
        let now = Instant::now();
        if !worker.running_at(now) || !worker.claim_iteration() {
            break;
        }
        let session = worker.run.plan.pick_session(&mut *worker.rng.borrow_mut());
        worker.session_started();
        client.run_iteration(worker, session, now).await;
    }
    worker.client_finished();
}
