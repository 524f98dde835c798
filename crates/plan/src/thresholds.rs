//! Thresholds and custom metrics as plan data, and the parser of k6's threshold syntax
//! (`"p(95) < 200"` on `"http_req_duration{tag:ping}"`).
//!
//! Built-in metric names and their kinds are k6's; a threshold names a built-in metric or a
//! custom metric the plan declares, and its aggregation must suit the metric's kind.

use crate::session::{CompareOp, Condition, Value};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What kind of values a metric holds (k6's four metric types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A running sum (`count`, `rate` per second).
    Counter,
    /// The last value set (`value`, also `min`, `max`).
    Gauge,
    /// The share of non-zero (true) values (`rate`).
    Rate,
    /// A distribution (`avg`, `min`, `med`, `max`, `p(N)`, `count`).
    Trend,
}

impl MetricKind {
    pub fn parse(text: &str) -> Option<MetricKind> {
        Some(match text.to_ascii_lowercase().as_str() {
            "counter" => MetricKind::Counter,
            "gauge" => MetricKind::Gauge,
            "rate" => MetricKind::Rate,
            "trend" => MetricKind::Trend,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Rate => "rate",
            MetricKind::Trend => "trend",
        }
    }

    /// The aggregations a threshold may use on a metric of this kind.
    pub fn aggregations(self) -> &'static str {
        match self {
            MetricKind::Counter => "count, rate",
            MetricKind::Gauge => "value, min, max",
            MetricKind::Rate => "rate",
            MetricKind::Trend => "avg, min, med, max, p(N), count",
        }
    }

    fn allows(self, aggregation: Aggregation) -> bool {
        use Aggregation as A;
        match self {
            MetricKind::Counter => matches!(aggregation, A::Count | A::Rate),
            MetricKind::Gauge => matches!(aggregation, A::Value | A::Min | A::Max),
            MetricKind::Rate => matches!(aggregation, A::Rate),
            MetricKind::Trend => matches!(
                aggregation,
                A::Avg | A::Min | A::Med | A::Max | A::Percentile(_) | A::Count
            ),
        }
    }
}

/// The built-in metrics, k6's names. Trends are in milliseconds, data in bytes.
pub const BUILTIN_METRICS: &[(&str, MetricKind)] = &[
    ("http_reqs", MetricKind::Counter),
    ("http_req_duration", MetricKind::Trend),
    ("http_req_failed", MetricKind::Rate),
    ("http_req_blocked", MetricKind::Trend),
    ("http_req_connecting", MetricKind::Trend),
    ("http_req_tls_handshaking", MetricKind::Trend),
    ("http_req_sending", MetricKind::Trend),
    ("http_req_waiting", MetricKind::Trend),
    ("http_req_receiving", MetricKind::Trend),
    ("iterations", MetricKind::Counter),
    ("iteration_duration", MetricKind::Trend),
    ("vus", MetricKind::Gauge),
    ("vus_max", MetricKind::Gauge),
    ("checks", MetricKind::Rate),
    ("data_sent", MetricKind::Counter),
    ("data_received", MetricKind::Counter),
    ("dropped_iterations", MetricKind::Counter),
    // barrage's own run facts (not k6's), for StormForger's `test.duration` and
    // `test.completed` requirements: the run's length in seconds, and 1 when it ran to its
    // end (0 when it was interrupted).
    ("run_duration", MetricKind::Gauge),
    ("run_completed", MetricKind::Gauge),
];

/// Built-in metrics that exist per request tag (a `{tag:NAME}` filter applies to them).
pub fn is_per_tag(metric: &str) -> bool {
    metric.starts_with("http_req") || metric == "data_sent" || metric == "data_received"
}

/// A custom metric the definition declares (`definition.metric("errors", "rate")`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricDecl {
    pub name: String,
    pub kind: MetricKind,
}

/// One value added to a custom metric by a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSample {
    /// The name of a metric in [`MetricsSpec::custom`].
    pub metric: String,
    pub input: SampleInput,
}

/// Where a sample's value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SampleInput {
    /// A number, or a per-client value read as a number (text that is no number counts as 0,
    /// except `true`, which counts as 1).
    Value { value: Value },
    /// A condition: 1 when it holds, else 0.
    Condition { condition: Condition },
    /// A timing of the session's last response, in milliseconds (0 if it had none).
    LastResponse { timing: ResponseTiming },
}

