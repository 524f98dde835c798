//! `definition.setVirtualUsers({...})`: the k6-style workload models (constant and ramping
//! VUs, shared and per-VU iterations, constant and ramping arrival rates with a VU pool) as
//! plan workloads.

use crate::jsval::{Args, JsVal};
use crate::ScriptError;
use barrage_plan::{Workload, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION};
use std::time::Duration;

const KEYS: &[&str] = &[
    "vus",
    "duration",
    "stages",
    "startVUs",
    "iterations",
    "iterationsPerVU",
    "maxDuration",
    "gracefulStop",
    "gracefulRampDown",
    "rate",
    "startRate",
    "timeUnit",
    "preAllocatedVUs",
    "maxVUs",
];
/// The most iterations a definition may ask for.
const MAX_COUNT: i64 = barrage_plan::limits::MAX_COUNT as i64;
/// The most VUs a definition may ask for.
const MAX_VUS: i64 = barrage_plan::limits::MAX_CLIENTS as i64;

/// The forms, for error messages.
const FORMS: &str = "{vus, duration}, {stages: [{duration, target}]}, {vus, iterations}, {vus, iterationsPerVU}, {rate, timeUnit, duration, preAllocatedVUs, maxVUs} or {startRate, timeUnit, stages, preAllocatedVUs, maxVUs}";

/// Reads the argument of `setVirtualUsers` into a workload.
pub(crate) fn virtual_users(value: &JsVal, a: &Args) -> Result<Workload, ScriptError> {
    if !matches!(value, JsVal::Obj(_)) {
        return Err(a.err(format_args!(
            "expected an object, one of {FORMS}; got {}",
            value.kind()
        )));
    }
    let fields = a.options(value, KEYS)?;
    let has = |key: &str| fields.iter().any(|(k, _)| k == key);
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let count = |key: &str, min: i64| -> Result<Option<u64>, ScriptError> {
        let max = if key.starts_with("iterations") {
            MAX_COUNT
        } else {
            MAX_VUS
        };
        get(key)
            .map(|v| a.integer(v, key, min, max).map(|n| n as u64))
            .transpose()
    };
    let duration = |key: &str| -> Result<Option<Duration>, ScriptError> {
        get(key).map(|v| a.duration(v, key)).transpose()
    };
    let required = |key: &str, form: &str| a.err(format_args!("`{key}` is missing (form {form})"));
    let graceful_stop = duration("gracefulStop")?.unwrap_or(DEFAULT_GRACEFUL_STOP);
    let allow_only = |form: &str, allowed: &[&str]| -> Result<(), ScriptError> {
        match fields.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((key, _)) => Err(a.err(format_args!(
                "`{key}` does not go with the {form} form (its keys: {})",
                allowed.join(", ")
            ))),
            None => Ok(()),
        }
    };
    let positive = |d: Duration, key: &str| {
        if d.is_zero() {
            Err(a.err(format_args!("`{key}` must be greater than zero")))
        } else {
            Ok(d)
        }
    };

    if has("rate") || has("startRate") || has("preAllocatedVUs") || has("timeUnit") {
        let arrival = if has("stages") {
            "ramping arrival rate"
        } else {
            "constant arrival rate"
        };
        let time_unit = positive(
            duration("timeUnit")?.unwrap_or(Duration::from_secs(1)),
            "timeUnit",
        )?;
        let pre =
            count("preAllocatedVUs", 0)?.ok_or_else(|| required("preAllocatedVUs", arrival))?;
        let max = count("maxVUs", 1)?.unwrap_or(pre.max(1));
        if max < pre {
            return Err(a.err(format_args!(
                "`maxVUs` ({max}) must be at least `preAllocatedVUs` ({pre})"
            )));
        }
        let (start, stages, max) = if has("stages") {
            allow_only(
                arrival,
                &[
                    "startRate",
                    "timeUnit",
                    "stages",
                    "preAllocatedVUs",
                    "maxVUs",
                    "gracefulStop",
                ],
            )?;
            let start = match get("startRate") {
                Some(v) => a.rate(v, "startRate")?,
                None => 0.0,
            };
            let stages = stages(get("stages").expect("has stages"), a, |v, s| {
                s.rate(v, "target")
            })?;
            (start, stages, max)
        } else {
            allow_only(
                arrival,
                &[
                    "rate",
                    "timeUnit",
                    "duration",
                    "preAllocatedVUs",
                    "maxVUs",
                    "gracefulStop",
                ],
            )?;
            let rate = a.rate(
                get("rate").ok_or_else(|| required("rate", arrival))?,
                "rate",
            )?;
            if rate == 0.0 {
                return Err(a.err("`rate` must be greater than zero"));
            }
            let length = positive(
                duration("duration")?.ok_or_else(|| required("duration", arrival))?,
                "duration",
            )?;
            (rate, vec![(length, rate)], max.max(pre))
        };
        if max == 0 {
            return Err(a.err("`maxVUs` must be at least 1"));
        }
        return Workload::arrival_rate(start, time_unit, &stages, (pre, max), graceful_stop)
            .map_err(|e| a.err(e));
    }
    if has("stages") {
        allow_only(
            "ramping VUs",
            &["stages", "startVUs", "gracefulStop", "gracefulRampDown"],
        )?;
        let stages = stages(get("stages").expect("has stages"), a, |v, s| {
            s.integer(v, "target", 0, MAX_VUS).map(|n| n as u64)
        })?;
        let ramp = Workload::ramping_vus(
            // k6's default: one VU from the start.
            count("startVUs", 0)?.unwrap_or(1),
            &stages,
            graceful_stop,
            duration("gracefulRampDown")?.unwrap_or(DEFAULT_GRACEFUL_STOP),
        );
        if ramp.vus() == Some(0) {
            return Err(a.err("the stages never ask for a virtual user (every target is 0)"));
        }
        return Ok(ramp);
    }
    let vus = count("vus", 1)?;
    if has("iterations") {
        allow_only(
            "shared iterations",
            &["vus", "iterations", "maxDuration", "gracefulStop"],
        )?;
        return Ok(Workload::counted(
            vus.unwrap_or(1),
            count("iterations", 1)?.expect("has iterations"),
            false,
            positive(
                duration("maxDuration")?.unwrap_or(DEFAULT_MAX_DURATION),
                "maxDuration",
            )?,
            graceful_stop,
        ));
    }
    if has("iterationsPerVU") {
        allow_only(
            "per-VU iterations",
            &["vus", "iterationsPerVU", "maxDuration", "gracefulStop"],
        )?;
        return Ok(Workload::counted(
            vus.unwrap_or(1),
            count("iterationsPerVU", 1)?.expect("has iterationsPerVU"),
            true,
            positive(
                duration("maxDuration")?.unwrap_or(DEFAULT_MAX_DURATION),
                "maxDuration",
            )?,
            graceful_stop,
        ));
    }
    if has("duration") {
        allow_only("constant VUs", &["vus", "duration", "gracefulStop"])?;
        return Ok(Workload::constant_vus(
            vus.unwrap_or(1),
            positive(duration("duration")?.expect("has duration"), "duration")?,
            graceful_stop,
        ));
    }
    Err(a.err(format_args!(
        "cannot tell the workload model: use one of {FORMS}"
    )))
}

