//! Workload models: how many clients run, when they start, and when the test ends.

use crate::vus::{
    check_stages, ArrivalPool, ConstantVus, PerVuIterations, RampingVus, SharedIterations,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How load is generated over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Workload {
    /// Closed model: `vus` virtual users each run sessions back to back; the next iteration
    /// starts when the previous one ends.
    ClosedVus(ClosedVus),
    /// Paced (open-loop) model: iterations are scheduled at a constant rate independently of
    /// responses and served by a pool of `vus` clients; latency counts from the scheduled
    /// start, so a slow target cannot hide its slowness by slowing the generator down.
    ArrivalRate(ArrivalRate),
    /// Open model: new clients arrive as a Poisson process whose rate follows the phases;
    /// each runs one session to its end on its own connection, independent of the others.
    OpenArrivals(OpenArrivals),
    /// k6 `constant-vus`: VUs loop over iterations for a duration.
    ConstantVus(ConstantVus),
    /// k6 `ramping-vus`: the VU count follows stages.
    RampingVus(RampingVus),
    /// k6 `shared-iterations`: VUs share an iteration count.
    SharedIterations(SharedIterations),
    /// k6 `per-vu-iterations`: each VU runs a fixed number of iterations.
    PerVuIterations(PerVuIterations),
    /// k6 `constant-arrival-rate` / `ramping-arrival-rate`: iterations start at a rate,
    /// served by a pool of VUs; those due while the pool is exhausted are dropped.
    ArrivalPool(ArrivalPool),
    /// Replay of a recording: one client per arrival, at the recorded offset, running the
    /// session the arrival names (`barrage replay`).
    RecordedArrivals(RecordedArrivals),
}

/// Arrivals at fixed offsets, each running a named session once on its own connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedArrivals {
    /// In order of their offsets.
    pub arrivals: Vec<RecordedArrival>,
    /// After the last arrival, how long running sessions may take to finish.
    #[serde(with = "crate::duration_ms")]
    pub grace_period: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecordedArrival {
    /// From the start of the run.
    #[serde(with = "crate::duration_ms")]
    pub offset: Duration,
    /// Index into the plan's sessions.
    pub session: usize,
}

impl RecordedArrivals {
    /// When arrivals stop: just after the last one (so it is still inside the run).
    pub fn arrivals_end(&self) -> Duration {
        self.arrivals.last().map_or(Duration::ZERO, |a| a.offset) + Duration::from_millis(1)
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        if self.arrivals.is_empty() {
            return Err(WorkloadError::NoArrivals);
        }
        if self.arrivals.windows(2).any(|w| w[1].offset < w[0].offset) {
            return Err(WorkloadError::UnorderedArrivals);
        }
        Ok(())
    }
}

/// One phase of an open workload: `rate` clients per second for `duration`, ramped linearly
/// to `ramp_to` by the phase's end when given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalPhase {
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    pub rate: f64,
    pub ramp_to: Option<f64>,
}

impl ArrivalPhase {
    pub fn new(duration: Duration, rate: f64, ramp_to: Option<f64>) -> Self {
        Self {
            duration,
            rate,
            ramp_to,
        }
    }

    /// The phase as a piece of a schedule.
    pub fn piece(&self) -> crate::Piece {
        crate::Piece {
            duration: self.duration,
            from: self.rate,
            to: self.ramp_to.unwrap_or(self.rate),
        }
    }

