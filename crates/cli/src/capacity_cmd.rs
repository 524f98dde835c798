//! `barrage capacity SCRIPT|URL --slo ...`: the capacity search. Each step is the plan with
//! its workload's level set to the step's load (arrival rate for open models, virtual users
//! for closed ones) for warm-up + measurement, run through the one execution path
//! (`RunSpec`); `barrage_capacity` judges each step's measurement window and drives the
//! search. Writes the text report, `--json`, `--html` (the curve) and one results file for the
//! whole search (the steps one after another, plus the search in its CAPY section).

use crate::protocol_flags::ProtocolArgs;
use crate::quick::{quick_plan, QuickArgs};
use crate::usage::{exit, usage};
use crate::{overrides::Overrides, record, scenario, values};
use anyhow::Context;
use barrage_capacity::{
    render, search, Config, Growth, LoadKind, Measure, Outcome, Search, Slo, StepRunner, Window,
};
use barrage_plan::{Admission, Bound, Plan, Stages};
use barrage_results::ResultsFile;
use barrage_run::outputs::{OutputList, Wanted};
use barrage_run::runner::{RunContext, RunSpec};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Debug, clap::Args)]
pub struct CapacityArgs {
    /// A test definition (.js, .json) or a URL to load quick-style
    test: String,
    /// The objective every step must meet, e.g. "p(99)<200ms,http_req_failed<1%"
    #[arg(long)]
    slo: String,
    /// The first step's load: arrivals per second (open models), or virtual users (closed)
    #[arg(long, allow_hyphen_values = true, default_value = "10")]
    start: String,
    /// Growth from step to step: x1.5 (also ×1.5, *1.5) or +N
    #[arg(long, allow_hyphen_values = true, default_value = "x1.5")]
    step: String,
    /// The largest load tried
    #[arg(long, allow_hyphen_values = true)]
    max: String,
    /// Warm-up of each step, not measured (whole seconds)
    #[arg(long, allow_hyphen_values = true, default_value = "5s")]
    warmup: String,
    /// Measurement window of each step (whole seconds)
    #[arg(long, allow_hyphen_values = true, default_value = "10s")]
    measure: String,
    /// Bisect until the last good and first bad loads are this close (percent)
    #[arg(long, allow_hyphen_values = true, default_value = "5")]
    precision: String,
    /// Runs per measured step: bands (min–median–max) and their spread
    #[arg(long, allow_hyphen_values = true, default_value = "1")]
    repeat: String,
    /// URL: step virtual users (closed model) instead of the arrival rate
    #[arg(long)]
    vus: bool,
    /// URL, open model: clients serving the arrivals (a busy client starts late, and its
    /// latency counts from the planned start)
    #[arg(short = 'c', allow_hyphen_values = true, value_parser = values::clients, default_value_t = 100)]
    clients: u64,
    /// URL: HTTP method
    #[arg(short = 'm', default_value = "GET")]
    method: String,
    /// URL: header "Name: value" (repeatable)
    #[arg(short = 'H')]
    headers: Vec<String>,
    /// URL: request body
    #[arg(short = 'd')]
    body: Option<String>,
    /// Timeout per request, seconds or a duration (0: none)
    #[arg(short = 't', default_value = "20")]
    timeout: String,
    /// Send the load here instead of the definition's target
    #[arg(long)]
    target: Option<String>,
    /// Worker threads (default: one per CPU this process may use)
    #[arg(long, allow_hyphen_values = true, value_parser = values::threads)]
    threads: Option<usize>,
    /// Run segment i (from 0) of N equal parts of every step: the segments step together
    /// (the whole ladder, no bisection; start them with the same --start-at and merge the N
    /// results files)
    #[arg(long, value_name = "i/N")]
    segment: Option<String>,
    /// The wall-clock start of the first step (RFC 3339 or Unix seconds): segments agree on it
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// Also write the search as JSON here (docs/capacity.schema.json)
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    #[command(flatten)]
    record: record::RecordArgs,
    #[command(flatten)]
    protocol: ProtocolArgs,
}

/// A number flag, as a usage error naming it.
fn number(flag: &str, text: &str) -> anyhow::Result<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| usage(format!("{flag}: `{text}` is not a number")))
}

/// Whole seconds of a duration flag.
fn seconds(flag: &str, text: &str, least: u64) -> anyhow::Result<u64> {
    let d = values::duration_flag(flag, text, true)?;
    if d.subsec_nanos() != 0 || d.as_secs() < least || d.as_secs() > 3600 {
        return Err(usage(format!(
            "{flag}: `{text}` must be whole seconds, {least}s to 1h (steps are measured per second)"
        )));
    }
    Ok(d.as_secs())
}

