//! Custom metrics and thresholds in the DSL: `definition.metric(name, kind)`,
//! `definition.setThresholds({...})` (k6's syntax) and `session.add(name, value)`, with their
//! plan-time checks (unknown metrics, tags and aggregations are errors at the call).

use crate::error::Location;
use crate::js::{Call, Record};
use crate::jsval::{Args, JsVal};
use crate::value::{self, parts, Part};
use crate::ScriptError;
use barrage_plan::{
    is_metric_name, parse_expression, parse_key_filters, threshold_problem, MetricDecl, MetricKind,
    MetricSample, MetricsSpec, ResponseTiming, SampleInput, Step, Threshold, ThresholdRule, Value,
    BUILTIN_METRICS,
};

/// What the definition declared, with where, for errors that point at the call.
#[derive(Debug, Default)]
pub(crate) struct MetricDefs {
    custom: Vec<(MetricDecl, Location)>,
    thresholds: Vec<(Threshold, Location)>,
}

impl MetricDefs {
    /// `definition.metric(name, kind)`.
    pub(crate) fn declare(&mut self, call: &Call, a: &Args) -> Result<(), ScriptError> {
        a.arity(&call.args, 2, 2)?;
        let name = a.string(&call.args[0], "name")?;
        if !is_metric_name(name) {
            return Err(a.err(format_args!(
                "`{name}` is not a metric name (letters, digits and _, not starting with a digit)"
            )));
        }
        if BUILTIN_METRICS.iter().any(|(n, _)| *n == name) {
            return Err(a.err(format_args!("`{name}` is a built-in metric")));
        }
        if let Some((_, first)) = self.custom.iter().find(|(d, _)| d.name == name) {
            return Err(a.err(format_args!("`{name}` was already declared at {first}")));
        }
        let kind_text = a.string(&call.args[1], "kind")?;
        let kind = MetricKind::parse(kind_text).ok_or_else(|| {
            a.err(format_args!(
                "unknown metric kind `{kind_text}` (known: counter, gauge, rate, trend)"
            ))
        })?;
        self.custom.push((
            MetricDecl {
                name: name.to_string(),
                kind,
            },
            call.loc.clone(),
        ));
        Ok(())
    }

    /// `definition.setThresholds({metric: expression | [expression | {threshold,
    /// abortOnFail, delayAbortEval}]})`.
    pub(crate) fn set_thresholds(&mut self, call: &Call, a: &Args) -> Result<(), ScriptError> {
        a.arity(&call.args, 1, 1)?;
        if let Some((_, first)) = self.thresholds.first() {
            return Err(a.err(format_args!("the thresholds were already set at {first}")));
        }
        for (key, spec) in a.map(&call.args[0], "thresholds")? {
            let (metric, tag, status) = parse_key_filters(key).map_err(|e| a.err(e))?;
            let items: Vec<&JsVal> = match spec {
                JsVal::Arr(items) => items.iter().collect(),
                one => vec![one],
            };
            let rules = items
                .into_iter()
                .map(|item| rule(item, key, a))
                .collect::<Result<Vec<_>, _>>()?;
            self.thresholds.push((
                Threshold {
                    key: key.clone(),
                    metric,
                    tag,
                    status,
                    rules,
                },
                call.loc.clone(),
            ));
        }
        Ok(())
    }

    /// The plan's metrics section, once every request tag is known; checks every
    /// `session.add` names a declared metric.
    pub(crate) fn finish(
        self,
        record: &Record,
        tags: &[String],
    ) -> Result<MetricsSpec, ScriptError> {
        let custom: Vec<MetricDecl> = self.custom.into_iter().map(|(d, _)| d).collect();
        let mut adds = Vec::new();
        for call in &record.defs {
            collect_adds(&call.steps, &mut adds);
        }
        for add in adds {
            let name = match add.args.first() {
                Some(JsVal::Str(name)) => name,
                _ => continue,
            };
            if !custom.iter().any(|d| d.name == *name) {
                return Err(ScriptError::dsl(
                    &add.loc,
                    format!(
                        "`session.add`: `{name}` is not a custom metric; declare it with definition.metric(\"{name}\", \"counter\" | \"gauge\" | \"rate\" | \"trend\")"
                    ),
                ));
            }
        }
        let mut thresholds = Vec::new();
        for (threshold, loc) in self.thresholds {
            if let Some(problem) = threshold_problem(&threshold, tags, &custom) {
                return Err(ScriptError::dsl(
                    &loc,
                    format!("`definition.setThresholds`: {problem}"),
                ));
            }
            thresholds.push(threshold);
        }
        Ok(MetricsSpec { custom, thresholds })
    }
}

fn collect_adds<'c>(calls: &'c [Call], out: &mut Vec<&'c Call>) {
    for call in calls {
        if call.verb == "add" {
            out.push(call);
        }
        collect_adds(&call.steps, out);
    }
}

