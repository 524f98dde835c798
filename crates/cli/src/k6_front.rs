//! `barrage run` of a k6 script: detection (`--compat k6` forces it), `-e KEY=VALUE`, and
//! the plan plus VU factory the run executes (see `barrage_k6`).

use crate::overrides::Overrides;
use crate::usage::usage;
use barrage_engine::SharedVuFactory;
use barrage_plan::Plan;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct K6Args {
    /// Run the script as a k6 script (detected by its `k6` imports or `export default
    /// function` otherwise)
    #[arg(long, value_name = "k6")]
    compat: Option<String>,
    /// k6 scripts: an `__ENV` variable, KEY=VALUE (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
}

/// A k6 script ready to run: its plan and its VUs.
pub struct K6Run {
    pub plan: Plan,
    pub factory: barrage_k6::K6Factory,
}

impl K6Run {
    /// The VUs as the engine takes them.
    pub fn vus(&self) -> SharedVuFactory {
        Arc::new(self.factory.clone())
    }
}

/// The k6 script at `path` compiled and overridden: `Ok(None)` when it is not a k6
/// script, `Err(code)` when it failed with k6's exit code (the reason printed).
pub fn load(
    path: &Path,
    args: &K6Args,
    overrides: &Overrides,
) -> anyhow::Result<Result<Option<K6Run>, i32>> {
    match args.compat.as_deref() {
        None => {
            if !barrage_k6::is_k6_file(path) {
                if !args.env.is_empty() {
                    return Err(usage("-e/--env applies to k6 scripts only"));
                }
                return Ok(Ok(None));
            }
        }
        Some("k6") => {}
        Some(other) => {
            return Err(usage(format!(
                "--compat: `{other}` is not a compatibility mode (k6 is)"
            )))
        }
    }
    let mut env = Vec::with_capacity(args.env.len());
    for pair in &args.env {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(usage(format!("-e/--env: `{pair}` is not KEY=VALUE")));
        };
        env.push((key.to_string(), value.to_string()));
    }
    let test = match barrage_k6::load_file(path, &env) {
        Ok(test) => test,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Err(e.exit_code()));
        }
    };
    let mut plan = test.plan;
    overrides.apply(&mut plan)?;
    Ok(Ok(Some(K6Run {
        plan,
        factory: test.factory,
    })))
}