fn is_url(test: &str) -> bool {
    test.starts_with("http://") || test.starts_with("https://")
}

/// The plan the search steps — the definition's (a k6 script's with its VUs), or the URL's
/// quick-style plan.
fn base_plan(args: &CapacityArgs) -> anyhow::Result<(Plan, Option<barrage_k6::K6Factory>)> {
    let overrides = Overrides {
        target: args.target.clone(),
        threads: args.threads,
        segment: args
            .segment
            .as_deref()
            .map(barrage_plan::Segment::parse)
            .transpose()
            .map_err(|e| usage(format!("--segment: {e}")))?,
        protocol: args.protocol.clone(),
        ..Default::default()
    };
    let mut plan: (Plan, Option<barrage_k6::K6Factory>) = if is_url(&args.test) {
        #[derive(Parser)]
        struct Quick {
            #[command(flatten)]
            quick: QuickArgs,
        }
        let mut argv = vec![
            "capacity".to_string(),
            args.test.clone(),
            "-z".into(),
            "1s".into(),
            "-c".into(),
            args.clients.to_string(),
            "-m".into(),
            args.method.clone(),
            "-t".into(),
            args.timeout.clone(),
        ];
        if !args.vus {
            argv.extend(["--rate".into(), "1".into()]);
        }
        for h in &args.headers {
            argv.extend(["-H".into(), h.clone()]);
        }
        if let Some(body) = &args.body {
            argv.extend(["-d".into(), body.clone()]);
        }
        let quick = Quick::try_parse_from(argv)
            .map_err(|e| usage(e.to_string().lines().next().unwrap_or("").to_string()))?;
        let mut plan = quick_plan(&quick.quick)?;
        plan.name = "capacity".into();
        (plan, None)
    } else {
        let path = Path::new(&args.test);
        if !path.exists() {
            return Err(usage(format!(
                "capacity: `{}` is neither a file nor an http(s):// URL",
                args.test
            )));
        }
        match crate::k6_front::load(path, &Default::default(), &Overrides::default())? {
            Ok(Some(k6)) => (k6.plan, Some(k6.factory)),
            Ok(None) => (scenario::prepare(path, &Overrides::default())?, None),
            Err(code) => {
                return Err(usage(format!(
                    "capacity: the k6 script failed to load (k6 exit code {code})"
                )))
            }
        }
    };
    overrides.apply(&mut plan.0)?;
    Ok(plan)
}

/// What the search steps in this plan.
fn load_kind(plan: &Plan) -> anyhow::Result<LoadKind> {
    match plan.workload.admission {
        Admission::Loop => Ok(LoadKind::Vus),
        Admission::Paced { .. } | Admission::GrowAndDrop { .. } | Admission::PerArrival { .. } => {
            Ok(LoadKind::Rate)
        }
        Admission::Recorded { .. } => Err(usage(
            "capacity: a recorded workload (replay) has no level to step; use a script with an arrival rate or virtual users",
        )),
    }
}

/// The plan of one step: the base plan's workload held at `load` for `length`, then
/// `drain` for requests in flight.
fn step_plan(base: &Plan, load: f64, length: Duration, drain: Duration) -> Plan {
    let mut plan = base.clone();
    let workload = &mut plan.workload;
    workload.schedule = Stages::from_targets(load, [(length, load)]);
    workload.bound = Bound::Duration;
    workload.grace.end = drain;
    workload.grace.ramp_down = drain;
    plan
}

/// Runs steps through `RunSpec`, keeping each step's results for the search's results file.
struct EngineSteps {
    base: Plan,
    window: Window,
    drain: Duration,
    script: Option<String>,
    /// Segments step on a fixed wall-clock grid from `--start-at`.
    grid: Option<(SystemTime, Duration)>,
    /// A k6 script's VUs, fresh for every step.
    k6: Option<barrage_k6::K6Factory>,
    steps: Vec<ResultsFile>,
    stopped: bool,
}

impl StepRunner for EngineSteps {
    type Error = anyhow::Error;