fn rule(item: &JsVal, key: &str, a: &Args) -> Result<ThresholdRule, ScriptError> {
    let parse =
        |text: &str| parse_expression(text).map_err(|e| a.err(format_args!("`{key}`: {e}")));
    match item {
        JsVal::Str(text) => {
            let (aggregation, op, value) = parse(text)?;
            Ok(ThresholdRule {
                expression: text.trim().to_string(),
                aggregation,
                op,
                value,
                abort_on_fail: false,
                delay_abort_eval: None,
            })
        }
        JsVal::Obj(_) => {
            let mut out = None;
            let mut abort_on_fail = false;
            let mut delay = None;
            for (field, v) in a.options(item, &["threshold", "abortOnFail", "delayAbortEval"])? {
                match field.as_str() {
                    "threshold" => {
                        let text = a.string(v, "threshold")?;
                        out = Some((text.trim().to_string(), parse(text)?));
                    }
                    "abortOnFail" => abort_on_fail = a.bool(v, field)?,
                    _ => delay = Some(a.duration(v, field)?),
                }
            }
            let Some((expression, (aggregation, op, value))) = out else {
                return Err(a.err(format_args!(
                    "`{key}`: the long form needs `threshold` (like {{threshold: \"p(95)<200\", abortOnFail: true}})"
                )));
            };
            Ok(ThresholdRule {
                expression,
                aggregation,
                op,
                value,
                abort_on_fail,
                delay_abort_eval: delay,
            })
        }
        other => Err(a.err(format_args!(
            "`{key}`: a threshold is an expression like \"p(95)<200\", an array of them, or {{threshold, abortOnFail, delayAbortEval}}; got {}",
            other.kind()
        ))),
    }
}

/// `session.add(name, value)` or `session.add(name, value, op, expected)`.
pub(crate) fn add_step(args: &[JsVal], a: &Args) -> Result<Step, ScriptError> {
    a.arity(args, 2, 4)?;
    if args.len() == 3 {
        return Err(a.err(
            "give a value, or a condition as value, operator, expected (like session.check)",
        ));
    }
    let metric = a.string(&args[0], "name")?.to_string();
    let input = if args.len() == 4 {
        SampleInput::Condition {
            condition: crate::steps::condition(&args[1..], a)?,
        }
    } else {
        match &args[1] {
            JsVal::Bool(b) => SampleInput::Value {
                value: Value::Number {
                    value: f64::from(u8::from(*b)),
                },
            },
            JsVal::Str(text) => match parts(text).as_slice() {
                [Part::Timing(name)] => SampleInput::LastResponse {
                    timing: ResponseTiming::parse(name).ok_or_else(|| {
                        a.err(format_args!(
                            "`session.lastResponse(\"{name}\")`: unknown timing (known: {})",
                            ResponseTiming::NAMES
                        ))
                    })?,
                },
                _ => SampleInput::Value {
                    value: value::value(&args[1], a, "value")?,
                },
            },
            other => SampleInput::Value {
                value: value::value(other, a, "value")?,
            },
        }
    };
    Ok(Step::Add(MetricSample { metric, input }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{Aggregation, CompareOp};

    fn call(verb: &str, args: Vec<JsVal>) -> Call {
        Call {
            verb: verb.into(),
            args,
            loc: Location::file("t.js"),
            steps: vec![],
            var: None,
        }
    }

    fn args(call: &Call) -> Args<'_> {
        Args {
            what: "`definition.x`",
            loc: &call.loc,
        }
    }

    #[test]
    fn thresholds_take_strings_arrays_and_the_long_form() {
        let c = call(
            "setThresholds",
            vec![JsVal::Obj(vec![
                ("checks".into(), JsVal::Str("rate>0.9".into())),
                (
                    "http_req_duration{tag:a}".into(),
                    JsVal::Arr(vec![
                        JsVal::Str("p(95)<200".into()),
                        JsVal::Obj(vec![
                            ("threshold".into(), JsVal::Str("max<1000".into())),
                            ("abortOnFail".into(), JsVal::Bool(true)),
                            ("delayAbortEval".into(), JsVal::Str("2s".into())),
                        ]),
                    ]),
                ),
            ])],
        );
        let mut defs = MetricDefs::default();
        defs.set_thresholds(&c, &args(&c)).unwrap();
        let spec = defs.finish(&Record::default(), &["a".into()]).unwrap();
        assert_eq!(spec.thresholds.len(), 2);
        let duration = &spec.thresholds[1];
        assert_eq!(duration.tag.as_deref(), Some("a"));
        assert_eq!(duration.rules[0].aggregation, Aggregation::Percentile(95.0));
        assert!(duration.rules[1].abort_on_fail);
        assert_eq!(
            duration.rules[1].delay_abort_eval,
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(spec.thresholds[0].rules[0].op, CompareOp::Gt);
    }

    #[test]
    fn add_reads_values_timings_and_conditions() {
        let c = call("add", vec![]);
        let a = args(&c);
        let timing = add_step(
            &[
                JsVal::Str("t".into()),
                JsVal::Str("\u{E000}t:waiting\u{E001}".into()),
            ],
            &a,
        )
        .unwrap();
        assert_eq!(
            timing,
            Step::Add(MetricSample {
                metric: "t".into(),
                input: SampleInput::LastResponse {
                    timing: ResponseTiming::Waiting
                }
            })
        );
        let bad = add_step(
            &[
                JsVal::Str("t".into()),
                JsVal::Str("\u{E000}t:latency\u{E001}".into()),
            ],
            &a,
        );
        assert!(bad.unwrap_err().to_string().contains("unknown timing"));
        let cond = add_step(
            &[
                JsVal::Str("e".into()),
                JsVal::Str("\u{E000}s\u{E001}".into()),
                JsVal::Str(">=".into()),
                JsVal::Num(400.0),
            ],
            &a,
        )
        .unwrap();
        assert!(matches!(
            cond,
            Step::Add(MetricSample {
                input: SampleInput::Condition { .. },
                ..
            })
        ));
        let yes = add_step(&[JsVal::Str("e".into()), JsVal::Bool(true)], &a).unwrap();
        assert!(matches!(
            yes,
            Step::Add(MetricSample { input: SampleInput::Value { value: Value::Number { value } }, .. }) if value == 1.0
        ));
    }
}
