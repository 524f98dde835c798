//! The plan: everything a load test will do, as pure serialisable data.
//!
//! Scripts (and CLI shortcuts such as `barrage quick`) compile *into* a [`Plan`]; the engine
//! executes a plan. Neither side sees the other, so this crate has no behaviour beyond
//! construction helpers and validation.

mod duration;
mod exclude;
mod http_semantics;
pub mod limits;
mod protocol;
mod recorded;
mod redact;
mod segment;
mod session;
mod stages;
mod target;
mod thresholds;
mod vus;
mod workload;
mod workload_ops;

pub use duration::{parse_duration, DurationError, DURATION_UNITS};
pub use exclude::{excluded_by, tag_matches, Exclusion};
pub use http_semantics::{
    Credentials, HttpDebug, Proxy, DEFAULT_MAX_REDIRECTS, GO_CLIENT_MAX_REDIRECTS,
};
pub use protocol::{
    parse_addr_range, ConnectionModel, ConnectionOptions, Http2Options, HttpVersion,
    ResponseLimits, TlsOptions, TlsVersion,
};
pub use recorded::{
    content_type_check_name, json_shape_check_name, parse_comparison_check_name,
    parse_status_check_name, shape_difference, status_check_name, Comparison,
};
pub use redact::{redact_url, Redaction, REDACTED, SENSITIVE_HEADERS};
pub use segment::{Segment, SegmentError, Stripe, Striping};
pub use session::{
    json_shape, walk_steps, walk_steps_mut, Binding, Body, BodyCoding, Check, CompareOp, Condition,
    DataSource, Extraction, Extractor, HeaderField, JsonTemplate, JwtAlgorithm, JwtResign, Method,
    RequestStep, Session, Step, TimeFormat, Value, Wait,
};
pub use stages::{Piece, Stages};
pub use target::{Scheme, Target, TargetError};
pub use thresholds::{
    compare, is_metric_name, is_per_tag, metric_kind, parse_expression, parse_key,
    parse_key_filters, threshold_problem, Aggregation, MetricDecl, MetricKind, MetricSample,
    MetricsSpec, ResponseTiming, SampleInput, StatusFilter, Threshold, ThresholdRule,
    BUILTIN_METRICS,
};
pub use vus::{VuStage, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION};
pub use workload::{Admission, Bound, Grace, RecordedArrival, Workload, WorkloadError};
pub use workload_ops::{OverrideError, VuOverride};

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Version of the plan format; bumped when a serialised plan would be read differently.
pub const PLAN_FORMAT_VERSION: u32 = 2;

/// A complete, executable description of a load test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format_version: u32,
    /// Human name of the test (script file stem, or `quick`).
    pub name: String,
    /// Base URL every request path is resolved against.
    pub target: Target,
    pub options: TestOptions,
    pub workload: Workload,
    /// Names of the request tags; requests refer to them by index so the hot path never
    /// hashes strings.
    pub tags: Vec<String>,
    /// Session kinds; one is picked per client (by weight) or run repeatedly by a VU.
    pub sessions: Vec<Session>,
    /// CSV/TSV data, loaded at compile time; `pick_row` bindings refer to it by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_sources: Vec<DataSource>,
    /// Custom metrics and pass/fail thresholds.
    #[serde(default, skip_serializing_if = "MetricsSpec::is_empty")]
    pub metrics: MetricsSpec,
}

