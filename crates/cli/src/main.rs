//! The `barrage` binary: parses the command line and wires script/plan, engine, and reports.

mod capacity_cmd;
mod compare_cmd;
mod har_cmd;
mod har_record;
mod hey_flags;
mod history;
mod k6_front;
mod k8s;
mod output_flags;
mod overrides;
mod protocol_flags;
mod quick;
mod record;
mod results_cmd;
mod scenario;
mod values;
mod vu_overrides;

use anyhow::Context;
use barrage_report::{render_hey, render_run};
use barrage_run::{fd_limit, runner, segment_run, usage};
use clap::{Parser, Subcommand};
use output_flags::OutputArgs;
use overrides::Overrides;
use quick::{quick_plan, OutputFormat, QuickArgs};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use usage::{exit, usage, UsageError};

#[derive(Debug, Parser)]
#[command(name = "barrage", version, about = "An HTTP load-testing engine", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a test definition (JavaScript DSL, or a plan as .json)
    Run(Box<RunArgs>),
    /// Print the plan a definition compiles to, as JSON
    Plan(Box<PlanArgs>),
    /// Load one URL, hey-style (flags as hey users know them)
    Quick(Box<QuickArgs>),
    /// Run the bundled test server
    Target(TargetArgs),
    /// Start the bundled target on a free port, load it briefly, print the summary
    Demo(DemoArgs),
    /// Re-render a run's summary, JSON or HTML report from its results file
    Report(results_cmd::ReportArgs),
    /// Merge results files of the same plan (e.g. from several machines) into one, exactly
    Merge(results_cmd::MergeArgs),
    /// List recorded runs
    History(HistoryArgs),
    /// Find the capacity: step the load until the SLO breaks, bisect to the knee
    Capacity(Box<capacity_cmd::CapacityArgs>),
    /// Compare runs (history ids or results files), baseline first: per-tag deltas and bands
    Compare(compare_cmd::CompareArgs),
    /// Write Kubernetes manifests that run a test as N segments (an Indexed Job)
    K8s(Box<k8s::K8sArgs>),
    /// Convert a recording into a test case (`convert har FILE.har -o test.js`)
    Convert(har_cmd::ConvertArgs),
    /// Replay a HAR recording at its recorded timing (hosts mapped with --map-host)
    Replay(Box<har_cmd::ReplayArgs>),
    /// Record traffic as HAR: a proxy from --listen to --upstream, written to -o FILE.har
    Record(har_record::RecordHarArgs),
}

#[derive(Debug, clap::Args)]
struct HistoryArgs {
    /// Show the last N runs
    #[arg(long, default_value_t = 20, allow_hyphen_values = true, value_parser = values::history_rows)]
    last: usize,
    /// Only runs of this script (file name or path) or test name
    #[arg(long)]
    script: Option<String>,
    /// The history database (default: $XDG_DATA_HOME/barrage/history.db)
    #[arg(long, value_name = "PATH")]
    history: Option<PathBuf>,
}

