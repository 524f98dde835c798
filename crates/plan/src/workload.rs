//! The workload model, one for every front end: a schedule (a level over time) × an admission
//! (how iterations start against it) × a bound (when the test ends) × a grace (how running
//! iterations end). hey's flags, the StormForger DSL, k6 options and `--vus`-style overrides
//! all compile into it through the constructors here.

use crate::stages::Stages;
use crate::vus::DEFAULT_GRACEFUL_STOP;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How load is generated over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The level over time: the number of clients ([`Admission::Loop`]) or iterations started
    /// per second (every other admission). Past its end the last value holds; a time-bounded
    /// workload ends with it.
    pub schedule: Stages,
    pub admission: Admission,
    pub bound: Bound,
    pub grace: Grace,
}

/// How iterations start against the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Admission {
    /// Closed model: the schedule's number of clients each run iterations back to back; a
    /// client above a falling target finishes within the grace's `ramp_down`.
    Loop,
    /// Paced (open-loop): iteration `k` is due when the schedule's area reaches `k`, served
    /// by `clients` fixed clients; a client still busy starts late and latency counts from
    /// the due time, so a slow target cannot slow the generator down unseen.
    Paced { clients: u64 },
    /// Iterations due on the schedule start on an idle client of a pool that grows from
    /// `pre_allocated` to `max`; one due while the pool is full and busy is dropped (k6's
    /// arrival-rate executors). `time_unit` is the unit the rate was written in (display).
    GrowAndDrop {
        pre_allocated: u64,
        max: u64,
        #[serde(with = "crate::duration_ms")]
        time_unit: Duration,
    },
    /// Open model: clients arrive as a Poisson process at the schedule's rate; each runs one
    /// session on its own connection; arrivals beyond `max_clients` running are dropped.
    PerArrival { max_clients: Option<u64> },
    /// Replay of a recording (`barrage replay`): one client per arrival, at its recorded
    /// offset, running the session it names; the schedule spans the arrivals.
    Recorded { arrivals: Vec<RecordedArrival> },
}

/// One recorded arrival: a client starting `session` (an index into the plan's sessions)
/// `offset` after the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecordedArrival {
    #[serde(with = "crate::duration_ms")]
    pub offset: Duration,
    pub session: usize,
}

/// When new iterations stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Bound {
    /// While the schedule runs.
    Duration,
    /// After `count` iterations — in all, shared by the clients, or each client's own — and
    /// at `max_duration` at the latest.
    Iterations {
        count: u64,
        per_client: bool,
        #[serde(with = "crate::duration_ms::option")]
        max_duration: Option<Duration>,
    },
}

/// How running iterations end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grace {
    /// After the last start, running iterations may finish within this long, then count as
    /// interrupted (k6 `gracefulStop`, the open model's grace period; zero: a hard stop).
    #[serde(with = "crate::duration_ms")]
    pub end: Duration,
    /// A client above a falling client target finishes its iteration within this long.
    #[serde(with = "crate::duration_ms")]
    pub ramp_down: Duration,
    /// On a stop request (Ctrl-C, SIGTERM, `abortOnFail`); `None`: the same as `end`.
    #[serde(with = "crate::duration_ms::option")]
    pub stop: Option<Duration>,
}

impl Grace {
    /// k6's: `gracefulStop` at the end and on a stop, `gracefulRampDown` for ramps.
    pub fn k6(graceful_stop: Duration, ramp_down: Duration) -> Self {
        Self {
            end: graceful_stop,
            ramp_down,
            stop: None,
        }
    }

    /// hey's: a hard stop at the end; a stop request still lets requests in flight finish
    /// within k6's default (each is bounded by the request timeout anyway).
    pub fn hard() -> Self {
        Self {
            end: Duration::ZERO,
            ramp_down: Duration::ZERO,
            stop: Some(DEFAULT_GRACEFUL_STOP),
        }
    }
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

/// Constructors: what each front end's words mean in the model.
impl Workload {
    /// hey `-c` with `-z` (wins) or `-n`: clients loop back to back, a hard stop at the end.
    pub fn closed(vus: u64, duration: Option<Duration>, iterations: Option<u64>) -> Self {
        let (schedule, bound) = match (duration, iterations) {
            (None, Some(count)) => (Stages::constant(vus as f64), shared(count, None)),
            (Some(d), _) => (
                Stages::from_targets(vus as f64, [(d, vus as f64)]),
                Bound::Duration,
            ),
            // Neither: no schedule, which `validate` refuses as unbounded.
            (None, None) => (Stages::default(), Bound::Duration),
        };
        Self {
            schedule,
            admission: Admission::Loop,
            bound,
            grace: Grace::hard(),
        }
    }

