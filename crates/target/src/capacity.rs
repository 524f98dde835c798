//! A known capacity (`capacity=R`): a server-wide first-come-first-served queue per rate that
//! lets one request through every 1/R seconds. Below R requests pass at once; above it they
//! wait their turn, so latency grows with the queue — the hockey stick a capacity search
//! (`barrage capacity`) must find at R requests per second.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The next free turn of each rate's queue.
#[derive(Debug, Default)]
pub(crate) struct Capacity {
    next_turn: Mutex<HashMap<u64, Instant>>,
}

impl Capacity {
    /// Takes the next turn of the `rate` queue (now, when the queue is empty) and waits for it.
    pub(crate) async fn wait_turn(&self, rate: u64) {
        let turn = self.take_turn(rate, Instant::now());
        tokio::time::sleep_until(turn.into()).await;
    }

    fn take_turn(&self, rate: u64, now: Instant) -> Instant {
        let spacing = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
        let mut queues = self.next_turn.lock().unwrap_or_else(|e| e.into_inner());
        let next = queues.entry(rate).or_insert(now);
        let turn = (*next).max(now);
        *next = turn + spacing;
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_spaced_by_the_rate_and_idle_requests_pass_at_once() {
        let capacity = Capacity::default();
        let t0 = Instant::now();
        // A burst of 5 at 100/s: 0, 10, 20, 30, 40 ms.
        let turns: Vec<Duration> = (0..5).map(|_| capacity.take_turn(100, t0) - t0).collect();
        assert_eq!(
            turns,
            (0..5)
                .map(|i| Duration::from_millis(10 * i))
                .collect::<Vec<_>>()
        );
        // Another rate has its own queue.
        assert_eq!(capacity.take_turn(7, t0), t0);
        // After the queue drained, a request passes at once.
        let later = t0 + Duration::from_secs(1);
        assert_eq!(capacity.take_turn(100, later), later);
    }
}