/// Overrides for trying a big definition on a small machine.
#[derive(Debug, clap::Args)]
struct OverrideArgs {
    /// Send the load here instead of the definition's target
    #[arg(long)]
    target: Option<String>,
    /// Multiply every arrival rate by this factor
    #[arg(long, allow_hyphen_values = true, value_parser = values::rate_factor)]
    rate_factor: Option<f64>,
    /// Cap the whole test at this duration (e.g. 30s)
    #[arg(long, allow_hyphen_values = true)]
    duration_limit: Option<String>,
    /// Seed of every random choice, for reproducible runs
    #[arg(long, allow_hyphen_values = true, value_parser = values::seed)]
    seed: Option<u64>,
    /// Worker threads (default: one per CPU this process may use)
    #[arg(long, allow_hyphen_values = true, value_parser = values::threads)]
    threads: Option<usize>,
    /// Run this many virtual users (closed model; with --duration, or the plan's)
    #[arg(short = 'u', long, allow_hyphen_values = true)]
    vus: Option<String>,
    /// Run the virtual users for this long (e.g. 30s, 2m)
    #[arg(short = 'd', long, allow_hyphen_values = true)]
    duration: Option<String>,
    /// Ramp virtual users through stages, duration:target pairs ("30s:100,1m:100,10s:0");
    /// repeatable as k6's `-s/--stage 30s:100 -s 10s:0`
    #[arg(short = 's', long, visible_alias = "stage", allow_hyphen_values = true)]
    stages: Vec<String>,
    /// Run this many iterations in total, shared by the virtual users
    #[arg(short = 'i', long, allow_hyphen_values = true)]
    iterations: Option<String>,
    /// Set a script global or a field under one, as StormForger's CLI does
    /// (`--define defines.env=prod`; VALUE is JSON, or else text); repeatable
    #[arg(long, value_name = "NAME=VALUE")]
    define: Vec<String>,
    /// StormForger non-functional requirements (version "0.1" YAML), evaluated as thresholds
    #[arg(long, value_name = "FILE")]
    nfr: Option<PathBuf>,
    /// Run segment i (from 0) of N equal parts of the test (merge the N results files)
    #[arg(long, value_name = "i/N", conflicts_with = "execution_segment")]
    segment: Option<String>,
    /// k6's segment a:b of the test (equal parts, e.g. 1/4:2/4)
    #[arg(long, value_name = "a:b")]
    execution_segment: Option<String>,
    /// k6's segment boundaries, e.g. 0,1/4,1/2,3/4,1
    #[arg(long, value_name = "LIST", requires = "execution_segment")]
    execution_segment_sequence: Option<String>,
    #[command(flatten)]
    protocol: protocol_flags::ProtocolArgs,
}

impl OverrideArgs {
    /// The override flags given, by name, for the results file.
    fn given(&self) -> std::collections::BTreeMap<String, String> {
        let mut given = std::collections::BTreeMap::new();
        let mut put = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                given.insert(name.to_string(), v);
            }
        };
        put("target", self.target.clone());
        put("rate-factor", self.rate_factor.map(|f| f.to_string()));
        put("duration-limit", self.duration_limit.clone());
        put("seed", self.seed.map(|s| s.to_string()));
        put("threads", self.threads.map(|t| t.to_string()));
        put("segment", self.segment.clone());
        put("execution-segment", self.execution_segment.clone());
        put(
            "execution-segment-sequence",
            self.execution_segment_sequence.clone(),
        );
        given
    }

    fn segment(&self) -> anyhow::Result<Option<barrage_plan::Segment>> {
        use barrage_plan::Segment;
        if let Some(text) = &self.segment {
            return Segment::parse(text)
                .map(Some)
                .map_err(|e| usage::usage(format!("--segment: {e}")));
        }
        self.execution_segment
            .as_deref()
            .map(|text| Segment::from_k6(text, self.execution_segment_sequence.as_deref()))
            .transpose()
            .map_err(|e| usage::usage(format!("--execution-segment: {e}")))
    }

    fn resolve(&self) -> anyhow::Result<Overrides> {
        Ok(Overrides {
            target: self.target.clone(),
            rate_factor: self.rate_factor,
            duration_limit: self
                .duration_limit
                .as_deref()
                .map(|d| values::positive_duration_flag("--duration-limit", d, false))
                .transpose()?,
            seed: self.seed,
            threads: self.threads,
            segment: self.segment()?,
            vus: vu_overrides::VuOverrides::parse(
                self.vus.as_deref(),
                self.duration.as_deref(),
                (!self.stages.is_empty())
                    .then(|| self.stages.join(","))
                    .as_deref(),
                self.iterations.as_deref(),
            )?,
            protocol: self.protocol.clone(),
            nfr: self.nfr.clone(),
            defines: self
                .define
                .iter()
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) if !name.is_empty() => {
                        Ok((name.to_string(), value.to_string()))
                    }
                    _ => Err(usage(format!(
                        "--define {pair}: expected NAME=VALUE (like defines.env=prod)"
                    ))),
                })
                .collect::<anyhow::Result<_>>()?,
        })
    }
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The definition: a .js script or a .json plan
    file: PathBuf,
    #[command(flatten)]
    overrides: OverrideArgs,
    /// Start the load at this wall-clock time (RFC 3339, e.g. 2026-11-23T22:00:00Z, or Unix
    /// seconds), so the segments of a test start together
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    #[command(flatten)]
    outputs: OutputArgs,
    #[command(flatten)]
    record: record::RecordArgs,
    #[command(flatten)]
    k6: k6_front::K6Args,
}

