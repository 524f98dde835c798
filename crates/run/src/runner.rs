//! Runs a plan for any command: the engine on its own thread, with live progress on a TTY,
//! live threshold checks (`abortOnFail`) and the NDJSON stream on merged snapshots, and
//! stop signals (Ctrl-C, SIGTERM, SIGHUP; first: graceful stop, running iterations get the
//! grace period; second: stop at once; both still summarise and write every output).

use crate::live::Live;
use crate::outputs::{OutputFiles, OutputList, Streams};
use crate::progress::Progress;
use crate::usage::{exit, usage};
use anyhow::Context;
use barrage_engine::RunControl;
use barrage_metrics::ErrorKind;
use barrage_plan::{redact_url, Aggregation, Plan, Redaction};
use barrage_report::{Summary, DEFAULT_TREND_STATS};
use barrage_results::{unix_ns, Machine, PlannedArrivalsBits, ResultsFile, RunMeta};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};

const PROGRESS_TICK: Duration = Duration::from_millis(250);

/// A finished run: its results (what the results file holds) and the summary rendered from
/// them, so a report re-rendered from the file is identical.
pub struct Finished {
    pub summary: Summary,
    pub results: ResultsFile,
    /// A second stop signal (Ctrl-C, SIGTERM, SIGHUP) cut the run off (exit code 130).
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
    /// The headers whose values the results, reports and history must not hold.
    pub redaction: Redaction,
    /// `--start-at`: the agreed wall-clock start of a test's segments.
    pub start_at: Option<std::time::SystemTime>,
}

