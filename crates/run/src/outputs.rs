//! Every output of a run, in one place: the list a command asks for ([`OutputList`]: files
//! such as `--json`, `--junit`, `--csv`, `--results`, `--html`; streams such as
//! `--out ndjson=FILE`, `--out samples=FILE:RATE`, live exports and the dashboard), the files
//! created before any load starts (an unwritable path is a usage error naming its flag, exit
//! 2, before the run), and the one renderer that writes them from a run's results — `run`,
//! `quick`, `demo` and `report` all use it.

use crate::usage::usage;
use anyhow::Context;
use barrage_engine::SampleSink;
use barrage_plan::Aggregation;
use barrage_report::{render_csv, render_html, render_junit, Summary};
use barrage_results::ResultsFile;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// What an output file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The results file (`.brr`): everything measured, for `report`, `compare`, `merge`.
    Results,
    /// The JSON summary.
    Json,
    /// Thresholds and checks as JUnit XML.
    Junit,
    /// The per-second series as CSV.
    Csv,
    /// The self-contained HTML report.
    Html,
}

/// Renders `format` from a run's results and its summary: the one renderer of every output.
pub fn render(format: Format, results: &ResultsFile, summary: &Summary) -> Vec<u8> {
    match format {
        Format::Results => results.to_bytes(),
        Format::Json => (summary.to_json() + "\n").into_bytes(),
        Format::Junit => render_junit(summary).into_bytes(),
        Format::Csv => render_csv(summary).into_bytes(),
        Format::Html => render_html(results, summary).into_bytes(),
    }
}

impl Format {
    /// The flag that asks for this output, in every command that writes it.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Results => "--results",
            Format::Json => "--json",
            Format::Junit => "--junit",
            Format::Csv => "--csv",
            Format::Html => "--html",
        }
    }
}

/// An output asked for: the flag that named it, its path and what it holds.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub flag: &'static str,
    pub path: PathBuf,
    pub format: Format,
}

impl Wanted {
    /// The files asked for among `(format, path given)` pairs.
    pub fn given(paths: impl IntoIterator<Item = (Format, Option<PathBuf>)>) -> Vec<Wanted> {
        paths
            .into_iter()
            .filter_map(|(format, path)| {
                path.map(|path| Wanted {
                    flag: format.flag(),
                    path,
                    format,
                })
            })
            .collect()
    }
}

/// An output file, opened before the run.
struct Opened {
    wanted: Wanted,
    file: File,
}

/// The output files of a run, every one already opened (created 0600 when new).
pub struct OutputFiles {
    files: Vec<Opened>,
}

/// Opens `path` for the output named by `flag` (creating its directory when `make_dir`); a
/// failure is a usage error naming the flag. Returns whether the file was created (so a
/// failed start can remove it again).
fn open(flag: &str, path: &Path, make_dir: bool) -> anyhow::Result<(File, bool)> {
    let existed = path.exists();
    if let Some(dir) = path
        .parent()
        .filter(|d| make_dir && !d.as_os_str().is_empty() && !existed)
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| usage(format!("{flag}: cannot write {}: {e}", path.display())))?;
    }
    let file = barrage_results::open_private(path)
        .map_err(|e| usage(format!("{flag}: cannot write {}: {e}", path.display())))?;
    Ok((file, !existed))
}

impl OutputFiles {
    /// Opens every output now, before any load: the first that cannot be written stops the
    /// command with a usage error naming its flag, and the files created so far are removed
    /// (existing files keep their contents until the run's end writes them).
    pub fn open(wanted: Vec<Wanted>) -> anyhow::Result<Self> {
        let mut files = Vec::new();
        let mut created = Vec::new();
        for w in wanted {
            // The results directory is made (the default one may not exist yet).
            match open(w.flag, &w.path, w.format == Format::Results) {
                Ok((file, new)) => {
                    if new {
                        created.push(w.path.clone());
                    }
                    files.push(Opened { wanted: w, file });
                }
                Err(e) => {
                    for path in created {
                        let _ = std::fs::remove_file(path);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Self { files })
    }

    /// The results file's path, when one is written.
    pub fn results_path(&self) -> Option<&Path> {
        self.files
            .iter()
            .find(|f| f.wanted.format == Format::Results)
            .map(|f| f.wanted.path.as_path())
    }

    /// Writes every output from the results. Each is written whatever happens to the others;
    /// the first failure is returned.
    pub fn write(self, results: &ResultsFile, summary: &Summary) -> anyhow::Result<()> {
        let mut first_error = None;
        for Opened { wanted, mut file } in self.files {
            let bytes = render(wanted.format, results, summary);
            let written = file
                .set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(&bytes))
                .and_then(|()| file.flush())
                .with_context(|| {
                    format!("{}: cannot write {}", wanted.flag, wanted.path.display())
                });
            if let Err(e) = written {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Everything a command line asks a run to write: the end-of-run files, the `--out` specs
/// streamed while it runs, the dashboard's address, the summary's trend columns and the
/// headers to redact. [`crate::RunSpec::new`] checks it and opens every output before load.
#[derive(Debug, Clone, Default)]
pub struct OutputList {
    pub files: Vec<Wanted>,
    /// `--out KIND=...` specs, as given.
    pub out: Vec<String>,
    /// `--dashboard [ADDR]`.
    pub dashboard: Option<String>,
    /// Trend columns of the summary (empty: the default ones).
    pub trend_stats: Vec<Aggregation>,
    /// Header names whose values are kept out of everything the run leaves behind.
    pub redact: Vec<String>,
}

impl Streams {
    /// Checks the `--out` specs and opens their files, and starts the dashboard (exit 2,
    /// naming the flag, when malformed or not writable).
    pub fn open(out: &[String], dashboard: Option<&str>, tags: &[String]) -> anyhow::Result<Self> {
        let mut streams = Streams::default();
        if let Some(addr) = dashboard {
            let dashboard = barrage_stream::Dashboard::start(addr)
                .map_err(|e| usage(format!("--dashboard {addr}: cannot listen there ({e})")))?;
            eprintln!("dashboard: http://{}/", dashboard.addr);
            streams.dashboard = Some(dashboard);
        }
        for spec in out {
            let (kind, rest) = spec.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--out `{spec}`: expected ndjson=FILE or samples=FILE:RATE"
                ))
            })?;
            match kind {
                "ndjson" if !rest.is_empty() => {
                    let (file, _) = open("--out ndjson", Path::new(rest), false)?;
                    file.set_len(0)?;
                    streams.ndjson = Some(BufWriter::new(file));
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
                    let (file, _) = open("--out samples", Path::new(file), false)?;
                    file.set_len(0)?;
                    let out = BufWriter::new(file);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_specs_are_checked() {
        for (spec, message) in [
            ("csv=x", "unknown output"),
            ("samples=x", "sampling rate"),
            ("samples=x:2", "(0, 1]"),
            ("ndjson", "expected ndjson=FILE"),
            ("prometheus-rw=localhost:9090", "only http://"),
            ("experimental-prometheus-rw=::", "is not a URL"),
        ] {
            let e = Streams::open(&[spec.into()], None, &[])
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(message), "{spec}: {e}");
        }
    }
}