#[derive(Debug, clap::Args)]
struct PlanArgs {
    /// The definition: a .js script or a .json plan
    file: PathBuf,
    #[command(flatten)]
    overrides: OverrideArgs,
}

#[derive(Debug, clap::Args)]
struct TargetArgs {
    /// Address to listen on; port 0 picks a free port (printed on the first line)
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Server threads (default: one per CPU)
    #[arg(long, allow_hyphen_values = true, value_parser = values::threads)]
    threads: Option<usize>,
    /// Serve HTTPS with a generated self-signed certificate (ALPN h2 and http/1.1); the
    /// second line printed names the certificate file (PEM, for --cacert) and its fingerprint
    #[arg(long)]
    tls: bool,
    /// Where to write the generated certificate (default: a file in the temp directory)
    #[arg(long, value_name = "FILE", requires = "tls")]
    cert_out: Option<PathBuf>,
    /// Speak cleartext HTTP/2 (prior knowledge) only; without it, h2c is still recognised
    /// next to HTTP/1.1
    #[arg(long, conflicts_with = "http1_only")]
    h2c: bool,
    /// Speak HTTP/1.1 only (over TLS: offer only http/1.1 by ALPN)
    #[arg(long)]
    http1_only: bool,
}

#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// How long to run the load
    #[arg(short = 'z', long, default_value = "5s", allow_hyphen_values = true, value_parser = values::run_duration_flag)]
    duration: Duration,
    /// Concurrent connections
    #[arg(short = 'c', default_value_t = 50, allow_hyphen_values = true, value_parser = values::clients)]
    concurrency: u64,
}

fn main() {
    // Before anything opens a socket: a load generator needs many descriptors.
    fd_limit::raise();
    use clap::CommandFactory;
    let args = match hey_flags::normalize(std::env::args_os().collect(), &Cli::command()) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(exit::USAGE);
        }
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            std::process::exit(exit::OK);
        }
        Err(e) => {
            // clap's message runs until the first blank line (a list of missing arguments
            // follows its first line); fold that into one line.
            let rendered = e.to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|line| !line.trim().is_empty())
                .map(str::trim)
                .collect();
            eprintln!("{} (see barrage --help)", message.join(" "));
            std::process::exit(exit::USAGE);
        }
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<UsageError>().is_some() => {
            eprintln!("error: {e}");
            exit::USAGE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::RUNTIME
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(args) => run_command(&args),
        Command::Plan(args) => {
            print_out(&scenario::plan_command(
                &args.file,
                &args.overrides.resolve()?,
            )?)?;
            Ok(exit::OK)
        }
        Command::Quick(args) => quick_command(&args),
        Command::Target(args) => target_command(&args),
        Command::Demo(args) => demo_command(&args),
        Command::Report(args) => {
            let (text, code) = results_cmd::report_command(&args)?;
            print_out(&text)?;
            if code == exit::THRESHOLDS_FAILED {
                eprintln!("error: some thresholds have failed");
            }
            Ok(code)
        }
        Command::Compare(args) => compare_cmd::compare_command(&args),
        Command::Capacity(args) => capacity_cmd::capacity_command(&args),
        Command::Convert(args) => {
            print_out(&har_cmd::convert_command(&args)?)?;
            Ok(exit::OK)
        }
        Command::Replay(args) => har_cmd::replay_command(&args),
        Command::Record(args) => har_record::record_command(&args),
        Command::K8s(args) => {
            print_out(&k8s::k8s_command(&args, &Overrides::default())?)?;
            Ok(exit::OK)
        }
        Command::History(args) => {
            let db = history::path(args.history.as_deref())?;
            let conn = history::open(&db)?;
            print_out(&history::render(&history::list(
                &conn,
                args.last,
                args.script.as_deref(),
            )?))?;
            Ok(exit::OK)
        }
        Command::Merge(args) => {
            print_out(&results_cmd::merge_command(&args)?)?;
            Ok(exit::OK)
        }
    }
}