/// A timing of one response, named like k6's `http_req_*` metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseTiming {
    /// From the intended start to the last byte (`http_req_duration`).
    Duration,
    /// Time to open a connection, 0 on a reused one (`http_req_blocked`).
    Blocked,
    /// The same (`http_req_connecting`).
    Connecting,
    Sending,
    /// Time to first byte (`http_req_waiting`).
    Waiting,
    Receiving,
}

impl ResponseTiming {
    pub const NAMES: &'static str = "duration, blocked, connecting, sending, waiting, receiving";

    pub fn parse(name: &str) -> Option<ResponseTiming> {
        Some(match name {
            "duration" => ResponseTiming::Duration,
            "blocked" => ResponseTiming::Blocked,
            "connecting" => ResponseTiming::Connecting,
            "sending" => ResponseTiming::Sending,
            "waiting" => ResponseTiming::Waiting,
            "receiving" => ResponseTiming::Receiving,
            _ => return None,
        })
    }
}

/// The custom metrics a plan declares and its thresholds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom: Vec<MetricDecl>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Threshold>,
}

impl MetricsSpec {
    pub fn is_empty(&self) -> bool {
        self.custom.is_empty() && self.thresholds.is_empty()
    }

    /// Checks names are unique and every threshold can be evaluated.
    pub fn validate(&self, tags: &[String]) -> Result<(), crate::PlanError> {
        let problem = |m: String| Err(crate::PlanError::Metrics(m));
        for (i, decl) in self.custom.iter().enumerate() {
            if !is_metric_name(&decl.name) {
                return problem(format!(
                    "custom metric name `{}` must be letters, digits and _ (not starting with a digit)",
                    decl.name
                ));
            }
            if BUILTIN_METRICS.iter().any(|(n, _)| *n == decl.name) {
                return problem(format!(
                    "custom metric `{}` has the name of a built-in metric",
                    decl.name
                ));
            }
            if self.custom[..i].iter().any(|d| d.name == decl.name) {
                return problem(format!("custom metric `{}` is declared twice", decl.name));
            }
        }
        for threshold in &self.thresholds {
            if let Some(p) = threshold_problem(threshold, tags, &self.custom) {
                return problem(p);
            }
        }
        Ok(())
    }
}

/// Whether `name` can name a custom metric.
pub fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

/// What a threshold computes from a metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stat", content = "p", rename_all = "snake_case")]
pub enum Aggregation {
    Avg,
    Min,
    Max,
    Med,
    /// `p(N)`, N in 0–100.
    Percentile(f64),
    Rate,
    Count,
    Value,
}

impl Aggregation {
    /// Parses `avg`, `p(99.9)`, ... (also the columns of `--summary-trend-stats`).
    pub fn parse(text: &str) -> Option<Aggregation> {
        let text = text.trim();
        Some(match text {
            "avg" => Aggregation::Avg,
            "min" => Aggregation::Min,
            "max" => Aggregation::Max,
            "med" => Aggregation::Med,
            "rate" => Aggregation::Rate,
            "count" => Aggregation::Count,
            "value" => Aggregation::Value,
            _ => {
                let inner = text.strip_prefix("p(")?.strip_suffix(')')?.trim();
                let p: f64 = inner.parse().ok()?;
                if !(0.0..=100.0).contains(&p) {
                    return None;
                }
                Aggregation::Percentile(p)
            }
        })
    }

    /// The name as written in k6's syntax (`p(95)`).
    pub fn label(&self) -> String {
        match self {
            Aggregation::Avg => "avg".into(),
            Aggregation::Min => "min".into(),
            Aggregation::Max => "max".into(),
            Aggregation::Med => "med".into(),
            Aggregation::Percentile(p) => format!("p({p})"),
            Aggregation::Rate => "rate".into(),
            Aggregation::Count => "count".into(),
            Aggregation::Value => "value".into(),
        }
    }
}

/// One threshold expression on a metric, `aggregation op value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdRule {
    /// The expression as the script wrote it (`p(95)<200`).
    pub expression: String,
    pub aggregation: Aggregation,
    /// One of `<`, `<=`, `>`, `>=`, `==`, `!=`.
    pub op: CompareOp,
    pub value: f64,
    /// Stop the run as soon as this rule fails (evaluated while the run goes on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abort_on_fail: bool,
    /// With `abort_on_fail`: do not abort during this first part of the run.
    #[serde(
        default,
        with = "crate::duration_ms::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay_abort_eval: Option<Duration>,
}