impl Finished {
    /// The exit code of a finished run: 130 after a second stop signal; 1 when requests were
    /// sent and none got a response; 99 when a threshold failed; else 0.
    pub fn exit_code(&self) -> i32 {
        let s = &self.summary;
        if self.interrupted_twice {
            return exit::INTERRUPTED_TWICE;
        }
        if s.responses == 0 && (s.errors > 0 || s.interrupted_requests > 0) {
            let mut ends: Vec<String> = s
                .errors_by_kind
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            if s.interrupted_requests > 0 {
                ends.push(format!("still open at the end: {}", s.interrupted_requests));
            }
            // Out of descriptors: the generator's limit, not the target's silence.
            let cause = if s
                .errors_by_kind
                .contains_key(ErrorKind::LocalFdLimit.name())
            {
                "barrage ran out of file descriptors (raise `ulimit -n` or use fewer clients); "
            } else {
                ""
            };
            eprintln!(
                "error: {cause}no request got a response: {} sent ({})",
                s.errors + s.interrupted_requests,
                ends.join(", ")
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

/// A validated run: the plan, what the command line knew about it, and every output already
/// opened. Building one does all the checking; [`RunSpec::run`] only runs.
pub struct RunSpec {
    pub plan: Plan,
    pub context: RunContext,
    pub options: RunOptions,
    pub files: OutputFiles,
}

impl RunSpec {
    /// Checks the output flags and opens every output before any load: a path that cannot
    /// be written is a usage error naming its flag.
    pub fn new(
        plan: Plan,
        mut context: RunContext,
        outputs: OutputList,
        show_progress: bool,
    ) -> anyhow::Result<Self> {
        let trend_stats = if outputs.trend_stats.is_empty() {
            DEFAULT_TREND_STATS.to_vec()
        } else {
            outputs.trend_stats
        };
        context.redaction = Redaction::new(&outputs.redact);
        let streams = Streams::open(&outputs.out, outputs.dashboard.as_deref(), &plan.tags)?;
        let files = OutputFiles::open(outputs.files)?;
        Ok(Self {
            plan,
            context,
            options: RunOptions {
                show_progress,
                streams,
                trend_stats,
                scripted: None,
            },
            files,
        })
    }

    /// Runs the plan: the one way every command runs a test. Returns the finished run and
    /// its output files, opened and still to be written.
    pub fn run(self) -> anyhow::Result<(Finished, OutputFiles)> {
        let finished = execute(&self.plan, self.options, &self.context)?;
        Ok((finished, self.files))
    }
}

/// Whether live progress should be drawn: only for a person watching a terminal.
pub fn progress_wanted() -> bool {
    std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// Runs `plan` to its end (or to Ctrl-C, or to a failed `abortOnFail` threshold) and
/// summarises it.
fn execute(plan: &Plan, options: RunOptions, context: &RunContext) -> anyhow::Result<Finished> {
    // Bad TLS input (an unreadable --cacert, a key that does not match) is a usage error,
    // found before any load starts.
    barrage_engine::connector(plan).map_err(|e| usage(format!("TLS: {e}")))?;
    if let Some(warning) =
        crate::fd_limit::raise().and_then(|limit| crate::fd_limit::warning(plan, limit))
    {
        eprintln!("{warning}");
    }
    let control = RunControl {
        samples: options.streams.samples.clone(),
        scripted: options.scripted.clone(),
        ..RunControl::default()
    };
    let show_progress = options.show_progress;
    let exports = (!options.streams.exports.is_empty())
        .then(|| {
            barrage_stream::LiveExports::start(
                options.streams.exports,
                &plan.tags,
                plan.options
                    .segment
                    .as_ref()
                    .map(|segment| segment.to_string()),
            )
        })
        .transpose()
        .context("starting the live metric exports")?;
    if let Some(exports) = &exports {
        for line in exports.describe() {
            eprintln!("streaming {line}");
        }
    }
    let live_period = exports
        .as_ref()
        .and_then(|e| e.period())
        .map_or(LIVE_PERIOD, |p| p.min(LIVE_PERIOD));
    let mut live = Live {
        plan,
        ndjson: options.streams.ndjson,
        exports,
        dashboard: options.streams.dashboard,
        status: show_progress.then(Default::default),
        next_second: 0,
        aborted: None,
    };
    if live.wanted() {
        control.snapshots.enable();
    }
    let show_progress = options.show_progress;
    let grace = plan.stop_grace();
    crate::segment_run::wait_for_start(context.start_at);
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
    let progress = show_progress.then(|| Progress::new(plan));
    let mut active = ActiveSamples::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut interrupts = 0;
    runtime.block_on(async {
        let mut done = done_rx;
        let mut ticker = tokio::time::interval(PROGRESS_TICK);
        let mut live_ticker = tokio::time::interval(live_period);
        let mut signals = StopSignals::listen()?;
        loop {
            tokio::select! {
                _ = &mut done => break,
                _ = ticker.tick() => {
                    let snapshot = control.live.snapshot();
                    active.sample(snapshot.active_clients);
                    if let Some(p) = &progress {
                        p.update(snapshot, live.status.as_ref());
                    }
                }
                _ = live_ticker.tick(), if live.wanted() => live.tick(&control)?,
                name = signals.next() => {
                    interrupts += 1;
                    match interrupts {
                        1 => {
                            eprintln!(
                                "\n{name}: stopping; running requests get the grace period of {}, the summary covers what was done ({name} again to stop at once)",
                                humantime_secs(grace)
                            );
                            control.stop.stop();
                        }
                        2 => {
                            eprintln!("\n{name} again: stopping at once, writing what was done (once more to quit without it)");
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
    live.finish_exports(&outcome.metrics);
    if let Some(sink) = &options.streams.samples {
        sink.finish().context("writing the --out samples log")?;
    }
    let active_clients = active.per_second;
    let started_at_unix_ns = unix_ns(outcome.started_at);
    let elapsed_ns = outcome.elapsed.as_nanos() as u64;
    let outcome_elapsed = outcome.elapsed;
    let planned = |expected: f64, seconds: f64| PlannedArrivalsBits {
        expected_f64_bits: expected.to_bits(),
        seconds_f64_bits: seconds.to_bits(),
    };
    let meta = RunMeta {
        command: context.command.to_string(),
        name: plan.name.clone(),
        target: plan.target.to_string(),
        barrage_version: env!("CARGO_PKG_VERSION").to_string(),
        // What a run keeps holds no credentials: sensitive header values, URL userinfo and
        // data-file rows are taken out here, before anything is rendered or stored.
        plan: context.redaction.plan(plan),
        script: context.script.clone(),
        overrides: context
            .overrides
            .iter()
            .map(|(flag, value)| (flag.clone(), redact_url(value)))
            .collect(),
        seed: plan.options.seed,
        machine: Machine::current(),
        started_at_unix_ns,
        ended_at_unix_ns: started_at_unix_ns + elapsed_ns,
        elapsed_ns,
        interrupted: outcome.interrupted,
        threads: outcome.threads,
        tags: plan.tags.clone(),
        // A segment plans its fraction of the arrivals: merged segments add up to the test.
        planned_arrivals: plan
            .planned_arrivals()
            .map(|schedule| planned(schedule.total(), schedule.end().as_secs_f64())),
        merged_from: Vec::new(),
        request_id_prefix: Some(outcome.request_id_prefix.clone()),
        segment: crate::segment_run::segment_meta(plan, context.start_at, outcome.started_at),
        segments: None,
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
        capacity: None,
    };
    // The summary is rendered from the results, exactly as `barrage report` will from the file.
    let summary = barrage_report::summary_of(&results, &options.trend_stats);
    results.thresholds =
        barrage_report::thresholds_section(live.aborted.as_deref(), &summary.k6.thresholds);
    if let Some(dashboard) = live.dashboard.take() {
        let last = crate::dashboard_frame::frame(plan, &results.metrics, outcome_elapsed, 0, true);
        dashboard.finish(last, barrage_report::render_html(&results, &summary));
    }
    Ok(Finished {
        summary,
        results,
        interrupted_twice: interrupts >= 2,
    })
}

/// The signals that stop a run: Ctrl-C (SIGINT), SIGTERM (`timeout`, `docker stop`,
/// Kubernetes, CI cancellation) and SIGHUP (a closed terminal) all mean the same: the first
/// stops gracefully, the second at once. Each listener lives for the whole run, so a signal
/// delivered while another branch is handled is not missed.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    fn listen() -> anyhow::Result<Self> {
        let listen = |kind| signal(kind).context("listening for stop signals");
        Ok(Self {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
        })
    }

    /// The name of the next stop signal received.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            Some(()) = self.interrupt.recv() => "interrupted (Ctrl-C)",
            Some(()) = self.terminate.recv() => "SIGTERM",
            Some(()) = self.hangup.recv() => "SIGHUP",
            else => std::future::pending().await,
        }
    }
}

/// A duration as people write it: `30s`, `1.5s`, `250ms`.
fn humantime_secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
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
