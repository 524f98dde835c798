//! A session's recorded calls as plan steps (checks, waits, blocks, binds), tracking which
//! session variables are bound, in document order, for the plan-time variable checks.

use crate::error::Location;
use crate::js::Call;
use crate::jsval::{Args, JsVal};
use crate::value::{self, parts, Part};
use crate::ScriptError;
use barrage_plan::{
    Binding, Check, CompareOp, Condition, JwtAlgorithm, JwtResign, Method, Step, Target, Value,
    Wait,
};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Request tags, interned: requests refer to them by index.
#[derive(Debug, Default)]
pub(crate) struct Tags {
    pub names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Tags {
    pub(crate) fn intern(&mut self, tag: &str) -> usize {
        if let Some(&i) = self.index.get(tag) {
            return i;
        }
        self.names.push(tag.to_string());
        self.index.insert(tag.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// Builds the steps of one session.
pub(crate) struct SessionBuilder<'a> {
    pub tags: &'a mut Tags,
    /// Plan data source index of each `loadStructured` handle.
    pub sources: &'a [usize],
    /// Variables bound so far (all of the session's once it is built).
    pub bound: HashSet<String>,
    /// Variables read by values, with the location of the step that reads them.
    pub uses: Vec<(String, Location)>,
    /// Where raw files (`payload_from_file`, `session.ds.getRawFile`) are read from.
    pub base_dir: &'a Path,
    /// Origins of requests written as absolute URLs, checked against the target.
    pub origins: Vec<(Target, Location)>,
    /// One-line warnings (`FILE:LINE:COL: warning: ...`).
    pub warnings: Vec<String>,
    /// The test's `exclude_tags`: requests tagged so are left out of the session.
    pub exclude: Vec<String>,
    /// The tag of each request left out, in order.
    pub excluded: Vec<String>,
    /// Variables only requests left out would have extracted.
    pub excluded_vars: HashSet<String>,
}

impl<'a> SessionBuilder<'a> {
    pub(crate) fn new(tags: &'a mut Tags, sources: &'a [usize], base_dir: &'a Path) -> Self {
        Self {
            tags,
            sources,
            bound: HashSet::new(),
            uses: Vec::new(),
            base_dir,
            origins: Vec::new(),
            warnings: Vec::new(),
            exclude: Vec::new(),
            excluded: Vec::new(),
            excluded_vars: HashSet::new(),
        }
    }

    /// The steps of `calls`, without the requests `exclude_tags` leaves out.
    pub(crate) fn steps(&mut self, calls: &[Call]) -> Result<Vec<Step>, ScriptError> {
        let mut steps = Vec::with_capacity(calls.len());
        for call in calls {
            if let Some(step) = self.step(call)? {
                steps.push(step);
            }
        }
        Ok(steps)
    }

    fn step(&mut self, call: &Call) -> Result<Option<Step>, ScriptError> {
        let what = match call.verb.as_str() {
            "pickFrom" | "generate" => format!("`session.ds.{}`", call.verb),
            verb => format!("`session.{verb}`"),
        };
        let a = Args {
            what: &what,
            loc: &call.loc,
        };
        let args = call.args.as_slice();
        let arg = |i: usize| args.get(i).unwrap_or(&JsVal::Undefined);
        let step = match call.verb.as_str() {
            verb @ ("get" | "post" | "put" | "patch" | "delete" | "head" | "options") => {
                let method = Method::parse(verb).expect("the prelude records HTTP verbs only");
                match self.request(method, call, &a)? {
                    Some(request) => Step::Request(request),
                    None => return Ok(None),
                }
            }
            verb @ ("assert" | "check") => {
                a.arity(args, 4, 4)?;
                let name = a.string(arg(0), "name")?.to_string();
                Step::Check(Check {
                    name,
                    condition: condition(&args[1..], &a)?,
                    fatal: verb == "assert",
                    keep_failed_values: false,
                })
            }
            "wait" => {
                a.arity(args, 1, 2)?;
                let mut random = false;
                for (key, v) in a.options(arg(1), &["random"])? {
                    random = a.bool(v, key)?;
                }
                if !matches!(arg(0), JsVal::Num(_)) && !random {
                    if let seconds @ (Value::Var { .. }
                    | Value::Column { .. }
                    | Value::Concat { .. }) = value::value(arg(0), &a, "seconds")?
                    {
                        return Ok(Some(Step::Wait(Wait::PerClient { seconds })));
                    }
                }
                let seconds = a.seconds(arg(0), "seconds")?;
                Step::Wait(if random {
                    Wait::Random { seconds }
                } else {
                    Wait::Fixed { seconds }
                })
            }
            "waitUniform" => {
                a.arity(args, 2, 2)?;
                let min = a.seconds(arg(0), "min")?;
                let max = a.seconds(arg(1), "max")?;
                if min > max {
                    return Err(a.err(format_args!("`min` ({min}) is larger than `max` ({max})")));
                }
                Step::Wait(Wait::Uniform { min, max })
            }
            "waitExp" => {
                a.arity(args, 1, 1)?;
                Step::Wait(Wait::Exponential {
                    mean: a.seconds(arg(0), "mean")?,
                })
            }
            "times" => {
                a.arity(args, 1, 1)?;
                let count = count(arg(0), &a)?;
                Step::Times {
                    count,
                    steps: self.steps(&call.steps)?,
                }
            }
            "if" => {
                a.arity(args, 3, 3)?;
                let condition = condition(args, &a)?;
                Step::If {
                    condition,
                    steps: self.steps(&call.steps)?,
                }
            }
            "forEver" => {
                a.arity(args, 0, 0)?;
                Step::ForEver {
                    steps: self.steps(&call.steps)?,
                }
            }
            "add" => crate::metrics::add_step(args, &a)?,
            "pickFrom" => self.pick(call, &a)?,
            "generate" => self.generate(call, &a)?,
            other => return Err(a.err(format_args!("unknown session verb `{other}`"))),
        };
        for var in crate::request::step_vars(&step) {
            self.uses.push((var, call.loc.clone()));
        }
        Ok(Some(step))
    }

    fn bind(&mut self, call: &Call, binding: Binding) -> Step {
        let var = call.var.clone().unwrap_or_default();
        self.bound.insert(var.clone());
        Step::Bind { var, binding }
    }

    fn pick(&mut self, call: &Call, a: &Args) -> Result<Step, ScriptError> {
        a.arity(&call.args, 1, 2)?;
        let handle = match &call.args[0] {
            JsVal::Str(text) => match parts(text).as_slice() {
                [Part::Handle(handle)] => *handle,
                _ => return Err(a.err("the first argument must be a data source")),
            },
            _ => return Err(a.err("the first argument must be a data source")),
        };
        let mut sequential = false;
        let none = JsVal::Undefined;
        let options = call.args.get(1).unwrap_or(&none);
        // `sequential` is the one option with a public description; others StormForger
        // may take are accepted with a warning naming them (see `warn_unknown_meaning`).
        if let JsVal::Obj(fields) = options {
            for (key, v) in fields.iter().filter(|(_, v)| *v != JsVal::Undefined) {
                match key.as_str() {
                    "sequential" => sequential = a.bool(v, key)?,
                    other => crate::request::warn_unknown_meaning(
                        &mut self.warnings,
                        a,
                        &format!("pickFrom option {other}"),
                    ),
                }
            }
        } else {
            a.options(options, &["sequential"])?;
        }
        let source = self.sources[handle];
        Ok(self.bind(call, Binding::PickRow { source, sequential }))
    }

    fn generate(&mut self, call: &Call, a: &Args) -> Result<Step, ScriptError> {
        a.arity(&call.args, 1, 2)?;
        let kind = a.string(&call.args[0], "generator")?;
        let none = JsVal::Undefined;
        let opts = call.args.get(1).unwrap_or(&none);
        let binding = match kind {
            "random_number" => {
                let fields = a.options(opts, &["range"])?;
                let range = fields
                    .first()
                    .map(|(_, v)| v)
                    .ok_or_else(|| a.err("random_number needs {range: [min, max]}"))?;
                let (min, max) = match range {
                    JsVal::Arr(items) if items.len() == 2 => {
                        let limit = 1i64 << 53;
                        (
                            a.integer(&items[0], "range[0]", -limit, limit)?,
                            a.integer(&items[1], "range[1]", -limit, limit)?,
                        )
                    }
                    other => {
                        return Err(a.err(format_args!(
                            "`range` must be an array [min, max], got {}",
                            other.kind()
                        )))
                    }
                };
                if min > max {
                    return Err(a.err(format_args!(
                        "`range`: min ({min}) is larger than max ({max})"
                    )));
                }
                Binding::RandomNumber { min, max }
            }
            "random_string" => {
                let fields = a.options(opts, &["length"])?;
                let length = fields
                    .first()
                    .map(|(_, v)| v)
                    .ok_or_else(|| a.err("random_string needs {length: n}"))?;
                Binding::RandomString {
                    length: a.integer(length, "length", 1, 1 << 20)? as usize,
                }
            }
            "uuid" => {
                a.options(opts, &[])?;
                Binding::Uuid
            }
            "jwt" => self.jwt(opts, a)?,
            "timestamp" => timestamp(opts, a)?,
            other => {
                return Err(a.err(format_args!(
                    "unknown generator `{other}` (known: random_number, random_string, uuid, jwt, timestamp)"
                )))
            }
        };
        Ok(self.bind(call, binding))
    }
}

/// `session.ds.generate("timestamp", {offset, format})` (barrage's own generator): the time
/// the session started plus `offset` seconds (negative: before; default 0), per client, as
/// `format` writes it — `"iso"` (UTC with milliseconds, the default), `"iso_seconds"`,
/// `"epoch"` (seconds) or `"epoch_ms"`; what `barrage replay --shift-timestamps` binds.
fn timestamp(opts: &JsVal, a: &Args) -> Result<Binding, ScriptError> {
    let mut offset_ms = 0;
    let mut format = (3, barrage_plan::TimeFormat::Utc);
    for (name, v) in a.options(opts, &["offset", "format"])? {
        if name == "offset" {
            let seconds = a.number(v, "offset")?;
            if seconds.abs() > barrage_plan::limits::MAX_DURATION.as_secs_f64() {
                return Err(a.err(format_args!(
                    "`offset` must be within ±{} s",
                    barrage_plan::limits::MAX_DURATION.as_secs()
                )));
            }
            offset_ms = (seconds * 1000.0).round() as i64;
        } else {
            let text = a.string(v, "format")?;
            format = match text {
                "iso" => (3, barrage_plan::TimeFormat::Utc),
                "iso_seconds" => (0, barrage_plan::TimeFormat::Utc),
                "epoch" => (0, barrage_plan::TimeFormat::EpochSeconds),
                "epoch_ms" => (0, barrage_plan::TimeFormat::EpochMillis),
                other => {
                    return Err(a.err(format_args!(
                        "`format` must be \"iso\", \"iso_seconds\", \"epoch\" or \"epoch_ms\", got \"{other}\""
                    )))
                }
            };
        }
    }
    let (fraction_digits, format) = format;
    Ok(Binding::ShiftedTime {
        offset_ms,
        fraction_digits,
        format,
    })
}

impl SessionBuilder<'_> {
    /// `session.ds.generate("jwt", {token, algorithm, key | keyFile, lifetime, claims})`: the
    /// token re-signed per client when the step runs (barrage's own generator).
    fn jwt(&self, opts: &JsVal, a: &Args) -> Result<Binding, ScriptError> {
        let keys = ["token", "algorithm", "key", "keyFile", "lifetime", "claims"];
        let mut token = None;
        let mut algorithm = None;
        let mut key = None;
        let mut lifetime = None;
        let mut claims = Vec::new();
        for (name, v) in a.options(opts, &keys)? {
            match name.as_str() {
                "token" => token = Some(crate::value::value(v, a, "token")?),
                "algorithm" => {
                    let text = a.string(v, "algorithm")?;
                    algorithm = Some(JwtAlgorithm::parse(text).ok_or_else(|| {
                        a.err(format_args!(
                            "`algorithm` must be one of {}, got \"{text}\"",
                            JwtAlgorithm::NAMES
                        ))
                    })?);
                }
                "key" => key = Some(a.string(v, "key")?.to_string()),
                "keyFile" => {
                    let file = a.string(v, "keyFile")?;
                    let bytes = crate::data::read_raw(file, self.base_dir).map_err(|e| a.err(e))?;
                    let text = String::from_utf8(bytes).map_err(|_| {
                        a.err(format_args!(
                            "`keyFile` {file} is not text (a secret or a PEM key)"
                        ))
                    })?;
                    key = Some(text);
                }
                "lifetime" => lifetime = Some(a.duration(v, "lifetime")?),
                _ => {
                    for (claim, value) in a.map(v, "claims")? {
                        claims.push((claim.clone(), claim_json(value, a, claim)?));
                    }
                }
            }
        }
        let algorithm = algorithm.ok_or_else(|| a.err("jwt needs an `algorithm`"))?;
        let mut key = key.ok_or_else(|| a.err("jwt needs a `key` or a `keyFile`"))?;
        if algorithm.is_hmac() {
            key.truncate(key.trim_end_matches(['\r', '\n']).len());
        }
        Ok(Binding::Jwt(Box::new(JwtResign {
            token: token.ok_or_else(|| a.err("jwt needs the `token` to re-sign"))?,
            algorithm,
            key,
            lifetime,
            claims,
        })))
    }
}

/// A claim's value as JSON text (fixed values only: claims are the same for every client).
fn claim_json(v: &JsVal, a: &Args, name: &str) -> Result<String, ScriptError> {
    fn json(v: &JsVal) -> Option<String> {
        Some(match v {
            JsVal::Null => "null".into(),
            JsVal::Bool(b) => b.to_string(),
            JsVal::Num(n) => crate::jsval::fmt_num(*n),
            JsVal::Str(s) if !crate::value::has_marker(s) => {
                serde_json::Value::from(s.as_str()).to_string()
            }
            JsVal::Arr(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(json)
                    .collect::<Option<Vec<_>>>()?
                    .join(",")
            ),
            JsVal::Obj(fields) => format!(
                "{{{}}}",
                fields
                    .iter()
                    .map(|(k, v)| Some(format!(
                        "{}:{}",
                        serde_json::Value::from(k.as_str()),
                        json(v)?
                    )))
                    .collect::<Option<Vec<_>>>()?
                    .join(",")
            ),
            _ => return None,
        })
    }
    json(v).ok_or_else(|| {
        a.err(format_args!(
            "claim `{name}` must be fixed JSON (text, number, boolean, null, array or object)"
        ))
    })
}

/// `value, op, expected`.
pub(crate) fn condition(args: &[JsVal], a: &Args) -> Result<Condition, ScriptError> {
    let op_text = a.string(&args[1], "op")?;
    let op = CompareOp::parse(op_text).ok_or_else(|| {
        a.err(format_args!(
            "unknown comparison operator `{op_text}` (known: ==, !=, <, <=, >, >=, =~, contains)"
        ))
    })?;
    Ok(Condition {
        value: value::value(&args[0], a, "value")?,
        op,
        expected: value::value(&args[2], a, "expected")?,
    })
}

/// A `times` count: a whole number, numeric text, or a per-client value.
fn count(js: &JsVal, a: &Args) -> Result<Value, ScriptError> {
    let number = |n: f64| -> Result<Value, ScriptError> {
        let n = a.integer(&JsVal::Num(n), "count", 0, u32::MAX.into())?;
        Ok(Value::Number { value: n as f64 })
    };
    match value::value(js, a, "count")? {
        Value::Number { value } => number(value),
        Value::Text { value } => match value.trim().parse::<f64>() {
            Ok(n) => number(n),
            Err(_) => Err(a.err(format_args!(
                "`count` must be a number or a per-client value, got the text {value:?}"
            ))),
        },
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(verb: &str, args: Vec<JsVal>) -> Call {
        Call {
            verb: verb.into(),
            args,
            loc: Location::file("t.js"),
            steps: vec![],
            var: Some("_gen1".into()),
        }
    }

    #[test]
    fn builds_waits_and_checks() {
        let mut tags = Tags::default();
        let mut b = SessionBuilder::new(&mut tags, &[], Path::new("."));
        let steps = b
            .steps(&[
                call("waitUniform", vec![JsVal::Num(1.0), JsVal::Num(2.0)]),
                call(
                    "check",
                    vec![
                        JsVal::Str("ok".into()),
                        JsVal::Str("\u{E000}s\u{E001}".into()),
                        JsVal::Str("<".into()),
                        JsVal::Num(400.0),
                    ],
                ),
            ])
            .unwrap();
        assert_eq!(steps[0], Step::Wait(Wait::Uniform { min: 1.0, max: 2.0 }));
        assert_eq!(
            steps[1],
            Step::Check(Check {
                name: "ok".into(),
                condition: Condition {
                    value: Value::LastStatus,
                    op: CompareOp::Lt,
                    expected: Value::Number { value: 400.0 }
                },
                fatal: false,
                keep_failed_values: false,
            })
        );
    }

    #[test]
    fn rejects_bad_waits_generators_and_counts() {
        let mut tags = Tags::default();
        let mut b = SessionBuilder::new(&mut tags, &[], Path::new("."));
        let err = |b: &mut SessionBuilder, c: Call| b.steps(&[c]).unwrap_err().to_string();
        assert!(err(&mut b, call("wait", vec![JsVal::Num(-1.0)])).contains("must not be negative"));
        assert!(err(&mut b, call("waitExp", vec![JsVal::Num(f64::INFINITY)])).contains("finite"));
        assert!(
            err(&mut b, call("generate", vec![JsVal::Str("dice".into())]))
                .contains("unknown generator `dice`")
        );
        let times = call("times", vec![JsVal::Num(1.5)]);
        assert!(err(&mut b, times).contains("whole number"));
        let uuid = call("generate", vec![JsVal::Str("uuid".into())]);
        assert_eq!(
            b.steps(&[uuid]).unwrap(),
            vec![Step::Bind {
                var: "_gen1".into(),
                binding: Binding::Uuid
            }]
        );
        assert!(b.bound.contains("_gen1"));
    }
}
