//! The k6 front end: runs k6 scripts unmodified. `options` (and the CLI's overrides) compile
//! into a barrage plan (`options.rs`), so executors, thresholds, results files and reports
//! work as for any plan; the iteration body is the script's default function, run by a
//! [`K6Factory`]'s VUs — each its own QuickJS context on a coroutine (`vu.rs`) that the
//! engine resumes with responses (see `barrage_engine::ScriptedVu`).
//!
//! Layout: `detect.rs` tells k6 scripts apart and checks their imports; `init.rs` evaluates
//! the init context once at start; `context.rs` sets up a context (natives, globals, k6
//! modules in `js/`); `host.rs` holds the natives.

mod context;
mod crypto;
mod detect;
mod encoding;
mod host;
mod init;
mod options;
pub mod probe;
mod request_tags;
mod shared;
mod summary;
mod vu;

pub use detect::{imports, is_k6_script, unsupported_import, SUPPORTED_MODULES};
pub use options::REQUEST_TAG;
pub use summary::SummaryOutputs;
pub use vu::{K6Factory, VU_MEMORY, VU_STACK};

use barrage_plan::{Plan, Target};
use std::path::Path;
use std::sync::Arc;

/// Why a k6 script cannot run; k6's exit codes tell init failures from bad options.
#[derive(Debug, thiserror::Error)]
pub enum K6Error {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// An unsupported module, or an exception in the init context (k6 exits 107).
    #[error("{0}")]
    Init(String),
    /// `options` that cannot be run.
    #[error("{0}")]
    Options(String),
    /// `test.abort()` in the init context (k6 exits 108).
    #[error("{0}")]
    Aborted(String),
}

impl K6Error {
    /// k6's exit code for this failure: 107 for a script error in the init context, else the
    /// usage error code 2 (k6 uses 104 for invalid config; barrage's bad input is 2); 108
    /// for `test.abort()`.
    pub fn exit_code(&self) -> i32 {
        match self {
            K6Error::Init(_) => 107,
            K6Error::Aborted(_) => 108,
            _ => 2,
        }
    }
}

/// A k6 script compiled for a run: its plan and its VUs' factory.
#[derive(Debug)]
pub struct K6Test {
    pub plan: Plan,
    pub factory: K6Factory,
    /// `options.summaryTrendStats`, as written (the CLI parses them).
    pub summary_trend_stats: Option<Vec<String>>,
}

/// k6's default Trend columns of the end-of-test summary.
pub const K6_TREND_STATS: &str = "avg,min,med,max,p(90),p(95)";

/// Reads the script at `path`. `env` are `-e KEY=VALUE` pairs (over the process
/// environment, as k6's `__ENV`).
pub fn load_file(path: &Path, env: &[(String, String)]) -> Result<K6Test, K6Error> {
    let source = std::fs::read_to_string(path).map_err(|source| K6Error::Read {
        path: path.display().to_string(),
        source,
    })?;
    load_source(&source, &path.display().to_string(), env)
}

/// Whether the file at `path` is a k6 script (unreadable files are not).
pub fn is_k6_file(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|source| is_k6_script(&source))
}

