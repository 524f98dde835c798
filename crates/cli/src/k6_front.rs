//! `barrage run` of a k6 script: detection (`--compat k6` forces it), `-e KEY=VALUE`, and
//! the plan plus VU factory the run executes (see `barrage_k6`).

use crate::overrides::Overrides;
use crate::usage::usage;
use anyhow::Context;
use barrage_engine::SharedVuFactory;
use barrage_plan::Plan;
use std::path::{Path, PathBuf};
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
    /// k6 scripts: also write the end-of-test summary to FILE in k6's `--summary-export`
    /// JSON format
    #[arg(long, value_name = "FILE")]
    summary_export: Option<PathBuf>,
    /// k6 scripts: do not evaluate the thresholds (no threshold fails the run)
    #[arg(long)]
    no_thresholds: bool,
    /// k6 scripts: print no end-of-test summary
    #[arg(long)]
    no_summary: bool,
    /// k6 scripts: no progress display
    #[arg(short = 'q', long)]
    quiet: bool,
}

impl K6Args {
    /// `-q/--quiet`.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Whether a k6-only flag was given.
    fn any_given(&self) -> Option<&'static str> {
        if !self.env.is_empty() {
            Some("-e/--env")
        } else if self.summary_export.is_some() {
            Some("--summary-export")
        } else if self.no_thresholds {
            Some("--no-thresholds")
        } else if self.no_summary {
            Some("--no-summary")
        } else if self.quiet {
            Some("-q/--quiet")
        } else {
            None
        }
    }
}

/// A k6 script ready to run: its plan and its VUs.
pub struct K6Run {
    pub plan: Plan,
    pub factory: barrage_k6::K6Factory,
    /// The summary's Trend columns: `options.summaryTrendStats`, else k6's default (the
    /// `--summary-trend-stats` flag overrides both).
    pub trend_stats: String,
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
                if let Some(flag) = args.any_given() {
                    return Err(usage(format!("{flag} applies to k6 scripts only")));
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
    if args.no_thresholds {
        plan.metrics.thresholds.clear();
    }
    let trend_stats = match test.summary_trend_stats {
        None => barrage_k6::K6_TREND_STATS.to_string(),
        Some(stats) => {
            // Checked here so that a bad one names the option, not the flag.
            if let Some(bad) = stats.iter().find(|stat| {
                barrage_plan::Aggregation::parse(stat).is_none_or(|a| {
                    matches!(
                        a,
                        barrage_plan::Aggregation::Rate | barrage_plan::Aggregation::Value
                    )
                })
            }) {
                eprintln!(
                    "error: {}: `options.summaryTrendStats`: `{bad}` is not a trend statistic (avg, min, med, max, count, p(N))",
                    path.display()
                );
                return Ok(Err(crate::usage::exit::USAGE));
            }
            stats.join(",")
        }
    };
    Ok(Ok(Some(K6Run {
        plan,
        factory: test.factory,
        trend_stats,
    })))
}

/// The end of a k6 run's output: `handleSummary(data)`'s outputs when the script exports it
/// (replacing the default summary, as in k6; when it throws, the error and the default
/// summary), else the default summary unless `--no-summary`; and `--summary-export`.
pub fn summarise(
    args: &K6Args,
    factory: &barrage_k6::K6Factory,
    summary: &barrage_report::Summary,
) -> anyhow::Result<()> {
    use barrage_report::{k6_summary_data, K6DataShape};
    if let Some(path) = &args.summary_export {
        let export = k6_summary_data(summary, K6DataShape::SummaryExport);
        let text = serde_json::to_string_pretty(&export)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--summary-export: writing {}", path.display()))?;
    }
    let data = k6_summary_data(summary, K6DataShape::HandleSummary).to_string();
    match factory.handle_summary(&data) {
        Some(Ok(outputs)) => {
            for (name, content) in outputs {
                match name.as_str() {
                    "stdout" => crate::print_out(&String::from_utf8_lossy(&content))?,
                    "stderr" => eprint!("{}", String::from_utf8_lossy(&content)),
                    path => std::fs::write(path, &content)
                        .with_context(|| format!("handleSummary(): writing {path}"))?,
                }
            }
            Ok(())
        }
        Some(Err(problem)) => {
            eprintln!("error: handleSummary() failed: {problem}");
            crate::print_out(&barrage_report::render_k6_run(summary))
        }
        None if args.no_summary => Ok(()),
        None => crate::print_out(&barrage_report::render_k6_run(summary)),
    }
}
