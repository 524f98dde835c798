//! `barrage report FILE` (re-render a run's outputs from its results file) and `barrage merge`
//! (several results files into one, exactly).

use crate::usage::usage;
use anyhow::Context;
use barrage_results::ResultsFile;
use barrage_run::outputs::{Format, OutputFiles, Wanted};
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
    /// Write every threshold and check as a JUnit XML test case (as `--junit` did)
    #[arg(long, value_name = "OUT")]
    junit: Option<PathBuf>,
    /// Write the per-second series as CSV (as `--csv` did)
    #[arg(long, value_name = "OUT")]
    csv: Option<PathBuf>,
    /// Trend columns of the summary, e.g. "avg,med,p(99.9)" (as at the run)
    #[arg(long, value_name = "STATS")]
    summary_trend_stats: Option<String>,
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

/// Prints the text summary, or writes the outputs asked for; the exit code is the run's
/// verdict on the stored data (99 when a threshold fails, as the run itself exits).
pub fn report_command(args: &ReportArgs) -> anyhow::Result<(String, i32)> {
    let trend_stats = crate::output_flags::OutputArgs {
        summary_trend_stats: args.summary_trend_stats.clone(),
        ..Default::default()
    }
    .trend_stats()?;
    let results = load(&args.file)?;
    if let Some(search) =
        crate::capacity_cmd::report(&results, args.html.as_deref(), args.json.as_deref())
    {
        // A capacity search: its step table and knee, its page with the curve.
        let (text, code) = search?;
        let shown = if args.html.is_some() || args.json.is_some() {
            String::new()
        } else {
            text
        };
        return Ok((shown, code));
    }
    let wanted = Wanted::given([
        (Format::Json, args.json.clone()),
        (Format::Junit, args.junit.clone()),
        (Format::Csv, args.csv.clone()),
        (Format::Html, args.html.clone()),
    ]);
    let summary = barrage_report::summary_of(&results, &trend_stats);
    let code = if summary.k6.thresholds_failed() || summary.k6.aborted_by_threshold.is_some() {
        crate::usage::exit::THRESHOLDS_FAILED
    } else {
        crate::usage::exit::OK
    };
    if wanted.is_empty() {
        return Ok((barrage_report::render_text(&results, &summary), code));
    }
    OutputFiles::open(wanted)?.write(&results, &summary)?;
    Ok((String::new(), code))
}

pub fn merge_command(args: &MergeArgs) -> anyhow::Result<String> {
    let parts = args
        .files
        .iter()
        .map(|f| load(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let mut merged = barrage_results::merge(&parts, &names).map_err(|e| usage(e.to_string()))?;
    if let Some(segments) = &mut merged.meta.segments {
        // Trust is judged on the merged data, and per segment: one overloaded generator is
        // named even when the merged figures look fine.
        segments.untrustworthy = parts
            .iter()
            .filter(|part| {
                !barrage_report::SelfCheckSummary::new(&part.metrics.self_check)
                    .trust_reasons()
                    .is_empty()
            })
            .filter_map(|part| part.meta.segment.as_ref())
            .map(|s| format!("{}/{}", s.index, s.count))
            .collect();
    }
    // Segments of one capacity search: their steps merge step by step and are judged again.
    let searches = parts
        .iter()
        .filter_map(barrage_capacity::file::of)
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    if !searches.is_empty() {
        if searches.len() != parts.len() {
            return Err(usage(
                "merge: some files hold a capacity search and some do not",
            ));
        }
        let search =
            barrage_capacity::file::merge(&searches).map_err(|e| usage(format!("merge: {e}")))?;
        barrage_capacity::file::attach(&mut merged, &search);
    }
    merged
        .write(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let total = merged.metrics.total();
    let mut out = format!(
        "merged {} files into {}: {} requests, {} errors\n",
        parts.len(),
        args.output.display(),
        total.requests(),
        total.error_count()
    );
    if let Some(segments) = &merged.meta.segments {
        out.push_str(&barrage_report::segments_line(segments));
        out.push('\n');
    }
    Ok(out)
}
