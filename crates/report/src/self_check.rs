//! The generator self-check in reports: its CPU use, scheduler lag and event-loop stalls,
//! and whether they leave the latency figures trustworthy (with the reasons when not).

use barrage_metrics::{LatencyHistogram, SelfCheckMetrics, STALL, TICK};
use serde::Serialize;
use std::fmt::Write;

/// Above this CPU share of its busiest worker thread, the generator itself delays requests.
pub const CPU_LIMIT: f64 = 0.90;
/// Scheduler lag p99 above this (µs) makes latencies untrustworthy. The runtime's timers
/// fire on whole milliseconds and its event loop sleeps in whole milliseconds, so an idle
/// generator already starts up to 2 ms late: the limit is 1 ms of lag beyond that.
pub const LAG_P99_LIMIT_US: u64 = 3_000;
/// More than this share of late ticks (stalls) makes latencies untrustworthy; a rare one
/// (the OS preempting a thread on a shared machine) is reported but tolerated.
pub const STALL_SHARE_LIMIT: f64 = 0.01;
/// Worker threads waiting this share of the run (percent) for a CPU held by other processes
/// mark the machine as busy: the reasons for lag and stalls then say so.
pub const BUSY_MACHINE_WAIT_PERCENT: f64 = 1.0;

/// Percentiles of one self-check histogram, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LagPercentiles {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl LagPercentiles {
    fn of(histogram: &LatencyHistogram) -> Self {
        Self {
            count: histogram.count(),
            p50_us: histogram.percentile_micros(50.0),
            p99_us: histogram.percentile_micros(99.0),
            max_us: histogram.max_micros(),
        }
    }
}

/// What the generator measured of itself. Field names are part of the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelfCheckSummary {
    pub worker_threads: u64,
    /// CPU time of the worker threads over their wall time, averaged (100 = all busy).
    pub cpu_percent: f64,
    /// The busiest worker thread's CPU use.
    pub max_worker_cpu_percent: f64,
    /// Time the worker threads were ready but waited for a CPU that other processes held,
    /// averaged: lag and stalls with a high figure here come from a busy machine, not from
    /// the generator's own load.
    pub cpu_wait_percent: f64,
    /// How late planned starts (arrivals, iteration slots, VU ramp steps) began.
    pub scheduler_lag: LagPercentiles,
    /// How late a 10 ms tick on each worker fired (its event loop's responsiveness).
    pub tick_overshoot: LagPercentiles,
    /// Ticks more than 10 ms late: the event loop was blocked or its thread starved (count
    /// of `tick_overshoot.count` ticks).
    pub stalls: u64,
}

impl SelfCheckSummary {
    pub fn new(metrics: &SelfCheckMetrics) -> Self {
        Self {
            worker_threads: metrics.workers,
            cpu_percent: metrics.cpu_share() * 100.0,
            max_worker_cpu_percent: metrics.max_worker_cpu * 100.0,
            cpu_wait_percent: metrics.cpu_wait_share() * 100.0,
            scheduler_lag: LagPercentiles::of(&metrics.lag),
            tick_overshoot: LagPercentiles::of(&metrics.tick_overshoot),
            stalls: metrics.stalls,
        }
    }

    /// Why the latency figures cannot be trusted; empty when they can.
    pub fn trust_reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        // Says where lag and stalls come from when other processes held the CPUs.
        let busy_machine = if self.cpu_wait_percent >= BUSY_MACHINE_WAIT_PERCENT {
            format!(
                " — the machine is busy: worker threads waited {:.1}% of the run for a CPU",
                self.cpu_wait_percent
            )
        } else {
            String::new()
        };
        if self.max_worker_cpu_percent >= CPU_LIMIT * 100.0 {
            reasons.push(format!(
                "generator CPU at {:.0}% on its busiest worker thread (limit {:.0}%): requests wait for the generator, not only for the target",
                self.max_worker_cpu_percent,
                CPU_LIMIT * 100.0
            ));
        }
        if self.scheduler_lag.count > 0 && self.scheduler_lag.p99_us > LAG_P99_LIMIT_US {
            reasons.push(format!(
                "scheduler lag p99 {:.2} ms (limit {:.2} ms): iterations start later than planned{busy_machine}",
                self.scheduler_lag.p99_us as f64 / 1e3,
                LAG_P99_LIMIT_US as f64 / 1e3
            ));
        }
        let ticks = self.tick_overshoot.count.max(1) as f64;
        if self.stalls as f64 / ticks > STALL_SHARE_LIMIT {
            reasons.push(format!(
                "{} event-loop stalls in {} ticks (a {} ms tick more than {} ms late, limit {:.0}%; worst {:.1} ms){busy_machine}",
                self.stalls,
                self.tick_overshoot.count,
                TICK.as_millis(),
                STALL.as_millis(),
                STALL_SHARE_LIMIT * 100.0,
                self.tick_overshoot.max_us as f64 / 1e3
            ));
        }
        reasons
    }

    /// The self-check lines of a text report, with a warning when figures are untrustworthy.
    pub fn render(&self, reasons: &[String], out: &mut String) {
        let lag = &self.scheduler_lag;
        let lag_text = if lag.count == 0 {
            "n/a (nothing scheduled)".to_string()
        } else {
            format!(
                "p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
                lag.p50_us as f64 / 1e3,
                lag.p99_us as f64 / 1e3,
                lag.max_us as f64 / 1e3
            )
        };
        let _ = writeln!(
            out,
            "\ngenerator  CPU {:.0}% (busiest thread {:.0}%, waiting for a CPU {:.1}%)  scheduler lag {lag_text}  stalls {} (tick overshoot max {:.1} ms)",
            self.cpu_percent,
            self.max_worker_cpu_percent,
            self.cpu_wait_percent,
            self.stalls,
            self.tick_overshoot.max_us as f64 / 1e3
        );
        if !reasons.is_empty() {
            let _ = writeln!(
                out,
                "WARNING: latency figures are untrustworthy, the generator could not keep to its plan:"
            );
            for reason in reasons {
                let _ = writeln!(out, "  - {reason}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn busy_laggy_or_stalled_generators_are_flagged() {
        let mut m = SelfCheckMetrics::default();
        m.set_times(
            Duration::from_millis(300),
            Duration::ZERO,
            Duration::from_secs(1),
        );
        m.record_lag(Duration::from_micros(900));
        m.record_tick(Duration::from_micros(800));
        let light = SelfCheckSummary::new(&m);
        assert!(light.trust_reasons().is_empty(), "{light:?}");
        let mut text = String::new();
        light.render(&[], &mut text);
        assert!(text.contains("CPU 30%"), "{text}");
        assert!(!text.contains("WARNING"), "{text}");

        m.set_times(
            Duration::from_millis(950),
            Duration::from_millis(50),
            Duration::from_secs(1),
        );
        for _ in 0..10 {
            m.record_lag(Duration::from_millis(5));
        }
        m.record_tick(Duration::from_millis(40));
        let heavy = SelfCheckSummary::new(&m);
        let reasons = heavy.trust_reasons();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(
            reasons[0].starts_with("generator CPU at 95%"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].starts_with("scheduler lag p99 5.00 ms"),
            "{reasons:?}"
        );
        assert!(
            reasons[2].starts_with("1 event-loop stalls in 2 ticks"),
            "{reasons:?}"
        );
        let mut text = String::new();
        heavy.render(&reasons, &mut text);
        assert!(
            text.contains("WARNING: latency figures are untrustworthy"),
            "{text}"
        );
    }
}
