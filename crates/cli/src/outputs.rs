//! Result outputs of `barrage run` and `barrage quick`: `--json`, `--junit`, `--csv` files
//! written at the end, `--out ndjson=FILE` and `--out samples=FILE:RATE` streamed during the
//! run, and `--summary-trend-stats`. Every file is created before the run starts, so an
//! unwritable path fails at once (exit 1) instead of after a long test.

use crate::usage::usage;
use anyhow::Context;
use barrage_engine::SampleSink;
use barrage_plan::Aggregation;
use barrage_report::{render_csv, render_junit, Summary, DEFAULT_TREND_STATS};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
}

/// Outputs streamed while the run goes on.
#[derive(Default)]
pub struct Streams {
    pub ndjson: Option<BufWriter<File>>,
    pub samples: Option<Arc<SampleSink>>,
    /// Live metric exports (`prometheus-rw=URL`, `otlp=URL`), started when the run starts.
    pub exports: Vec<barrage_stream::ExportSpec>,
    /// The live dashboard, already listening.
    pub dashboard: Option<barrage_stream::Dashboard>,
}

/// Files written when the run ends, already created.
pub struct FinalFiles {
    json: Option<(PathBuf, File)>,
    junit: Option<(PathBuf, File)>,
    csv: Option<(PathBuf, File)>,
}

fn create(path: &Path) -> anyhow::Result<File> {
    File::create(path).with_context(|| format!("cannot write results to {}", path.display()))
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

    /// Checks the `--out` specs (exit 2 when malformed) and opens their files (exit 1 when
    /// they cannot be written).
    pub fn streams(&self, tags: &[String]) -> anyhow::Result<Streams> {
        let mut streams = Streams::default();
        if let Some(addr) = &self.dashboard {
            let dashboard = barrage_stream::Dashboard::start(addr)
                .map_err(|e| usage(format!("--dashboard {addr}: cannot listen there ({e})")))?;
            eprintln!("dashboard: http://{}/", dashboard.addr);
            streams.dashboard = Some(dashboard);
        }
        for spec in &self.out {
            let (kind, rest) = spec.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--out `{spec}`: expected ndjson=FILE or samples=FILE:RATE"
                ))
            })?;
            match kind {
                "ndjson" if !rest.is_empty() => {
                    streams.ndjson = Some(BufWriter::new(create(Path::new(rest))?));
                }
                "samples" => {
                    let (file, rate) = rest.rsplit_once(':').ok_or_else(|| {
                        usage(format!(
                            "--out `{spec}`: give the sampling rate, like samples=FILE:0.01"
                        ))
                    })?;
                    let rate: f64 = rate
                        .parse()
                        .ok()
                        .filter(|r: &f64| *r > 0.0 && *r <= 1.0)
                        .ok_or_else(|| {
                            usage(format!(
                                "--out `{spec}`: the sampling rate must be a number in (0, 1]"
                            ))
                        })?;
                    let out = BufWriter::new(create(Path::new(file))?);
                    streams.samples = Some(Arc::new(SampleSink::new(
                        rate,
                        tags.to_vec(),
                        Box::new(out),
                    )));
                }
                _ => match barrage_stream::ExportSpec::parse(kind, rest) {
                    Some(export) => streams
                        .exports
                        .push(export.map_err(|e| usage(e.to_string()))?),
                    None => {
                        return Err(usage(format!(
                            "--out `{spec}`: unknown output (known: ndjson=FILE, samples=FILE:RATE, {})",
                            barrage_stream::KINDS
                        )))
                    }
                },
            }
        }
        Ok(streams)
    }

    /// Creates the end-of-run files now.
    pub fn final_files(&self) -> anyhow::Result<FinalFiles> {
        let open = |path: &Option<PathBuf>| -> anyhow::Result<Option<(PathBuf, File)>> {
            path.as_ref()
                .map(|p| Ok((p.clone(), create(p)?)))
                .transpose()
        };
        Ok(FinalFiles {
            json: open(&self.json)?,
            junit: open(&self.junit)?,
            csv: open(&self.csv)?,
        })
    }
}

impl FinalFiles {
    /// Writes the summary to every file asked for.
    pub fn write(self, summary: &Summary) -> anyhow::Result<()> {
        let outputs = [
            (self.json, summary.to_json() + "\n"),
            (self.junit, render_junit(summary)),
            (self.csv, render_csv(summary)),
        ];
        for (file, text) in outputs {
            if let Some((path, mut file)) = file {
                file.write_all(text.as_bytes())
                    .and_then(|()| file.flush())
                    .with_context(|| format!("cannot write results to {}", path.display()))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trend_stats_and_out_specs_are_checked() {
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
        for (spec, message) in [
            ("csv=x", "unknown output"),
            ("samples=x", "sampling rate"),
            ("samples=x:2", "(0, 1]"),
            ("ndjson", "expected ndjson=FILE"),
            ("prometheus-rw=localhost:9090", "only http://"),
            ("experimental-prometheus-rw=::", "is not a URL"),
        ] {
            let args = OutputArgs {
                out: vec![spec.into()],
                ..OutputArgs::default()
            };
            let e = args.streams(&[]).err().unwrap().to_string();
            assert!(e.contains(message), "{spec}: {e}");
        }
    }
}