/// Compiles `source` (named `file` in messages).
pub fn load_source(source: &str, file: &str, env: &[(String, String)]) -> Result<K6Test, K6Error> {
    if let Some((line, module)) = unsupported_import(source) {
        return Err(K6Error::Init(format!(
            "{file}:{line}: `{module}` is not supported (barrage implements {})",
            SUPPORTED_MODULES.join(", ")
        )));
    }
    let mut all_env: Vec<(String, String)> = std::env::vars().collect();
    for (key, value) in env {
        all_env.retain(|(k, _)| k != key);
        all_env.push((key.clone(), value.clone()));
    }
    let mut script = context::Script {
        file: file.to_string(),
        env: all_env,
        scenario: ("default".to_string(), String::new()),
        request_tags: Default::default(),
        run: Arc::new(shared::RunShared::new(file)),
        typed_arrays: detect::uses_typed_arrays(source),
        bytecode: context::compile(source, file)?,
    };
    let exported = init::evaluate_init(&script).map_err(|e| match script.run.aborted() {
        Some(reason) => K6Error::Aborted(format!("{file}: {reason}")),
        None => e,
    })?;
    script.scenario = options::scenario(&exported.options);
    let name = Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
    let target = first_url(source)
        .and_then(|url| Target::parse(&url).ok())
        .or_else(|| Target::parse("http://127.0.0.1:80").ok())
        .expect("a literal target parses");
    let metrics: Vec<_> = exported
        .metrics
        .iter()
        .map(|d| (d.name.clone(), d.kind))
        .collect();
    let summary_trend_stats = match exported.options.get("summaryTrendStats") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| match item {
                    serde_json::Value::String(stat) => Ok(stat.clone()),
                    other => Err(K6Error::Options(format!(
                        "{file}: `summaryTrendStats`: `{other}` is not a statistic name"
                    ))),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(other) => {
            return Err(K6Error::Options(format!(
            "{file}: `summaryTrendStats` must be a list like [\"avg\", \"p(95)\"], not `{other}`"
        )))
        }
    };
    let plan = options::plan(&name, file, target, &exported.options, exported.metrics)?;
    script.run.set_max_redirects(plan.options.max_redirects);
    let (exec, scenario_env) =
        options::scenario_exec_and_env(file, &exported.options, &exported.functions)?;
    for (key, value) in scenario_env {
        script.env.retain(|(k, _)| *k != key);
        script.env.push((key, value));
    }
    script.request_tags = options::request_tags(&plan);
    Ok(K6Test {
        summary_trend_stats,
        plan,
        factory: K6Factory::new(script, metrics, exported.functions, exec),
    })
}

