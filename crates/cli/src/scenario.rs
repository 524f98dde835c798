//! `barrage run FILE` and `barrage plan FILE`: a definition (JavaScript DSL, or a plan as
//! JSON) compiled into a plan, overridden, executed, and summarised.

use crate::overrides::Overrides;
use crate::runner;
use crate::usage::usage;
use barrage_plan::Plan;
use std::path::Path;

/// Loads a plan: `.json` files are plans already; anything else is a script evaluated once.
pub fn load_plan(path: &Path) -> anyhow::Result<Plan> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
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
    barrage_script::compile_file(path).map_err(|e| usage(e.to_string()))
}

/// `barrage plan FILE`: the compiled plan as JSON.
pub fn plan_command(path: &Path, overrides: &Overrides) -> anyhow::Result<String> {
    let mut plan = load_plan(path)?;
    overrides.apply(&mut plan)?;
    Ok(serde_json::to_string_pretty(&plan)? + "\n")
}

/// `barrage run FILE`: runs it and returns the summary (the caller prints it).
pub fn run_command(
    path: &Path,
    overrides: &Overrides,
    context: &runner::RunContext,
) -> anyhow::Result<runner::Finished> {
    let mut plan = load_plan(path)?;
    overrides.apply(&mut plan)?;
    runner::execute(&plan, runner::progress_wanted(), context)
}