fn run_command(args: &RunArgs) -> anyhow::Result<i32> {
    let (plan, k6) = match k6_front::load(&args.file, &args.k6, &args.overrides.resolve()?)? {
        Ok(Some(test)) => {
            let vus = test.vus();
            (test.plan, Some((vus, test.factory, test.trend_stats)))
        }
        Ok(None) => (
            scenario::prepare(&args.file, &args.overrides.resolve()?)?,
            None,
        ),
        Err(code) => return Ok(code),
    };
    let context = runner::RunContext {
        command: "run",
        script: Some(args.file.display().to_string()),
        overrides: args.overrides.given(),
        start_at: args
            .start_at
            .as_deref()
            .map(segment_run::parse_start_at)
            .transpose()?,
        ..Default::default()
    };
    let mut output_args = args.outputs.clone();
    if let Some((_, _, stats)) = k6
        .as_ref()
        .filter(|_| output_args.summary_trend_stats.is_none())
    {
        output_args.summary_trend_stats = Some(stats.clone());
    }
    let outputs = output_args.list(&args.record, &plan.name)?;
    let progress = runner::progress_wanted() && !args.k6.quiet();
    let mut spec = runner::RunSpec::new(plan, context, outputs, progress)?;
    spec.options.scripted = k6.as_ref().map(|(vus, _, _)| Arc::clone(vus));
    let (finished, files) = spec.run()?;
    match &k6 {
        Some((_, factory, _)) => k6_front::summarise(&args.k6, factory, &finished.summary)?,
        None => print_out(&render_run(&finished.summary))?,
    }
    record::keep(&args.record, &finished, files)?;
    // k6: `test.abort()` ends the test with 108 whatever else happened; a `setup()` or
    // `teardown()` that threw, with 107.
    if let Some(reason) = k6
        .as_ref()
        .and_then(|(_, factory, _)| factory.stage_error())
    {
        eprintln!("error: {reason}");
        return Ok(exit::SCRIPT_ERROR);
    }
    if let Some(reason) = k6.and_then(|(_, factory, _)| factory.aborted()) {
        eprintln!("error: {reason}");
        return Ok(exit::SCRIPT_ABORTED);
    }
    Ok(finished.exit_code())
}

fn quick_command(args: &QuickArgs) -> anyhow::Result<i32> {
    let format = args.output_format()?;
    let plan = quick_plan(args)?;
    if args.print_plan {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(exit::OK);
    }
    let outputs = args.outputs.list(&args.record, &plan.name)?;
    let mut spec = runner::RunSpec::new(
        plan,
        runner::RunContext {
            command: "quick",
            ..Default::default()
        },
        outputs,
        runner::progress_wanted() && format == OutputFormat::Text,
    )?;
    if format == OutputFormat::Csv {
        // hey's rows go to stdout as requests complete, through the per-request log's
        // bounded per-worker buffers: nothing per request is kept to the end.
        if spec.options.streams.samples.is_some() {
            return Err(usage(
                "-o csv: cannot be combined with --out samples=FILE:RATE (both stream per-request rows)",
            ));
        }
        let stdout = std::io::BufWriter::new(std::io::stdout());
        spec.options.streams.samples = Some(std::sync::Arc::new(
            barrage_engine::SampleSink::hey_csv(Box::new(stdout)),
        ));
    }
    let (finished, files) = spec.run()?;
    let text = match format {
        OutputFormat::Text => render_hey(&finished.summary),
        OutputFormat::Json => finished.summary.to_json() + "\n",
        // The rows were the output; hey prints no summary with them.
        OutputFormat::Csv => String::new(),
    };
    print_out(&text)?;
    record::keep(&args.record, &finished, files)?;
    // hey's behaviour: failed requests are reported, not an error exit; but a run in which
    // no request got a response is never a success.
    Ok(finished.exit_code())
}

