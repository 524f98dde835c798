//! k6 `options` compiled into a barrage plan — the one file that builds plan data (workload,
//! thresholds, target), so the front end follows the plan's types in one place.
//!
//! The shortcuts map as in k6: `stages` → `ramping-vus` (starting at `vus`, default 1);
//! `duration` → `constant-vus`; `iterations` → `shared-iterations` (bounded by `duration`
//! when given, else 10 minutes); nothing → one VU, one iteration. One entry in `scenarios`
//! maps to its executor.

use crate::request_tags::RequestTags;
use crate::K6Error;
use barrage_plan::{
    limits, parse_duration, MetricDecl, MetricsSpec, Plan, Session, Target, TestOptions, Threshold,
    ThresholdRule, Workload, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION, PLAN_FORMAT_VERSION,
};
use serde_json::{Map, Value};
use std::time::Duration;

/// k6's `maxRedirects` default.
pub const DEFAULT_MAX_REDIRECTS: u32 = 10;

/// The request tag every scripted request is recorded under.
pub const REQUEST_TAG: &str = "k6";

/// Builds the plan of a k6 script named `name` whose requests go to `target` (the first
/// absolute URL of the script; requests elsewhere open their own connections).
pub(crate) fn plan(
    name: &str,
    file: &str,
    target: Target,
    options: &Value,
    metrics: Vec<MetricDecl>,
) -> Result<Plan, K6Error> {
    let empty = Map::new();
    let options = match options {
        Value::Object(map) => map,
        Value::Null => &empty,
        _ => return Err(bad(file, "`options` must be an object")),
    };
    let workload = workload(file, options)?;
    let mut request_tags = RequestTags::default();
    let thresholds = thresholds(file, options.get("thresholds"), &mut request_tags)?;
    // Each VU keeps a cookie jar (fresh each iteration) and follows redirects, as in k6.
    let mut test_options = TestOptions {
        scripted_body: Some(file.to_string()),
        cookies: true,
        max_redirects: DEFAULT_MAX_REDIRECTS,
        ..TestOptions::default()
    };
    if let Some(max) = options.get("maxRedirects") {
        test_options.max_redirects = count(file, "maxRedirects", max)? as u32;
    }
    let plan = Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: name.to_string(),
        target,
        options: test_options,
        workload,
        tags: request_tags.plan_tags(),
        sessions: vec![Session {
            name: "default".into(),
            weight: 1,
            steps: vec![],
        }],
        data_sources: vec![],
        metrics: MetricsSpec {
            custom: metrics,
            thresholds,
        },
    };
    plan.validate()
        .map_err(|e| K6Error::Options(format!("{file}: {e}")))?;
    Ok(plan)
}

/// A script with nothing to iterate: an init error, as in k6.
fn no_default(file: &str) -> K6Error {
    K6Error::Init(format!(
        "{file}: the script exports no default function (`export default function () {{ ... }}`)"
    ))
}

/// The function the (single) scenario's VUs run (`exec`, default `default`) and its `env`
/// (over `__ENV`), checked against what the script exports.
pub(crate) fn scenario_exec_and_env(
    file: &str,
    options: &Value,
    exported: &[String],
) -> Result<(String, Vec<(String, String)>), K6Error> {
    let has_default = exported.iter().any(|f| f == "default");
    let Some((name, scenario)) = options["scenarios"]
        .as_object()
        .and_then(|m| m.iter().next())
    else {
        if !has_default {
            return Err(no_default(file));
        }
        return Ok(("default".to_string(), Vec::new()));
    };
    let exec = match &scenario["exec"] {
        Value::Null => "default".to_string(),
        Value::String(function) => function.clone(),
        other => {
            return Err(bad(
                file,
                format_args!("scenario `{name}`: `exec` must name a function, not {other}"),
            ))
        }
    };
    if exec == "default" && !has_default {
        return Err(no_default(file));
    }
    if !exported.contains(&exec) {
        return Err(bad(
            file,
            format_args!("scenario `{name}`: the script exports no function `{exec}` (`exec`)"),
        ));
    }
    let env = match &scenario["env"] {
        Value::Null => Vec::new(),
        Value::Object(vars) => vars
            .iter()
            .map(|(key, value)| {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (key.clone(), text)
            })
            .collect(),
        other => {
            return Err(bad(
                file,
                format_args!("scenario `{name}`: `env` must be an object, not {other}"),
            ))
        }
    };
    Ok((exec, env))
}

/// The request tag the plan's thresholds filter on and its values (see `request_tags.rs`).
pub(crate) fn request_tags(plan: &Plan) -> RequestTags {
    let values: Vec<String> = plan.tags.iter().skip(1).cloned().collect();
    let key = plan
        .metrics
        .thresholds
        .iter()
        .filter(|t| t.tag.is_some())
        .find_map(|t| {
            let open = t.key.find('{')?;
            let (name, _) = t.key[open + 1..].split_once(':')?;
            (name.trim() != "tag").then(|| name.trim().to_string())
        });
    RequestTags {
        key: key.or_else(|| (!values.is_empty()).then(|| "tag".to_string())),
        values,
    }
}