    /// hey `-q` (times `-c`): iterations paced at `rate` per second, served by `clients`.
    pub fn paced(
        rate: f64,
        clients: u64,
        duration: Option<Duration>,
        iterations: Option<u64>,
    ) -> Self {
        let (schedule, bound) = match (duration, iterations) {
            (None, Some(count)) => (Stages::constant(rate), shared(count, None)),
            (Some(d), _) => (Stages::from_targets(rate, [(d, rate)]), Bound::Duration),
            (None, None) => (Stages::default(), Bound::Duration),
        };
        Self {
            schedule,
            admission: Admission::Paced { clients },
            bound,
            grace: Grace::hard(),
        }
    }

    /// The open model: Poisson arrivals following `phases` (arrivals per second).
    pub fn open(phases: Stages, max_clients: Option<u64>, grace_period: Duration) -> Self {
        Self {
            schedule: phases,
            admission: Admission::PerArrival { max_clients },
            bound: Bound::Duration,
            grace: Grace::k6(grace_period, Duration::ZERO),
        }
    }

    /// k6 `constant-vus`.
    pub fn constant_vus(vus: u64, duration: Duration, graceful_stop: Duration) -> Self {
        Self::ramping_vus(vus, &[(duration, vus)], graceful_stop, graceful_stop)
    }

    /// k6 `ramping-vus`: from `start` VUs, linearly to each stage's target.
    pub fn ramping_vus(
        start: u64,
        stages: &[(Duration, u64)],
        graceful_stop: Duration,
        graceful_ramp_down: Duration,
    ) -> Self {
        Self {
            schedule: Stages::from_targets(
                start as f64,
                stages.iter().map(|&(d, target)| (d, target as f64)),
            ),
            admission: Admission::Loop,
            bound: Bound::Duration,
            grace: Grace::k6(graceful_stop, graceful_ramp_down),
        }
    }

    /// k6 `shared-iterations` (`per_client` false) and `per-vu-iterations` (true).
    pub fn counted(
        vus: u64,
        count: u64,
        per_client: bool,
        max_duration: Duration,
        graceful_stop: Duration,
    ) -> Self {
        Self {
            schedule: Stages::constant(vus as f64),
            admission: Admission::Loop,
            bound: Bound::Iterations {
                count,
                per_client,
                max_duration: Some(max_duration),
            },
            grace: Grace::k6(graceful_stop, graceful_stop),
        }
    }