fn target_command(args: &TargetArgs) -> anyhow::Result<i32> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        usage(format!(
            "--listen: `{}` is not an address like 127.0.0.1:8080",
            args.listen
        ))
    })?;
    let tls = if args.tls {
        Some(barrage_target::SelfSigned::generate().context("generating the certificate")?)
    } else {
        None
    };
    let protocols = if args.h2c {
        if args.tls {
            return Err(usage(
                "--h2c is cleartext HTTP/2; with --tls, h2 is offered by ALPN",
            ));
        }
        barrage_target::Protocols::Http2Only
    } else if args.http1_only {
        barrage_target::Protocols::Http1Only
    } else {
        barrage_target::Protocols::Any
    };
    let cert_path = match &tls {
        None => None,
        Some(cert) => {
            let path = args.cert_out.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("barrage-target-{}.pem", std::process::id()))
            });
            std::fs::write(&path, &cert.cert_pem)
                .with_context(|| format!("--cert-out: cannot write {}", path.display()))?;
            Some((path, cert.fingerprint()))
        }
    };
    // The generated certificate in the temp directory goes when the target stops (Ctrl-C,
    // SIGTERM, SIGHUP); one written to --cert-out is the user's to keep.
    let _temporary_cert = cert_path
        .as_ref()
        .filter(|_| args.cert_out.is_none())
        .map(|(path, _)| RemoveOnDrop(path.clone()));
    let config = barrage_target::TargetConfig {
        listen,
        threads: args.threads,
        tls,
        protocols,
    };
    barrage_target::serve_blocking(config, |addr| {
        println!("barrage target listening on {addr}");
        if let Some((path, fingerprint)) = &cert_path {
            println!(
                "barrage target certificate {} {fingerprint}",
                path.display()
            );
        }
        let _ = std::io::stdout().flush();
    })
    .context("barrage target")?;
    Ok(exit::OK)
}

/// Removes a file when dropped.
pub(crate) struct RemoveOnDrop(pub(crate) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn demo_command(args: &DemoArgs) -> anyhow::Result<i32> {
    let target = barrage_target::spawn(barrage_target::TargetConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: None,
        ..Default::default()
    })
    .context("starting the bundled target")?;
    let url = format!("http://{}/health", target.addr());
    println!(
        "barrage demo: bundled target on http://{}, loading {url}",
        target.addr()
    );
    println!(
        "  for {:?} with {} connections (Ctrl-C stops early)",
        args.duration, args.concurrency
    );
    let quick = QuickArgs {
        url,
        requests: 1,
        concurrency: args.concurrency,
        duration: Some(args.duration),
        qps_per_worker: None,
        rate: None,
        method: "GET".into(),
        headers: Vec::new(),
        body: None,
        body_file: None,
        content_type: None,
        accept: None,
        user_agent: None,
        host: None,
        proxy: None,
        timeout: Duration::from_secs(20),
        basic_auth: None,
        disable_keepalive: false,
        disable_compression: false,
        disable_redirects: false,
        output: None,
        threads: None,
        cpus: None,
        print_plan: false,
        grace: None,
        outputs: OutputArgs::default(),
        record: record::RecordArgs::default(),
        protocol: Default::default(),
    };
    let plan = quick_plan(&quick)?;
    let context = runner::RunContext {
        command: "quick",
        ..Default::default()
    };
    // No outputs beyond the summary: the demo leaves nothing behind.
    let spec = runner::RunSpec::new(
        plan,
        context,
        barrage_run::OutputList::default(),
        runner::progress_wanted(),
    )?;
    let (finished, _no_files) = spec.run()?;
    target.shutdown();
    print_out(&render_hey(&finished.summary))?;
    Ok(exit::OK)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a stack of messages.
pub(crate) fn print_out(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing the summary"),
    }
}
