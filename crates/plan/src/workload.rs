//! Workload models: how many clients run, when they start, and when the test ends.

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

    /// Clients that hold a connection at the same time.
    pub fn vus(&self) -> u64 {
        match self {
            Workload::ClosedVus(c) => c.vus,
            Workload::ArrivalRate(a) => a.vus,
        }
    }

    /// The planned duration, if the test is time-bounded.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Workload::ClosedVus(c) => c.duration,
            Workload::ArrivalRate(a) => a.duration,
        }
    }

    /// The planned iteration count, if the test is count-bounded and not time-bounded.
    pub fn iterations(&self) -> Option<u64> {
        match self {
            Workload::ClosedVus(c) if c.duration.is_none() => c.iterations,
            Workload::ArrivalRate(a) if a.duration.is_none() => a.iterations,
            _ => None,
        }
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