    /// k6 `constant-arrival-rate` / `ramping-arrival-rate`: rates per `time_unit`.
    pub fn arrival_rate(
        start_rate: f64,
        time_unit: Duration,
        stages: &[(Duration, f64)],
        pool: (u64, u64),
        graceful_stop: Duration,
    ) -> Result<Self, WorkloadError> {
        if time_unit.is_zero() {
            return Err(WorkloadError::ZeroTimeUnit);
        }
        let (pre_allocated, max) = pool;
        Ok(Self {
            schedule: Stages::from_targets(start_rate, stages.iter().copied())
                .scale(1.0 / time_unit.as_secs_f64()),
            admission: Admission::GrowAndDrop {
                pre_allocated,
                max,
                time_unit,
            },
            bound: Bound::Duration,
            grace: Grace::k6(graceful_stop, graceful_stop),
        })
    }
}

impl Workload {
    /// A replay of recorded arrivals (in order of their offsets), with a grace period after
    /// the last.
    pub fn recorded(arrivals: Vec<RecordedArrival>, grace_period: Duration) -> Self {
        Self {
            schedule: recorded_schedule(&arrivals),
            admission: Admission::Recorded { arrivals },
            bound: Bound::Duration,
            grace: Grace::k6(grace_period, Duration::ZERO),
        }
    }
}

/// The schedule of recorded arrivals: their mean rate until just after the last one (so it
/// is still inside the run).
pub(crate) fn recorded_schedule(arrivals: &[RecordedArrival]) -> Stages {
    let end = arrivals.last().map_or(Duration::ZERO, |a| a.offset) + Duration::from_millis(1);
    let rate = arrivals.len() as f64 / end.as_secs_f64();
    Stages::from_targets(rate, [(end, rate)])
}

fn shared(count: u64, max_duration: Option<Duration>) -> Bound {
    Bound::Iterations {
        count,
        per_client: false,
        max_duration,
    }
}

impl Workload {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let open = matches!(self.admission, Admission::PerArrival { .. });
        let recorded = matches!(self.admission, Admission::Recorded { .. });
        if self.bound == Bound::Duration && !recorded {
            self.validate_pieces(open)?;
        }
        if let Bound::Iterations {
            count,
            max_duration,
            ..
        } = self.bound
        {
            if count == 0 {
                return Err(WorkloadError::NoIterations);
            }
            if max_duration.is_some_and(|d| d.is_zero()) {
                return Err(WorkloadError::ZeroDuration);
            }
        }
        match &self.admission {
            Admission::Recorded { arrivals } => {
                if arrivals.is_empty() {
                    return Err(WorkloadError::NoArrivals);
                }
                if arrivals.windows(2).any(|w| w[1].offset < w[0].offset) {
                    return Err(WorkloadError::UnorderedArrivals);
                }
                Ok(())
            }
            &Admission::PerArrival { max_clients } => {
                if max_clients == Some(0) {
                    return Err(WorkloadError::NoClients);
                }
                Ok(())
            }
            &Admission::Paced { clients } => {
                let rate = self.schedule.value_at(Duration::ZERO);
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(WorkloadError::BadRate(rate));
                }
                if clients == 0 {
                    return Err(WorkloadError::NoVus);
                }
                Ok(())
            }
            &Admission::GrowAndDrop {
                pre_allocated, max, ..
            } => {
                if max < pre_allocated {
                    return Err(WorkloadError::PoolTooSmall {
                        pre: pre_allocated,
                        max,
                    });
                }
                if max == 0 {
                    return Err(WorkloadError::NoVus);
                }
                Ok(())
            }
            Admission::Loop => match self.vus() {
                Some(0) if self.schedule.pieces.len() > 1 => Err(WorkloadError::NoPeak),
                Some(0) => Err(WorkloadError::NoVus),
                _ => Ok(()),
            },
        }
    }

    /// The pieces of a time-bounded schedule: at least one, each with a positive duration
    /// and non-negative finite values (named as the front end names them: arrival phases of
    /// the open model, stages otherwise).
    fn validate_pieces(&self, open: bool) -> Result<(), WorkloadError> {
        if self.schedule.pieces.is_empty() {
            return Err(if open {
                WorkloadError::NoPhases
            } else if self.grace.stop.is_some() {
                // hey's models have no stages: a duration or a count was left out.
                WorkloadError::Unbounded
            } else {
                WorkloadError::NoStages
            });
        }
        let single = self.schedule.pieces.len() == 1 && !open;
        for (i, piece) in self.schedule.pieces.iter().enumerate() {
            let bad = |problem: String| {
                if open {
                    WorkloadError::BadPhase {
                        phase: i + 1,
                        problem,
                    }
                } else {
                    WorkloadError::BadStage {
                        stage: i + 1,
                        problem,
                    }
                }
            };
            if piece.duration.is_zero() {
                if single {
                    return Err(WorkloadError::ZeroDuration);
                }
                return Err(bad("duration must be greater than zero".into()));
            }
            for (name, rate) in [("rate", piece.from), ("rampTo", piece.to)] {
                if !(rate.is_finite() && rate >= 0.0) {
                    if !open {
                        return Err(WorkloadError::BadRate(rate));
                    }
                    return Err(bad(format!(
                        "{name} must be a non-negative number, got {rate}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Clients that run at the same time, when the model fixes it (the peak of a ramp, the
    /// largest pool).
    pub fn vus(&self) -> Option<u64> {
        match &self.admission {
            Admission::Loop => Some(self.schedule.peak().floor().max(0.0) as u64),
            Admission::Paced { clients } => Some(*clients),
            Admission::GrowAndDrop { max, .. } => Some(*max),
            Admission::PerArrival { .. } | Admission::Recorded { .. } => None,
        }
    }

    /// The planned duration, if the test is time-bounded (the grace may follow).
    pub fn duration(&self) -> Option<Duration> {
        match self.bound {
            Bound::Duration => Some(self.schedule.end()),
            Bound::Iterations { .. } => None,
        }
    }

    /// How long running iterations may go on after the last one started.
    pub fn graceful_stop(&self) -> Duration {
        self.grace.end
    }

    /// When new iterations stop being started, from the start of the run.
    pub fn iterations_end(&self) -> Option<Duration> {
        match self.bound {
            Bound::Duration => Some(self.schedule.end()),
            Bound::Iterations { max_duration, .. } => max_duration,
        }
    }

    /// When the run is stopped at the latest, cancelling whatever still runs.
    pub fn hard_stop(&self) -> Option<Duration> {
        self.iterations_end().map(|end| end + self.grace.end)
    }

    /// The planned iteration count, if the test is count-bounded.
    pub fn iterations(&self) -> Option<u64> {
        match self.bound {
            Bound::Duration => None,
            Bound::Iterations {
                count, per_client, ..
            } if per_client => Some(self.vus().unwrap_or(1).saturating_mul(count)),
            Bound::Iterations { count, .. } => Some(count),
        }
    }

    /// Whether the VU count follows a ramp (a closed model whose target changes over time).
    pub fn ramps_clients(&self) -> bool {
        self.admission == Admission::Loop
            && self.bound == Bound::Duration
            && !self.schedule.is_constant()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Piece;

    #[test]
    fn unbounded_and_zero_vus_are_rejected() {
        let w = Workload::closed(0, None, Some(1));
        assert_eq!(w.validate(), Err(WorkloadError::NoVus));
        let w = Workload::closed(1, Some(Duration::ZERO), None);
        assert_eq!(w.validate(), Err(WorkloadError::ZeroDuration));
        let w = Workload::closed(1, None, Some(0));
        assert_eq!(w.validate(), Err(WorkloadError::NoIterations));
        let w = Workload::closed(1, None, None);
        assert_eq!(w.validate(), Err(WorkloadError::Unbounded));
    }

    #[test]
    fn rate_must_be_positive_and_finite() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let w = Workload::paced(rate, 1, Some(Duration::from_secs(1)), None);
            assert!(
                matches!(w.validate(), Err(WorkloadError::BadRate(_))),
                "{rate}"
            );
        }
    }

    fn open(phases: Vec<Piece>) -> Workload {
        Workload::open(Stages::new(phases), None, Duration::from_secs(2))
    }

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> Piece {
        Piece {
            duration: Duration::from_secs(secs),
            from: rate,
            to: ramp_to.unwrap_or(rate),
        }
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
        let w = open(vec![phase(10, 10.0, Some(30.0)), phase(5, 1.0, None)]);
        assert_eq!(w.schedule.value_at(Duration::from_secs(5)), 20.0);
        assert_eq!(w.arrival_schedule().unwrap().total(), 205.0);
        assert_eq!(w.duration(), Some(Duration::from_secs(15)));
        assert_eq!(w.hard_stop(), Some(Duration::from_secs(17)));
        assert_eq!(w.vus(), None);
    }

    #[test]
    fn duration_wins_over_iterations() {
        let w = Workload::closed(1, Some(Duration::from_secs(3)), Some(5));
        assert_eq!(w.iterations(), None);
        assert_eq!(w.duration(), Some(Duration::from_secs(3)));
        assert_eq!(w.hard_stop(), Some(Duration::from_secs(3)));
        let w = Workload::closed(4, None, Some(5));
        assert_eq!(
            (w.iterations(), w.vus(), w.hard_stop()),
            (Some(5), Some(4), None)
        );
    }

    #[test]
    fn k6_models_are_one_model() {
        let stop = Duration::from_secs(30);
        let ramp = Workload::ramping_vus(0, &[(Duration::from_secs(10), 50)], stop, stop);
        assert!(ramp.ramps_clients());
        assert_eq!(ramp.vus(), Some(50));
        let constant = Workload::constant_vus(3, Duration::from_secs(10), stop);
        assert!(!constant.ramps_clients());
        assert_eq!(constant.hard_stop(), Some(Duration::from_secs(40)));
        let per_vu = Workload::counted(3, 4, true, Duration::from_secs(60), stop);
        assert_eq!(per_vu.iterations(), Some(12));
        assert_eq!(per_vu.iterations_end(), Some(Duration::from_secs(60)));
        let pool = Workload::arrival_rate(
            10.0,
            Duration::from_secs(2),
            &[(Duration::from_secs(4), 10.0)],
            (1, 1),
            stop,
        )
        .unwrap();
        assert_eq!(pool.arrival_schedule().unwrap().total(), 20.0);
        assert_eq!(
            Workload::arrival_rate(1.0, Duration::ZERO, &[], (1, 1), stop),
            Err(WorkloadError::ZeroTimeUnit)
        );
    }
}
