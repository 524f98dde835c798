//! `barrage quick`: hey's flags, compiled into the same [`Plan`] a scenario script produces.

use crate::protocol_flags::ProtocolArgs;
use crate::usage::usage;
use crate::values;
use barrage_plan::{
    Body, Credentials, Header, HeaderField, Method, Plan, Proxy, RequestStep, Session, Step,
    Target, TestOptions, Value, Workload, GO_CLIENT_MAX_REDIRECTS, PLAN_FORMAT_VERSION,
};
use clap::Args;
use std::time::Duration;

/// hey's default request count and concurrency.
const DEFAULT_REQUESTS: u64 = 200;
const DEFAULT_CONCURRENCY: u64 = 50;
/// What "no timeout" (`-t 0`, as in hey) means in practice.
const NO_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, Args)]
pub struct QuickArgs {
    /// URL to load, e.g. http://127.0.0.1:8080/health
    pub url: String,
    /// Number of requests to run (ignored when -z is given)
    #[arg(short = 'n', default_value_t = DEFAULT_REQUESTS, allow_hyphen_values = true, value_parser = values::count)]
    pub requests: u64,
    /// Number of concurrent connections (clients)
    #[arg(short = 'c', default_value_t = DEFAULT_CONCURRENCY, allow_hyphen_values = true, value_parser = values::clients)]
    pub concurrency: u64,
    /// Duration of the run, e.g. 10s, 2m (wins over -n)
    #[arg(short = 'z', allow_hyphen_values = true, value_parser = values::run_duration_flag)]
    pub duration: Option<Duration>,
    /// Rate limit per worker in requests per second, as hey's -q: the run sends q × c requests
    /// per second (open loop: requests are scheduled independently of responses; latency
    /// counts from each request's scheduled time)
    #[arg(short = 'q', allow_hyphen_values = true, value_parser = values::rate)]
    pub qps_per_worker: Option<f64>,
    /// Rate limit for the whole run in requests per second (open loop, as -q)
    #[arg(long, allow_hyphen_values = true, value_parser = values::rate, conflicts_with = "qps_per_worker")]
    pub rate: Option<f64>,
    /// HTTP method
    #[arg(short = 'm', default_value = "GET")]
    pub method: String,
    /// Custom header "Name: value" (repeatable)
    #[arg(short = 'H')]
    pub headers: Vec<String>,
    /// Request body
    #[arg(short = 'd', conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body from a file
    #[arg(short = 'D')]
    pub body_file: Option<std::path::PathBuf>,
    /// Content-Type header (default text/html, as hey)
    #[arg(short = 'T')]
    pub content_type: Option<String>,
    /// Accept header
    #[arg(short = 'A')]
    pub accept: Option<String>,
    /// User-Agent: sent as "VALUE barrage/VERSION" (hey appends its own agent the same way)
    #[arg(short = 'U')]
    pub user_agent: Option<String>,
    /// Host header (the connection still goes to the URL's host)
    #[arg(long)]
    pub host: Option<String>,
    /// HTTP proxy, host:port or http://[user:pass@]host:port (https:// URLs go through a
    /// CONNECT tunnel)
    #[arg(short = 'x')]
    pub proxy: Option<String>,
    /// Timeout per request: seconds, or a duration like 500ms; 0 means none
    #[arg(short = 't', default_value = "20", allow_hyphen_values = true, value_parser = values::timeout)]
    pub timeout: Duration,
    /// Basic authentication, user:password (also taken from user:password@ in the URL)
    #[arg(short = 'a')]
    pub basic_auth: Option<String>,
    /// Open a new connection for every request
    #[arg(long)]
    pub disable_keepalive: bool,
    /// Do not ask for compressed responses
    #[arg(long)]
    pub disable_compression: bool,
    /// Do not follow redirects (by default up to 10 are followed, each hop its own request)
    #[arg(long)]
    pub disable_redirects: bool,
    /// Output format: "csv" streams hey's per-request CSV rows instead of the summary; "json"
    /// prints the summary as JSON instead of hey's text layout
    #[arg(short = 'o')]
    pub output: Option<String>,
    /// Worker threads (default: one per CPU this process may use)
    #[arg(long, allow_hyphen_values = true, value_parser = values::threads)]
    pub threads: Option<usize>,
    /// Number of CPU cores to use (hey's -cpus): the number of worker threads
    #[arg(long, conflicts_with = "threads", allow_hyphen_values = true, value_parser = values::threads)]
    pub cpus: Option<usize>,
    /// Print the plan this command compiles to, as JSON, and exit
    #[arg(long)]
    pub print_plan: bool,
    /// After Ctrl-C, SIGTERM or SIGHUP, how long requests in flight may finish (e.g. 2s;
    /// default 30s); a second signal stops at once
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub grace: Option<String>,
    #[command(flatten)]
    pub outputs: crate::output_flags::OutputArgs,
    #[command(flatten)]
    pub record: crate::record::RecordArgs,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
    /// hey's per-request CSV rows, streamed as responses arrive.
    Csv,
}

