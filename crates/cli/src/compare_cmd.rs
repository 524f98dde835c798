//! `barrage compare A B [C ...]`: runs named by history id or results file, grouped
//! (`A1,A2,A3 vs B1,B2,B3`), compared per tag against the first group; `--fail-on` rules make
//! a regression exit non-zero for CI; `--html` draws the overlaid latency curves.

use crate::history;
use crate::results_cmd::load;
use crate::usage::{exit, usage};
use anyhow::Context;
use barrage_report::compare::{render_compare, Group, Rule, RunFigures};
use barrage_report::ComparedRun;
use barrage_results::ResultsFile;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Runs, baseline first: history ids or results files. Comma-separated runs form a group
    /// of repeats (`1,2,3 vs 4,5,6`); `vs` between groups is optional.
    #[arg(required = true, num_args = 2..)]
    runs: Vec<String>,
    /// Exit with code 3 when a figure regresses past a rule, e.g. "p95:+10%,rps:-5%"
    /// (metrics: rps, p50, p90, p95, p99, max, errors%)
    #[arg(long, value_name = "RULES")]
    fail_on: Option<String>,
    /// Also write the comparison as a self-contained HTML page
    #[arg(long, value_name = "OUT")]
    html: Option<PathBuf>,
    /// The history database that ids refer to (default: $XDG_DATA_HOME/barrage/history.db)
    #[arg(long, value_name = "PATH")]
    history: Option<PathBuf>,
}

/// One run named on the command line: its label and results.
struct Named {
    label: String,
    results: ResultsFile,
}

fn resolve(
    reference: &str,
    db: &mut Option<(PathBuf, rusqlite::Connection)>,
    flag: Option<&Path>,
) -> anyhow::Result<Named> {
    if !reference.is_empty()
        && reference.bytes().all(|b| b.is_ascii_digit())
        && !Path::new(reference).exists()
    {
        let id: i64 = reference
            .parse()
            .map_err(|_| usage(format!("run id {reference} is too large")))?;
        if db.is_none() {
            let path = history::path(flag)?;
            let conn = history::open(&path)?;
            *db = Some((path, conn));
        }
        let (path, conn) = db.as_ref().expect("opened above");
        let run = history::get(conn, id)?.ok_or_else(|| {
            usage(format!(
                "run id {id} is not in the history ({})",
                path.display()
            ))
        })?;
        let file = run.results_path.ok_or_else(|| {
            usage(format!(
                "run {id} has no results file (it ran with --no-results)"
            ))
        })?;
        return Ok(Named {
            label: format!("#{id}"),
            results: load(Path::new(&file))?,
        });
    }
    let path = Path::new(reference);
    Ok(Named {
        label: path
            .file_stem()
            .map_or(reference.to_string(), |s| s.to_string_lossy().into_owned()),
        results: load(path)?,
    })
}

/// What makes runs unlike the baseline (the first run named): another target, or another
/// plan (named by the parts that differ). A comparison of such runs compares more than one
/// change.
fn differences(groups: &[Vec<Named>]) -> Vec<String> {
    let mut runs = groups.iter().flatten();
    let Some(base) = runs.next() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for run in runs {
        let (a, b) = (&base.results.meta, &run.results.meta);
        if a.target != b.target {
            out.push(format!(
                "{} ran against {}, the baseline {} against {}: not a like-for-like comparison",
                run.label, b.target, base.label, a.target
            ));
        }
        // The test's name is no part of what it does.
        let (plan_a, plan_b) = (
            serde_json::to_value(&a.plan).unwrap_or_default(),
            serde_json::to_value(&b.plan).unwrap_or_default(),
        );
        let parts: Vec<String> = match (plan_a.as_object(), plan_b.as_object()) {
            (Some(x), Some(y)) => x
                .keys()
                .chain(y.keys().filter(|k| !x.contains_key(*k)))
                .filter(|k| *k != "name" && x.get(*k) != y.get(*k))
                .cloned()
                .collect(),
            _ if plan_a != plan_b => vec!["plans".into()],
            _ => Vec::new(),
        };
        if !parts.is_empty() {
            out.push(format!(
                "{} ran a different plan than the baseline {} ({} differ): not a like-for-like comparison",
                run.label,
                base.label,
                parts.join(", ")
            ));
        }
    }
    out
}

