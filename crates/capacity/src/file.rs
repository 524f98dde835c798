//! A capacity search in a results file: the `CAPY` section holds the [`Search`] (every
//! step's window histograms included, so nothing is lost), and segments of one search merge
//! step by step, exactly, and are judged again on the merged windows.

use crate::measure::{Counts, Measure};
use crate::search::{conclude_levels, Level, Outcome, Search};
use barrage_metrics::LatencyHistogram;
use barrage_results::ResultsFile;

/// Puts the search into the results file.
pub fn attach(results: &mut ResultsFile, search: &Search) {
    results.meta.command = "capacity".into();
    results.capacity = Some(serde_json::to_value(search).expect("plain data serialises"));
}

/// The search a results file holds, if it is one.
pub fn of(results: &ResultsFile) -> Option<Result<Search, String>> {
    results.capacity.as_ref().map(|value| {
        serde_json::from_value(value.clone())
            .map_err(|e| format!("the capacity search (CAPY) does not read: {e}"))
    })
}

/// Merges the searches segments ran side by side (`--segment i/N`, the same steps at the
/// same times): each step's runs are merged run by run — histograms exactly, counts and
/// throughputs added — and the SLO is judged again on the merged windows.
pub fn merge(parts: &[Search]) -> Result<Search, String> {
    let first = parts.first().ok_or("nothing to merge")?;
    for (i, part) in parts.iter().enumerate().skip(1) {
        if part.config != first.config {
            return Err(format!(
                "part {} searched with other settings than part 1",
                i + 1
            ));
        }
        let steps = |s: &Search| {
            s.levels
                .iter()
                .map(|l| (l.load, l.role, l.runs.len()))
                .collect::<Vec<_>>()
        };
        if steps(part) != steps(first) {
            return Err(format!(
                "part {} ran other steps than part 1: segments of a search must run the same steps (they do with --segment, which runs the whole ladder)",
                i + 1
            ));
        }
    }
    let levels: Vec<Level> = (0..first.levels.len())
        .map(|step| {
            let level = &first.levels[step];
            let runs = (0..level.runs.len())
                .map(|run| merge_runs(parts.iter().map(|p| &p.levels[step].runs[run]), first))
                .collect();
            Level::judge(level.load, level.role, runs, &first.config)
        })
        .collect();
    let mut merged = conclude_levels(first.config.clone(), levels);
    // A segment stopped by a signal leaves the merged search unfinished too.
    if parts.iter().any(|p| p.outcome == Outcome::Stopped) {
        merged.mark_stopped();
    }
    Ok(merged)
}

fn merge_runs<'a>(runs: impl Iterator<Item = &'a Measure>, search: &Search) -> Measure {
    let mut histogram = LatencyHistogram::new();
    let mut counts = Counts::default();
    let mut worst: Option<&Measure> = None;
    let mut load = 0.0;
    let mut started = u64::MAX;
    let mut overrun_ms = 0;
    for run in runs {
        overrun_ms = overrun_ms.max(run.overrun_ms);
        histogram.merge(&run.histogram());
        counts.requests += run.requests;
        counts.responses += run.responses;
        counts.failed += run.failed;
        counts.interrupted += run.interrupted;
        load = run.load;
        started = started.min(run.started_at_unix_ns);
        let score =
            |m: &Measure| m.generator.max_worker_cpu_percent + m.generator.tick_p99_us as f64 / 1e3;
        if worst.is_none_or(|w| score(run) > score(w)) {
            worst = Some(run);
        }
    }
    let mut generator = worst
        .map(|w| w.generator.clone())
        .expect("at least one part");
    if let Some(w) = worst {
        generator.fd_errors = w.generator.fd_errors;
    }
    let mut merged = Measure::from_histogram(
        load,
        started,
        &histogram,
        counts,
        search.config.window.measure_s as f64,
        generator,
    );
    // A part that ran past its slot makes the merged run one of steps that did not line up.
    merged.overrun_ms = overrun_ms;
    merged
}