impl QuickArgs {
    pub fn output_format(&self) -> anyhow::Result<OutputFormat> {
        match self.output.as_deref() {
            None => Ok(OutputFormat::Text),
            Some("json") => Ok(OutputFormat::Json),
            Some("csv") => Ok(OutputFormat::Csv),
            Some(other) => Err(usage(format!(
                "-o: unknown output format `{other}` (use csv or json)"
            ))),
        }
    }
}

/// Sets header `name` (replacing an earlier one of that name, as Go's `Header.Set` in hey).
fn set_header(headers: &mut Vec<Header>, name: &str, value: &str) {
    headers.retain(|h| !h.name.eq_ignore_ascii_case(name));
    headers.push(Header {
        name: name.to_string(),
        value: value.to_string(),
    });
}

/// hey's `-a`, by its pattern `^(.+):([^\s].+)`: the user is everything before the last
/// colon that leaves a password of two or more characters not starting with a space.
fn hey_credentials(text: &str) -> Option<Credentials> {
    if text.contains('\n') {
        return None;
    }
    text.char_indices()
        .filter(|&(at, c)| c == ':' && at > 0)
        .map(|(at, _)| (&text[..at], &text[at + 1..]))
        .rfind(|(_, password)| {
            password.chars().count() >= 2 && !password.starts_with(char::is_whitespace)
        })
        .map(|(username, password)| Credentials {
            username: username.to_string(),
            password: password.to_string(),
        })
}

/// hey's `-H`, by its pattern `^([\w-]+):\s*(.+)`: a name of ASCII letters, digits, `_` and
/// `-` right before the colon, and a value that is not empty.
fn parse_header(raw: &str) -> anyhow::Result<Header> {
    let Some((name, value)) = raw.split_once(':') else {
        return Err(usage(format!(
            "-H: `{raw}` is not a header (expected \"Name: value\")"
        )));
    };
    let header = Header {
        name: name.trim().to_string(),
        value: value.trim().to_string(),
    };
    if let Some(problem) = header.problem() {
        return Err(usage(format!("-H: {problem}")));
    }
    let hey_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !hey_name {
        return Err(usage(format!(
            "-H: `{raw}`: hey takes header names of letters, digits, `_` and `-` only, right before the colon"
        )));
    }
    if header.value.is_empty() {
        return Err(usage(format!(
            "-H: `{raw}`: the value is empty (hey needs one)"
        )));
    }
    Ok(header)
}

