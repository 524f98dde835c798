//! Closed-model overrides of `barrage run` (`--vus`, `--duration`, `--stages`,
//! `--iterations`, like k6's): they replace the plan's workload with the virtual-user model
//! they describe, taking what they leave out from the plan.

use crate::usage::usage;
use crate::values;
use barrage_plan::{
    ArrivalPool, ConstantVus, Plan, RampingVus, RateStage, SharedIterations, VuStage, Workload,
    DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION,
};
use std::time::Duration;

/// The flags as given (validated by [`VuOverrides::parse`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VuOverrides {
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub stages: Option<Vec<VuStage>>,
    pub iterations: Option<u64>,
}

/// Parses `30s:100,1m:100,10s:0` (duration:target pairs).
fn parse_stages(text: &str) -> anyhow::Result<Vec<VuStage>> {
    let mut stages = Vec::new();
    for (i, part) in text.split(',').enumerate() {
        let bad = |problem: String| usage(format!("--stages: stage {} `{part}`: {problem}", i + 1));
        let Some((duration, target)) = part.trim().split_once(':') else {
            return Err(bad("expected duration:target, e.g. 30s:100".into()));
        };
        let duration = values::duration_flag("--stages", duration, true)
            .map_err(|e| bad(e.to_string().trim_start_matches("--stages: ").into()))?;
        if duration.is_zero() {
            return Err(bad("the duration must be greater than zero".into()));
        }
        let target = values::integer(target, 0, values::MAX_CLIENTS)
            .map_err(|e| bad(format!("target {e}")))?;
        stages.push(VuStage { duration, target });
    }
    if stages.iter().all(|s| s.target == 0) {
        return Err(usage(format!(
            "--stages: `{text}` never asks for a virtual user (every target is 0)"
        )));
    }
    Ok(stages)
}

impl VuOverrides {
    pub fn parse(
        vus: Option<&str>,
        duration: Option<&str>,
        stages: Option<&str>,
        iterations: Option<&str>,
    ) -> anyhow::Result<Self> {
        let parsed = Self {
            vus: vus
                .map(|v| values::count_flag("--vus", v, values::clients))
                .transpose()?,
            duration: duration
                .map(|d| values::positive_duration_flag("--duration", d, true))
                .transpose()?,
            stages: stages.map(parse_stages).transpose()?,
            iterations: iterations
                .map(|n| values::count_flag("--iterations", n, values::count))
                .transpose()?,
        };
        if parsed.stages.is_some()
            && (parsed.vus.is_some() || parsed.duration.is_some() || parsed.iterations.is_some())
        {
            return Err(usage(
                "--stages: cannot be combined with --vus, --duration or --iterations (the stages set both)",
            ));
        }
        Ok(parsed)
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Replaces the plan's workload with the closed model the flags describe.
    pub fn apply(&self, plan: &mut Plan) -> anyhow::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let old = &plan.workload;
        let graceful_stop = match old {
            Workload::OpenArrivals(_) | Workload::ClosedVus(_) | Workload::ArrivalRate(_) => {
                DEFAULT_GRACEFUL_STOP
            }
            other => other.graceful_stop(),
        };
        let plan_vus = match old {
            Workload::OpenArrivals(_) | Workload::ArrivalPool(_) | Workload::ArrivalRate(_) => None,
            other => other.vus(),
        };
        plan.workload = if let Some(stages) = &self.stages {
            Workload::RampingVus(RampingVus {
                // k6's default: one VU from the start.
                start_vus: 1,
                stages: stages.clone(),
                graceful_stop,
                graceful_ramp_down: match old {
                    Workload::RampingVus(r) => r.graceful_ramp_down,
                    _ => DEFAULT_GRACEFUL_STOP,
                },
            })
        } else if let Some(iterations) = self.iterations {
            Workload::SharedIterations(SharedIterations {
                vus: self.vus.or(plan_vus).unwrap_or(1),
                iterations,
                max_duration: self.duration.unwrap_or(DEFAULT_MAX_DURATION),
                graceful_stop,
            })
        } else {
            let duration = self
                .duration
                .or_else(|| old.duration())
                .ok_or_else(|| usage("--vus: the plan has no duration; add --duration"))?;
            Workload::ConstantVus(ConstantVus {
                vus: self.vus.or(plan_vus).unwrap_or(1),
                duration,
                graceful_stop,
            })
        };
        Ok(())
    }
}