    fn run_step(&mut self, load: f64) -> anyhow::Result<Measure> {
        let length = Duration::from_secs(self.window.warmup_s + self.window.measure_s);
        let plan = step_plan(&self.base, load, length, self.drain);
        plan.validate().map_err(|e| usage(e.to_string()))?;
        let run_index = self.steps.len() as u32;
        let start_at = self.grid.map(|(first, slot)| first + slot * run_index);
        let context = RunContext {
            command: "capacity",
            script: self.script.clone(),
            start_at,
            ..Default::default()
        };
        let mut spec = RunSpec::new(plan, context, OutputList::default(), false)?;
        spec.options.scripted = self
            .k6
            .clone()
            .map(|f| std::sync::Arc::new(f) as barrage_engine::SharedVuFactory);
        let (finished, _files) = spec.run()?;
        let results = finished.results;
        if results.meta.interrupted || finished.interrupted_twice {
            self.stopped = true;
        }
        let mut measure = Measure::of(
            load,
            results.meta.started_at_unix_ns,
            &results.metrics,
            self.window,
            self.drain,
        );
        if let Some((first, slot)) = self.grid {
            // The run ended after its slot (a late start, or a slow end): the next steps start
            // late and no longer line up with the other segments'.
            let slot_end = first + slot * (run_index + 1);
            if let Ok(over) = SystemTime::now().duration_since(slot_end) {
                measure.overrun_ms = (over.as_millis() as u64).max(1);
            }
        }
        self.steps.push(results);
        Ok(measure)
    }

    fn stopped(&self) -> bool {
        self.stopped
    }
}

