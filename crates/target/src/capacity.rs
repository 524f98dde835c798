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
    /// A request given up while it waits (its client went away) gives a turn back, so an
    /// abandoned queue does not delay the requests that come after it.
    pub(crate) async fn wait_turn(&self, rate: u64) {
        let turn = self.take_turn(rate, Instant::now());
        let mut waiting = Waiting {
            capacity: self,
            rate,
            turn,
            served: false,
        };
        tokio::time::sleep_until(turn.into()).await;
        waiting.served = true;
    }

    /// Gives back the last turn of the `rate` queue (a waiting request was given up).
    fn give_back(&self, rate: u64, now: Instant) {
        let spacing = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
        let mut queues = self.next_turn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(next) = queues.get_mut(&rate) {
            *next = next.checked_sub(spacing).unwrap_or(now).max(now);
        }
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

/// A request waiting for its turn; dropped before it is served, it gives a turn back.
struct Waiting<'a> {
    capacity: &'a Capacity,
    rate: u64,
    turn: Instant,
    served: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let now = Instant::now();
        if !self.served && self.turn > now {
            self.capacity.give_back(self.rate, now);
        }
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

    #[test]
    fn a_request_given_up_gives_its_turn_back() {
        let capacity = Capacity::default();
        let t0 = Instant::now();
        for _ in 0..10 {
            capacity.take_turn(100, t0);
        }
        // Nine of the ten waiting clients go away: the queue is one turn long again.
        for _ in 0..9 {
            capacity.give_back(100, t0);
        }
        assert_eq!(capacity.take_turn(100, t0), t0 + Duration::from_millis(10));
        // Never earlier than now.
        for _ in 0..5 {
            capacity.give_back(100, t0);
        }
        assert_eq!(capacity.take_turn(100, t0), t0);
    }
}