/// Options that apply to every request of the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOptions {
    /// Per-request timeout (connect + send + receive).
    #[serde(with = "duration_ms")]
    pub request_timeout: Duration,
    /// Reuse connections between requests of the same client.
    pub keep_alive: bool,
    /// Ask for compressed responses (`Accept-Encoding: gzip`).
    pub compression: bool,
    /// Headers sent with every request, before request-specific ones.
    pub headers: Vec<Header>,
    /// Worker threads; `None` means one per CPU the process may run on.
    pub threads: Option<usize>,
    /// Seed of every random choice (arrivals, session picks, think times, generated values);
    /// the same seed and plan give the same schedule.
    #[serde(default)]
    pub seed: Option<u64>,
    /// HTTP version (`"1.1"`, `"2"`, `"auto"`).
    #[serde(default)]
    pub http: HttpVersion,
    #[serde(default)]
    pub tls: TlsOptions,
    #[serde(default)]
    pub http2: Http2Options,
    #[serde(default)]
    pub connections: ConnectionOptions,
    /// Response body and header limits.
    #[serde(default, skip_serializing_if = "ResponseLimits::is_default")]
    pub limits: ResponseLimits,
    /// Follow 3xx responses with a `Location` up to this many hops per request (0: the 3xx is
    /// the response). Each hop is a request of its own, timed and counted like any other.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_redirects: u32,
    /// A response that still redirects after `max_redirects` hops is an error
    /// (`too_many_redirects`, as Go's client and so hey: "stopped after 10 redirects"), not
    /// the response (k6, and `false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_many_redirects_is_error: bool,
    /// A redirect chain counts as one request, as hey counts one result per `client.Do`:
    /// its final status, its latency from the first hop's intended start to the last
    /// response, its bytes on the wire summed over the hops (the body size is the last
    /// response's), and an error anywhere in it one error. Without it (k6, StormForger)
    /// each hop is a request of its own. Either way the per-request sample log
    /// (`--out samples=`) and `--http-debug` show every hop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_redirect_chains: bool,
    /// Keep a cookie jar per client (RFC 6265): `Set-Cookie` is stored, `Cookie` sent back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cookies: bool,
    /// Basic authentication sent with every request (from `user:pass@` in the target URL,
    /// hey's `-a`, or a script's `setAuthentication`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<Credentials>,
    /// Send every request through this HTTP proxy: absolute-form requests for `http://`
    /// targets, a `CONNECT` tunnel for `https://`. Credentials in it become
    /// `Proxy-Authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// Print the first requests and responses to stderr (headers; bodies too with `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_debug: Option<HttpDebug>,
    /// The part of the test this process runs (`--segment i/N`); none: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<Segment>,
    /// The iterations are this script's (a k6 script file, run by its VUs), not the
    /// sessions' steps: the plan's one session is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_body: Option<String>,
    /// Request definitions the script left out by tag (StormForger's `exclude_tags`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Exclusion>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl Default for TestOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(20),
            keep_alive: true,
            compression: true,
            headers: Vec::new(),
            threads: None,
            seed: None,
            http: HttpVersion::Auto,
            tls: TlsOptions::default(),
            http2: Http2Options::default(),
            connections: ConnectionOptions::default(),
            limits: ResponseLimits::default(),
            max_redirects: 0,
            too_many_redirects_is_error: false,
            count_redirect_chains: false,
            cookies: false,
            basic_auth: None,
            proxy: None,
            http_debug: None,
            segment: None,
            scripted_body: None,
            excluded: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub name: String,
    pub value: String,
}

impl Header {
    /// Why this header cannot be sent, if it cannot: the name must be an HTTP token and the
    /// value free of line breaks and control characters (no header injection).
    pub fn problem(&self) -> Option<String> {
        let is_token_byte = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if self.name.is_empty() || !self.name.bytes().all(is_token_byte) {
            return Some(format!(
                "header name `{}` is not a valid HTTP token",
                self.name
            ));
        }
        if !self
            .value
            .bytes()
            .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
        {
            return Some(format!(
                "header `{}` has a line break or control character in its value",
                self.name
            ));
        }
        None
    }
}

impl Plan {
    /// How long running iterations may go on after a graceful stop (Ctrl-C, SIGTERM,
    /// abortOnFail): the workload's grace on a stop (quick's `--grace`, k6's
    /// `gracefulStop`, the open model's grace period).
    pub fn stop_grace(&self) -> Duration {
        self.workload.stop_grace()
    }

