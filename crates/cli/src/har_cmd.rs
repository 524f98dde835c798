//! `barrage convert har` (a recording written as a DSL test case) and `barrage replay` (a
//! recording compiled into a plan and run): the flags, and the wiring of `crates/har` into
//! files and the runner.

use crate::outputs::OutputArgs;
use crate::usage::usage;
use crate::{record, runner, scenario, values, OverrideArgs};
use barrage_har::{HostMap, Recording};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    #[command(subcommand)]
    pub what: ConvertWhat,
}

#[derive(Debug, clap::Subcommand)]
pub enum ConvertWhat {
    /// A HAR recording (browser or proxy export) into a DSL test case
    Har(ConvertHarArgs),
}

#[derive(Debug, clap::Args)]
pub struct ConvertHarArgs {
    /// The recording (HAR 1.1 or 1.2)
    file: PathBuf,
    /// Write the test case here (large request bodies go to files beside it)
    #[arg(short = 'o', long = "output", value_name = "FILE.js")]
    output: PathBuf,
    #[command(flatten)]
    hosts: HostArgs,
    /// Send values responses returned as recorded, instead of extracting them per client
    #[arg(long)]
    no_correlate: bool,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct HostArgs {
    /// Send requests recorded to OLD (host, or host:port) to NEW (an origin like
    /// http://127.0.0.1:8080, or host:port); repeatable
    #[arg(long = "map-host", value_name = "OLD=NEW")]
    map_host: Vec<String>,
    /// Leave out requests recorded to HOST (third-party hosts of a browser recording);
    /// repeatable
    #[arg(long = "skip-host", value_name = "HOST")]
    skip_host: Vec<String>,
}

impl HostArgs {
    fn host_map(&self) -> anyhow::Result<HostMap> {
        let mut hosts = HostMap::default();
        for spec in &self.map_host {
            hosts
                .add(spec)
                .map_err(|e| usage(format!("--map-host {e}")))?;
        }
        for host in &self.skip_host {
            hosts.skip(host);
        }
        Ok(hosts)
    }
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (HAR 1.1 or 1.2)
    file: PathBuf,
    #[command(flatten)]
    hosts: HostArgs,
    /// Play recorded time this many times faster (2: twice as fast, 0.5: half speed)
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = values::speed)]
    speed: f64,
    /// Play the recording N times, one after the other
    #[arg(long = "loop", value_name = "N", default_value_t = 1, allow_hyphen_values = true, value_parser = values::loops)]
    loops: u32,
    /// Send values responses returned as recorded, instead of extracting them per client
    #[arg(long)]
    no_correlate: bool,
    /// Print the plan as JSON instead of running it
    #[arg(long)]
    print_plan: bool,
    #[command(flatten)]
    overrides: OverrideArgs,
    #[command(flatten)]
    outputs: OutputArgs,
    #[command(flatten)]
    record: record::RecordArgs,
}

fn read(file: &Path, hosts: &HostMap, require_mapping: bool) -> anyhow::Result<Recording> {
    let har = barrage_har::read_har(file).map_err(|e| usage(e.to_string()))?;
    Recording::new(&file.display().to_string(), &har, hosts, require_mapping)
        .map_err(|e| usage(e.to_string()))
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "recording".to_string(), |s| s.to_string_lossy().into_owned())
}

/// `barrage convert har FILE -o OUT.js`: writes the script and its body files; returns
/// the line to print.
pub fn convert_command(args: &ConvertArgs) -> anyhow::Result<String> {
    let ConvertWhat::Har(args) = &args.what;
    let recording = read(&args.file, &args.hosts.host_map()?, false)?;
    let converted = barrage_har::convert(
        &recording,
        &barrage_har::ConvertOptions {
            script_stem: stem(&args.output),
            source: args
                .file
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            correlate: !args.no_correlate,
        },
    );
    let dir = args
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|e| usage(format!("-o: cannot write {}: {e}", path.display())))
    };
    write(&args.output, converted.script.as_bytes())?;
    for (name, bytes) in &converted.files {
        write(&dir.join(name), bytes)?;
    }
    let requests: usize = recording.flows.iter().map(|f| f.requests.len()).sum();
    Ok(format!(
        "wrote {} ({requests} requests in {} sessions{})\n",
        args.output.display(),
        recording.flows.len(),
        match converted.files.len() {
            0 => String::new(),
            n => format!(", {n} body file{} beside it", if n == 1 { "" } else { "s" }),
        }
    ))
}

/// `barrage replay FILE.har`: the recording as a plan, run like any other.
pub fn replay_command(args: &ReplayArgs) -> anyhow::Result<i32> {
    let overrides = args.overrides.resolve()?;
    if !overrides.defines.is_empty() {
        return Err(usage("--define is for scripts; a recording has nothing to define"));
    }
    // `--target` names where everything goes: then recorded hosts need no mapping.
    let recording = read(&args.file, &args.hosts.host_map()?, overrides.target.is_none())?;
    let mut plan = barrage_har::replay_plan(
        &recording,
        &barrage_har::ReplayOptions {
            name: stem(&args.file),
            speed: args.speed,
            loops: args.loops,
            correlate: !args.no_correlate,
        },
    );
    overrides.apply(&mut plan)?;
    scenario::add_requirements(&mut plan, &overrides)?;
    if args.print_plan {
        crate::print_out(&(serde_json::to_string_pretty(&plan)? + "\n"))?;
        return Ok(crate::usage::exit::OK);
    }
    let context = runner::RunContext {
        command: "replay",
        script: Some(args.file.display().to_string()),
        overrides: args.overrides.given(),
        ..Default::default()
    };
    let spec = runner::RunSpec::new(
        plan,
        context,
        &args.outputs,
        &args.record,
        runner::progress_wanted(),
    )?;
    let (finished, files) = spec.run()?;
    crate::print_out(&barrage_report::render_run(&finished.summary))?;
    record::keep(&args.record, &finished, files)?;
    Ok(finished.exit_code())
}