/// Cuts VU stages so they end at `limit`; a stage cut short ends at the VUs it had reached.
pub fn cap_vu_stages(ramp: &RampingVus, limit: Duration) -> Vec<VuStage> {
    let mut kept = Vec::new();
    let mut start = Duration::ZERO;
    for stage in &ramp.stages {
        if start >= limit {
            break;
        }
        let room = limit - start;
        kept.push(if stage.duration <= room {
            stage.clone()
        } else {
            VuStage {
                duration: room,
                target: ramp.target_at(limit),
            }
        });
        start += stage.duration;
    }
    kept
}

/// Cuts rate stages so they end at `limit`; a stage cut short ends at the rate it had reached.
pub fn cap_rate_stages(pool: &ArrivalPool, limit: Duration) -> Vec<RateStage> {
    let mut kept = Vec::new();
    let mut start = Duration::ZERO;
    let mut from = pool.start_rate;
    for stage in &pool.stages {
        if start >= limit {
            break;
        }
        let room = limit - start;
        kept.push(if stage.duration <= room {
            stage.clone()
        } else {
            let progress = room.as_secs_f64() / stage.duration.as_secs_f64();
            RateStage {
                duration: room,
                target: from + (stage.target - from) * progress,
            }
        });
        from = stage.target;
        start += stage.duration;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_and_bad_values_name_the_flag() {
        let o = VuOverrides::parse(None, None, Some("30s:100, 1m:100,10:0"), None).unwrap();
        assert_eq!(
            o.stages.unwrap(),
            vec![
                VuStage {
                    duration: Duration::from_secs(30),
                    target: 100
                },
                VuStage {
                    duration: Duration::from_secs(60),
                    target: 100
                },
                VuStage {
                    duration: Duration::from_secs(10),
                    target: 0
                },
            ]
        );
        let e = |v: Option<&str>, d: Option<&str>, s: Option<&str>, i: Option<&str>| {
            VuOverrides::parse(v, d, s, i).unwrap_err().to_string()
        };
        assert_eq!(
            e(Some("0"), None, None, None),
            "--vus: `0` must be a whole number from 1 to 1000000"
        );
        assert_eq!(
            e(None, None, None, Some("x")),
            "--iterations: `x` must be a whole number from 1 to 1000000000000"
        );
        assert!(e(None, Some("5parsecs"), None, None).starts_with("--duration: "));
        assert_eq!(
            e(None, None, Some("30s-100"), None),
            "--stages: stage 1 `30s-100`: expected duration:target, e.g. 30s:100"
        );
        assert!(e(None, None, Some("30s:1,2q:5"), None).starts_with("--stages: stage 2 `2q:5`: "));
        assert!(e(None, None, Some("30s:ten"), None).contains("target `ten`"));
        assert!(e(Some("2"), None, Some("30s:1"), None).starts_with("--stages: cannot be combined"));
    }

    #[test]
    fn duration_limits_cut_stages_where_they_stand() {
        let ramp = RampingVus {
            start_vus: 0,
            stages: parse_stages("10s:50,10s:50").unwrap(),
            graceful_stop: Duration::ZERO,
            graceful_ramp_down: Duration::ZERO,
        };
        assert_eq!(
            cap_vu_stages(&ramp, Duration::from_secs(4)),
            vec![VuStage {
                duration: Duration::from_secs(4),
                target: 20
            }]
        );
        assert_eq!(cap_vu_stages(&ramp, Duration::from_secs(30)), ramp.stages);
        let mut pool =
            ArrivalPool::constant(0.0, Duration::from_secs(1), Duration::from_secs(10), 1, 1);
        pool.stages[0].target = 100.0;
        assert_eq!(
            cap_rate_stages(&pool, Duration::from_secs(5)),
            vec![RateStage {
                duration: Duration::from_secs(5),
                target: 50.0
            }]
        );
    }
}
