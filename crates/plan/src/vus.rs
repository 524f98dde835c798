//! The k6-style executor models of the workload (virtual users that loop over iterations, and
//! arrival rates served by a VU pool), with their validation and timing.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// k6's default `gracefulStop` and `gracefulRampDown`.
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);
/// k6's default `maxDuration` of the iteration-count models.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

fn default_graceful() -> Duration {
    DEFAULT_GRACEFUL_STOP
}

fn default_time_unit() -> Duration {
    Duration::from_secs(1)
}

/// One stage of a ramping-VUs workload: go linearly to `target` VUs over `duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VuStage {
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    pub target: u64,
}

/// One stage of a ramping arrival rate: go linearly to `target` iterations per time unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateStage {
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    pub target: f64,
}

/// `vus` virtual users loop over iterations for `duration` (k6 `constant-vus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstantVus {
    pub vus: u64,
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    /// Iterations running at the end may finish within this long, then are interrupted.
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_stop: Duration,
}

/// Virtual users following stages (k6 `ramping-vus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampingVus {
    /// VUs at the start (0 when a plan leaves it out; scripts and `--stages` default to 1,
    /// like k6).
    #[serde(default)]
    pub start_vus: u64,
    pub stages: Vec<VuStage>,
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_stop: Duration,
    /// A VU above the target finishes its iteration within this long, then stops.
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_ramp_down: Duration,
}

/// `iterations` shared by `vus` virtual users (k6 `shared-iterations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedIterations {
    pub vus: u64,
    pub iterations: u64,
    #[serde(with = "crate::duration_ms", default = "default_max_duration")]
    pub max_duration: Duration,
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_stop: Duration,
}

/// Each of `vus` virtual users runs `iterations_per_vu` iterations (k6 `per-vu-iterations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerVuIterations {
    pub vus: u64,
    pub iterations_per_vu: u64,
    #[serde(with = "crate::duration_ms", default = "default_max_duration")]
    pub max_duration: Duration,
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_stop: Duration,
}

fn default_max_duration() -> Duration {
    DEFAULT_MAX_DURATION
}

/// Iterations started at a rate (per `time_unit`) by a pool of VUs (k6 `constant-arrival-rate`
/// and, with stages, `ramping-arrival-rate`). An iteration due while every VU is busy and
/// the pool is at `max_vus` is dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalPool {
    /// The rate at the start, per `time_unit`.
    pub start_rate: f64,
    #[serde(with = "crate::duration_ms", default = "default_time_unit")]
    pub time_unit: Duration,
    /// The rate over time; a constant rate is one stage whose target is the start rate.
    pub stages: Vec<RateStage>,
    pub pre_allocated_vus: u64,
    /// The pool may grow to this many VUs; never less than `pre_allocated_vus`.
    pub max_vus: u64,
    #[serde(with = "crate::duration_ms", default = "default_graceful")]
    pub graceful_stop: Duration,
}

impl ArrivalPool {
    /// A constant rate of `rate` per `time_unit` for `duration`.
    pub fn constant(
        rate: f64,
        time_unit: Duration,
        duration: Duration,
        pre: u64,
        max: u64,
    ) -> Self {
        Self {
            start_rate: rate,
            time_unit,
            stages: vec![RateStage {
                duration,
                target: rate,
            }],
            pre_allocated_vus: pre,
            max_vus: max.max(pre),
            graceful_stop: DEFAULT_GRACEFUL_STOP,
        }
    }

    /// When iterations stop being started.
    pub fn end(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }
}

impl RampingVus {
    pub fn end(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The most VUs the stages ever ask for.
    pub fn peak(&self) -> u64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .chain([self.start_vus])
            .max()
            .unwrap_or(0)
    }

    /// The VU target over time.
    pub fn schedule(&self) -> crate::Stages {
        crate::Stages::from_targets(
            self.start_vus as f64,
            self.stages.iter().map(|s| (s.duration, s.target as f64)),
        )
    }

    /// The target VU count `at` into the run (linear within a stage, rounded down like k6).
    pub fn target_at(&self, at: Duration) -> u64 {
        self.schedule().value_at(at).floor().max(0.0) as u64
    }
}

/// Checks stage lists: at least one, each with a positive duration.
pub(crate) fn check_stages(
    durations: impl Iterator<Item = Duration>,
) -> Result<(), crate::WorkloadError> {
    let mut any = false;
    for (i, duration) in durations.enumerate() {
        any = true;
        if duration.is_zero() {
            return Err(crate::WorkloadError::BadStage {
                stage: i + 1,
                problem: "duration must be greater than zero".into(),
            });
        }
    }
    if any {
        Ok(())
    } else {
        Err(crate::WorkloadError::NoStages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(secs: u64, target: u64) -> VuStage {
        VuStage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    #[test]
    fn ramping_targets_interpolate_and_hold_the_last_value() {
        let ramp = RampingVus {
            start_vus: 0,
            stages: vec![stage(10, 50), stage(5, 50), stage(10, 0)],
            graceful_stop: DEFAULT_GRACEFUL_STOP,
            graceful_ramp_down: DEFAULT_GRACEFUL_STOP,
        };
        assert_eq!(ramp.target_at(Duration::ZERO), 0);
        assert_eq!(ramp.target_at(Duration::from_secs(5)), 25);
        assert_eq!(ramp.target_at(Duration::from_secs(12)), 50);
        assert_eq!(ramp.target_at(Duration::from_secs(20)), 25);
        assert_eq!(ramp.target_at(Duration::from_secs(99)), 0);
        assert_eq!((ramp.peak(), ramp.end()), (50, Duration::from_secs(25)));
    }

    #[test]
    fn arrival_pool_expects_the_area_under_the_rate() {
        let mut pool =
            ArrivalPool::constant(20.0, Duration::from_secs(2), Duration::from_secs(10), 2, 1);
        assert_eq!(pool.max_vus, 2);
        let expected = |pool: &ArrivalPool| {
            crate::Workload::ArrivalPool(pool.clone())
                .arrival_schedule()
                .unwrap()
                .total()
        };
        assert_eq!(expected(&pool), 100.0);
        pool.stages.push(RateStage {
            duration: Duration::from_secs(4),
            target: 0.0,
        });
        assert_eq!(expected(&pool), 120.0);
        assert_eq!(pool.end(), Duration::from_secs(14));
    }
}
