//! What every consumer asks of a workload, answered once here over [`Stages`]: its planned
//! arrival schedule, a time limit (`--duration-limit`), a rate factor (`--rate-factor`) and the
//! grace period of a stop. Front ends, the CLI's overrides, the engine and the report call
//! these instead of matching on the models themselves.

use crate::stages::Stages;
use crate::vus::{
    ConstantVus, RampingVus, RateStage, SharedIterations, VuStage, DEFAULT_GRACEFUL_STOP,
    DEFAULT_MAX_DURATION,
};
use crate::workload::{ArrivalPhase, Workload};
use std::time::Duration;

/// Why a workload cannot take an override.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OverrideError {
    #[error("must be a positive number, got {0}")]
    BadFactor(f64),
    #[error("the plan has virtual users, not an arrival rate")]
    NotARate,
    #[error("must be greater than zero")]
    ZeroLimit,
    #[error("the plan has no duration; add --duration")]
    NoDuration,
}

/// k6's closed-model overrides (`--vus`, `--duration`, `--stages`, `--iterations`): they
/// replace a workload with the virtual-user model they describe, taking what they leave out
/// from the workload they replace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VuOverride {
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub stages: Option<Vec<VuStage>>,
    pub iterations: Option<u64>,
}

fn phases_to_stages(phases: &[ArrivalPhase]) -> Stages {
    Stages::new(phases.iter().map(ArrivalPhase::piece).collect())
}

fn stages_to_phases(stages: &Stages) -> Vec<ArrivalPhase> {
    stages
        .pieces
        .iter()
        .map(|p| ArrivalPhase::new(p.duration, p.from, (p.to != p.from).then_some(p.to)))
        .collect()
}

impl Workload {
    /// The planned arrivals per second over time, for the models whose starts follow a
    /// schedule rather than the clients (open arrivals, and the arrival rate served by a
    /// pool): the report's "planned" figures and line.
    pub fn arrival_schedule(&self) -> Option<Stages> {
        match self {
            Workload::OpenArrivals(open) => Some(phases_to_stages(&open.phases)),
            Workload::ArrivalPool(pool) => Some(
                Stages::from_targets(
                    pool.start_rate,
                    pool.stages.iter().map(|s| (s.duration, s.target)),
                )
                .scale(1.0 / pool.time_unit.as_secs_f64()),
            ),
            _ => None,
        }
    }

    /// The VU target over time of the models that follow one (`ramping-vus`,
    /// `constant-vus`).
    pub fn vu_schedule(&self) -> Option<Stages> {
        match self {
            Workload::RampingVus(r) => Some(r.schedule()),
            Workload::ConstantVus(c) => Some(Stages::from_targets(
                c.vus as f64,
                [(c.duration, c.vus as f64)],
            )),
            _ => None,
        }
    }