/// Reads `[{duration, target}, ...]`, each target by `target`.
fn stages<T>(
    value: &JsVal,
    a: &Args,
    target: impl Fn(&JsVal, &Args) -> Result<T, ScriptError>,
) -> Result<Vec<(Duration, T)>, ScriptError> {
    let JsVal::Arr(items) = value else {
        return Err(a.err(format_args!(
            "`stages` must be an array of {{duration, target}}, got {}",
            value.kind()
        )));
    };
    if items.is_empty() {
        return Err(a.err("`stages` needs at least one stage"));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let what = format!("{} stage {}", a.what, i + 1);
        let s = Args {
            what: &what,
            loc: a.loc,
        };
        if !matches!(item, JsVal::Obj(_)) {
            return Err(s.err(format_args!(
                "expected an object {{duration, target}}, got {}",
                item.kind()
            )));
        }
        s.options(item, &["duration", "target"])?;
        let duration = match item.get("duration") {
            v if v.is_missing() => return Err(s.err("`duration` is missing")),
            v => s.duration(v, "duration")?,
        };
        if duration.is_zero() {
            return Err(s.err("`duration` must be greater than zero"));
        }
        let value = match item.get("target") {
            v if v.is_missing() => return Err(s.err("`target` is missing")),
            v => target(v, &s)?,
        };
        out.push((duration, value));
    }
    Ok(out)
}
