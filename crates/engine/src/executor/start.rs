//! Starting clients progressively, one batch per turn of the event loop, for every executor
//! whose clients are a count (closed, per-VU iterations, ramping VUs): a million-client run
//! starts sending at once and stops on time, and holds only the clients it got to start
//! (each costs memory and, connected, a descriptor).

use std::future::Future;
use tokio::task::JoinSet;

/// Clients started per turn of the event loop; the started ones run their first iterations
/// before the next batch is made.
pub(crate) const START_BATCH: u64 = 256;

/// Starts the clients `started..wanted`, at most [`START_BATCH`] of them, each the task
/// `client(index)` makes; returns how many are started now.
pub(crate) fn start_batch<F>(
    clients: &mut JoinSet<()>,
    started: u64,
    wanted: u64,
    mut client: impl FnMut(u64) -> F,
) -> u64
where
    F: Future<Output = ()> + 'static,
{
    let end = wanted.min(started.saturating_add(START_BATCH)).max(started);
    for index in started..end {
        clients.spawn_local(client(index));
    }
    end
}

/// Starts `count` clients a batch per turn while `may_go_on()` holds (the run has not ended,
/// the budget is not spent), then waits for every started one to finish.
pub(crate) async fn run_clients<F>(
    count: u64,
    may_go_on: impl Fn() -> bool,
    mut client: impl FnMut(u64) -> F,
) where
    F: Future<Output = ()> + 'static,
{
    let mut clients = JoinSet::new();
    let mut started = 0;
    while started < count && may_go_on() {
        started = start_batch(&mut clients, started, count, &mut client);
        if started < count {
            tokio::task::yield_now().await;
        }
    }
    while clients.join_next().await.is_some() {}
}