    /// The arrivals per second this process plans over time: the workload's arrival schedule
    /// times its segment's fraction (merged segments add up to the test). The one source of
    /// the runner's planned-arrivals figure and the HTML report's planned line.
    pub fn planned_arrivals(&self) -> Option<Stages> {
        let fraction = self.options.segment.as_ref().map_or(1.0, Segment::fraction);
        self.workload
            .arrival_schedule()
            .map(|schedule| schedule.scale(fraction))
    }

    fn step_problem(&self, session: &str, step: &Step) -> Result<(), PlanError> {
        match step {
            Step::Request(request) => {
                if request.tag >= self.tags.len() {
                    return Err(PlanError::UnknownTag {
                        session: session.to_string(),
                        tag: request.tag,
                    });
                }
                if !request.path.starts_with('/') {
                    return Err(PlanError::RelativePath(request.path.clone()));
                }
                for field in &request.headers {
                    let value = match &field.value {
                        Value::Text { value } => value.as_str(),
                        _ => "",
                    };
                    let header = Header {
                        name: field.name.clone(),
                        value: value.to_string(),
                    };
                    if let Some(problem) = header.problem() {
                        return Err(PlanError::BadHeader(problem));
                    }
                }
            }
            Step::Bind {
                binding: Binding::PickRow { source, .. },
                var,
            } if *source >= self.data_sources.len() => {
                return Err(PlanError::UnknownDataSource {
                    var: var.clone(),
                    index: *source,
                });
            }
            Step::Add(sample) if !self.metrics.custom.iter().any(|d| d.name == sample.metric) => {
                return Err(PlanError::Metrics(format!(
                    "session `{session}` adds to `{}`, which is not a declared custom metric",
                    sample.metric
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks the cross-references a hand-built or deserialised plan could get wrong.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.sessions.is_empty() {
            return Err(PlanError::NoSessions);
        }
        for session in &self.sessions {
            if session.steps.is_empty() && self.options.scripted_body.is_none() {
                return Err(PlanError::EmptySession(session.name.clone()));
            }
            let mut problem = None;
            walk_steps(&session.steps, &mut |step| {
                if problem.is_none() {
                    problem = self.step_problem(&session.name, step).err();
                }
            });
            if let Some(problem) = problem {
                return Err(problem);
            }
        }
        if self.sessions.iter().all(|s| s.weight == 0) {
            return Err(PlanError::ZeroWeights);
        }
        if let Some(problem) = self.options.headers.iter().find_map(Header::problem) {
            return Err(PlanError::BadHeader(problem));
        }
        if self.options.request_timeout.is_zero() {
            return Err(PlanError::ZeroTimeout);
        }
        self.workload.validate()?;
        if let Admission::Recorded { arrivals } = &self.workload.admission {
            if let Some(arrival) = arrivals.iter().find(|a| a.session >= self.sessions.len()) {
                return Err(PlanError::UnknownSession(arrival.session));
            }
        }
        self.metrics.validate(&self.tags)?;
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("the plan has no sessions")]
    NoSessions,
    #[error("session `{0}` has no steps")]
    EmptySession(String),
    #[error("session `{session}` refers to tag #{tag}, which the plan does not declare")]
    UnknownTag { session: String, tag: usize },
    #[error("{0}")]
    BadHeader(String),
    #[error("`{var}` picks from data source #{index}, which the plan does not have")]
    UnknownDataSource { var: String, index: usize },
    #[error("request path `{0}` must start with `/`")]
    RelativePath(String),
    #[error("a recorded arrival runs session #{0}, which the plan does not have")]
    UnknownSession(usize),
    #[error("every session has weight 0, so none can ever be picked")]
    ZeroWeights,
    #[error("the request timeout must be greater than zero")]
    ZeroTimeout,
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("{0}")]
    Metrics(String),
}

/// Serialises durations as integer milliseconds, the unit humans read plans in.
pub mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(deserializer)?))
    }

    /// The same for `Option<Duration>`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::Duration;