/// Compiles the flags into a plan. Pure: reads the body file, touches nothing else.
pub fn quick_plan(args: &QuickArgs) -> anyhow::Result<Plan> {
    let (target, path) = Target::split_url(&args.url).map_err(|e| usage(e.to_string()))?;
    let (concurrency, duration, requests) = (args.concurrency, args.duration, args.requests);
    if duration.is_none() && requests < concurrency {
        return Err(usage(format!(
            "-n ({requests}) cannot be less than -c ({concurrency}): every connection needs a request"
        )));
    }
    let method = Method::parse(&args.method)
        .ok_or_else(|| usage(format!("-m: unknown method `{}`", args.method)))?;
    let timeout = match args.timeout {
        d if d.is_zero() => NO_TIMEOUT,
        d => d,
    };
    let basic_auth = match &args.basic_auth {
        Some(pair) => Some(hey_credentials(pair).ok_or_else(|| {
            usage("-a: expected user:password (a password of two characters or more, as hey)")
        })?),
        None => Credentials::from_url(&args.url),
    };
    let mut headers = Vec::new();
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.clone().into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(path)
                .map_err(|e| usage(format!("-D: cannot read `{}`: {e}", path.display())))?,
        ),
        (None, None) => None,
    };
    // hey sends a Content-Type (text/html unless -T) with every request.
    let content_type = args.content_type.as_deref().unwrap_or("text/html");
    let mut set = |name: &str, value: &str| set_header(&mut headers, name, value);
    set("Content-Type", content_type);
    for raw in &args.headers {
        let header = parse_header(raw)?;
        set(&header.name, &header.value);
    }
    // hey (rakyll/hey master, hey.go) appends its own agent to a User-Agent given by -H or
    // -U (-U wins): `-U x` sends `x hey/0.0.1`. barrage appends its own in the same way.
    let from_header = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("User-Agent"))
        .map(|h| h.value.clone());
    let user_agent = args
        .user_agent
        .clone()
        .or(from_header)
        .map(|ua| format!("{ua} {}", barrage_engine::USER_AGENT));
    let mut set = |name: &str, value: &str| set_header(&mut headers, name, value);
    for (flag, name, value) in [
        ("-A", "Accept", &args.accept),
        ("-U", "User-Agent", &user_agent),
        ("-host", "Host", &args.host),
    ] {
        if let Some(value) = value {
            let header = Header {
                name: name.into(),
                value: value.clone(),
            };
            if let Some(problem) = header.problem() {
                return Err(usage(format!("{flag}: {problem}")));
            }
            set(name, value);
        }
    }
    let iterations = duration.is_none().then_some(requests);
    let rate = match (args.qps_per_worker, args.rate) {
        (Some(q), _) => Some(("-q", q, q * concurrency as f64)),
        (None, Some(rate)) => Some(("--rate", rate, rate)),
        (None, None) => None,
    };
    let mut workload = match rate {
        Some((_, _, rate)) if rate > values::MAX_RATE => {
            return Err(usage(format!(
                "-q: the rate times -c ({rate}/s) is above the limit, {}/s",
                values::MAX_RATE
            )))
        }
        Some((_, _, rate)) => Workload::paced(rate, concurrency, duration, iterations),
        None => Workload::closed(concurrency, duration, iterations),
    };
    if let Some(grace) = &args.grace {
        workload.grace.stop = Some(values::duration_flag("--grace", grace, false)?);
    }
    let threads = args.cpus.or(args.threads);
    let mut plan = Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "quick".into(),
        options: TestOptions {
            request_timeout: timeout,
            keep_alive: !args.disable_keepalive,
            compression: !args.disable_compression,
            headers: Vec::new(),
            threads,
            seed: None,
            // hey (Go's client) sends at most 10 requests per chain and calls a 10th
            // redirect an error; -disable-redirects returns the first response as it is.
            max_redirects: if args.disable_redirects {
                0
            } else {
                GO_CLIENT_MAX_REDIRECTS
            },
            too_many_redirects_is_error: !args.disable_redirects,
            basic_auth,
            proxy: args
                .proxy
                .as_deref()
                .map(Proxy::parse)
                .transpose()
                .map_err(|e| usage(format!("-x: {e}")))?,
            ..TestOptions::default()
        },
        workload,
        tags: vec![format!("{} {}", method.as_str(), path)],
        sessions: vec![Session {
            name: "quick".into(),
            weight: 1,
            steps: vec![Step::Request(RequestStep {
                headers: headers
                    .into_iter()
                    .map(|h| HeaderField {
                        name: h.name,
                        value: Value::text(h.value),
                    })
                    .collect(),
                body: body.map(|bytes| Body::Raw { bytes }),
                ..RequestStep::simple(method, path, 0)
            })],
        }],
        target,
        data_sources: Vec::new(),
        metrics: Default::default(),
    };
    args.protocol.apply(&mut plan.options)?;
    plan.validate().map_err(|e| usage(e.to_string()))?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        quick: QuickArgs,
    }

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let mut argv = vec!["quick"];
        argv.extend_from_slice(args);
        quick_plan(&Wrapper::try_parse_from(argv)?.quick)
    }

    fn usage_message(args: &[&str]) -> String {
        let error = plan(args).unwrap_err();
        assert!(
            error.downcast_ref::<crate::usage::UsageError>().is_some(),
            "{error}"
        );
        error.to_string()
    }

    #[test]
    fn hey_defaults_compile_to_a_closed_plan() {
        let p = plan(&["http://127.0.0.1:8080/health?x=1"]).unwrap();
        assert_eq!(p.workload, Workload::closed(50, None, Some(200)));
        let Step::Request(r) = &p.sessions[0].steps[0] else {
            panic!("a request step")
        };
        assert_eq!((r.method, r.path.as_str()), (Method::Get, "/health?x=1"));
        assert_eq!(p.tags, vec!["GET /health?x=1".to_string()]);
        assert_eq!(p.options.request_timeout, Duration::from_secs(20));
    }

    #[test]
    fn rate_and_duration_make_a_paced_plan() {
        // hey's -q is per worker: 200 per second for each of 10 workers.
        let p = plan(&["-q", "200", "-z", "5s", "-c", "10", "http://127.0.0.1:1/"]).unwrap();
        let paced = |rate| Workload::paced(rate, 10, Some(Duration::from_secs(5)), None);
        assert_eq!(p.workload, paced(2000.0));
        let p = plan(&[
            "--rate",
            "300",
            "-z",
            "5s",
            "-c",
            "10",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        assert_eq!(p.workload, paced(300.0));
        assert!(plan(&["--rate", "3", "-q", "1", "http://h/"]).is_err());
    }

    #[test]
    fn hey_defaults_for_content_type_redirects_and_auth_from_the_url() {
        let p = plan(&["http://u:p%40ss@127.0.0.1:1/"]).unwrap();
        let Step::Request(r) = &p.sessions[0].steps[0] else {
            panic!("a request step")
        };
        assert_eq!(
            r.headers,
            vec![HeaderField {
                name: "Content-Type".into(),
                value: Value::text("text/html")
            }]
        );
        assert_eq!(p.options.max_redirects, 9);
        assert!(p.options.too_many_redirects_is_error);
        assert_eq!(p.options.basic_auth, Credentials::parse_pair("u:p@ss"));
        let p = plan(&["--disable-redirects", "-a", "a:bc", "http://u:p@h/"]).unwrap();
        assert_eq!(p.options.max_redirects, 0);
        assert!(!p.options.too_many_redirects_is_error);
        assert_eq!(p.options.basic_auth, Credentials::parse_pair("a:bc"));
    }

    #[test]
    fn a_and_h_parse_by_heys_patterns() {
        let pair = |text| hey_credentials(text).map(|c| (c.username, c.password));
        let owned = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
        assert_eq!(pair("user:pass"), owned("user", "pass"));
        assert_eq!(pair("a:b:cd"), owned("a:b", "cd"));
        assert_eq!(pair("a:bc:d"), owned("a", "bc:d"));
        assert_eq!(pair("u:p@ss"), owned("u", "p@ss"));
        for bad in ["u:p", ":pw", "u: pw", "nocolon", "u:"] {
            assert_eq!(pair(bad), None, "{bad}");
        }
        assert!(parse_header("X-A_1: v").is_ok());
        for bad in [" X: v", "X : v", "X.Y: v", "X:", "X:  ", ": v"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accept_user_agent_host_and_cpus() {
        let p = plan(&[
            "-A",
            "application/json",
            "-U",
            "ua/1",
            "--host",
            "example.test",
            "--cpus",
            "3",
            "-H",
            "content-type: a/b",
            "http://h/",
        ])
        .unwrap();
        let Step::Request(r) = &p.sessions[0].steps[0] else {
            panic!("a request step")
        };
        let pairs: Vec<(String, Value)> = r
            .headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("content-type".into(), Value::text("a/b")),
                ("Accept".into(), Value::text("application/json")),
                (
                    "User-Agent".into(),
                    Value::text(format!("ua/1 {}", barrage_engine::USER_AGENT))
                ),
                ("Host".into(), Value::text("example.test")),
            ]
        );
        assert_eq!(p.options.threads, Some(3));
        // hey appends its agent to a User-Agent from -H as well; -U wins over -H.
        let agent_of = |args: &[&str]| {
            let p = plan(args).unwrap();
            let Step::Request(r) = &p.sessions[0].steps[0] else {
                panic!("a request step")
            };
            let h = r.headers.iter().find(|h| h.name == "User-Agent");
            h.map(|h| h.value.clone())
        };
        let ours = barrage_engine::USER_AGENT;
        assert_eq!(
            agent_of(&["-H", "User-Agent: h/1", "http://h/"]),
            Some(Value::text(format!("h/1 {ours}")))
        );
        assert_eq!(
            agent_of(&["-H", "User-Agent: h/1", "-U", "u/2", "http://h/"]),
            Some(Value::text(format!("u/2 {ours}")))
        );
        assert_eq!(agent_of(&["http://h/"]), None);
        assert!(flag_error(&["--cpus", "0", "http://h/"]).contains("'--cpus "));
        assert!(usage_message(&["--host", "a\u{1}b", "http://h/"]).starts_with("-host:"));
    }

    #[test]
    fn headers_body_auth_and_flags_land_in_the_plan() {
        let p = plan(&[
            "-m",
            "post",
            "-d",
            "hi",
            "-T",
            "application/json",
            "-a",
            "u:pw",
            "-H",
            "X-A: 1",
            "--disable-keepalive",
            "--disable-compression",
            "-t",
            "500ms",
            "http://h:1/p",
        ])
        .unwrap();
        let Step::Request(r) = &p.sessions[0].steps[0] else {
            panic!("a request step")
        };
        assert_eq!(r.method, Method::Post);
        assert_eq!(
            r.body,
            Some(Body::Raw {
                bytes: b"hi".to_vec()
            })
        );
        let names: Vec<&str> = r.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, vec!["Content-Type", "X-A"]);
        assert_eq!(
            p.options
                .basic_auth
                .as_ref()
                .map(Credentials::basic_header_value),
            Some("Basic dTpwdw==".into())
        );
        assert!(!p.options.keep_alive && !p.options.compression);
        assert_eq!(p.options.request_timeout, Duration::from_millis(500));
    }

    /// The one line a bad flag value gives, whoever rejects it (clap's value parsers or
    /// the plan compiler).
    fn flag_error(args: &[&str]) -> String {
        let mut argv = vec!["quick"];
        argv.extend_from_slice(args);
        match Wrapper::try_parse_from(argv) {
            Err(e) => e.to_string().lines().next().unwrap_or("").to_string(),
            Ok(w) => usage_message_of(quick_plan(&w.quick)),
        }
    }

    fn usage_message_of(result: anyhow::Result<Plan>) -> String {
        let error = result.unwrap_err();
        assert!(
            error.downcast_ref::<crate::usage::UsageError>().is_some(),
            "{error}"
        );
        error.to_string()
    }

    #[test]
    fn bad_values_are_usage_errors_naming_the_flag() {
        let names = |args: &[&str], flag: &str| {
            let line = flag_error(args);
            assert!(
                line.starts_with(flag) || line.contains(&format!("'{flag} ")),
                "{args:?}: {line}"
            );
        };
        names(&["-c", "0", "http://h/"], "-c");
        names(&["-n", "-5", "http://h/"], "-n");
        assert!(flag_error(&["-z", "10parsecs", "http://h/"]).contains("unknown unit"));
        names(&["-z", "10", "http://h/"], "-z");
        assert!(flag_error(&["-z", "10", "http://h/"]).contains("10s?"));
        names(&["-q", "-3", "http://h/"], "-q");
        assert!(
            usage_message(&["-n", "5", "-c", "10", "http://h/"]).contains("cannot be less than")
        );
        assert!(usage_message(&["-H", "novalue", "http://h/"]).starts_with("-H:"));
        assert!(usage_message(&["-H", "X(A): 1", "http://h/"]).starts_with("-H:"));
        assert!(usage_message(&["-H", "X-A: a\r\nX-B: b", "http://h/"]).starts_with("-H:"));
        names(&["-z", "-1s", "http://h/"], "-z");
        names(&["-t", "-1", "http://h/"], "-t");
        assert!(usage_message(&["-m", "BREW", "http://h/"]).starts_with("-m:"));
        assert!(usage_message(&["ftp://h/"]).contains("unsupported scheme"));
        assert!(usage_message(&["not a url"]).contains("not a valid URL"));
        assert!(usage_message(&["-D", "/no/such/file", "http://h/"]).contains("/no/such/file"));
    }

    #[test]
    fn timeouts_that_once_panicked_or_vanished_are_rejected() {
        // Exit 101 ("cannot convert float seconds to Duration") before; now a usage line.
        for huge in ["1e20", "18446744073709551615", "inf", "NaN"] {
            let line = flag_error(&["-t", huge, "http://h/"]);
            assert!(line.contains("'-t "), "{huge}: {line}");
        }
        // A tiny timeout rounded to zero once meant "no timeout".
        let line = flag_error(&["-t", "0.0000000001", "http://h/"]);
        assert!(line.contains("shorter than the shortest timeout"), "{line}");
        let p = plan(&["-t", "0.001", "http://h/"]).unwrap();
        assert_eq!(p.options.request_timeout, Duration::from_millis(1));
    }

    #[test]
    fn zero_timeout_means_none() {
        let p = plan(&["-t", "0", "http://h/"]).unwrap();
        assert_eq!(p.options.request_timeout, NO_TIMEOUT);
    }
}