/// The thresholds of one metric, optionally filtered to one request tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The key as written: `http_req_duration{tag:ping}`.
    pub key: String,
    pub metric: String,
    /// The request tag the metric is filtered to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// `http_req_duration` only: the response statuses it is filtered to
    /// (`{status:<500}`, StormForger NFR's `where.status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusFilter>,
    pub rules: Vec<ThresholdRule>,
}

/// A filter on response status codes: `status op value` (`<500`, `>=400`, `200`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusFilter {
    pub op: CompareOp,
    pub value: u16,
}

impl StatusFilter {
    /// Parses `<500`, `>= 400`, `==200` or a bare `200` (equality).
    pub fn parse(text: &str) -> Result<StatusFilter, String> {
        let text = text.trim();
        let digits = text
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(text.len());
        let (op, value) = text.split_at(digits);
        let op = match op.trim() {
            "" => CompareOp::Eq,
            "=" => CompareOp::Eq,
            other => CompareOp::parse(other)
                .filter(|op| !matches!(op, CompareOp::Matches | CompareOp::Contains))
                .ok_or_else(|| format!("status filter `{text}`: unknown operator `{other}`"))?,
        };
        let value = value
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|v| (100..600).contains(v))
            .ok_or_else(|| format!("status filter `{text}`: expected a status from 100 to 599"))?;
        Ok(StatusFilter { op, value })
    }

    pub fn matches(&self, status: u16) -> bool {
        compare(f64::from(status), self.op, f64::from(self.value))
    }

    /// As a key writes it (`<500`).
    pub fn label(&self) -> String {
        let op = match self.op {
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::Matches | CompareOp::Contains => "?",
        };
        format!("{op}{}", self.value)
    }
}

impl Threshold {
    /// One rule on one key, in k6's syntax (`"http_req_duration{tag:ping}"`, `"p(95)<200"`),
    /// without `abortOnFail`: the short form of a threshold.
    pub fn parse(key: &str, expression: &str) -> Result<Self, String> {
        let (metric, tag, status) = parse_key_filters(key)?;
        let (aggregation, op, value) = parse_expression(expression)?;
        Ok(Threshold {
            key: key.into(),
            metric,
            tag,
            status,
            rules: vec![ThresholdRule {
                expression: expression.into(),
                aggregation,
                op,
                value,
                abort_on_fail: false,
                delay_abort_eval: None,
            }],
        })
    }
}

/// The kind of `metric`: built-in, or declared in `custom`.
pub fn metric_kind(metric: &str, custom: &[MetricDecl]) -> Option<MetricKind> {
    BUILTIN_METRICS
        .iter()
        .find(|(name, _)| *name == metric)
        .map(|(_, kind)| *kind)
        .or_else(|| custom.iter().find(|d| d.name == metric).map(|d| d.kind))
}

/// Splits `metric{tag:NAME}`, `http_req_duration{status:<500}` or
/// `http_req_duration{tag:NAME,status:<500}` into the metric and its filters.
pub fn parse_key_filters(
    key: &str,
) -> Result<(String, Option<String>, Option<StatusFilter>), String> {
    let trimmed = key.trim();
    let Some((head, status)) = trimmed
        .strip_suffix('}')
        .and_then(|k| k.rsplit_once("status:"))
        .filter(|(head, _)| head.ends_with('{') || head.trim_end().ends_with(','))
    else {
        let (metric, tag) = parse_key(key)?;
        return Ok((metric, tag, None));
    };
    let status = StatusFilter::parse(status).map_err(|e| format!("threshold key `{key}`: {e}"))?;
    let head = head.trim_end();
    let (metric, tag) = match head.strip_suffix(',') {
        Some(with_tag) => parse_key(&format!("{with_tag}}}"))?,
        None => (head.trim_end_matches('{').trim().to_string(), None),
    };
    if metric != "http_req_duration" {
        return Err(format!(
            "threshold key `{key}`: a status filter applies to http_req_duration only"
        ));
    }
    Ok((metric, tag, Some(status)))
}

