//! Run-time overrides of a plan (`--target`, `--rate-factor`, `--duration-limit`, `--seed`):
//! try a big definition on a small machine without editing it.

use crate::protocol_flags::ProtocolArgs;
use crate::usage::usage;
use crate::vu_overrides::VuOverrides;
use barrage_plan::{Plan, Target};
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub target: Option<String>,
    pub rate_factor: Option<f64>,
    pub duration_limit: Option<Duration>,
    pub seed: Option<u64>,
    pub threads: Option<usize>,
    /// `--segment i/N` or `--execution-segment a:b`.
    pub segment: Option<barrage_plan::Segment>,
    /// `--vus`, `--duration`, `--stages`, `--iterations`.
    pub vus: VuOverrides,
    /// HTTP version, TLS and connection-model flags.
    pub protocol: ProtocolArgs,
    /// `--define NAME=VALUE` for scripts.
    pub defines: Vec<(String, String)>,
    /// `--nfr FILE`: StormForger requirements added to the plan's thresholds.
    pub nfr: Option<std::path::PathBuf>,
}

impl Overrides {
    pub fn apply(&self, plan: &mut Plan) -> anyhow::Result<()> {
        self.protocol.apply(&mut plan.options)?;
        if let Some(url) = &self.target {
            plan.target = Target::parse(url).map_err(|e| usage(format!("--target: {e}")))?;
        }
        self.vus.apply(plan)?;
        if let Some(factor) = self.rate_factor {
            plan.workload
                .scale_rate(factor)
                .map_err(|e| usage(format!("--rate-factor: {e}")))?;
        }
        if let Some(limit) = self.duration_limit {
            plan.workload
                .cap_at(limit)
                .map_err(|e| usage(format!("--duration-limit: {e}")))?;
        }
        if let Some(seed) = self.seed {
            plan.options.seed = Some(seed);
        }
        if let Some(segment) = self.segment.clone() {
            plan.options.segment = (segment != barrage_plan::Segment::WHOLE).then_some(segment);
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