/// Capacity searches among the runs: their knees side by side (the first run of each group),
/// and the capacity rules they break. A capacity rule on runs without a search is a usage
/// error.
fn compare_searches(
    groups: &[Vec<Named>],
    rules: &[barrage_capacity::compare::Rule],
) -> anyhow::Result<Vec<String>> {
    let searches = groups
        .iter()
        .filter_map(|g| g.first())
        .map(|m| barrage_capacity::file::of(&m.results).map(|s| s.map(|s| (m.label.as_str(), s))))
        .collect::<Option<Result<Vec<_>, _>>>();
    let searches = match searches {
        Some(found) => found.map_err(usage)?,
        None if rules.is_empty() => return Ok(Vec::new()),
        None => {
            return Err(usage(
                "--fail-on: capacity rules need capacity searches (results of `barrage capacity`) on both sides",
            ))
        }
    };
    let Some(((base_label, base), others)) = searches.split_first() else {
        return Ok(Vec::new());
    };
    let others: Vec<(&str, &barrage_capacity::Search)> =
        others.iter().map(|(l, s)| (*l, s)).collect();
    let (text, broken) = barrage_capacity::compare::compare((base_label, base), &others, rules);
    crate::print_out(&text)?;
    Ok(broken)
}

/// Prints the comparison; returns the exit code (3 when a rule is broken).
pub fn compare_command(args: &CompareArgs) -> anyhow::Result<i32> {
    // Rules on a capacity search's knee (`capacity:-10%`) and on the runs' figures.
    let (capacity_rules, run_rules): (Vec<&str>, Vec<&str>) = args
        .fail_on
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .partition(|r| barrage_capacity::compare::is_capacity_rule(r));
    let rules =
        Rule::parse_list(&run_rules.join(",")).map_err(|e| usage(format!("--fail-on: {e}")))?;
    let capacity_rules = capacity_rules
        .iter()
        .map(|r| barrage_capacity::compare::Rule::parse(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(format!("--fail-on: {e}")))?;
    let mut db = None;
    let mut groups: Vec<Vec<Named>> = Vec::new();
    for arg in args.runs.iter().filter(|a| !a.eq_ignore_ascii_case("vs")) {
        let members = arg
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| resolve(m, &mut db, args.history.as_deref()))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if members.is_empty() {
            return Err(usage(format!("compare: `{arg}` names no run")));
        }
        groups.push(members);
    }
    if groups.len() < 2 {
        return Err(usage(
            "compare: give at least two runs or groups (baseline first)",
        ));
    }
    for warning in differences(&groups) {
        eprintln!("warning: {warning}");
    }
    let figures: Vec<Group> = groups
        .iter()
        .map(|members| Group {
            label: members
                .iter()
                .map(|m| m.label.as_str())
                .collect::<Vec<_>>()
                .join(","),
            runs: members
                .iter()
                .map(|m| RunFigures::of(&m.label, &m.results))
                .collect(),
        })
        .collect();
    let (text, mut broken) = render_compare(&figures, &rules);
    crate::print_out(&text)?;
    broken.extend(compare_searches(&groups, &capacity_rules)?);
    if let Some(out) = &args.html {
        let runs: Vec<ComparedRun<'_>> = groups
            .iter()
            .enumerate()
            .flat_map(|(g, members)| {
                members.iter().map(move |m| ComparedRun {
                    group: g,
                    label: m.label.clone(),
                    results: &m.results,
                })
            })
            .collect();
        let page = barrage_report::render_compare_html(&figures, &runs, &rules);
        barrage_results::create_private(out)
            .and_then(|mut file| std::io::Write::write_all(&mut file, page.as_bytes()))
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if broken.is_empty() {
        return Ok(exit::OK);
    }
    for b in &broken {
        eprintln!("regression: {b}");
    }
    Ok(exit::REGRESSION)
}