fn bad(file: &str, problem: impl std::fmt::Display) -> K6Error {
    K6Error::Options(format!("{file}: {problem}"))
}

/// A whole number within its key's range: iterations up to `limits::MAX_COUNT`, rates up to
/// `limits::MAX_RATE`, VUs (and VU targets) up to `limits::MAX_CLIENTS`.
fn count(file: &str, key: &str, value: &Value) -> Result<u64, K6Error> {
    let max = match key {
        _ if key.starts_with("iterations") => limits::MAX_COUNT,
        "rate" | "startRate" => limits::MAX_RATE as u64,
        _ => limits::MAX_CLIENTS,
    };
    value
        .as_f64()
        .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= max as f64)
        .map(|n| n as u64)
        .ok_or_else(|| {
            bad(
                file,
                format_args!("`{key}` must be a whole number from 0 to {max}, got {value}"),
            )
        })
}

/// A k6 duration: a string like `"1m30s"`, or a number of milliseconds.
fn duration(file: &str, key: &str, value: &Value) -> Result<Duration, K6Error> {
    match value {
        Value::Number(n) => {
            let ms = n.as_f64().unwrap_or(f64::NAN);
            limits::duration_from_secs(ms / 1000.0).map_err(|_| {
                bad(
                    file,
                    format_args!("`{key}`: {value} ms is not a duration from 0 to 365d"),
                )
            })
        }
        Value::String(text) => parse_duration(text)
            .map_err(|e| e.to_string())
            .and_then(limits::check_duration)
            .map_err(|e| bad(file, format_args!("`{key}`: `{text}`: {e}"))),
        _ => Err(bad(
            file,
            format_args!("`{key}`: {value} is not a duration"),
        )),
    }
}

fn opt_duration(
    file: &str,
    map: &Map<String, Value>,
    key: &str,
    default: Duration,
) -> Result<Duration, K6Error> {
    map.get(key).map_or(Ok(default), |v| duration(file, key, v))
}

fn vu_stages(file: &str, value: &Value) -> Result<Vec<(Duration, u64)>, K6Error> {
    let Value::Array(items) = value else {
        return Err(bad(file, "`stages` must be an array of {duration, target}"));
    };
    items
        .iter()
        .map(|stage| {
            Ok((
                duration(file, "stages[].duration", &stage["duration"])?,
                count(file, "stages[].target", &stage["target"])?,
            ))
        })
        .collect()
}

/// The scenario `options` run, as k6 names it (`k6/execution`'s `scenario.name` and
/// `scenario.executor`): the one entry of `scenarios`, else `default` with the executor the
/// shortcuts map to.
pub(crate) fn scenario(options: &Value) -> (String, String) {
    if let Some((name, s)) = options["scenarios"]
        .as_object()
        .and_then(|m| m.iter().next())
    {
        let executor = s["executor"].as_str().unwrap_or_default();
        return (name.clone(), executor.to_string());
    }
    let executor = if options.get("stages").is_some() {
        "ramping-vus"
    } else if options.get("duration").is_some() && options.get("iterations").is_none() {
        "constant-vus"
    } else {
        "shared-iterations"
    };
    ("default".to_string(), executor.to_string())
}

fn workload(file: &str, options: &Map<String, Value>) -> Result<Workload, K6Error> {
    if let Some(scenarios) = options.get("scenarios") {
        let Some(map) = scenarios.as_object().filter(|m| m.len() == 1) else {
            return Err(bad(
                file,
                "`scenarios`: exactly one scenario is supported for now (several run one after another or side by side in k6)",
            ));
        };
        let (name, scenario) = map.iter().next().expect("one entry");
        return scenario_workload(file, name, scenario);
    }
    let vus = options
        .get("vus")
        .map(|v| count(file, "vus", v))
        .transpose()?;
    let graceful_stop = DEFAULT_GRACEFUL_STOP;
    if let Some(stages) = options.get("stages") {
        return Ok(Workload::ramping_vus(
            vus.unwrap_or(1),
            &vu_stages(file, stages)?,
            graceful_stop,
            DEFAULT_GRACEFUL_STOP,
        ));
    }
    let run_for = options
        .get("duration")
        .map(|v| duration(file, "duration", v))
        .transpose()?;
    let iterations = options
        .get("iterations")
        .map(|v| count(file, "iterations", v))
        .transpose()?;
    Ok(match (run_for, iterations) {
        (Some(duration), None) => Workload::constant_vus(vus.unwrap_or(1), duration, graceful_stop),
        (run_for, iterations) => Workload::counted(
            vus.unwrap_or(1),
            iterations.unwrap_or(1),
            false,
            run_for.unwrap_or(DEFAULT_MAX_DURATION),
            graceful_stop,
        ),
    })
}