    /// The arrival rate `offset` into this phase.
    pub fn rate_at(&self, offset: Duration) -> f64 {
        self.piece().value_at(offset)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenArrivals {
    pub phases: Vec<ArrivalPhase>,
    /// Clients allowed to run at once; arrivals beyond it are counted as dropped.
    pub max_clients: Option<u64>,
    /// After the last arrival, how long running sessions may take to finish before they are
    /// stopped and counted as interrupted.
    #[serde(with = "crate::duration_ms")]
    pub grace_period: Duration,
}

impl OpenArrivals {
    /// When arrivals stop, from the start of the run.
    pub fn arrivals_end(&self) -> Duration {
        self.phases.iter().map(|p| p.duration).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedVus {
    pub vus: u64,
    /// Stop after this long (wins over `iterations`).
    #[serde(with = "crate::duration_ms::option")]
    pub duration: Option<Duration>,
    /// Stop after this many iterations in total, shared by all VUs.
    pub iterations: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalRate {
    /// Iterations started per second, over the whole run.
    pub rate_per_second: f64,
    /// Clients (each with its own connection) that serve the scheduled iterations.
    pub vus: u64,
    #[serde(with = "crate::duration_ms::option")]
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error("the number of virtual users must be at least 1")]
    NoVus,
    #[error("the workload needs a duration or an iteration count, or it would never end")]
    Unbounded,
    #[error("the duration must be greater than zero")]
    ZeroDuration,
    #[error("the arrival rate must be a positive number, got {0}")]
    BadRate(f64),
    #[error("arrival phase {phase}: {problem}")]
    BadPhase { phase: usize, problem: String },
    #[error("an open workload needs at least one arrival phase")]
    NoPhases,
    #[error("a recorded workload needs at least one arrival")]
    NoArrivals,
    #[error("recorded arrivals must be in order of their offsets")]
    UnorderedArrivals,
    #[error("max clients must be at least 1")]
    NoClients,
    #[error("stage {stage}: {problem}")]
    BadStage { stage: usize, problem: String },
    #[error("the workload needs at least one stage")]
    NoStages,
    #[error("the iteration count must be at least 1")]
    NoIterations,
    #[error("the time unit must be greater than zero")]
    ZeroTimeUnit,
    #[error("maxVUs ({max}) is less than preAllocatedVUs ({pre})")]
    PoolTooSmall { pre: u64, max: u64 },
    #[error("the stages never ask for a virtual user (every target is 0)")]
    NoPeak,
}

impl Workload {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let (vus, duration, iterations) = match self {
            Workload::ClosedVus(c) => (c.vus, c.duration, c.iterations),
            Workload::ArrivalRate(a) => {
                if !(a.rate_per_second.is_finite() && a.rate_per_second > 0.0) {
                    return Err(WorkloadError::BadRate(a.rate_per_second));
                }
                (a.vus, a.duration, a.iterations)
            }
            Workload::OpenArrivals(open) => return open.validate(),
            Workload::RecordedArrivals(recorded) => return recorded.validate(),
            Workload::ConstantVus(c) => (c.vus, Some(c.duration), None),
            Workload::RampingVus(r) => {
                check_stages(r.stages.iter().map(|s| s.duration))?;
                if r.peak() == 0 {
                    return Err(WorkloadError::NoPeak);
                }
                (r.peak(), Some(r.end()), None)
            }
            Workload::SharedIterations(s) => {
                if s.iterations == 0 {
                    return Err(WorkloadError::NoIterations);
                }
                (s.vus, Some(s.max_duration), None)
            }
            Workload::PerVuIterations(p) => {
                if p.iterations_per_vu == 0 {
                    return Err(WorkloadError::NoIterations);
                }
                (p.vus, Some(p.max_duration), None)
            }
            Workload::ArrivalPool(pool) => {
                check_stages(pool.stages.iter().map(|s| s.duration))?;
                if pool.time_unit.is_zero() {
                    return Err(WorkloadError::ZeroTimeUnit);
                }
                for rate in
                    std::iter::once(pool.start_rate).chain(pool.stages.iter().map(|s| s.target))
                {
                    if !(rate.is_finite() && rate >= 0.0) {
                        return Err(WorkloadError::BadRate(rate));
                    }
                }
                if pool.max_vus < pool.pre_allocated_vus {
                    return Err(WorkloadError::PoolTooSmall {
                        pre: pool.pre_allocated_vus,
                        max: pool.max_vus,
                    });
                }
                (pool.max_vus, Some(pool.end()), None)
            }
        };
        if vus == 0 {
            return Err(WorkloadError::NoVus);
        }
        match (duration, iterations) {
            (None, None) => Err(WorkloadError::Unbounded),
            (Some(d), _) if d.is_zero() => Err(WorkloadError::ZeroDuration),
            _ => Ok(()),
        }
    }

    /// Clients that run at the same time, when the model fixes it.
    pub fn vus(&self) -> Option<u64> {
        match self {
            Workload::ClosedVus(c) => Some(c.vus),
            Workload::ArrivalRate(a) => Some(a.vus),
            Workload::OpenArrivals(_) | Workload::RecordedArrivals(_) => None,
            Workload::ConstantVus(c) => Some(c.vus),
            Workload::RampingVus(r) => Some(r.peak()),
            Workload::SharedIterations(s) => Some(s.vus),
            Workload::PerVuIterations(p) => Some(p.vus),
            Workload::ArrivalPool(pool) => Some(pool.max_vus),
        }
    }

    /// The planned duration, if the test is time-bounded: for the open model, the arrival
    /// phases (the grace period may follow).
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Workload::ClosedVus(c) => c.duration,
            Workload::ArrivalRate(a) => a.duration,
            Workload::OpenArrivals(open) => Some(open.arrivals_end()),
            Workload::RecordedArrivals(recorded) => Some(recorded.arrivals_end()),
            Workload::ConstantVus(c) => Some(c.duration),
            Workload::RampingVus(r) => Some(r.end()),
            Workload::SharedIterations(_) | Workload::PerVuIterations(_) => None,
            Workload::ArrivalPool(pool) => Some(pool.end()),
        }
    }

    /// How long running iterations may go on after the last one started (`gracefulStop`,
    /// or the open model's grace period).
    pub fn graceful_stop(&self) -> Duration {
        match self {
            Workload::ClosedVus(_) | Workload::ArrivalRate(_) => Duration::ZERO,
            Workload::OpenArrivals(open) => open.grace_period,
            Workload::RecordedArrivals(recorded) => recorded.grace_period,
            Workload::ConstantVus(c) => c.graceful_stop,
            Workload::RampingVus(r) => r.graceful_stop,
            Workload::SharedIterations(s) => s.graceful_stop,
            Workload::PerVuIterations(p) => p.graceful_stop,
            Workload::ArrivalPool(pool) => pool.graceful_stop,
        }
    }

    /// Shortens the graceful stop (or grace period) to at most `max`.
    pub fn cap_graceful_stop(&mut self, max: Duration) {
        let graceful = match self {
            Workload::ClosedVus(_) | Workload::ArrivalRate(_) => return,
            Workload::OpenArrivals(open) => &mut open.grace_period,
            Workload::RecordedArrivals(recorded) => &mut recorded.grace_period,
            Workload::ConstantVus(c) => &mut c.graceful_stop,
            Workload::RampingVus(r) => &mut r.graceful_stop,
            Workload::SharedIterations(s) => &mut s.graceful_stop,
            Workload::PerVuIterations(p) => &mut p.graceful_stop,
            Workload::ArrivalPool(pool) => &mut pool.graceful_stop,
        };
        *graceful = (*graceful).min(max);
    }

    /// When new iterations stop being started, from the start of the run.
    pub fn iterations_end(&self) -> Option<Duration> {
        match self {
            Workload::SharedIterations(s) => Some(s.max_duration),
            Workload::PerVuIterations(p) => Some(p.max_duration),
            other => other.duration(),
        }
    }

    /// When the run is stopped at the latest, cancelling whatever still runs.
    pub fn hard_stop(&self) -> Option<Duration> {
        match self {
            Workload::ClosedVus(_) | Workload::ArrivalRate(_) => self.duration(),
            other => other
                .iterations_end()
                .map(|end| end + other.graceful_stop()),
        }
    }

    /// The planned iteration count, if the test is count-bounded and not time-bounded.
    pub fn iterations(&self) -> Option<u64> {
        match self {
            Workload::ClosedVus(c) if c.duration.is_none() => c.iterations,
            Workload::ArrivalRate(a) if a.duration.is_none() => a.iterations,
            Workload::SharedIterations(s) => Some(s.iterations),
            Workload::PerVuIterations(p) => Some(p.vus.saturating_mul(p.iterations_per_vu)),
            _ => None,
        }
    }
}

impl OpenArrivals {
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.phases.is_empty() {
            return Err(WorkloadError::NoPhases);
        }
        if self.max_clients == Some(0) {
            return Err(WorkloadError::NoClients);
        }
        for (i, phase) in self.phases.iter().enumerate() {
            let bad = |problem: String| WorkloadError::BadPhase {
                phase: i + 1,
                problem,
            };
            if phase.duration.is_zero() {
                return Err(bad("duration must be greater than zero".into()));
            }
            for (name, rate) in [("rate", Some(phase.rate)), ("rampTo", phase.ramp_to)] {
                if let Some(rate) = rate {
                    if !(rate.is_finite() && rate >= 0.0) {
                        return Err(bad(format!(
                            "{name} must be a non-negative number, got {rate}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbounded_and_zero_vus_are_rejected() {
        let w = Workload::ClosedVus(ClosedVus {
            vus: 1,
            duration: None,
            iterations: None,
        });
        assert_eq!(w.validate(), Err(WorkloadError::Unbounded));
        let w = Workload::ClosedVus(ClosedVus {
            vus: 0,
            duration: None,
            iterations: Some(1),
        });
        assert_eq!(w.validate(), Err(WorkloadError::NoVus));
    }

    #[test]
    fn rate_must_be_positive_and_finite() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let w = Workload::ArrivalRate(ArrivalRate {
                rate_per_second: rate,
                vus: 1,
                duration: Some(Duration::from_secs(1)),
                iterations: None,
            });
            assert!(
                matches!(w.validate(), Err(WorkloadError::BadRate(_))),
                "{rate}"
            );
        }
    }

    fn open(phases: Vec<ArrivalPhase>) -> Workload {
        Workload::OpenArrivals(OpenArrivals {
            phases,
            max_clients: None,
            grace_period: Duration::from_secs(2),
        })
    }

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> ArrivalPhase {
        ArrivalPhase::new(Duration::from_secs(secs), rate, ramp_to)
    }

    #[test]
    fn open_phases_are_validated_with_their_position() {
        assert_eq!(open(vec![]).validate(), Err(WorkloadError::NoPhases));
        let e = open(vec![phase(1, 5.0, None), phase(2, -1.0, None)])
            .validate()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "arrival phase 2: rate must be a non-negative number, got -1"
        );
        let e = open(vec![phase(0, 5.0, None)]).validate().unwrap_err();
        assert!(e.to_string().starts_with("arrival phase 1: duration"));
        assert!(open(vec![phase(1, 5.0, Some(f64::NAN))])
            .validate()
            .is_err());
    }

    #[test]
    fn ramps_interpolate_and_stop_times_add_up() {
        let p = phase(10, 10.0, Some(30.0));
        assert_eq!(p.rate_at(Duration::from_secs(5)), 20.0);
        let w = open(vec![p, phase(5, 1.0, None)]);
        assert_eq!(w.arrival_schedule().unwrap().total(), 205.0);
        assert_eq!(w.duration(), Some(Duration::from_secs(15)));
        assert_eq!(w.hard_stop(), Some(Duration::from_secs(17)));
        assert_eq!(w.vus(), None);
    }

    #[test]
    fn duration_wins_over_iterations() {
        let w = Workload::ClosedVus(ClosedVus {
            vus: 1,
            duration: Some(Duration::from_secs(3)),
            iterations: Some(5),
        });
        assert_eq!(w.iterations(), None);
        assert_eq!(w.duration(), Some(Duration::from_secs(3)));
    }
}
