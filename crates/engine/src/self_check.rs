//! The generator's self-check while it runs: each worker measures its thread's CPU time, a
//! periodic tick's lateness (event-loop stalls) and, through `Worker::record_lag`, how late
//! planned starts begin. Everything lands in the worker's own metrics, without locks.

use crate::worker::Worker;
use barrage_metrics::TICK;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// CPU time the calling thread has used, from `/proc/thread-self/schedstat` (ns, Linux).
/// `None` where the platform does not tell.
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// What a worker notes when it starts, to measure its CPU share when it ends.
pub(crate) struct CpuClock {
    wall: Instant,
    cpu: Option<Duration>,
}

impl CpuClock {
    pub(crate) fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        }
    }

    /// `(cpu, wall)` since the start; cpu is zero when unknown.
    pub(crate) fn elapsed(&self) -> (Duration, Duration) {
        let cpu = match (self.cpu, thread_cpu_time()) {
            (Some(from), Some(to)) => to.saturating_sub(from),
            _ => Duration::ZERO,
        };
        (cpu, self.wall.elapsed())
    }
}

/// Ticks every [`TICK`] for the whole run: records how late each tick fired, and keeps the
/// worker's VU gauge filled through quiet seconds.
pub(crate) async fn tick(worker: Rc<Worker>) {
    let mut next = Instant::now() + TICK;
    loop {
        tokio::time::sleep_until(next.into()).await;
        let now = Instant::now();
        worker.record_tick(now.saturating_duration_since(next));
        // A stalled loop does not owe the missed ticks: the next one is a tick from now.
        next = (next + TICK).max(now + TICK / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_on_linux() {
        let before = thread_cpu_time();
        if !cfg!(target_os = "linux") {
            assert_eq!(before, None);
            return;
        }
        let before = before.expect("Linux reports thread CPU time");
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let used = thread_cpu_time().unwrap() - before;
        assert!(used >= Duration::from_millis(5), "{used:?}");
    }
}