/// Splits `metric{tag:NAME}` into the metric and the tag filter.
pub fn parse_key(key: &str) -> Result<(String, Option<String>), String> {
    let key = key.trim();
    let Some(open) = key.find('{') else {
        return Ok((key.to_string(), None));
    };
    let metric = key[..open].trim().to_string();
    let filter = key[open + 1..]
        .strip_suffix('}')
        .ok_or_else(|| format!("threshold key `{key}`: the tag filter must end with `}}`"))?;
    let (name, value) = filter.split_once(':').ok_or_else(|| {
        format!("threshold key `{key}`: write the filter as {{tag:NAME}} (a request tag)")
    })?;
    if name.trim() != "tag" {
        return Err(format!(
            "threshold key `{key}`: unknown filter `{}` (only {{tag:NAME}}, a request tag, is supported)",
            name.trim()
        ));
    }
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("threshold key `{key}`: the tag name is empty"));
    }
    Ok((metric, Some(value.to_string())))
}

/// Parses one expression, `p(95) < 200`.
pub fn parse_expression(text: &str) -> Result<(Aggregation, CompareOp, f64), String> {
    let expression = text.trim();
    let at = expression.find(['<', '>', '=', '!']).ok_or_else(|| {
        format!("threshold `{text}`: expected `aggregation operator value`, like `p(95)<200`")
    })?;
    let (left, rest) = expression.split_at(at);
    let op_len = if rest[1..].starts_with('=') { 2 } else { 1 };
    let op = match &rest[..op_len] {
        op @ ("<" | "<=" | ">" | ">=" | "==" | "!=") => {
            CompareOp::parse(op).expect("a comparison operator")
        }
        other => {
            return Err(format!(
                "threshold `{text}`: unknown operator `{other}` (known: <, <=, >, >=, ==, !=)"
            ))
        }
    };
    let aggregation = Aggregation::parse(left).ok_or_else(|| {
        format!(
            "threshold `{text}`: unknown aggregation `{}` (known: avg, min, max, med, p(N), rate, count, value)",
            left.trim()
        )
    })?;
    let value_text = rest[op_len..].trim();
    let value: f64 = value_text
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("threshold `{text}`: `{value_text}` is not a number"))?;
    Ok((aggregation, op, value))
}

/// Why a threshold cannot be evaluated against a plan with these tags and custom metrics.
pub fn threshold_problem(
    threshold: &Threshold,
    tags: &[String],
    custom: &[MetricDecl],
) -> Option<String> {
    let key = &threshold.key;
    let Some(kind) = metric_kind(&threshold.metric, custom) else {
        let custom_names: Vec<&str> = custom.iter().map(|d| d.name.as_str()).collect();
        return Some(format!(
            "threshold on unknown metric `{}` (built-in: {}{}{})",
            threshold.metric,
            BUILTIN_METRICS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
            if custom_names.is_empty() {
                ""
            } else {
                "; custom: "
            },
            custom_names.join(", ")
        ));
    };
    if let Some(tag) = &threshold.tag {
        if !is_per_tag(&threshold.metric) {
            return Some(format!(
                "threshold `{key}`: `{}` is not recorded per request tag; only http_req* and data_* metrics take {{tag:NAME}}",
                threshold.metric
            ));
        }
        if !tags.contains(tag) {
            return Some(format!(
                "threshold `{key}`: no request has the tag `{tag}` (tags: {})",
                tags.join(", ")
            ));
        }
    }
    if threshold.rules.is_empty() {
        return Some(format!("threshold `{key}` has no expression"));
    }
    for rule in &threshold.rules {
        if !kind.allows(rule.aggregation) {
            return Some(format!(
                "threshold `{key}`: `{}` does not apply to a {} metric (use {})",
                rule.aggregation.label(),
                kind.name(),
                kind.aggregations()
            ));
        }
        if !matches!(
            rule.op,
            CompareOp::Eq
                | CompareOp::Ne
                | CompareOp::Lt
                | CompareOp::Le
                | CompareOp::Gt
                | CompareOp::Ge
        ) {
            return Some(format!(
                "threshold `{key}`: `{}` compares with a text operator",
                rule.expression
            ));
        }
    }
    None
}