pub fn capacity_command(args: &CapacityArgs) -> anyhow::Result<i32> {
    let slo = Slo::parse(&args.slo).map_err(|e| usage(format!("--slo: {e}")))?;
    let growth = Growth::parse(&args.step).map_err(|e| usage(format!("--step: {e}")))?;
    let repeat = args
        .repeat
        .trim()
        .parse::<u32>()
        .map_err(|_| usage(format!("--repeat: `{}` is not a whole number", args.repeat)))?;
    let window = Window {
        warmup_s: seconds("--warmup", &args.warmup, 0)?,
        measure_s: seconds("--measure", &args.measure, 1)?,
    };
    let mut config = Config {
        slo,
        kind: LoadKind::Rate,
        start: number("--start", &args.start)?,
        growth,
        max: number("--max", &args.max)?,
        window,
        precision: number("--precision", &args.precision)? / 100.0,
        repeat,
    };
    config.validate().map_err(|e| usage(e.to_string()))?;
    let start_at = args
        .start_at
        .as_deref()
        .map(barrage_run::segment_run::parse_start_at)
        .transpose()?;
    let (base, k6) = base_plan(args)?;
    config.kind = load_kind(&base)?;
    if config.kind == LoadKind::Vus && config.start.fract() != 0.0 {
        return Err(usage(format!(
            "--start: the plan steps virtual users, whole numbers (got {})",
            config.start
        )));
    }
    let segmented = base.options.segment.is_some();
    if segmented {
        // Segments step together: every one runs the whole ladder at the same times, with
        // no decision of its own (confirmation and bisection would depend on its share).
        if start_at.is_none() {
            return Err(usage(
                "--segment: give the segments one --start-at, so they step together",
            ));
        }
    }
    // Requests still open after the step get this long; past it they count at this latency
    // (a lower bound), so a breach by queued requests is never missed.
    let slo_limit = config.slo.latency_limit_us().map_or(Duration::ZERO, |us| {
        Duration::from_micros((us * 2.0) as u64)
    });
    let drain = slo_limit
        .max(Duration::from_secs(2))
        .min(base.options.request_timeout);
    // Every output is checked writable before any load; the HTML page is the search's own.
    let (results_wanted, html_wanted): (Vec<Wanted>, Vec<Wanted>) = args
        .record
        .wanted(&base.name)
        .into_iter()
        .partition(|w| w.format == barrage_run::Format::Results);
    drop(barrage_run::outputs::OutputFiles::open(html_wanted)?);
    let files = barrage_run::outputs::OutputFiles::open(results_wanted)?;
    let json_out = args
        .json
        .as_ref()
        .map(|path| {
            barrage_results::create_private(path)
                .map(|f| (path.clone(), f))
                .map_err(|e| usage(format!("--json: cannot write {}: {e}", path.display())))
        })
        .transpose()?;
    let slot =
        Duration::from_secs(window.warmup_s + window.measure_s) + drain + Duration::from_secs(2);
    let mut runner = EngineSteps {
        base: base.clone(),
        window,
        drain,
        script: (!is_url(&args.test)).then(|| args.test.clone()),
        grid: start_at.filter(|_| segmented).map(|at| (at, slot)),
        k6,
        steps: Vec::new(),
        stopped: false,
    };
    let kind = config.kind;
    let on_level = |level: &barrage_capacity::Level| {
        eprintln!("{}", render::level_line(kind, level));
    };
    let mut found = if segmented {
        barrage_capacity::search::ladder(config, &mut runner, on_level)?
    } else {
        search(config, &mut runner, on_level)?
    };
    if runner.stopped {
        found.mark_stopped();
    }
    crate::print_out(&render::text(&found))?;
    if let Some((path, mut file)) = json_out {
        let text = serde_json::to_string_pretty(&render::json(&found))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let results = search_results(&base, &runner.steps, &found)?;
    write_outputs(&args.record, files, &results, &found)?;
    if found.outcome == Outcome::Stopped {
        eprintln!("error: the capacity search was stopped before its end");
    }
    Ok(exit_code(&found))
}

/// The whole search as one results file: the steps' metrics on one clock, the search in CAPY.
fn search_results(
    base: &Plan,
    steps: &[ResultsFile],
    found: &Search,
) -> anyhow::Result<ResultsFile> {
    let names: Vec<String> = (1..=steps.len()).map(|i| format!("step {i}")).collect();
    // Steps follow each other on one clock (not segments of one another).
    let segment = steps.first().and_then(|s| s.meta.segment.clone());
    let steps: Vec<ResultsFile> = steps
        .iter()
        .cloned()
        .map(|mut step| {
            step.meta.segment = None;
            step
        })
        .collect();
    let mut results = barrage_results::merge(&steps, &names)
        .map_err(|e| anyhow::anyhow!("combining the steps: {e}"))?;
    results.meta.merged_from.clear();
    results.meta.segment = segment;
    results.meta.plan = barrage_plan::Redaction::new(&[]).plan(base);
    results.meta.name = base.name.clone();
    results.meta.planned_arrivals = None;
    barrage_capacity::file::attach(&mut results, found);
    Ok(results)
}

/// The results file, the HTML page (the curve) and the history row.
fn write_outputs(
    record: &record::RecordArgs,
    files: barrage_run::outputs::OutputFiles,
    results: &ResultsFile,
    found: &Search,
) -> anyhow::Result<()> {
    let summary = barrage_report::summary_of(results, &barrage_report::DEFAULT_TREND_STATS);
    let results_path = files
        .results_path()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    files.write(results, &summary)?;
    if let Some(path) = &record.html {
        let page = barrage_capacity::html::page_html(found, &results.meta.target);
        barrage_results::create_private(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, page.as_bytes()))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !record.no_history {
        let recorded = crate::history::path(record.history.as_deref())
            .and_then(|db| crate::history::record(&db, results, &summary, results_path.as_deref()));
        if let Err(e) = recorded {
            eprintln!("warning: {e:#} (--no-history skips the history)");
        }
    }
    Ok(())
}

/// 0 when the search found the target's capacity or the SLO held to the end; 1 when the
/// generator was the limit (its knee is not the target's) or a signal stopped the search
/// (not finished: no verdict to go green on); 99 when the SLO broke at once.
pub fn exit_code(found: &Search) -> i32 {
    if found.outcome == Outcome::Stopped {
        return exit::RUNTIME;
    }
    match found.verdict {
        barrage_capacity::Verdict::TargetCapacity | barrage_capacity::Verdict::HeldToMax => {
            exit::OK
        }
        barrage_capacity::Verdict::GeneratorBound => exit::RUNTIME,
        barrage_capacity::Verdict::BrokenAtStart => exit::THRESHOLDS_FAILED,
    }
}

/// `barrage report` of a capacity results file: the search's text, its HTML page (the
/// curve) and its JSON, and the exit code the search had.
pub fn report(
    results: &ResultsFile,
    html: Option<&Path>,
    json: Option<&Path>,
) -> Option<anyhow::Result<(String, i32)>> {
    let found = barrage_capacity::file::of(results)?;
    Some((|| {
        let found = found.map_err(usage)?;
        let write = |path: &Path, text: &str| {
            barrage_results::create_private(path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
                .with_context(|| format!("writing {}", path.display()))
        };
        if let Some(path) = html {
            write(
                path,
                &barrage_capacity::html::page_html(&found, &results.meta.target),
            )?;
        }
        if let Some(path) = json {
            write(path, &serde_json::to_string_pretty(&render::json(&found))?)?;
        }
        Ok((render::text(&found), exit_code(&found)))
    })())
}