/// The origin of the first absolute `http(s)://` URL in `source` (the plan's target: what
/// the summary names and what TLS settings apply to).
fn first_url(source: &str) -> Option<String> {
    let start = source.find("http://").or_else(|| source.find("https://"))?;
    let rest = &source[start..];
    let scheme_end = rest.find("://")? + 3;
    let end = rest[scheme_end..]
        .find(|c: char| matches!(c, '/' | '"' | '\'' | '`' | '$' | '?' | '#') || c.is_whitespace())
        .map_or(rest.len(), |i| i + scheme_end);
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_absolute_url_names_the_target() {
        assert_eq!(
            first_url("const B = 'http://127.0.0.1:8080/x';").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            first_url("http.get(`https://h.test`)").as_deref(),
            Some("https://h.test")
        );
        assert_eq!(first_url("no url"), None);
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use barrage_plan::{Workload, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION};
    use std::time::Duration;

    fn plan(options: &str) -> Result<Plan, K6Error> {
        let source = format!(
            "import http from 'k6/http';\nimport {{ Trend }} from 'k6/metrics';\nconst t = new Trend('took', true);\nexport const options = {options};\nexport default function () {{ http.get('http://127.0.0.1:9/x'); }}\n"
        );
        load_source(&source, "dir/s.js", &[]).map(|t| t.plan)
    }

    #[test]
    fn options_compile_into_the_plan() {
        let p = plan("{ stages: [{duration: '30s', target: 10}, {duration: 5000, target: 0}], thresholds: { http_req_duration: ['p(95)<200', {threshold: 'avg<100', abortOnFail: true}], took: ['max<1000'] } }").unwrap();
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(p.name, "s");
        assert_eq!(p.target.to_string(), "http://127.0.0.1:9");
        assert_eq!(p.options.scripted_body.as_deref(), Some("dir/s.js"));
        assert_eq!(json["workload"]["admission"]["kind"], "loop");
        assert_eq!(json["workload"]["schedule"][0]["from"], 1.0);
        assert_eq!(json["workload"]["schedule"][1]["to"], 0.0);
        assert_eq!(p.metrics.custom[0].name, "took");
        assert_eq!(p.metrics.thresholds.len(), 2);
        let rules = &p.metrics.thresholds[0].rules;
        assert_eq!((rules.len(), rules[1].abort_on_fail), (2, true));
        assert!(p.workload.ramps_clients());
        let grace = DEFAULT_GRACEFUL_STOP;
        assert_eq!(
            plan("{ vus: 3, duration: '2s' }").unwrap().workload,
            Workload::constant_vus(3, Duration::from_secs(2), grace)
        );
        assert_eq!(
            plan("{ vus: 2, iterations: 9 }").unwrap().workload,
            Workload::counted(2, 9, false, DEFAULT_MAX_DURATION, grace)
        );
        assert_eq!(
            plan("{ scenarios: { a: { executor: 'constant-arrival-rate', rate: 5, duration: '3s', preAllocatedVUs: 2, maxVUs: 4 } } }").unwrap().workload,
            Workload::arrival_rate(
                5.0,
                Duration::from_secs(1),
                &[(Duration::from_secs(3), 5.0)],
                (2, 4),
                grace
            )
            .unwrap()
        );
    }

    #[test]
    fn bad_options_are_named() {
        let e = plan("{ vus: 'many', duration: '1s' }").unwrap_err();
        assert!(
            e.to_string().contains("`vus` must be a whole number"),
            "{e}"
        );
        let e = plan("{ thresholds: { http_req_duration: ['p95 < 3'] } }").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("dir/s.js: threshold `http_req_duration`"),
            "{e}"
        );
        let e = plan("{ scenarios: { a: { executor: 'nope' } } }").unwrap_err();
        assert!(e.to_string().contains("unknown executor `nope`"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = load_source(
            "export default function () {}\nwhile (true) {}\n",
            "loop.js",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("endless loop"), "{e}");
        assert_eq!(e.exit_code(), 107);
    }
}

#[cfg(test)]
mod option_range_tests {
    use super::*;

    fn error(options: &str) -> String {
        let source = format!(
            "import http from 'k6/http';\nexport const options = {options};\nexport default function () {{ http.get('http://127.0.0.1:9/x'); }}\n"
        );
        let e = load_source(&source, "r.js", &[]).expect_err(options);
        assert_eq!(e.exit_code(), 2, "{e}");
        let text = e.to_string();
        assert!(!text.contains('\n'), "one line: {text}");
        text
    }

    #[test]
    fn numeric_options_out_of_range_are_refused_naming_the_file_and_option() {
        let cases = [
            ("{ vus: 2000000, duration: '1s' }", "`vus` must be a whole number from 0 to 1000000"),
            ("{ vus: 1, iterations: 1e13 }", "`iterations`"),
            ("{ vus: 1, duration: 1e300 }", "`duration`"),
            ("{ vus: 1, duration: '400d' }", "`duration`"),
            ("{ stages: [{ duration: '1s', target: 2000000 }] }", "`stages[].target`"),
            ("{ stages: [{ duration: 1e300, target: 1 }] }", "`stages[].duration`"),
            ("{ scenarios: { a: { executor: 'constant-arrival-rate', rate: 1e10, duration: '1s', preAllocatedVUs: 1 } } }", "`rate`"),
            ("{ scenarios: { a: { executor: 'constant-arrival-rate', rate: 1, duration: '1s', preAllocatedVUs: 2000000 } } }", "`preAllocatedVUs`"),
            ("{ scenarios: { a: { executor: 'constant-arrival-rate', rate: 1, duration: '1s', preAllocatedVUs: 1, maxVUs: 2000000 } } }", "`maxVUs`"),
            ("{ scenarios: { a: { executor: 'constant-vus', vus: 1, duration: '1s', gracefulStop: '400d' } } }", "`gracefulStop`"),
            ("{ scenarios: { a: { executor: 'ramping-arrival-rate', startRate: 1e10, stages: [{ duration: '1s', target: 1 }], preAllocatedVUs: 1 } } }", "`startRate`"),
        ];
        for (options, named) in cases {
            let e = error(options);
            assert!(
                e.starts_with("r.js: ") && e.contains(named),
                "{options}: {e}"
            );
        }
    }
}
