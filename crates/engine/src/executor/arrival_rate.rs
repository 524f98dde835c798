//! Paced executor: iterations start on a fixed schedule, whatever the responses do.
//!
//! Slot `k` of the run starts when the schedule's area reaches `k` (`k / rate` seconds at a
//! constant rate). Worker `i` of `W` owns slots
//! `i, i+W, i+2W, ...`; its clients take the next free slot when they are idle. A client that
//! is still busy when its slot comes starts late, and the latency still counts from the slot
//! time, so a slow target shows up as latency rather than as a silently lower rate.

use crate::client::Client;
use crate::worker::Worker;
use barrage_plan::{Stages, Stripe};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;
use tokio::task::JoinSet;

/// This worker's slots of the global arrival schedule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SlotSchedule {
    /// The run-wide slots this worker owns (its segment's, dealt round-robin to workers).
    pub slots: Stripe,
    /// Iterations per second over time (the run's, not this worker's share).
    pub rate: Stages,
    /// Total slots in the whole run, when it is count-bounded.
    pub limit: Option<u64>,
}

pub(crate) async fn drive(worker: Rc<Worker>, vus: u64, schedule: SlotSchedule) {
    let next_slot = Rc::new(Cell::new(0));
    let schedule = Rc::new(schedule);
    let mut clients = JoinSet::new();
    for _ in 0..vus {
        let (worker, next_slot, schedule) = (
            Rc::clone(&worker),
            Rc::clone(&next_slot),
            Rc::clone(&schedule),
        );
        clients.spawn_local(async move { paced_client(&worker, &next_slot, &schedule).await });
    }
    while clients.join_next().await.is_some() {}
}

async fn paced_client(worker: &Worker, next_slot: &Cell<u64>, schedule: &SlotSchedule) {
    let mut client = Client::new(worker);
    worker.client_started();
    loop {
        // This worker's next slot (its `m`-th), and where that falls in the run.
        let mine = next_slot.get();
        let slot = schedule.slots.nth(mine);
        if schedule.limit.is_some_and(|limit| slot >= limit) {
            break;
        }
        let Some(offset) = schedule.rate.time_of(slot as f64) else {
            break;
        };
        let intended = worker.run.run_start + offset;
        if !worker.running_at(intended) {
            break;
        }
        next_slot.set(mine + 1);
        if intended > Instant::now() {
            tokio::time::sleep_until(intended.into()).await;
            if worker.run.control.stop.is_stopped() {
                break;
            }
        }
        worker.record_lag(intended);
        let session = worker.run.plan.pick_session(&mut client.rng);
        worker.session_started(intended);
        client
            .run_iteration::<crate::client::Inline>(worker, session, intended)
            .await;
    }
    worker.client_finished();
}