/// Whether `observed op value` holds (numbers).
pub fn compare(observed: f64, op: CompareOp, value: f64) -> bool {
    match op {
        CompareOp::Lt => observed < value,
        CompareOp::Le => observed <= value,
        CompareOp::Gt => observed > value,
        CompareOp::Ge => observed >= value,
        CompareOp::Eq => observed == value,
        CompareOp::Ne => observed != value,
        CompareOp::Matches | CompareOp::Contains => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_like_k6() {
        assert_eq!(
            parse_expression("p(95)<200").unwrap(),
            (Aggregation::Percentile(95.0), CompareOp::Lt, 200.0)
        );
        assert_eq!(
            parse_expression(" rate <= 0.01 ").unwrap(),
            (Aggregation::Rate, CompareOp::Le, 0.01)
        );
        assert_eq!(
            parse_expression("p(99.9) != 3").unwrap(),
            (Aggregation::Percentile(99.9), CompareOp::Ne, 3.0)
        );
        assert_eq!(parse_expression("count>=10").unwrap().1, CompareOp::Ge);
        assert_eq!(parse_expression("med==1").unwrap().1, CompareOp::Eq);
        assert!(parse_expression("p95<200")
            .unwrap_err()
            .contains("unknown aggregation `p95`"));
        assert!(parse_expression("avg<fast")
            .unwrap_err()
            .contains("not a number"));
        assert!(parse_expression("avg 200")
            .unwrap_err()
            .contains("expected"));
        assert!(parse_expression("avg=200")
            .unwrap_err()
            .contains("unknown operator `=`"));
        assert!(parse_expression("p(101)<1").is_err());
    }

    #[test]
    fn keys_take_a_tag_filter() {
        assert_eq!(
            parse_key("http_req_duration{tag:ping}").unwrap(),
            ("http_req_duration".into(), Some("ping".into()))
        );
        assert_eq!(parse_key("checks").unwrap(), ("checks".into(), None));
        assert!(parse_key("http_reqs{status:200}")
            .unwrap_err()
            .contains("unknown filter `status`"));
        assert!(parse_key("http_reqs{tag:a").is_err());
    }

    #[test]
    fn latency_keys_take_a_status_filter() {
        let filters = |key| parse_key_filters(key).map(|(m, t, s)| (m, t, s.map(|s| s.label())));
        assert_eq!(
            filters("http_req_duration{status:<500}").unwrap(),
            ("http_req_duration".into(), None, Some("<500".into()))
        );
        assert_eq!(
            filters("http_req_duration{tag:a,status:>=400}").unwrap(),
            (
                "http_req_duration".into(),
                Some("a".into()),
                Some(">=400".into())
            )
        );
        assert_eq!(
            filters("http_req_duration{status:200}").unwrap().2,
            Some("==200".into())
        );
        assert!(filters("http_reqs{status:200}")
            .unwrap_err()
            .contains("http_req_duration only"));
        assert!(filters("http_req_duration{status:<5000}").is_err());
        assert!(filters("http_req_duration{status:~5}").is_err());
        let f = StatusFilter::parse("<500").unwrap();
        assert!(f.matches(499) && !f.matches(500));
    }

    fn threshold(key: &str, expr: &str) -> Threshold {
        Threshold::parse(key, expr).unwrap()
    }

    #[test]
    fn problems_name_metrics_tags_and_kinds() {
        let tags = ["ping".to_string()];
        let custom = [MetricDecl {
            name: "errors".into(),
            kind: MetricKind::Rate,
        }];
        let ok = |k, e| threshold_problem(&threshold(k, e), &tags, &custom);
        assert_eq!(ok("http_req_duration{tag:ping}", "p(95)<200"), None);
        assert_eq!(ok("errors", "rate<0.1"), None);
        assert!(ok("latency", "avg<1")
            .unwrap()
            .contains("unknown metric `latency`"));
        assert!(ok("http_reqs{tag:pong}", "count>1")
            .unwrap()
            .contains("no request has the tag `pong`"));
        assert!(ok("errors", "avg<1")
            .unwrap()
            .contains("`avg` does not apply to a rate metric"));
        assert!(ok("iterations{tag:ping}", "count>1")
            .unwrap()
            .contains("not recorded per request tag"));
        assert!(compare(1.0, CompareOp::Le, 1.0) && !compare(2.0, CompareOp::Lt, 1.0));
    }

    #[test]
    fn thresholds_round_trip_through_json() {
        let mut t = threshold("http_req_duration", "p(99.9)<5");
        t.rules[0].abort_on_fail = true;
        t.rules[0].delay_abort_eval = Some(Duration::from_secs(10));
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Threshold>(&json).unwrap(), t);
    }
}
