//! What every consumer asks of a workload, answered once here over [`Stages`]: its planned
//! arrival schedule, a time limit (`--duration-limit`), a rate factor (`--rate-factor`) and the
//! grace period of a stop. Front ends, the CLI's overrides, the engine and the report call
//! these instead of matching on the models themselves.

use crate::stages::Stages;
use crate::vus::{VuStage, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION};
use crate::workload::{Admission, Bound, Workload};
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

impl Workload {
    /// The planned arrivals per second over time, for the models whose starts follow a
    /// schedule rather than the clients (open arrivals, and the arrival rate served by a
    /// pool): the report's "planned" figures and line.
    pub fn arrival_schedule(&self) -> Option<Stages> {
        match &self.admission {
            Admission::PerArrival { .. } | Admission::GrowAndDrop { .. } => {
                Some(self.schedule.clone())
            }
            Admission::Loop | Admission::Paced { .. } | Admission::Recorded { .. } => None,
        }
    }

    /// The VU target over time of the closed models that follow one for a duration.
    pub fn vu_schedule(&self) -> Option<Stages> {
        (self.admission == Admission::Loop && self.bound == Bound::Duration)
            .then(|| self.schedule.clone())
    }

    /// Multiplies the arrival rate by `factor` (`--rate-factor`).
    pub fn scale_rate(&mut self, factor: f64) -> Result<(), OverrideError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(OverrideError::BadFactor(factor));
        }
        if self.admission == Admission::Loop {
            return Err(OverrideError::NotARate);
        }
        if let Admission::Recorded { arrivals } = &mut self.admission {
            // Twice the rate is the recording played twice as fast.
            for arrival in arrivals.iter_mut() {
                arrival.offset = arrival.offset.div_f64(factor);
            }
            self.schedule = crate::workload::recorded_schedule(arrivals);
            return Ok(());
        }
        self.schedule = self.schedule.scale(factor);
        Ok(())
    }

    /// Ends the whole test at `limit` (`--duration-limit`): the schedule is cut where it
    /// stands, and sessions still running after the last start get only the time left before
    /// the limit, then count as interrupted.
    pub fn cap_at(&mut self, limit: Duration) -> Result<(), OverrideError> {
        if limit.is_zero() {
            return Err(OverrideError::ZeroLimit);
        }
        match &mut self.bound {
            Bound::Duration => {
                if let Admission::Recorded { arrivals } = &mut self.admission {
                    arrivals.retain(|a| a.offset < limit);
                    self.schedule = crate::workload::recorded_schedule(arrivals);
                } else {
                    self.schedule = self.schedule.cap_at(limit);
                }
            }
            Bound::Iterations { max_duration, .. } => {
                *max_duration = Some(max_duration.map_or(limit, |d| d.min(limit)))
            }
        }
        let last_start = self.iterations_end().unwrap_or(limit);
        self.grace.end = self.grace.end.min(limit.saturating_sub(last_start));
        Ok(())
    }

    /// The workload `change` describes (itself when `change` is empty).
    pub fn with_vus(&self, change: &VuOverride) -> Result<Workload, OverrideError> {
        if *change == VuOverride::default() {
            return Ok(self.clone());
        }
        // k6's own models keep their graceful stop; hey's and the open model name none.
        let k6_loop = self.admission == Admission::Loop && self.grace.stop.is_none();
        let keeps_grace = k6_loop || matches!(self.admission, Admission::GrowAndDrop { .. });
        let graceful_stop = if keeps_grace {
            self.grace.end
        } else {
            DEFAULT_GRACEFUL_STOP
        };
        let plan_vus = (self.admission == Admission::Loop)
            .then(|| self.vus())
            .flatten();
        let vus = change.vus.or(plan_vus).unwrap_or(1);
        Ok(if let Some(stages) = &change.stages {
            let stages: Vec<(Duration, u64)> =
                stages.iter().map(|s| (s.duration, s.target)).collect();
            let ramp_down = if self.ramps_clients() && k6_loop {
                self.grace.ramp_down
            } else {
                DEFAULT_GRACEFUL_STOP
            };
            // k6's default: one VU from the start.
            Workload::ramping_vus(1, &stages, graceful_stop, ramp_down)
        } else if let Some(iterations) = change.iterations {
            Workload::counted(
                vus,
                iterations,
                false,
                change.duration.unwrap_or(DEFAULT_MAX_DURATION),
                graceful_stop,
            )
        } else {
            let duration = change
                .duration
                .or_else(|| self.duration())
                .ok_or(OverrideError::NoDuration)?;
            Workload::constant_vus(vus, duration, graceful_stop)
        })
    }

    /// How long running iterations may go on after a graceful stop (Ctrl-C, `abortOnFail`):
    /// the grace's stop, else its end (k6's `gracefulStop`, the open model's grace period).
    pub fn stop_grace(&self) -> Duration {
        self.grace.stop.unwrap_or(self.grace.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Piece;

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> Piece {
        Piece {
            duration: Duration::from_secs(secs),
            from: rate,
            to: ramp_to.unwrap_or(rate),
        }
    }

    fn open(phases: Vec<Piece>) -> Workload {
        Workload::open(Stages::new(phases), None, Duration::from_secs(10))
    }

    #[test]
    fn a_limit_cuts_phases_and_ramps_where_they_stand() {
        let all = vec![phase(10, 10.0, Some(20.0)), phase(10, 5.0, None)];
        let capped = |secs: u64| {
            let mut w = open(all.clone());
            w.cap_at(Duration::from_secs(secs)).unwrap();
            w
        };
        assert_eq!(capped(5).schedule.pieces, vec![phase(5, 10.0, Some(15.0))]);
        assert_eq!(
            capped(15).schedule.pieces,
            vec![all[0], phase(5, 5.0, None)]
        );
        // Past the arrivals, the grace period is what is left of the limit.
        let w = capped(60);
        assert_eq!(w.schedule.pieces, all);
        assert_eq!(w.graceful_stop(), Duration::from_secs(10));
        assert_eq!(capped(25).graceful_stop(), Duration::from_secs(5));
        assert_eq!(capped(5).graceful_stop(), Duration::ZERO);
        assert_eq!(
            open(all).cap_at(Duration::ZERO),
            Err(OverrideError::ZeroLimit)
        );
    }

    #[test]
    fn a_limit_cuts_vu_and_rate_stages_and_counts_where_they_stand() {
        let none = Duration::ZERO;
        let secs = Duration::from_secs;
        let mut w = Workload::ramping_vus(0, &[(secs(10), 50), (secs(10), 50)], none, none);
        w.cap_at(secs(4)).unwrap();
        assert_eq!(w.schedule, Stages::from_targets(0.0, [(secs(4), 20.0)]));
        let mut w =
            Workload::arrival_rate(0.0, secs(1), &[(secs(10), 100.0)], (1, 1), none).unwrap();
        w.cap_at(secs(5)).unwrap();
        assert_eq!(w.schedule, Stages::from_targets(0.0, [(secs(5), 50.0)]));
        // A count-bounded run also stops at the limit, whichever comes first.
        let mut w = Workload::closed(2, None, Some(100));
        w.cap_at(secs(3)).unwrap();
        assert_eq!((w.iterations(), w.hard_stop()), (Some(100), Some(secs(3))));
    }

    #[test]
    fn rate_factors_scale_every_arrival_model_and_refuse_vus() {
        let mut w = open(vec![phase(10, 10.0, Some(20.0))]);
        w.scale_rate(0.5).unwrap();
        assert_eq!(w.schedule.pieces, vec![phase(10, 5.0, Some(10.0))]);
        assert_eq!(w.arrival_schedule().unwrap().total(), 75.0);
        let mut pool = Workload::arrival_rate(
            20.0,
            Duration::from_secs(2),
            &[(Duration::from_secs(10), 20.0)],
            (1, 1),
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(pool.arrival_schedule().unwrap().total(), 100.0);
        pool.scale_rate(2.0).unwrap();
        assert_eq!(pool.arrival_schedule().unwrap().total(), 200.0);
        let mut paced = Workload::paced(10.0, 1, Some(Duration::from_secs(1)), None);
        paced.scale_rate(3.0).unwrap();
        assert_eq!(paced.schedule.value_at(Duration::ZERO), 30.0);
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(w.scale_rate(bad).is_err());
        }
        let mut vus = Workload::constant_vus(2, Duration::from_secs(1), Duration::ZERO);
        assert_eq!(vus.scale_rate(2.0), Err(OverrideError::NotARate));
        assert_eq!(vus.vu_schedule().unwrap().value_at(Duration::ZERO), 2.0);
    }

    #[test]
    fn vu_overrides_replace_the_model_and_keep_k6_graces() {
        let secs = Duration::from_secs;
        let k6 = Workload::constant_vus(5, secs(10), secs(7));
        let w = k6
            .with_vus(&VuOverride {
                iterations: Some(9),
                ..VuOverride::default()
            })
            .unwrap();
        assert_eq!(
            w,
            Workload::counted(5, 9, false, DEFAULT_MAX_DURATION, secs(7))
        );
        let hey = Workload::closed(3, Some(secs(4)), None);
        let w = hey
            .with_vus(&VuOverride {
                vus: Some(8),
                ..VuOverride::default()
            })
            .unwrap();
        assert_eq!(w, Workload::constant_vus(8, secs(4), DEFAULT_GRACEFUL_STOP));
        let counted = Workload::closed(3, None, Some(4));
        assert_eq!(
            counted.with_vus(&VuOverride {
                vus: Some(1),
                ..VuOverride::default()
            }),
            Err(OverrideError::NoDuration)
        );
    }
}