fn scenario_workload(file: &str, name: &str, s: &Value) -> Result<Workload, K6Error> {
    let Some(map) = s.as_object() else {
        return Err(bad(
            file,
            format_args!("scenario `{name}` must be an object"),
        ));
    };
    // `exec` and `env` are read by `scenario_exec_and_env`.
    for unsupported in ["startTime", "tags"] {
        if map.contains_key(unsupported) {
            return Err(bad(
                file,
                format_args!("scenario `{name}`: `{unsupported}` is not supported yet"),
            ));
        }
    }
    let field = |key: &str| map.get(key);
    let num = |key: &str, default: u64| field(key).map_or(Ok(default), |v| count(file, key, v));
    let graceful_stop = opt_duration(file, map, "gracefulStop", DEFAULT_GRACEFUL_STOP)?;
    let executor = field("executor").and_then(Value::as_str).unwrap_or("");
    Ok(match executor {
        "constant-vus" => Workload::constant_vus(
            num("vus", 1)?,
            duration(file, "duration", field("duration").unwrap_or(&Value::Null))?,
            graceful_stop,
        ),
        "ramping-vus" => Workload::ramping_vus(
            num("startVUs", 1)?,
            &vu_stages(file, field("stages").unwrap_or(&Value::Null))?,
            graceful_stop,
            opt_duration(file, map, "gracefulRampDown", DEFAULT_GRACEFUL_STOP)?,
        ),
        "shared-iterations" | "per-vu-iterations" => Workload::counted(
            num("vus", 1)?,
            num("iterations", 1)?,
            executor == "per-vu-iterations",
            opt_duration(file, map, "maxDuration", DEFAULT_MAX_DURATION)?,
            graceful_stop,
        ),
        "constant-arrival-rate" | "ramping-arrival-rate" => {
            let time_unit = opt_duration(file, map, "timeUnit", Duration::from_secs(1))?;
            let pre_allocated_vus = num("preAllocatedVUs", 1)?;
            let (start_rate, stages) = if executor == "constant-arrival-rate" {
                let rate = num("rate", 1)? as f64;
                let run_for =
                    duration(file, "duration", field("duration").unwrap_or(&Value::Null))?;
                (rate, vec![(run_for, rate)])
            } else {
                let Some(Value::Array(items)) = field("stages") else {
                    return Err(bad(
                        file,
                        format_args!("scenario `{name}`: `stages` missing"),
                    ));
                };
                let stages = items
                    .iter()
                    .map(|st| {
                        Ok((
                            duration(file, "stages[].duration", &st["duration"])?,
                            count(file, "stages[].target", &st["target"])? as f64,
                        ))
                    })
                    .collect::<Result<Vec<_>, K6Error>>()?;
                (num("startRate", 0)? as f64, stages)
            };
            Workload::arrival_rate(
                start_rate,
                time_unit,
                &stages,
                (pre_allocated_vus, num("maxVUs", pre_allocated_vus)?),
                graceful_stop,
            )
            .map_err(|e| bad(file, format_args!("scenario `{name}`: {e}")))?
        }
        other => {
            return Err(bad(
                file,
                format_args!("scenario `{name}`: unknown executor `{other}`"),
            ))
        }
    })
}

/// `thresholds: {metric: expr | [expr | {threshold, abortOnFail, delayAbortEval}]}`.
fn thresholds(
    file: &str,
    value: Option<&Value>,
    request_tags: &mut RequestTags,
) -> Result<Vec<Threshold>, K6Error> {
    let Some(value) = value else {
        return Ok(vec![]);
    };
    let Some(map) = value.as_object() else {
        return Err(bad(file, "`thresholds` must be an object"));
    };
    let mut out = Vec::new();
    for (key, spec) in map {
        let items: Vec<&Value> = match spec {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        let mut threshold: Option<Threshold> = None;
        for item in items {
            let (expression, abort_on_fail, delay) = match item {
                Value::String(text) => (text.as_str(), false, None),
                Value::Object(rule) => (
                    rule.get("threshold")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            bad(
                                file,
                                format_args!("threshold `{key}`: the long form needs `threshold`"),
                            )
                        })?,
                    rule.get("abortOnFail")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    rule.get("delayAbortEval")
                        .map(|d| duration(file, "delayAbortEval", d))
                        .transpose()?,
                ),
                other => {
                    return Err(bad(
                        file,
                        format_args!("threshold `{key}`: {other} is not a threshold expression"),
                    ))
                }
            };
            let rewritten = request_tags.rewrite(file, key)?;
            let mut parsed = Threshold::parse(&rewritten, expression)
                .map_err(|e| bad(file, format_args!("threshold `{key}`: {e}")))?;
            // Shown and reported as written.
            parsed.key.clone_from(key);
            let rule = ThresholdRule {
                abort_on_fail,
                delay_abort_eval: delay,
                ..parsed.rules[0].clone()
            };
            match &mut threshold {
                Some(t) => t.rules.push(rule),
                None => {
                    threshold = Some(Threshold {
                        rules: vec![rule],
                        ..parsed
                    })
                }
            }
        }
        out.extend(threshold);
    }
    Ok(out)
}
