//! Closed-model overrides of `barrage run` (`--vus`, `--duration`, `--stages`,
//! `--iterations`, like k6's): they replace the plan's workload with the virtual-user model
//! they describe, taking what they leave out from the plan.

use crate::usage::usage;
use crate::values;
use barrage_plan::{Plan, VuOverride, VuStage};

/// The flags as given (validated by [`VuOverrides::parse`]); the plan applies them
/// ([`Workload::with_vus`](barrage_plan::Workload::with_vus)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VuOverrides(pub VuOverride);

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
        let parsed = VuOverride {
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
        Ok(Self(parsed))
    }

    /// Replaces the plan's workload with the closed model the flags describe.
    pub fn apply(&self, plan: &mut Plan) -> anyhow::Result<()> {
        plan.workload = plan
            .workload
            .with_vus(&self.0)
            .map_err(|e| usage(format!("--vus: {e}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stages_parse_and_bad_values_name_the_flag() {
        let o = VuOverrides::parse(None, None, Some("30s:100, 1m:100,10:0"), None).unwrap();
        assert_eq!(
            o.0.stages.unwrap(),
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
}
