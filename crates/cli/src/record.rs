//! What a run leaves behind besides its summary: the results file (default
//! `./barrage-results/NAME-TIMESTAMP.brr`), the optional HTML report, and its row in the
//! history database — the flags that steer them and the code that writes them.

use crate::history;
use anyhow::Context;
use barrage_results::{unix_ns, utc_parts};
use barrage_run::outputs::{Format, OutputFiles, Wanted};
use barrage_run::Finished;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Environment variable naming the default results directory (tests point it elsewhere).
pub const RESULTS_DIR_ENV: &str = "BARRAGE_RESULTS_DIR";
const DEFAULT_RESULTS_DIR: &str = "barrage-results";

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RecordArgs {
    /// Write the results file here (default: ./barrage-results/NAME-TIMESTAMP.brr)
    #[arg(long, value_name = "PATH", conflicts_with = "no_results")]
    pub results: Option<PathBuf>,
    /// Do not write a results file
    #[arg(long)]
    pub no_results: bool,
    /// Also write the self-contained HTML report here
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// The run history database (default: $XDG_DATA_HOME/barrage/history.db)
    #[arg(long, value_name = "PATH", conflicts_with = "no_history")]
    pub history: Option<PathBuf>,
    /// Do not record the run in the history database
    #[arg(long)]
    pub no_history: bool,
}

/// A run's name made safe for a file name.
fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    if stem.is_empty() {
        "run".into()
    } else {
        stem
    }
}

/// The default results path of a run named `name` starting now: a new name in the results
/// directory.
fn default_results_path(name: &str) -> PathBuf {
    let dir = std::env::var_os(RESULTS_DIR_ENV)
        .map_or_else(|| PathBuf::from(DEFAULT_RESULTS_DIR), PathBuf::from);
    let (y, mo, d, h, mi, s) = utc_parts(unix_ns(SystemTime::now()) / 1_000_000_000);
    let base = format!(
        "{}-{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}",
        file_stem(name)
    );
    let mut path = dir.join(format!("{base}.brr"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{base}-{n}.brr"));
        n += 1;
    }
    path
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

impl RecordArgs {
    /// The files these flags ask for: the results file (unless `--no-results`) and `--html`.
    pub fn wanted(&self, run_name: &str) -> Vec<Wanted> {
        let results = (!self.no_results).then(|| {
            self.results
                .clone()
                .unwrap_or_else(|| default_results_path(run_name))
        });
        Wanted::given([
            (Format::Results, results),
            (Format::Html, self.html.clone()),
        ])
    }
}

/// Writes every output file from the finished run, then its history row, as the flags ask.
pub fn keep(args: &RecordArgs, finished: &Finished, files: OutputFiles) -> anyhow::Result<()> {
    let results_path = files.results_path().map(absolute);
    files.write(&finished.results, &finished.summary)?;
    if !args.no_history {
        // The run is done and its files written: a history problem is worth a warning, not a
        // failed run.
        let recorded = history::path(args.history.as_deref()).and_then(|db| {
            history::record(
                &db,
                &finished.results,
                &finished.summary,
                results_path.as_deref(),
            )
            .with_context(|| format!("recording the run in {}", db.display()))
        });
        if let Err(e) = recorded {
            eprintln!("warning: {e:#} (--no-history skips the history)");
        }
    }
    if let Some(path) = &results_path {
        if std::io::stderr().is_terminal() {
            eprintln!("results: {}", path.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_and_file_stems() {
        assert_eq!(utc_parts(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc_parts(1_795_423_660), (2026, 11, 23, 8, 47, 40));
        assert_eq!(utc_parts(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(file_stem("GET /health?x=1"), "GET--health-x-1");
        assert_eq!(file_stem(""), "run");
    }
}
