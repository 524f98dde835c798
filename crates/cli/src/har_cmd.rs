//! `barrage convert har` (a recording written as a DSL test case) and `barrage replay` (a
//! recording compiled into a plan and run): the flags, and the wiring of `crates/har` into
//! files and the runner.

use crate::output_flags::OutputArgs;
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
    /// Leave out requests whose tag is TAG or begins with the words TAG (`static` leaves out
    /// every static asset, `static image` images only); comma-separated, repeatable
    #[arg(long = "exclude-tags", value_name = "TAG", value_delimiter = ',')]
    exclude_tags: Vec<String>,
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
    /// Do not check responses against the recorded ones (status, content type)
    #[arg(long)]
    no_compare: bool,
    /// Print the plan as JSON instead of running it
    #[arg(long)]
    print_plan: bool,
    #[command(flatten)]
    transforms: TransformArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
    #[command(flatten)]
    outputs: OutputArgs,
    #[command(flatten)]
    record: record::RecordArgs,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct TransformArgs {
    /// Re-sign every JWT the requests carry with this algorithm (HS256, HS384, HS512, RS256,
    /// ES256, EdDSA): iat now, nbf/exp moved with it, per client
    #[arg(long, value_name = "ALG", requires = "jwt_key")]
    jwt_alg: Option<String>,
    /// The signing key: the HMAC secret (the file's bytes) or a PEM private key
    #[arg(long, value_name = "FILE", requires = "jwt_alg")]
    jwt_key: Option<PathBuf>,
    /// Re-signed tokens expire this long after they are issued (default: as recorded)
    #[arg(
        long,
        value_name = "DURATION",
        requires = "jwt_alg",
        allow_hyphen_values = true
    )]
    jwt_lifetime: Option<String>,
    /// Set a claim of re-signed tokens (VALUE is JSON, or else text); repeatable
    #[arg(long, value_name = "NAME=VALUE", requires = "jwt_alg")]
    jwt_claim: Vec<String>,
    /// Replace a value everywhere in the requests (paths, header values, bodies); repeatable
    #[arg(long, value_name = "OLD=NEW")]
    replace: Vec<String>,
    /// Send this header with every request, instead of a recorded one of that name; repeatable
    #[arg(long, value_name = "'NAME: VALUE'")]
    set_header: Vec<String>,
    /// Leave this recorded header out of every request; repeatable
    #[arg(long, value_name = "NAME")]
    remove_header: Vec<String>,
    /// Move ISO 8601 UTC timestamps in the requests to the present, per client: each is
    /// sent as the time its session runs plus its distance from the recording's start
    #[arg(long)]
    shift_timestamps: bool,
}

impl TransformArgs {
    fn resolve(&self) -> anyhow::Result<barrage_har::Transforms> {
        let pair = |flag: &str, text: &str, sep: char| {
            text.split_once(sep)
                .filter(|(name, _)| !name.trim().is_empty())
                .map(|(a, b)| (a.trim().to_string(), b.trim_start().to_string()))
                .ok_or_else(|| usage(format!("{flag} `{text}`: expected NAME{sep}VALUE")))
        };
        let jwt = match (&self.jwt_alg, &self.jwt_key) {
            (Some(alg), Some(file)) => {
                let algorithm = barrage_plan::JwtAlgorithm::parse(alg).ok_or_else(|| {
                    usage(format!(
                        "--jwt-alg `{alg}`: expected one of {}",
                        barrage_plan::JwtAlgorithm::NAMES
                    ))
                })?;
                let key = std::fs::read_to_string(file).map_err(|e| {
                    usage(format!("--jwt-key: cannot read {}: {e}", file.display()))
                })?;
                let key = if algorithm.is_hmac() {
                    key.trim_end_matches(['\r', '\n']).to_string()
                } else {
                    key
                };
                let lifetime = self
                    .jwt_lifetime
                    .as_deref()
                    .map(|d| values::positive_duration_flag("--jwt-lifetime", d, false))
                    .transpose()?;
                let claims = self
                    .jwt_claim
                    .iter()
                    .map(|c| {
                        let (name, value) = pair("--jwt-claim", c, '=')?;
                        let json = match serde_json::from_str::<serde_json::Value>(&value) {
                            Ok(_) => value,
                            Err(_) => serde_json::Value::from(value).to_string(),
                        };
                        Ok((name, json))
                    })
                    .collect::<anyhow::Result<_>>()?;
                Some(barrage_har::JwtOptions {
                    algorithm,
                    key,
                    lifetime,
                    claims,
                })
            }
            _ => None,
        };
        let set_headers = self
            .set_header
            .iter()
            .map(|h| {
                let (name, value) = pair("--set-header", h, ':')?;
                let header = barrage_plan::Header {
                    name: name.clone(),
                    value: value.clone(),
                };
                match header.problem() {
                    Some(problem) => Err(usage(format!("--set-header `{h}`: {problem}"))),
                    None => Ok((name, value)),
                }
            })
            .collect::<anyhow::Result<_>>()?;
        let replace = self
            .replace
            .iter()
            .map(|r| {
                r.split_once('=')
                    .filter(|(old, _)| !old.is_empty())
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| usage(format!("--replace `{r}`: expected OLD=NEW")))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(barrage_har::Transforms {
            jwt,
            replace,
            set_headers,
            remove_headers: self.remove_header.clone(),
            shift_timestamps: self.shift_timestamps,
        })
    }
}

fn read(file: &Path, hosts: &HostArgs, require_mapping: bool) -> anyhow::Result<Recording> {
    let har = barrage_har::read_har(file).map_err(|e| usage(e.to_string()))?;
    let mut recording = Recording::new(
        &file.display().to_string(),
        &har,
        &hosts.host_map()?,
        require_mapping,
    )
    .map_err(|e| usage(e.to_string()))?;
    recording
        .exclude_tags(&hosts.exclude_tags)
        .map_err(|e| usage(format!("--exclude-tags: {e}")))?;
    Ok(recording)
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || "recording".to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// `barrage convert har FILE -o OUT.js`: writes the script and its body files; returns
/// the line to print.
pub fn convert_command(args: &ConvertArgs) -> anyhow::Result<String> {
    let ConvertWhat::Har(args) = &args.what;
    let recording = read(&args.file, &args.hosts, false)?;
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
        std::fs::write(path, bytes)
            .map_err(|e| usage(format!("-o: cannot write {}: {e}", path.display())))
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
        return Err(usage(
            "--define is for scripts; a recording has nothing to define",
        ));
    }
    // `--target` names where everything goes: then recorded hosts need no mapping.
    let mut recording = read(&args.file, &args.hosts, overrides.target.is_none())?;
    if overrides.target.is_some() && args.hosts.map_host.is_empty() {
        // Nothing mapped: `--target` is where everything goes, never a recorded host.
        recording.send_all_to_target();
    }
    let mut plan = barrage_har::replay_plan(
        &recording,
        &barrage_har::ReplayOptions {
            name: stem(&args.file),
            speed: args.speed,
            loops: args.loops,
            correlate: !args.no_correlate,
            compare: !args.no_compare,
            transforms: args.transforms.resolve()?,
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
    let outputs = args.outputs.list(&args.record, &plan.name)?;
    let spec = runner::RunSpec::new(plan, context, outputs, runner::progress_wanted())?;
    let (finished, files) = spec.run()?;
    crate::print_out(&barrage_report::render_run(&finished.summary))?;
    record::keep(&args.record, &finished, files)?;
    Ok(finished.exit_code())
}
