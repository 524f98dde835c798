//! Open-model executor: clients arrive as a Poisson process following the arrival phases;
//! each runs one session on its own connection and leaves.
//!
//! Arrival times are drawn by thinning (Lewis–Shedler): candidates come at the phase's peak
//! rate with exponential gaps and are kept with probability `rate(t) / peak`, which gives an
//! exact Poisson process for constant and linearly ramped rates alike. Worker `i` of `W` runs
//! its own process at `rate / W`; the superposition of independent Poisson processes is a
//! Poisson process at the full rate, so workers never coordinate.

use crate::client::Client;
use crate::worker::Worker;
use barrage_plan::Stages;
use rand::Rng;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// This worker's part of an open workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArrivalShare {
    /// The arrival rate over time, already divided by the number of workers (and segments).
    pub schedule: Stages,
    /// Clients this worker may run at once.
    pub max_clients: Option<u64>,
}

/// Draws an exponentially distributed gap for a Poisson process at `rate` per second.
fn exponential_gap(rng: &mut impl Rng, rate: f64) -> Duration {
    // 1 - U lies in (0, 1], so the logarithm is finite.
    let u: f64 = 1.0 - rng.gen::<f64>();
    Duration::from_secs_f64(-u.ln() / rate)
}

/// The arrival times of `phases`, as offsets from the run start (an iterator, so a long
/// high-rate run never materialises its schedule).
pub(crate) fn arrival_offsets<'a, R: Rng>(
    schedule: &'a Stages,
    rng: &'a mut R,
) -> impl Iterator<Item = Duration> + 'a {
    let mut phase_index = 0;
    let mut phase_start = Duration::ZERO;
    let mut offset_in_phase = Duration::ZERO;
    std::iter::from_fn(move || loop {
        let phase = schedule.pieces.get(phase_index)?;
        let peak = phase.from.max(phase.to);
        if peak <= 0.0 {
            phase_start += phase.duration;
            phase_index += 1;
            offset_in_phase = Duration::ZERO;
            continue;
        }
        offset_in_phase += exponential_gap(rng, peak);
        if offset_in_phase >= phase.duration {
            // The process is memoryless: the next phase starts fresh at its own boundary.
            phase_start += phase.duration;
            phase_index += 1;
            offset_in_phase = Duration::ZERO;
            continue;
        }
        if rng.gen::<f64>() * peak <= phase.value_at(offset_in_phase) {
            return Some(phase_start + offset_in_phase);
        }
    })
}

/// One arriving client's session; its requests boxed while in flight when the plan's sessions
/// wait between requests (a client then spends most of its life idle, holding only its small
/// state), inline otherwise.
async fn run_client<M: crate::client::RequestMode>(
    mut client: Client,
    worker: Rc<Worker>,
    arrival: Instant,
) {
    let session = worker.run.plan.pick_session(&mut client.rng);
    client.run_iteration::<M>(&worker, session, arrival).await;
    worker.client_finished();
}

pub(crate) async fn drive(worker: Rc<Worker>, share: ArrivalShare) {
    let idles = worker.run.plan.idles();
    // Arrivals draw from their own stream, so sessions picking at random do not shift them.
    let seed: u64 = worker.rng.borrow_mut().gen();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed);
    for offset in arrival_offsets(&share.schedule, &mut rng) {
        let arrival = worker.run.run_start + offset;
        if !worker.running_at(arrival) {
            break;
        }
        tokio::time::sleep_until(arrival.into()).await;
        if worker.run.control.stop.is_stopped() {
            break;
        }
        worker.record_lag(arrival);
        if share
            .max_clients
            .is_some_and(|max| worker.active_clients() >= max)
        {
            worker.session_dropped();
            continue;
        }
        worker.client_started();
        // Admitted now: a session queued behind others and cut off by the hard stop before
        // its task ever ran still counts as started (and interrupted), never as lost.
        worker.session_started(arrival);
        // A fresh client: its connection lives as long as its session, like a device. Made
        // here, in arrival order, so arrival k always gets the same random stream.
        let client = Client::new(&worker);
        if idles {
            tokio::task::spawn_local(run_client::<crate::client::Boxed>(
                client,
                Rc::clone(&worker),
                arrival,
            ));
        } else {
            tokio::task::spawn_local(run_client::<crate::client::Inline>(
                client,
                Rc::clone(&worker),
                arrival,
            ));
        }
    }
    // Arrivals are over: running sessions may finish until the hard stop (grace period).
    worker.all_clients_finished().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> barrage_plan::Piece {
        barrage_plan::Piece {
            duration: Duration::from_secs(secs),
            from: rate,
            to: ramp_to.unwrap_or(rate),
        }
    }

    #[test]
    fn constant_rate_gives_poisson_counts_and_exponential_gaps() {
        let phases = Stages::new(vec![phase(100, 50.0, None)]);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let offsets: Vec<Duration> = arrival_offsets(&phases, &mut rng).collect();
        // 5000 expected; a Poisson count has sd ~71, so ±4 sd is 285.
        assert!(
            (offsets.len() as f64 - 5000.0).abs() < 285.0,
            "{}",
            offsets.len()
        );
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        let gaps: Vec<f64> = offsets
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // Exponential: mean 1/λ = 0.02 and coefficient of variation 1 (uniform pacing has 0).
        assert!((mean - 0.02).abs() < 0.002, "{mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.1,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn ramps_follow_the_rate_and_zero_phases_are_silent() {
        let phases = Stages::new(vec![phase(20, 0.0, None), phase(100, 0.0, Some(100.0))]);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
        let offsets: Vec<Duration> = arrival_offsets(&phases, &mut rng).collect();
        assert!(offsets.iter().all(|o| *o >= Duration::from_secs(20)));
        // Expected 5000 in the ramp; three quarters of them in its second half.
        assert!(
            (offsets.len() as f64 - 5000.0).abs() < 300.0,
            "{}",
            offsets.len()
        );
        let late = offsets
            .iter()
            .filter(|o| **o >= Duration::from_secs(70))
            .count() as f64;
        assert!((late / offsets.len() as f64 - 0.75).abs() < 0.03, "{late}");
    }
}
