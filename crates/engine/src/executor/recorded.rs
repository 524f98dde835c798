//! Recorded-arrivals executor (`barrage replay`): each arrival starts a fresh client at its
//! recorded offset, running the session it names once on its own connection. Arrival `k` of
//! the run goes to segment `k mod N`, then round-robin to that segment's workers, so workers
//! never coordinate.

use crate::client::Client;
use crate::worker::Worker;
use barrage_plan::RecordedArrival;
use std::rc::Rc;

/// This worker's arrivals, in order of their offsets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordedShare {
    pub arrivals: Vec<RecordedArrival>,
}

pub(crate) async fn drive(worker: Rc<Worker>, share: RecordedShare) {
    for arrival in share.arrivals {
        let start = worker.run.run_start + arrival.offset;
        if !worker.running_at(start) {
            break;
        }
        tokio::time::sleep_until(start.into()).await;
        if worker.run.control.stop.is_stopped() {
            break;
        }
        worker.record_lag(start);
        worker.client_started();
        worker.session_started(start);
        let mut client = Client::new(&worker);
        let client_worker = Rc::clone(&worker);
        tokio::task::spawn_local(async move {
            let session = client_worker.run.plan.session(arrival.session);
            client
                .run_iteration::<crate::client::Inline>(&client_worker, session, start)
                .await;
            client_worker.client_finished();
        });
    }
    // Arrivals are over: running sessions may finish until the hard stop (grace period).
    worker.all_clients_finished().await;
}
