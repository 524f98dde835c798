//! StormForger's non-functional requirements file (`--nfr FILE.yml`, version "0.1") as plan
//! thresholds, so they are evaluated, reported and decide the exit code like any threshold.
//!
//! ```yaml
//! version: "0.1"
//! requirements:
//! - http.latency:
//!     select: { type: percentile, value: 99 }
//!     where: { tag: checkout, status: ["<", 500] }
//!     test: ["<=", 500]
//! - http.error_ratio: ["<", 0.01]
//! - checks: [">=", 0.99]
//! ```
//!
//! `http.latency` (ms) becomes `http_req_duration` (`where.status` its latency of the
//! responses with such a status, `http_req_duration{tag:checkout,status:<500}`), `http.error_ratio` the rate of
//! `http_req_failed`, `checks` the rate of passed checks, `test.duration` (seconds) and
//! `test.completed` barrage's run facts `run_duration` and `run_completed`; `enabled: false`
//! leaves a requirement out. What a local run has no figure for (the cloud cluster's utilisation) is
//! named in a warning.

use barrage_plan::{Aggregation, Threshold};
use serde_json::Value;
use std::path::Path;

/// The requirements of an NFR file, as thresholds, and its warnings (one line each).
#[derive(Debug, Default)]
pub struct Requirements {
    pub thresholds: Vec<Threshold>,
    pub warnings: Vec<String>,
}

/// Why an NFR file cannot be used: one line naming the file and the requirement.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct NfrError {
    pub file: String,
    pub message: String,
}

