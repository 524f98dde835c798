//! Sessions: the steps a client runs, and the values in them that vary per client.
//!
//! Everything here is data. A value that differs between clients — an extracted variable, a
//! picked CSV row, a random number, the last status — is a [`Value`] expression that the engine
//! evaluates per client; no script runs while load is generated.

use serde::{Deserialize, Serialize};

/// One kind of session: a named, weighted sequence of steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub name: String,
    pub weight: u32,
    pub steps: Vec<Step>,
}

/// One step of a session. Blocks (`times`, `if`, `for_ever`) nest steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    Request(RequestStep),
    /// Think time.
    Wait(Wait),
    /// A named condition, counted pass/fail; a fatal one (assert) ends the session on failure.
    Check(Check),
    /// Binds a per-client value (a picked row, a random number ...) to a session variable.
    Bind {
        var: String,
        binding: Binding,
    },
    /// Runs `steps` `count` times (`count` is evaluated once, when the loop starts).
    Times {
        count: Value,
        steps: Vec<Step>,
    },
    /// Runs `steps` when the condition holds.
    If {
        condition: Condition,
        steps: Vec<Step>,
    },
    /// Runs `steps` until the test ends.
    ForEver {
        steps: Vec<Step>,
    },
    /// Adds a value to a custom metric (`session.add`).
    Add(crate::MetricSample),
}

/// A value computed per client while the session runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Value {
    Text {
        value: String,
    },
    Number {
        value: f64,
    },
    /// A session variable: extracted from a response or bound by a `bind` step.
    Var {
        name: String,
    },
    /// A column of the row bound to `var` by a `pick_row` binding.
    Column {
        var: String,
        column: String,
    },
    /// The status code of the session's last response (0 if it had none, or it failed).
    LastStatus,
    /// The parts, as text, one after the other (`"Bearer " + session.getVar("token")`).
    Concat {
        parts: Vec<Value>,
    },
}

impl Value {
    pub fn text(value: impl Into<String>) -> Value {
        Value::Text {
            value: value.into(),
        }
    }

    /// Session variables this value reads (for plan-time checks that they can be bound).
    pub fn vars(&self) -> Vec<&str> {
        match self {
            Value::Var { name } => vec![name],
            Value::Column { var, .. } => vec![var],
            Value::Concat { parts } => parts.iter().flat_map(Value::vars).collect(),
            Value::Text { .. } | Value::Number { .. } | Value::LastStatus => vec![],
        }
    }
}

/// Where a `bind` step's value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Binding {
    /// A row of `Plan::data_sources[source]`: random per client, or round-robin.
    PickRow { source: usize, sequential: bool },
    /// A whole number, uniformly from `min..=max`.
    RandomNumber { min: i64, max: i64 },
    /// `length` random alphanumeric characters.
    RandomString { length: usize },
    /// A random (version 4) UUID.
    Uuid,
    /// A JSON Web Token re-signed when the step runs: `iat` now, `nbf` and `exp` moved with
    /// it, claims overridden, signed with the test's key (`barrage replay --jwt-*`,
    /// `session.ds.generate("jwt", ...)`).
    Jwt(Box<JwtResign>),
    /// A recorded timestamp moved to the present: the time the step runs plus `offset_ms`
    /// (the recorded timestamp's distance from the start of the recording), as an ISO 8601
    /// UTC timestamp with `fraction_digits` (0, 3 or 6) digits of a second
    /// (`barrage replay --shift-timestamps`), or in the recorded timestamp's `format`.
    ShiftedTime {
        offset_ms: i64,
        fraction_digits: u8,
        #[serde(default, skip_serializing_if = "TimeFormat::is_utc")]
        format: TimeFormat,
    },
}

/// How a shifted timestamp is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TimeFormat {
    /// ISO 8601 in UTC: `2026-11-20T10:15:00Z`.
    #[default]
    Utc,
    /// ISO 8601 at this many minutes from UTC: `2026-11-20T11:15:00+01:00`.
    Offset { minutes: i16 },
    /// Unix time in seconds: `1795169700`.
    EpochSeconds,
    /// Unix time in milliseconds: `1795169700250`.
    EpochMillis,
}

impl TimeFormat {
    pub fn is_utc(&self) -> bool {
        *self == TimeFormat::Utc
    }
}

/// How a recorded JWT is made valid again, per client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JwtResign {
    /// The token to re-sign: recorded text, or a per-client value (an extracted token).
    pub token: Value,
    pub algorithm: JwtAlgorithm,
    /// The HMAC secret, or the PEM private key (RS256, ES256, EdDSA); read when the plan
    /// was made, redacted from everything a run keeps.
    pub key: String,
    /// `exp` is `iat` plus this; none: the token's own lifetime (`exp - iat`, one hour when
    /// it has no `iat`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::duration_ms::option"
    )]
    pub lifetime: Option<std::time::Duration>,
    /// Claims set over the token's own, as JSON text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<(String, String)>,
}

