//! The generator's measurements of itself ("measurement truth"): CPU time of the worker
//! threads, scheduler lag (how late iterations and arrivals start against the plan) and
//! event-loop stalls (how late a periodic tick fires). Recorded per worker, merged exactly.

use crate::LatencyHistogram;
use std::time::Duration;

/// How often each worker's self-check tick fires.
pub const TICK: Duration = Duration::from_millis(10);
/// A tick this late means the worker's event loop was blocked (or its thread starved).
pub const STALL: Duration = Duration::from_millis(10);

/// One worker's (or, merged, the run's) self-measurements.
#[derive(Debug, Clone, Default)]
pub struct SelfCheckMetrics {
    /// Worker threads measured.
    pub workers: u64,
    /// CPU time the worker threads used, in ns (0 when the platform does not say).
    pub cpu_ns: u64,
    /// Time the worker threads were ready to run but waited for a CPU (other processes had
    /// it: a busy machine), in ns.
    pub cpu_wait_ns: u64,
    /// Wall time the worker threads ran, in ns.
    pub wall_ns: u64,
    /// The busiest worker's CPU share (0–1).
    pub max_worker_cpu: f64,
    /// How late planned starts (arrivals, iteration slots, VU ramp-ups) began, µs.
    pub lag: LatencyHistogram,
    /// How late the self-check tick fired, µs.
    pub tick_overshoot: LatencyHistogram,
    /// Ticks later than [`STALL`].
    pub stalls: u64,
}

impl SelfCheckMetrics {
    #[inline]
    pub fn record_lag(&mut self, late: Duration) {
        self.lag.record(late);
    }

    pub fn record_tick(&mut self, overshoot: Duration) {
        self.tick_overshoot.record(overshoot);
        if overshoot > STALL {
            self.stalls += 1;
        }
    }

    /// Sets one worker's CPU, CPU-wait and wall time (called once, when the worker ends).
    pub fn set_times(&mut self, cpu: Duration, cpu_wait: Duration, wall: Duration) {
        self.workers = 1;
        self.cpu_ns = cpu.as_nanos() as u64;
        self.cpu_wait_ns = cpu_wait.as_nanos() as u64;
        self.wall_ns = wall.as_nanos() as u64;
        self.max_worker_cpu = self.cpu_share();
    }

    /// CPU time over wall time, per worker on average (1.0 = every worker thread always busy).
    pub fn cpu_share(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu_ns as f64 / self.wall_ns as f64
        }
    }

    /// Time waiting for a CPU over wall time, per worker on average.
    pub fn cpu_wait_share(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu_wait_ns as f64 / self.wall_ns as f64
        }
    }

    pub fn merge(&mut self, other: &SelfCheckMetrics) {
        self.workers += other.workers;
        self.cpu_ns += other.cpu_ns;
        self.cpu_wait_ns += other.cpu_wait_ns;
        self.wall_ns += other.wall_ns;
        self.max_worker_cpu = self.max_worker_cpu.max(other.max_worker_cpu);
        self.lag.merge(&other.lag);
        self.tick_overshoot.merge(&other.tick_overshoot);
        self.stalls += other.stalls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_stalls_merge() {
        let mut a = SelfCheckMetrics::default();
        a.set_times(
            Duration::from_millis(900),
            Duration::from_millis(20),
            Duration::from_secs(1),
        );
        a.record_tick(Duration::from_millis(30));
        a.record_tick(Duration::from_micros(100));
        let mut b = SelfCheckMetrics::default();
        b.set_times(
            Duration::from_millis(100),
            Duration::ZERO,
            Duration::from_secs(1),
        );
        b.record_lag(Duration::from_micros(50));
        a.merge(&b);
        assert_eq!(a.workers, 2);
        assert!((a.cpu_share() - 0.5).abs() < 1e-9);
        assert!((a.max_worker_cpu - 0.9).abs() < 1e-9);
        assert!((a.cpu_wait_share() - 0.01).abs() < 1e-9);
        assert_eq!(
            (a.stalls, a.lag.count(), a.tick_overshoot.count()),
            (1, 1, 2)
        );
    }
}