/// Reads and translates the NFR file at `path`.
pub fn load_nfr(path: &Path) -> Result<Requirements, NfrError> {
    let file = path.display().to_string();
    let fail = |message: String| NfrError {
        file: file.clone(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    parse_nfr(&text).map_err(fail)
}

/// Translates the text of an NFR file.
pub fn parse_nfr(text: &str) -> Result<Requirements, String> {
    let doc: Value = serde_norway::from_str(text)
        .map_err(|e| format!("not YAML: {}", crate::error::one_line(&e.to_string())))?;
    let Value::Object(top) = &doc else {
        return Err("expected a mapping with `version` and `requirements`".into());
    };
    if let Some(key) = top
        .keys()
        .find(|k| !["version", "requirements"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key `{key}` (known: version, requirements)"
        ));
    }
    match top.get("version") {
        Some(Value::String(v)) if v == "0.1" => {}
        Some(other) => {
            return Err(format!(
                "version {other} is not supported (barrage reads version \"0.1\")"
            ))
        }
        None => return Err("`version` is missing (write version: \"0.1\")".into()),
    }
    let items = match top.get("requirements") {
        Some(Value::Array(items)) => items,
        Some(Value::Null) | None => return Err("`requirements` is missing".into()),
        Some(_) => return Err("`requirements` must be a list".into()),
    };
    let mut out = Requirements::default();
    for (i, item) in items.iter().enumerate() {
        let (name, spec) = match item {
            Value::Object(map) if map.len() == 1 => map.iter().next().expect("one entry"),
            _ => {
                return Err(format!(
                    "requirement {}: expected one `name: spec` entry",
                    i + 1
                ))
            }
        };
        let at = format!("requirement {} (`{name}`)", i + 1);
        requirement(name, spec, &mut out).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(out)
}

/// `test: [op, value]` or the bare `[op, value]` form.
fn test_of(spec: &Value) -> Result<(String, f64), String> {
    let test = match spec {
        Value::Array(_) => spec,
        Value::Object(map) => map.get("test").ok_or("`test: [op, value]` is missing")?,
        _ => return Err("expected `[op, value]` or a mapping with `test`".into()),
    };
    let Value::Array(pair) = test else {
        return Err("`test` must be [op, value]".into());
    };
    match pair.as_slice() {
        [Value::String(op), value]
            if ["<", "<=", ">", ">=", "=", "==", "!="].contains(&op.as_str()) =>
        {
            let value = value
                .as_f64()
                .ok_or_else(|| format!("the value of `test` must be a number, got {value}"))?;
            let op = if op == "=" { "==" } else { op };
            Ok((op.to_string(), value))
        }
        _ => Err(format!(
            "`test` must be [op, number] with op one of <, <=, >, >=, ==, !=; got {test}"
        )),
    }
}

fn aggregation_of(select: Option<&Value>) -> Result<Aggregation, String> {
    let (kind, value) = match select {
        None => return Ok(Aggregation::Avg),
        Some(Value::String(kind)) => (kind.as_str(), None),
        Some(Value::Object(map)) => (
            map.get("type")
                .and_then(Value::as_str)
                .ok_or("`select` needs a `type`")?,
            map.get("value"),
        ),
        Some(other) => {
            return Err(format!(
                "`select` must be a type or {{type, value}}, got {other}"
            ))
        }
    };
    Ok(match kind {
        "average" | "avg" | "mean" => Aggregation::Avg,
        "minimum" | "min" => Aggregation::Min,
        "maximum" | "max" => Aggregation::Max,
        "median" => Aggregation::Med,
        "percentile" => {
            let p = value
                .and_then(Value::as_f64)
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or("a percentile `select` needs a `value` from 0 to 100")?;
            Aggregation::Percentile(p)
        }
        other => {
            return Err(format!(
            "unknown select type `{other}` (known: average, minimum, maximum, median, percentile)"
        ))
        }
    })
}

/// The filters of `where: {tag, status}`: the request tag, and the status filter as a
/// threshold key writes it (`<500`; `status: ["<", 500]` or `status: 200`).
fn where_of(spec: &Value) -> Result<(Option<String>, Option<String>), String> {
    let Some(filter) = spec.get("where") else {
        return Ok((None, None));
    };
    let Value::Object(filter) = filter else {
        return Err("`where` must be a mapping".into());
    };
    let (mut tag, mut status) = (None, None);
    for (key, value) in filter {
        match key.as_str() {
            "tag" => {
                tag = Some(
                    value
                        .as_str()
                        .ok_or("`where.tag` must be a tag name")?
                        .to_string(),
                )
            }
            "status" => {
                let text = match value {
                    Value::Array(pair) => match pair.as_slice() {
                        [Value::String(op), code] if code.is_u64() => format!("{op}{code}"),
                        _ => {
                            return Err(format!("`where.status` must be [op, status], got {value}"))
                        }
                    },
                    Value::Number(code) => code.to_string(),
                    _ => {
                        return Err(format!(
                            "`where.status` must be [op, status] or a status, got {value}"
                        ))
                    }
                };
                let filter = barrage_plan::StatusFilter::parse(&text)
                    .map_err(|e| format!("`where.status`: {e}"))?;
                status = Some(filter.label());
            }
            other => {
                return Err(format!(
                    "unknown filter `where.{other}` (known: tag, status)"
                ))
            }
        }
    }
    Ok((tag, status))
}

fn requirement(name: &str, spec: &Value, out: &mut Requirements) -> Result<(), String> {
    if spec.get("enabled") == Some(&Value::Bool(false)) {
        return Ok(());
    }
    if let Value::Object(map) = spec {
        let known = ["enabled", "select", "where", "test"];
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("unknown key `{key}` (known: {})", known.join(", ")));
        }
    }
    let (metric, aggregation, (tag, status)) = match name {
        "http.latency" => (
            "http_req_duration",
            aggregation_of(spec.get("select"))?,
            where_of(spec)?,
        ),
        "http.error_ratio" => match where_of(spec)? {
            (_, Some(_)) => {
                return Err(
                    "`where.status` filters latency; an error ratio by status has no meaning"
                        .into(),
                )
            }
            filters => ("http_req_failed", Aggregation::Rate, filters),
        },
        "checks" => ("checks", Aggregation::Rate, (None, None)),
        "test.completed" => {
            let wanted = match spec {
                Value::Bool(b) => *b,
                _ => return Err("expected true or false".into()),
            };
            let expression = format!("value=={}", u8::from(wanted));
            out.thresholds.push(Threshold::parse("run_completed", &expression)?);
            return Ok(());
        }
        "test.duration" => ("run_duration", Aggregation::Value, (None, None)),
        cloud if cloud.starts_with("test.cluster.") => {
            out.warnings.push(format!(
                "warning: NFR `{cloud}` measures StormForger's cloud cluster; a local run has no such figure, so it is not evaluated"
            ));
            return Ok(());
        }
        other => {
            return Err(format!(
                "unknown requirement `{other}` (known: http.latency, http.error_ratio, checks, test.completed, test.duration, test.cluster.*)"
            ))
        }
    };
    let (op, value) = test_of(spec)?;
    let key = match (&tag, &status) {
        (Some(tag), Some(status)) => format!("{metric}{{tag:{tag},status:{status}}}"),
        (Some(tag), None) => format!("{metric}{{tag:{tag}}}"),
        (None, Some(status)) => format!("{metric}{{status:{status}}}"),
        (None, None) => metric.to_string(),
    };
    let expression = format!("{}{op}{value}", aggregation.label());
    let threshold = Threshold::parse(&key, &expression)?;
    match out.thresholds.iter_mut().find(|t| t.key == key) {
        Some(existing) => existing.rules.extend(threshold.rules),
        None => out.thresholds.push(threshold),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_become_thresholds() {
        let nfr = parse_nfr(
            r#"version: "0.1"
requirements:
- test.cluster.utilization.cpu:
    select: average
    test: ["<=", 60]
- http.latency:
    enabled: false
    select: { type: percentile, value: 99 }
    test: ["<=", 9000]
- http.latency:
    select: { type: percentile, value: 95 }
    where: { tag: checkout }
    test: ["<", 5000]
- http.latency:
    select: { type: percentile, value: 95 }
    where: { status: ["<", 500], tag: checkout }
    test: ["<", 5000]
- http.latency: { where: { status: 200 }, select: maximum, test: ["<", 900] }
- http.latency: { select: median, test: ["<", 200] }
- http.error_ratio: ["<", 0.01]
- checks: { test: [">=", 0.99] }
- test.completed: true
- test.duration: [">", 600]
"#,
        )
        .unwrap();
        let rules: Vec<(String, String)> = nfr
            .thresholds
            .iter()
            .flat_map(|t| {
                t.rules
                    .iter()
                    .map(|r| (t.key.clone(), r.expression.clone()))
            })
            .collect();
        let expected = [
            ("http_req_duration{tag:checkout}", "p(95)<5000"),
            ("http_req_duration{tag:checkout,status:<500}", "p(95)<5000"),
            ("http_req_duration{status:==200}", "max<900"),
            ("http_req_duration", "med<200"),
            ("http_req_failed", "rate<0.01"),
            ("checks", "rate>=0.99"),
            ("run_completed", "value==1"),
            ("run_duration", "value>600"),
        ];
        assert_eq!(
            rules,
            expected
                .iter()
                .map(|(k, e)| (k.to_string(), e.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(nfr.warnings.len(), 1);
        assert!(nfr.warnings[0].contains("test.cluster.utilization.cpu"));
    }

    #[test]
    fn bad_files_are_named_by_requirement() {
        let cases = [
            ("version: \"0.2\"\nrequirements: []\n", "version \"0.2\" is not supported"),
            ("requirements: []\n", "`version` is missing"),
            (
                "version: \"0.1\"\nrequirements:\n- http.latency: {test: [\"~\", 1]}\n",
                "requirement 1 (`http.latency`): `test` must be [op, number]",
            ),
            (
                "version: \"0.1\"\nrequirements:\n- http.latency: {where: {status: [\"~\", 500]}, test: [\"<\", 1]}\n",
                "requirement 1 (`http.latency`): `where.status`: status filter",
            ),
            (
                "version: \"0.1\"\nrequirements:\n- http.error_ratio: {where: {status: 500}, test: [\"<\", 1]}\n",
                "requirement 1 (`http.error_ratio`): `where.status` filters latency",
            ),
            (
                "version: \"0.1\"\nrequirements:\n- http.speed: [\"<\", 1]\n",
                "requirement 1 (`http.speed`): unknown requirement",
            ),
            ("version: [\n", "not YAML"),
        ];
        for (text, expected) in cases {
            let e = parse_nfr(text).unwrap_err();
            assert!(e.starts_with(expected), "{text}\n got: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
