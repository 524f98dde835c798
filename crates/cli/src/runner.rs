//! Runs a plan for any command: the engine on its own thread, with live progress on a TTY,
//! live threshold checks (`abortOnFail`) and the NDJSON stream on merged snapshots, and
//! Ctrl-C handling (first: graceful stop, running iterations get the grace period; second:
//! stop at once; both still summarise and write every output).

use crate::live::Live;
use crate::outputs::Streams;
use crate::usage::{exit, usage};
use anyhow::Context;
use barrage_engine::{LiveSnapshot, RunControl};
use barrage_plan::{Aggregation, Plan, Workload};
use barrage_report::{Summary, DEFAULT_TREND_STATS};
use barrage_results::{unix_ns, Machine, PlannedArrivalsBits, ResultsFile, RunMeta};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

const PROGRESS_TICK: Duration = Duration::from_millis(250);

/// A finished run: its results (what the results file holds) and the summary rendered from
/// them, so a report re-rendered from the file is identical.
pub struct Finished {
    pub summary: Summary,
    pub results: ResultsFile,
    /// Ctrl-C was pressed twice: the run was cut off (exit code 130).
    pub interrupted_twice: bool,
}

/// What the command line knew about the run, for the results file.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// `run` or `quick`.
    pub command: &'static str,
    /// The definition file, for `run`.
    pub script: Option<String>,
    /// Override flags as given.
    pub overrides: BTreeMap<String, String>,
}

impl Finished {
    /// The exit code of a finished run: 130 after a second Ctrl-C; 1 when no request got a
    /// response (with `unreachable_fails`); 99 when a threshold failed; else 0.
    pub fn exit_code(&self, unreachable_fails: bool) -> i32 {
        let s = &self.summary;
        if self.interrupted_twice {
            return exit::INTERRUPTED_TWICE;
        }
        if unreachable_fails && s.responses == 0 && s.errors > 0 {
            let kinds: Vec<String> = s
                .errors_by_kind
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            eprintln!(
                "error: the target never answered: all {} requests failed ({})",
                s.errors,
                kinds.join(", ")
            );
            return exit::RUNTIME;
        }
        if s.k6.thresholds_failed() || s.k6.aborted_by_threshold.is_some() {
            eprintln!("error: some thresholds have failed");
            return exit::THRESHOLDS_FAILED;
        }
        exit::OK
    }
}

/// How often merged snapshots are read for live thresholds and the NDJSON stream.
const LIVE_PERIOD: Duration = Duration::from_secs(1);

/// What a run does besides running: outputs streamed while it goes on, summary columns.
pub struct RunOptions {
    pub show_progress: bool,
    pub streams: Streams,
    pub trend_stats: Vec<Aggregation>,
    /// k6 scripts: the VUs that run instead of the plan's sessions.
    pub scripted: Option<barrage_engine::SharedVuFactory>,
}

impl RunOptions {
    /// Progress only, no streams, default columns.
    pub fn plain(show_progress: bool) -> Self {
        Self {
            show_progress,
            streams: Streams::default(),
            trend_stats: DEFAULT_TREND_STATS.to_vec(),
            scripted: None,
        }
    }
}

