//! The generator's self-check while it runs: each worker measures its thread's CPU time, a
//! periodic tick's lateness (event-loop stalls) and, through `Worker::record_lag`, how late
//! planned starts begin. Everything lands in the worker's own metrics, without locks.

use crate::worker::Worker;
use barrage_metrics::TICK;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The calling thread's scheduler statistics: time on a CPU, and time it was ready to run
/// but waited for a CPU (other processes had it), from `/proc/thread-self/schedstat` (Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadTimes {
    pub on_cpu: Duration,
    pub waiting_for_cpu: Duration,
}

/// `None` where the platform does not tell.
pub(crate) fn thread_times() -> Option<ThreadTimes> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let on_cpu = fields.next()??;
    let waiting = fields.next()??;
    Some(ThreadTimes {
        on_cpu: Duration::from_nanos(on_cpu),
        waiting_for_cpu: Duration::from_nanos(waiting),
    })
}

/// What a worker notes when it starts, to measure its CPU share when it ends.
pub(crate) struct CpuClock {
    wall: Instant,
    times: Option<ThreadTimes>,
}

impl CpuClock {
    pub(crate) fn start() -> Self {
        Self {
            wall: Instant::now(),
            times: thread_times(),
        }
    }

    /// `(on cpu, waiting for a cpu, wall)` since the start; the first two are zero when
    /// unknown.
    pub(crate) fn elapsed(&self) -> (Duration, Duration, Duration) {
        let (cpu, waiting) = match (self.times, thread_times()) {
            (Some(from), Some(to)) => (
                to.on_cpu.saturating_sub(from.on_cpu),
                to.waiting_for_cpu.saturating_sub(from.waiting_for_cpu),
            ),
            _ => (Duration::ZERO, Duration::ZERO),
        };
        (cpu, waiting, self.wall.elapsed())
    }
}

/// How often the worker frees pooled buffers no request needed meanwhile.
const POOL_TRIM_PERIOD: Duration = Duration::from_secs(10);

/// Ticks every [`TICK`] for the whole run: records how late each tick fired, keeps the
/// worker's VU gauge filled through quiet seconds, and trims the worker's pools now and then.
pub(crate) async fn tick(worker: Rc<Worker>) {
    let mut next = Instant::now() + TICK;
    let mut trim_at = Instant::now() + POOL_TRIM_PERIOD;
    loop {
        tokio::time::sleep_until(next.into()).await;
        let now = Instant::now();
        worker.record_tick(now.saturating_duration_since(next));
        if now >= trim_at {
            worker.trim_pools();
            trim_at = now + POOL_TRIM_PERIOD;
        }
        // A stalled loop does not owe the missed ticks: the next one is a tick from now.
        next = (next + TICK).max(now + TICK / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_on_linux() {
        let before = thread_times();
        if !cfg!(target_os = "linux") {
            assert_eq!(before, None);
            return;
        }
        let before = before.expect("Linux reports thread CPU time").on_cpu;
        // Spin until the thread has been charged 5 ms of CPU: on a busy machine that takes
        // longer than 5 ms of wall time, so the bound is on wall time only as a safety net.
        let mut x = 0u64;
        let start = Instant::now();
        let mut used = Duration::ZERO;
        while used < Duration::from_millis(5) && start.elapsed() < Duration::from_secs(10) {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
            used = thread_times().unwrap().on_cpu - before;
        }
        std::hint::black_box(x);
        assert!(used >= Duration::from_millis(5), "{used:?}");
    }
}
