//! `barrage run FILE` and `barrage plan FILE`: a definition (JavaScript DSL, or a plan as
//! JSON) compiled into a plan, overridden, executed, and summarised.

use crate::overrides::Overrides;
use crate::usage::usage;
use barrage_plan::Plan;
use std::path::Path;

/// Loads a plan: `.json` files are plans already; anything else is a script evaluated once
/// (its warnings go to stderr, one line each).
pub fn load_plan(path: &Path, defines: &[(String, String)]) -> anyhow::Result<Plan> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        if !defines.is_empty() {
            return Err(usage(
                "--define is for scripts; a JSON plan has nothing to define",
            ));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
        let plan: Plan = serde_json::from_str(&text).map_err(|e| {
            usage(format!(
                "{}:{}:{}: not a plan: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        plan.validate()
            .map_err(|e| usage(format!("{}: {e}", path.display())))?;
        return Ok(plan);
    }
    let inputs = barrage_script::ScriptInputs {
        defines: defines.to_vec(),
    };
    let compiled =
        barrage_script::compile_file_with(path, &inputs).map_err(|e| usage(e.to_string()))?;
    for warning in &compiled.warnings {
        eprintln!("{warning}");
    }
    Ok(compiled.plan)
}

/// Adds the requirements of `--nfr FILE` to the plan's thresholds (checked against its tags).
pub(crate) fn add_requirements(plan: &mut Plan, overrides: &Overrides) -> anyhow::Result<()> {
    let Some(path) = &overrides.nfr else {
        return Ok(());
    };
    let requirements = barrage_script::load_nfr(path).map_err(|e| usage(e.to_string()))?;
    for warning in &requirements.warnings {
        eprintln!("{}: {warning}", path.display());
    }
    plan.metrics.thresholds.extend(requirements.thresholds);
    plan.metrics
        .validate(&plan.tags)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok(())
}

/// `barrage plan FILE`: the compiled plan as JSON.
pub fn plan_command(path: &Path, overrides: &Overrides) -> anyhow::Result<String> {
    let mut plan = load_plan(path, &overrides.defines)?;
    overrides.apply(&mut plan)?;
    add_requirements(&mut plan, overrides)?;
    Ok(serde_json::to_string_pretty(&plan)? + "\n")
}

/// `barrage run FILE`: the plan to run, overridden (the caller runs it).
pub fn prepare(path: &Path, overrides: &Overrides) -> anyhow::Result<Plan> {
    let mut plan = load_plan(path, &overrides.defines)?;
    overrides.apply(&mut plan)?;
    add_requirements(&mut plan, overrides)?;
    Ok(plan)
}
