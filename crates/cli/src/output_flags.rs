//! The output flags shared by `run` and `quick` (`--json`, `--junit`, `--csv`, `--out`,
//! `--dashboard`, `--summary-trend-stats`, `--redact`), turned with [`crate::record`]'s flags
//! into the run's [`OutputList`], which `barrage-run` checks and opens before any load.

use crate::record::RecordArgs;
use crate::usage::usage;
use barrage_plan::Aggregation;
use barrage_report::DEFAULT_TREND_STATS;
use barrage_run::outputs::{Format, OutputList, Wanted};
use std::path::PathBuf;

#[derive(Debug, Default, Clone, clap::Args)]
pub struct OutputArgs {
    /// Also write the full summary (metrics, thresholds, checks, per-second series) as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every threshold and check as a JUnit XML test case
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the per-second time series as CSV (one row per second and tag)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Stream during the run: `ndjson=FILE` (per-second aggregates), `samples=FILE:RATE`
    /// (a random share RATE, 0–1, of requests, one JSON line each), `prometheus-rw=URL`
    /// (Prometheus remote write) or `otlp=URL` (OTLP/HTTP metrics); repeatable
    #[arg(long = "out", value_name = "KIND=FILE")]
    pub out: Vec<String>,
    /// Serve a live dashboard (charts fed by server-sent events, the final HTML report at the
    /// end) on ADDR, 127.0.0.1:5665 when no address is given
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = barrage_stream::dashboard::DEFAULT_ADDR)]
    pub dashboard: Option<String>,
    /// Trend columns of the summary, e.g. "avg,min,med,max,p(90),p(95),p(99.9)"
    #[arg(long, value_name = "STATS")]
    pub summary_trend_stats: Option<String>,
    /// Keep this header's values out of the results, reports and history, like
    /// Authorization, Cookie and Proxy-Authorization always are (repeatable)
    #[arg(long, value_name = "HEADER")]
    pub redact: Vec<String>,
}

impl OutputArgs {
    /// The Trend statistics to show.
    pub fn trend_stats(&self) -> anyhow::Result<Vec<Aggregation>> {
        let Some(text) = &self.summary_trend_stats else {
            return Ok(DEFAULT_TREND_STATS.to_vec());
        };
        let stats: Vec<Aggregation> = text
            .split(',')
            .map(|item| {
                Aggregation::parse(item)
                    .filter(|a| !matches!(a, Aggregation::Rate | Aggregation::Value))
                    .ok_or_else(|| {
                        usage(format!(
                            "--summary-trend-stats: `{}` is not a trend statistic (avg, min, med, max, count, p(N))",
                            item.trim()
                        ))
                    })
            })
            .collect::<anyhow::Result<_>>()?;
        if stats.is_empty() {
            return Err(usage("--summary-trend-stats: name at least one statistic"));
        }
        Ok(stats)
    }

    /// The end-of-run files these flags ask for.
    pub fn wanted(&self) -> Vec<Wanted> {
        Wanted::given([
            (Format::Json, self.json.clone()),
            (Format::Junit, self.junit.clone()),
            (Format::Csv, self.csv.clone()),
        ])
    }

    /// Every output these flags and `record`'s ask for, for a run named `run_name`.
    pub fn list(&self, record: &RecordArgs, run_name: &str) -> anyhow::Result<OutputList> {
        let mut files = self.wanted();
        files.extend(record.wanted(run_name));
        Ok(OutputList {
            files,
            out: self.out.clone(),
            dashboard: self.dashboard.clone(),
            trend_stats: self.trend_stats()?,
            redact: self.redact.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trend_stats_are_checked() {
        let args = OutputArgs {
            summary_trend_stats: Some("avg, p(99.9),max".into()),
            ..OutputArgs::default()
        };
        assert_eq!(
            args.trend_stats().unwrap(),
            vec![
                Aggregation::Avg,
                Aggregation::Percentile(99.9),
                Aggregation::Max
            ]
        );
        let bad = OutputArgs {
            summary_trend_stats: Some("avg,p99".into()),
            ..OutputArgs::default()
        };
        assert!(bad.trend_stats().unwrap_err().to_string().contains("`p99`"));
    }
}