    /// Multiplies the arrival rate by `factor` (`--rate-factor`).
    pub fn scale_rate(&mut self, factor: f64) -> Result<(), OverrideError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(OverrideError::BadFactor(factor));
        }
        match self {
            Workload::OpenArrivals(open) => {
                open.phases = stages_to_phases(&phases_to_stages(&open.phases).scale(factor))
            }
            Workload::ArrivalRate(rate) => rate.rate_per_second *= factor,
            // Twice the rate is the recording played twice as fast.
            Workload::RecordedArrivals(recorded) => {
                for arrival in &mut recorded.arrivals {
                    arrival.offset = arrival.offset.div_f64(factor);
                }
            }
            Workload::ArrivalPool(pool) => {
                pool.start_rate *= factor;
                for stage in &mut pool.stages {
                    stage.target *= factor;
                }
            }
            Workload::ClosedVus(_)
            | Workload::ConstantVus(_)
            | Workload::RampingVus(_)
            | Workload::SharedIterations(_)
            | Workload::PerVuIterations(_) => return Err(OverrideError::NotARate),
        }
        Ok(())
    }

    /// Ends the whole test at `limit` (`--duration-limit`): schedules are cut where they
    /// stand, and sessions still running after the last start get only the time left before
    /// the limit, then count as interrupted.
    pub fn cap_at(&mut self, limit: Duration) -> Result<(), OverrideError> {
        if limit.is_zero() {
            return Err(OverrideError::ZeroLimit);
        }
        let capped_vus = self.vu_schedule().map(|s| s.cap_at(limit));
        let cap = |d: &mut Option<Duration>| *d = Some(d.map_or(limit, |d| d.min(limit)));
        match self {
            Workload::OpenArrivals(open) => {
                open.phases = stages_to_phases(&phases_to_stages(&open.phases).cap_at(limit))
            }
            Workload::RecordedArrivals(recorded) => {
                recorded.arrivals.retain(|a| a.offset < limit);
            }
            Workload::ClosedVus(closed) => cap(&mut closed.duration),
            Workload::ArrivalRate(rate) => cap(&mut rate.duration),
            Workload::ConstantVus(c) => c.duration = c.duration.min(limit),
            Workload::RampingVus(r) => {
                // A stage cut short ends at the VUs it had reached (rounded down, like the
                // ramp itself).
                r.stages = capped_vus
                    .iter()
                    .flat_map(|stages| &stages.pieces)
                    .map(|p| VuStage {
                        duration: p.duration,
                        target: p.to.floor().max(0.0) as u64,
                    })
                    .collect();
            }
            Workload::SharedIterations(s) => s.max_duration = s.max_duration.min(limit),
            Workload::PerVuIterations(p) => p.max_duration = p.max_duration.min(limit),
            Workload::ArrivalPool(pool) => {
                let capped = Stages::from_targets(
                    pool.start_rate,
                    pool.stages.iter().map(|s| (s.duration, s.target)),
                )
                .cap_at(limit);
                pool.stages = capped
                    .pieces
                    .iter()
                    .map(|p| RateStage {
                        duration: p.duration,
                        target: p.to,
                    })
                    .collect();
            }
        }
        let last_start = self.iterations_end().unwrap_or(limit);
        self.cap_graceful_stop(limit.saturating_sub(last_start));
        Ok(())
    }

    /// The workload `change` describes (itself when `change` is empty).
    pub fn with_vus(&self, change: &VuOverride) -> Result<Workload, OverrideError> {
        if *change == VuOverride::default() {
            return Ok(self.clone());
        }
        let graceful_stop = match self {
            Workload::OpenArrivals(_)
            | Workload::RecordedArrivals(_)
            | Workload::ClosedVus(_)
            | Workload::ArrivalRate(_) => DEFAULT_GRACEFUL_STOP,
            other => other.graceful_stop(),
        };
        let plan_vus = match self {
            Workload::OpenArrivals(_)
            | Workload::RecordedArrivals(_)
            | Workload::ArrivalPool(_)
            | Workload::ArrivalRate(_) => None,
            other => other.vus(),
        };
        let vus = change.vus.or(plan_vus).unwrap_or(1);
        Ok(if let Some(stages) = &change.stages {
            Workload::RampingVus(RampingVus {
                // k6's default: one VU from the start.
                start_vus: 1,
                stages: stages.clone(),
                graceful_stop,
                graceful_ramp_down: match self {
                    Workload::RampingVus(r) => r.graceful_ramp_down,
                    _ => DEFAULT_GRACEFUL_STOP,
                },
            })
        } else if let Some(iterations) = change.iterations {
            Workload::SharedIterations(SharedIterations {
                vus,
                iterations,
                max_duration: change.duration.unwrap_or(DEFAULT_MAX_DURATION),
                graceful_stop,
            })
        } else {
            let duration = change
                .duration
                .or_else(|| self.duration())
                .ok_or(OverrideError::NoDuration)?;
            Workload::ConstantVus(ConstantVus {
                vus,
                duration,
                graceful_stop,
            })
        })
    }

    /// How long running iterations may go on after a graceful stop (Ctrl-C, `abortOnFail`):
    /// the workload's `gracefulStop` (or grace period); quick's models name none, so their
    /// in-flight requests get k6's default (each is bounded by the request timeout anyway).
    pub fn stop_grace(&self) -> Duration {
        match self {
            Workload::ClosedVus(_) | Workload::ArrivalRate(_) => DEFAULT_GRACEFUL_STOP,
            other => other.graceful_stop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vus::{ArrivalPool, RampingVus};
    use crate::workload::OpenArrivals;

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> ArrivalPhase {
        ArrivalPhase::new(Duration::from_secs(secs), rate, ramp_to)
    }

    fn open(phases: Vec<ArrivalPhase>) -> Workload {
        Workload::OpenArrivals(OpenArrivals {
            phases,
            max_clients: None,
            grace_period: Duration::from_secs(10),
        })
    }

    fn phases(w: &Workload) -> Vec<ArrivalPhase> {
        match w {
            Workload::OpenArrivals(open) => open.phases.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_limit_cuts_phases_and_ramps_where_they_stand() {
        let all = vec![phase(10, 10.0, Some(20.0)), phase(10, 5.0, None)];
        let capped = |secs: u64| {
            let mut w = open(all.clone());
            w.cap_at(Duration::from_secs(secs)).unwrap();
            w
        };
        assert_eq!(phases(&capped(5)), vec![phase(5, 10.0, Some(15.0))]);
        assert_eq!(
            phases(&capped(15)),
            vec![all[0].clone(), phase(5, 5.0, None)]
        );
        // Past the arrivals, the grace period is what is left of the limit.
        let w = capped(60);
        assert_eq!(phases(&w), all);
        assert_eq!(w.graceful_stop(), Duration::from_secs(10));
        assert_eq!(capped(25).graceful_stop(), Duration::from_secs(5));
        assert_eq!(capped(5).graceful_stop(), Duration::ZERO);
        assert_eq!(
            open(all).cap_at(Duration::ZERO),
            Err(OverrideError::ZeroLimit)
        );
    }

    #[test]
    fn a_limit_cuts_vu_and_rate_stages_where_they_stand() {
        let mut w = Workload::RampingVus(RampingVus {
            start_vus: 0,
            stages: vec![
                VuStage {
                    duration: Duration::from_secs(10),
                    target: 50,
                },
                VuStage {
                    duration: Duration::from_secs(10),
                    target: 50,
                },
            ],
            graceful_stop: Duration::ZERO,
            graceful_ramp_down: Duration::ZERO,
        });
        w.cap_at(Duration::from_secs(4)).unwrap();
        let Workload::RampingVus(r) = &w else {
            unreachable!()
        };
        assert_eq!(
            r.stages,
            vec![VuStage {
                duration: Duration::from_secs(4),
                target: 20
            }]
        );
        let mut pool =
            ArrivalPool::constant(0.0, Duration::from_secs(1), Duration::from_secs(10), 1, 1);
        pool.stages[0].target = 100.0;
        let mut w = Workload::ArrivalPool(pool);
        w.cap_at(Duration::from_secs(5)).unwrap();
        let Workload::ArrivalPool(pool) = &w else {
            unreachable!()
        };
        assert_eq!(
            pool.stages,
            vec![RateStage {
                duration: Duration::from_secs(5),
                target: 50.0
            }]
        );
    }

    #[test]
    fn rate_factors_scale_every_arrival_model_and_refuse_vus() {
        let mut w = open(vec![phase(10, 10.0, Some(20.0))]);
        w.scale_rate(0.5).unwrap();
        assert_eq!(phases(&w), vec![phase(10, 5.0, Some(10.0))]);
        assert_eq!(w.arrival_schedule().unwrap().total(), 75.0);
        let mut pool = Workload::ArrivalPool(ArrivalPool::constant(
            20.0,
            Duration::from_secs(2),
            Duration::from_secs(10),
            1,
            1,
        ));
        assert_eq!(pool.arrival_schedule().unwrap().total(), 100.0);
        pool.scale_rate(2.0).unwrap();
        assert_eq!(pool.arrival_schedule().unwrap().total(), 200.0);
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(w.scale_rate(bad).is_err());
        }
        let mut vus = Workload::ConstantVus(crate::ConstantVus {
            vus: 2,
            duration: Duration::from_secs(1),
            graceful_stop: Duration::ZERO,
        });
        assert_eq!(vus.scale_rate(2.0), Err(OverrideError::NotARate));
        assert_eq!(vus.vu_schedule().unwrap().value_at(Duration::ZERO), 2.0);
    }
}