/// The JWS algorithms barrage signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JwtAlgorithm {
    HS256,
    HS384,
    HS512,
    RS256,
    ES256,
    EdDSA,
}

impl JwtAlgorithm {
    pub const NAMES: &'static str = "HS256, HS384, HS512, RS256, ES256, EdDSA";

    pub fn parse(name: &str) -> Option<JwtAlgorithm> {
        Some(match name {
            "HS256" => JwtAlgorithm::HS256,
            "HS384" => JwtAlgorithm::HS384,
            "HS512" => JwtAlgorithm::HS512,
            "RS256" => JwtAlgorithm::RS256,
            "ES256" => JwtAlgorithm::ES256,
            "EdDSA" => JwtAlgorithm::EdDSA,
            _ => return None,
        })
    }

    /// Whether the key is a shared secret (else a PEM private key).
    pub fn is_hmac(self) -> bool {
        matches!(
            self,
            JwtAlgorithm::HS256 | JwtAlgorithm::HS384 | JwtAlgorithm::HS512
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareOp {
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    /// Regular-expression match; `expected` is the pattern.
    #[serde(rename = "=~")]
    Matches,
    #[serde(rename = "contains")]
    Contains,
}

impl CompareOp {
    pub fn parse(op: &str) -> Option<CompareOp> {
        Some(match op {
            "==" => CompareOp::Eq,
            "!=" => CompareOp::Ne,
            "<" => CompareOp::Lt,
            "<=" => CompareOp::Le,
            ">" => CompareOp::Gt,
            ">=" => CompareOp::Ge,
            "=~" => CompareOp::Matches,
            "contains" => CompareOp::Contains,
            _ => return None,
        })
    }
}

/// `value op expected`. Numbers compare numerically when both sides parse as numbers, else as
/// text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub value: Value,
    pub op: CompareOp,
    pub expected: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub condition: Condition,
    /// An assert: failure ends the session, which counts as failed.
    pub fatal: bool,
    /// Keep (a few of) the values the check failed on beside its counts, to say how they
    /// differed: replay's comparisons with the recording. Off for everything else, whose
    /// values may hold what a report must not (tokens, bodies).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_failed_values: bool,
}

/// Think time, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case")]
pub enum Wait {
    Fixed {
        seconds: f64,
    },
    /// Uniform between 0.5 × and 1.5 × `seconds` (`session.wait(s, {random: true})`).
    Random {
        seconds: f64,
    },
    Uniform {
        min: f64,
        max: f64,
    },
    /// Exponentially distributed with this mean.
    Exponential {
        mean: f64,
    },
    /// A per-client number of seconds (a variable, a row's column, ...), read when the wait
    /// starts; anything that is not a non-negative number waits nothing.
    PerClient {
        seconds: Value,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
        }
    }

    /// Parses a method name case-insensitively.
    pub fn parse(name: &str) -> Option<Method> {
        Some(match name.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            _ => return None,
        })
    }
}

/// A request header whose value may vary per client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeaderField {
    pub name: String,
    pub value: Value,
}

/// A request body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// Fixed bytes, sent as they are.
    Raw { bytes: Vec<u8> },
    /// Text computed per client.
    Text { value: Value },
    /// A JSON document (`Content-Type: application/json` unless a header says otherwise).
    Json { template: JsonTemplate },
    /// `application/x-www-form-urlencoded` fields.
    Form { fields: Vec<(String, Value)> },
}

/// JSON whose leaves may be per-client values; a dynamic leaf is sent as a JSON string, or
/// as a number when the value is a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JsonTemplate {
    /// A fixed JSON value.
    Literal {
        json: String,
    },
    Value {
        value: Value,
    },
    Array {
        items: Vec<JsonTemplate>,
    },
    Object {
        fields: Vec<(String, JsonTemplate)>,
    },
}

/// Where an extracted variable's value comes from in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Extractor {
    /// RFC 9535 JSONPath over the (decompressed) body; the first match.
    JsonPath { path: String },
    /// A regular expression over the body; the first capture group (or the whole match).
    Regexp { pattern: String },
    /// A response header, by name (case-insensitive).
    Header { name: String },
    /// An XPath 1.0 expression over the (decompressed) body parsed as XML; the string value
    /// of its result (of the first node, for a node set).
    #[serde(rename = "xpath")]
    XPath { expression: String },
    /// The shape of the (decompressed) JSON body — its keys and the types of their values,
    /// see [`json_shape`] — for comparing a replayed response with the recorded one.
    JsonShape,
}

/// The shape of a JSON document as JSON text: objects keep their keys (sorted) with the
/// shapes of their values, arrays the shape of their first item, and the rest becomes
/// `"string"`, `"number"`, `"bool"` or `"null"` (`{"id":1,"tags":["a"]}` →
/// `{"id":"number","tags":["string"]}`). Two responses of one API call have the same shape
/// when only their values differ; [`crate::shape_difference`] says where two shapes part.
pub fn json_shape(json: &serde_json::Value) -> String {
    let mut out = String::new();
    write_shape(json, &mut out);
    out
}