        pub fn serialize<S: Serializer>(
            value: &Option<Duration>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match value {
                Some(d) => serializer.serialize_some(&(d.as_millis() as u64)),
                None => serializer.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<Duration>, D::Error> {
            Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_request_plan() -> Plan {
        Plan {
            format_version: PLAN_FORMAT_VERSION,
            name: "t".into(),
            target: Target::parse("http://127.0.0.1:8080").unwrap(),
            options: TestOptions::default(),
            workload: Workload::closed(2, None, Some(10)),
            tags: vec!["GET /".into()],
            sessions: vec![Session {
                name: "s".into(),
                weight: 1,
                steps: vec![Step::Times {
                    count: Value::Number { value: 2.0 },
                    steps: vec![Step::Request(RequestStep::simple(Method::Get, "/", 0))],
                }],
            }],
            data_sources: vec![],
            metrics: MetricsSpec::default(),
        }
    }

    fn first_request(plan: &mut Plan) -> &mut RequestStep {
        match &mut plan.sessions[0].steps[0] {
            Step::Times { steps, .. } => match &mut steps[0] {
                Step::Request(r) => r,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn planned_arrivals_are_the_segments_share_of_the_arrival_schedule() {
        let mut plan = one_request_plan();
        assert_eq!(
            plan.planned_arrivals(),
            None,
            "a closed model plans no arrivals"
        );
        plan.workload = Workload::open(
            Stages::from_targets(10.0, [(Duration::from_secs(10), 30.0)]),
            None,
            Duration::ZERO,
        );
        assert_eq!(plan.planned_arrivals().unwrap().total(), 200.0);
        plan.options.segment = Segment::from_k6("1/2:3/4", Some("0,1/2,3/4,1")).ok();
        assert_eq!(plan.planned_arrivals().unwrap().total(), 50.0);
        assert_eq!(plan.stop_grace(), Duration::ZERO);
    }

    #[test]
    fn plan_round_trips_through_json() {
        let plan = one_request_plan();
        let json = serde_json::to_string(&plan).unwrap();
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(plan, back);
    }

    #[test]
    fn validate_rejects_dangling_tag() {
        let mut plan = one_request_plan();
        first_request(&mut plan).tag = 3;
        assert!(matches!(
            plan.validate(),
            Err(PlanError::UnknownTag { tag: 3, .. })
        ));
    }

    #[test]
    fn validate_accepts_good_plan_and_rejects_zero_timeout() {
        let mut plan = one_request_plan();
        assert_eq!(plan.validate(), Ok(()));
        plan.options.request_timeout = Duration::ZERO;
        assert_eq!(plan.validate(), Err(PlanError::ZeroTimeout));
    }

    #[test]
    fn validate_rejects_unsendable_headers() {
        let mut plan = one_request_plan();
        first_request(&mut plan).headers.push(HeaderField {
            name: "X(A)".into(),
            value: Value::text("1"),
        });
        assert!(matches!(plan.validate(), Err(PlanError::BadHeader(m)) if m.contains("X(A)")));
        let mut plan = one_request_plan();
        plan.options.headers.push(Header {
            name: "X-A".into(),
            value: "a\r\nX-B: b".into(),
        });
        assert!(
            matches!(plan.validate(), Err(PlanError::BadHeader(m)) if m.contains("line break"))
        );
    }

    #[test]
    fn validate_rejects_picks_from_missing_sources() {
        let mut plan = one_request_plan();
        plan.sessions[0].steps.insert(
            0,
            Step::Bind {
                var: "row".into(),
                binding: Binding::PickRow {
                    source: 0,
                    sequential: false,
                },
            },
        );
        assert!(matches!(
            plan.validate(),
            Err(PlanError::UnknownDataSource { index: 0, .. })
        ));
    }

    #[test]
    fn method_parse_is_case_insensitive() {
        assert_eq!(Method::parse("post"), Some(Method::Post));
        assert_eq!(Method::parse("BREW"), None);
    }
}
