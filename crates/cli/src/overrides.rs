//! Run-time overrides of a plan (`--target`, `--rate-factor`, `--duration-limit`, `--seed`):
//! try a big definition on a small machine without editing it.

use crate::protocol_flags::ProtocolArgs;
use crate::usage::usage;
use crate::vu_overrides::VuOverrides;
use barrage_plan::{ArrivalPhase, Plan, Target, Workload};
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub target: Option<String>,
    pub rate_factor: Option<f64>,
    pub duration_limit: Option<Duration>,
    pub seed: Option<u64>,
    pub threads: Option<usize>,
    /// `--vus`, `--duration`, `--stages`, `--iterations`.
    pub vus: VuOverrides,
    /// HTTP version, TLS and connection-model flags.
    pub protocol: ProtocolArgs,
    /// `--define NAME=VALUE` for scripts.
    pub defines: Vec<(String, String)>,
    /// `--nfr FILE`: StormForger requirements added to the plan's thresholds.
    pub nfr: Option<std::path::PathBuf>,
}

/// Cuts arrival phases so they end at `limit`; a ramp cut short ends at the rate it had
/// reached, so the schedule up to the cut is unchanged.
fn cap_phases(phases: &[ArrivalPhase], limit: Duration) -> Vec<ArrivalPhase> {
    let mut kept = Vec::new();
    let mut start = Duration::ZERO;
    for phase in phases {
        if start >= limit {
            break;
        }
        let room = limit - start;
        if phase.duration <= room {
            kept.push(phase.clone());
        } else {
            kept.push(ArrivalPhase {
                duration: room,
                rate: phase.rate,
                ramp_to: phase.ramp_to.map(|_| phase.rate_at(room)),
            });
        }
        start += phase.duration;
    }
    kept
}

impl Overrides {
    pub fn apply(&self, plan: &mut Plan) -> anyhow::Result<()> {
        self.protocol.apply(&mut plan.options)?;
        if let Some(url) = &self.target {
            plan.target = Target::parse(url).map_err(|e| usage(format!("--target: {e}")))?;
        }
        self.vus.apply(plan)?;
        if let Some(factor) = self.rate_factor {
            if !(factor.is_finite() && factor > 0.0) {
                return Err(usage(format!(
                    "--rate-factor: must be a positive number, got {factor}"
                )));
            }
            match &mut plan.workload {
                Workload::OpenArrivals(open) => {
                    for phase in &mut open.phases {
                        phase.rate *= factor;
                        phase.ramp_to = phase.ramp_to.map(|r| r * factor);
                    }
                }
                Workload::ArrivalRate(rate) => rate.rate_per_second *= factor,
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
                | Workload::PerVuIterations(_) => {
                    return Err(usage(
                        "--rate-factor: the plan has virtual users, not an arrival rate",
                    ))
                }
            }
        }
        if let Some(limit) = self.duration_limit {
            if limit.is_zero() {
                return Err(usage("--duration-limit: must be greater than zero"));
            }
            match &mut plan.workload {
                Workload::OpenArrivals(open) => open.phases = cap_phases(&open.phases, limit),
                Workload::ClosedVus(closed) => {
                    closed.duration = Some(closed.duration.map_or(limit, |d| d.min(limit)))
                }
                Workload::ArrivalRate(rate) => {
                    rate.duration = Some(rate.duration.map_or(limit, |d| d.min(limit)))
                }
                Workload::ConstantVus(c) => c.duration = c.duration.min(limit),
                Workload::RampingVus(r) => r.stages = crate::vu_overrides::cap_vu_stages(r, limit),
                Workload::SharedIterations(s) => s.max_duration = s.max_duration.min(limit),
                Workload::PerVuIterations(p) => p.max_duration = p.max_duration.min(limit),
                Workload::ArrivalPool(pool) => {
                    pool.stages = crate::vu_overrides::cap_rate_stages(pool, limit)
                }
            }
            // The limit caps the whole test: sessions still running after the last start
            // get only the time left before it, then count as interrupted.
            let last_start = plan.workload.iterations_end().unwrap_or(limit);
            plan.workload
                .cap_graceful_stop(limit.saturating_sub(last_start));
        }
        if let Some(seed) = self.seed {
            plan.options.seed = Some(seed);
        }
        if let Some(threads) = self.threads {
            if threads == 0 {
                return Err(usage("--threads must be at least 1"));
            }
            plan.options.threads = Some(threads);
        }
        plan.validate().map_err(|e| usage(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(secs: u64, rate: f64, ramp_to: Option<f64>) -> ArrivalPhase {
        ArrivalPhase::new(Duration::from_secs(secs), rate, ramp_to)
    }

    #[test]
    fn duration_limit_cuts_phases_and_ramps_where_they_stand() {
        let phases = [phase(10, 10.0, Some(20.0)), phase(10, 5.0, None)];
        assert_eq!(
            cap_phases(&phases, Duration::from_secs(5)),
            vec![phase(5, 10.0, Some(15.0))]
        );
        assert_eq!(
            cap_phases(&phases, Duration::from_secs(15)),
            vec![phases[0].clone(), phase(5, 5.0, None)]
        );
        assert_eq!(
            cap_phases(&phases, Duration::from_secs(60)),
            phases.to_vec()
        );
    }
}