fn write_shape(json: &serde_json::Value, out: &mut String) {
    match json {
        serde_json::Value::Null => out.push_str("\"null\""),
        serde_json::Value::Bool(_) => out.push_str("\"bool\""),
        serde_json::Value::Number(_) => out.push_str("\"number\""),
        serde_json::Value::String(_) => out.push_str("\"string\""),
        serde_json::Value::Array(items) => {
            out.push('[');
            if let Some(first) = items.first() {
                write_shape(first, out);
            }
            out.push(']');
        }
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::from(key.as_str()).to_string());
                out.push(':');
                write_shape(&map[key], out);
            }
            out.push('}');
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub var: String,
    pub extractor: Extractor,
}

/// An HTTP request to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestStep {
    pub method: Method,
    /// Path and query, relative to the plan's target (starts with `/`). `:name` placeholders
    /// are filled from `params` first, then from session variables, as written (StormForger's
    /// meaning): only bytes a request target cannot carry are percent-encoded.
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<(String, Value)>,
    /// Index into [`crate::Plan::tags`].
    pub tag: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderField>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    /// Send the body gzip-compressed (`Content-Encoding: gzip`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gzip: bool,
    /// Send the body compressed with this coding (wins over `gzip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress: Option<BodyCoding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extraction: Vec<Extraction>,
    /// End the session when this request fails (transport error or status ≥ 400).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abort_on_error: bool,
    /// Redirects this request follows, instead of the test's `max_redirects`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_redirects: Option<u32>,
    /// Another origin than the plan target that this request goes to (a replayed recording
    /// that spans several hosts: a page, its API, its CDN); `path` is relative to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::Target>,
}

impl RequestStep {
    /// A plain request with a fixed path, no body and no extras.
    pub fn simple(method: Method, path: impl Into<String>, tag: usize) -> Self {
        Self {
            method,
            path: path.into(),
            params: Vec::new(),
            tag,
            headers: Vec::new(),
            body: None,
            gzip: false,
            compress: None,
            extraction: Vec::new(),
            abort_on_error: false,
            max_redirects: None,
            origin: None,
        }
    }

    /// How the body is sent compressed, if it is.
    pub fn body_coding(&self) -> Option<BodyCoding> {
        self.compress
            .or(self.gzip.then_some(BodyCoding::Gzip))
            .filter(|_| self.body.is_some())
    }
}

/// A `Content-Encoding` barrage can compress request bodies with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyCoding {
    Gzip,
    /// zlib-wrapped deflate (RFC 1950), as HTTP's `deflate` means.
    Deflate,
    Br,
}

impl BodyCoding {
    pub fn parse(text: &str) -> Option<BodyCoding> {
        match text {
            "gzip" => Some(BodyCoding::Gzip),
            "deflate" => Some(BodyCoding::Deflate),
            "br" => Some(BodyCoding::Br),
            _ => None,
        }
    }

    /// The `Content-Encoding` value.
    pub fn name(self) -> &'static str {
        match self {
            BodyCoding::Gzip => "gzip",
            BodyCoding::Deflate => "deflate",
            BodyCoding::Br => "br",
        }
    }
}

/// A CSV/TSV data source, loaded when the plan was compiled (so the plan is self-contained).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSource {
    /// The file as the script named it.
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl DataSource {
    pub fn column_index(&self, column: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == column)
    }
}

/// Visits every step, nested ones included, in order.
pub fn walk_steps<'a>(steps: &'a [Step], visit: &mut impl FnMut(&'a Step)) {
    for step in steps {
        visit(step);
        match step {
            Step::Times { steps, .. } | Step::If { steps, .. } | Step::ForEver { steps } => {
                walk_steps(steps, visit)
            }
            _ => {}
        }
    }
}

/// Visits every step mutably, nested ones included (a step before the steps it holds).
pub fn walk_steps_mut(steps: &mut [Step], visit: &mut impl FnMut(&mut Step)) {
    for step in steps {
        visit(step);
        match step {
            Step::Times { steps, .. } | Step::If { steps, .. } | Step::ForEver { steps } => {
                walk_steps_mut(steps, visit)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shapes_keep_keys_and_types_and_drop_values() {
        let shape = |text: &str| json_shape(&serde_json::from_str(text).unwrap());
        assert_eq!(
            shape(r#"{"tags":["a","b"],"id":1,"ok":true,"n":null,"o":{"z":1.5,"a":"x"},"e":[]}"#),
            r#"{"e":[],"id":"number","n":"null","o":{"a":"string","z":"number"},"ok":"bool","tags":["string"]}"#
        );
        assert_eq!(
            shape(r#"{"id":2,"tags":["c"]}"#),
            shape(r#"{"tags":["d"],"id":7}"#)
        );
        assert_ne!(shape(r#"{"id":"2"}"#), shape(r#"{"id":2}"#));
        // Keys are JSON strings: any key reads back.
        assert_eq!(shape(r#"{"a:b,c":1}"#), r#"{"a:b,c":"number"}"#);
    }
}
