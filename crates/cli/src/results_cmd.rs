//! `barrage report FILE` (re-render a run's outputs from its results file) and `barrage merge`
//! (several results files into one, exactly).

use crate::usage::usage;
use anyhow::Context;
use barrage_results::ResultsFile;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A results file (.brr)
    file: PathBuf,
    /// Write the self-contained HTML report here
    #[arg(long, value_name = "OUT")]
    html: Option<PathBuf>,
    /// Write the JSON summary here (as `--json` / `-o json` wrote it at the run's end)
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Results files of the same plan
    #[arg(required = true, num_args = 2..)]
    files: Vec<PathBuf>,
    /// The merged results file to write
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
}

/// Reads a results file; any problem with it is a usage error naming the file.
pub fn load(path: &Path) -> anyhow::Result<ResultsFile> {
    ResultsFile::read(path).map_err(|e| usage(format!("{}: {e}", path.display())))
}

/// Prints the text summary, or writes the outputs asked for.
pub fn report_command(args: &ReportArgs) -> anyhow::Result<String> {
    let results = load(&args.file)?;
    let summary = barrage_report::summary_of(&results);
    if args.html.is_none() && args.json.is_none() {
        return Ok(barrage_report::render_text(&results, &summary));
    }
    if let Some(path) = &args.json {
        std::fs::write(path, summary.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, barrage_report::render_html(&results, &summary))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(String::new())
}

pub fn merge_command(args: &MergeArgs) -> anyhow::Result<String> {
    let parts = args
        .files
        .iter()
        .map(|f| load(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let merged = barrage_results::merge(&parts, &names).map_err(|e| usage(e.to_string()))?;
    merged
        .write(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let total = merged.metrics.total();
    Ok(format!(
        "merged {} files into {}: {} requests, {} errors\n",
        parts.len(),
        args.output.display(),
        total.requests(),
        total.error_count()
    ))
}
