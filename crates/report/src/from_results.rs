//! Reports from a results file: the same `Summary` (and text) as the run printed at its end,
//! because the run itself renders through here from the results it is about to write.

use crate::{render_hey, render_run, PlannedArrivals, RunInfo, Summary};
use barrage_results::{ResultsFile, RunMeta};

/// The run facts a `Summary` needs, from the results file's metadata.
pub fn run_info(meta: &RunMeta) -> RunInfo {
    RunInfo {
        name: meta.name.clone(),
        target: meta.target.clone(),
        started_at: meta.started_at(),
        elapsed: meta.elapsed(),
        interrupted: meta.interrupted,
        threads: meta.threads,
        tags: meta.tags.clone(),
        planned_arrivals: meta
            .planned_arrivals()
            .map(|(expected, seconds)| PlannedArrivals { expected, seconds }),
    }
}

pub fn summary_of(results: &ResultsFile) -> Summary {
    Summary::new(&run_info(&results.meta), &results.metrics)
}

/// The text summary the run printed: hey's layout for `quick`, the scenario layout otherwise.
pub fn render_text(results: &ResultsFile, summary: &Summary) -> String {
    if results.meta.command == "quick" {
        render_hey(summary)
    } else {
        render_run(summary)
    }
}