/// Whether live progress should be drawn: only for a person watching a terminal.
pub fn progress_wanted() -> bool {
    std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// Runs `plan` to its end (or to Ctrl-C, or to a failed `abortOnFail` threshold) and
/// summarises it.
pub fn execute(plan: &Plan, options: RunOptions, context: &RunContext) -> anyhow::Result<Finished> {
    // Bad TLS input (an unreadable --cacert, a key that does not match) is a usage error,
    // found before any load starts.
    barrage_engine::connector(plan).map_err(|e| usage(format!("TLS: {e}")))?;
    let control = RunControl {
        samples: options.streams.samples.clone(),
        scripted: options.scripted.clone(),
        ..RunControl::default()
    };
    let mut live = Live {
        plan,
        ndjson: options.streams.ndjson,
        next_second: 0,
        aborted: None,
    };
    if live.wanted() {
        control.snapshots.enable();
    }
    let show_progress = options.show_progress;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let engine = {
        let (plan, control) = (plan.clone(), control.clone());
        std::thread::Builder::new()
            .name("barrage-engine".into())
            .spawn(move || {
                let result = barrage_engine::run(&plan, &control);
                let _ = done_tx.send(());
                result
            })?
    };
    let progress = show_progress.then(|| Progress::new(plan.workload.duration()));
    let mut active = ActiveSamples::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut interrupts = 0;
    runtime.block_on(async {
        let mut done = done_rx;
        let mut ticker = tokio::time::interval(PROGRESS_TICK);
        let mut live_ticker = tokio::time::interval(LIVE_PERIOD);
        // One listener for the whole run, replaced only after it fires: a fresh `ctrl_c()` per
        // loop turn would miss a SIGINT delivered while another branch was being handled.
        let mut interrupt = Box::pin(tokio::signal::ctrl_c());
        loop {
            tokio::select! {
                _ = &mut done => break,
                _ = ticker.tick() => {
                    let live = control.live.snapshot();
                    active.sample(live.active_clients);
                    if let Some(p) = &progress {
                        p.update(live);
                    }
                }
                _ = live_ticker.tick(), if live.wanted() => live.tick(&control)?,
                signal = &mut interrupt => {
                    interrupt = Box::pin(tokio::signal::ctrl_c());
                    if signal.is_err() {
                        continue;
                    }
                    interrupts += 1;
                    match interrupts {
                        1 => {
                            eprintln!("\ninterrupted: stopping; running iterations get the grace period, the summary covers what was done (Ctrl-C again to stop at once)");
                            control.stop.stop();
                        }
                        2 => {
                            eprintln!("\ninterrupted twice: stopping at once, writing what was done (Ctrl-C again to quit without it)");
                            control.stop.stop_now();
                        }
                        _ => std::process::exit(exit::INTERRUPTED_TWICE),
                    }
                }
            }
        }
        anyhow::Ok(())
    })?;
    if let Some(p) = progress {
        p.finish();
    }
    let outcome = engine
        .join()
        .map_err(|_| anyhow::anyhow!("the engine thread panicked"))??;
    let seconds = outcome.metrics.series().seconds.len();
    live.stream(&outcome.metrics, seconds)?;
    if let Some(sink) = &options.streams.samples {
        sink.finish().context("writing the --out samples log")?;
    }
    let active_clients = active.per_second;
    let started_at_unix_ns = unix_ns(outcome.started_at);
    let elapsed_ns = outcome.elapsed.as_nanos() as u64;
    let planned = |expected: f64, seconds: f64| PlannedArrivalsBits {
        expected_f64_bits: expected.to_bits(),
        seconds_f64_bits: seconds.to_bits(),
    };
    let meta = RunMeta {
        command: context.command.to_string(),
        name: plan.name.clone(),
        target: plan.target.to_string(),
        barrage_version: env!("CARGO_PKG_VERSION").to_string(),
        plan: serde_json::to_value(plan)?,
        script: context.script.clone(),
        overrides: context.overrides.clone(),
        seed: plan.options.seed,
        machine: Machine::current(),
        started_at_unix_ns,
        ended_at_unix_ns: started_at_unix_ns + elapsed_ns,
        elapsed_ns,
        interrupted: outcome.interrupted,
        threads: outcome.threads,
        tags: plan.tags.clone(),
        planned_arrivals: match &plan.workload {
            Workload::OpenArrivals(open) => Some(planned(
                open.phases.iter().map(|p| p.expected_arrivals()).sum(),
                open.arrivals_end().as_secs_f64(),
            )),
            Workload::ArrivalPool(pool) => Some(planned(
                pool.expected_iterations(),
                pool.end().as_secs_f64(),
            )),
            _ => None,
        },
        merged_from: Vec::new(),
        request_id_prefix: Some(outcome.request_id_prefix.clone()),
    };
    let mut metrics = outcome.metrics;
    for tag in &mut metrics.tags {
        tag.latency_by_second.seal();
    }
    let mut results = ResultsFile {
        meta,
        metrics,
        thresholds: barrage_report::thresholds_section(live.aborted.as_deref(), &[]),
        self_check: None,
        active_clients: Some(active_clients),
    };
    // The summary is rendered from the results, exactly as `barrage report` will from the file.
    let summary = barrage_report::summary_of(&results, &options.trend_stats);
    results.thresholds =
        barrage_report::thresholds_section(live.aborted.as_deref(), &summary.k6.thresholds);
    Ok(Finished {
        summary,
        results,
        interrupted_twice: interrupts >= 2,
    })
}

/// Active clients sampled at every progress tick (4 per second), kept as the peak per second:
/// the engine's per-worker single-writer counters summed at one instant.
struct ActiveSamples {
    started: Instant,
    per_second: Vec<u64>,
}

impl ActiveSamples {
    /// A day of seconds at most, like the other series.
    const MAX_SECONDS: usize = 86_400;

    fn new() -> Self {
        Self {
            started: Instant::now(),
            per_second: Vec::new(),
        }
    }

    fn sample(&mut self, active: u64) {
        let second = (self.started.elapsed().as_secs() as usize).min(Self::MAX_SECONDS);
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] = self.per_second[second].max(active);
    }
}

/// The live progress line: elapsed (of planned), requests, current rate, errors, clients.
struct Progress {
    bar: ProgressBar,
    planned: Option<Duration>,
    started: Instant,
    last: std::cell::Cell<(Instant, u64)>,
}

impl Progress {
    fn new(planned: Option<Duration>) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let now = Instant::now();
        Self {
            bar,
            planned,
            started: now,
            last: std::cell::Cell::new((now, 0)),
        }
    }

    fn update(&self, live: LiveSnapshot) {
        let now = Instant::now();
        let (last_at, last_count) = self.last.get();
        let done = live.responses + live.errors;
        let window = now.duration_since(last_at).as_secs_f64();
        let rate = if window > 0.0 {
            (done - last_count.min(done)) as f64 / window
        } else {
            0.0
        };
        self.last.set((now, done));
        let elapsed = now.duration_since(self.started).as_secs_f64();
        let of = self
            .planned
            .map_or(String::new(), |p| format!("/{:.0}s", p.as_secs_f64()));
        self.bar.set_message(format!(
            "{elapsed:.1}s{of}  requests {done}  rate {rate:.0}/s  errors {}  clients {}",
            live.errors, live.active_clients
        ));
        self.bar.tick();
    }

    fn finish(self) {
        self.bar.finish_and_clear();
    }
}
