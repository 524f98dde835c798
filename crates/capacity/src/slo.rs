//! The service-level objective of a capacity search (`--slo "p(99)<200ms,http_req_failed<1%"`):
//! its parser, and its verdict on one step's measurement window.

use barrage_metrics::LatencyHistogram;
use barrage_plan::{compare, Aggregation, CompareOp};
use serde::{Deserialize, Serialize};

/// One objective: a latency statistic of `http_req_duration`, or the failed-request rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "metric", rename_all = "snake_case")]
pub enum Objective {
    /// `p(99)<200ms`, `avg<50ms`, `http_req_duration:med<=20ms`: microseconds.
    HttpReqDuration {
        stat: Aggregation,
        op: CompareOp,
        limit_us: f64,
    },
    /// `http_req_failed<1%`: the share of requests that failed (errors, status ≥ 400), 0–1.
    HttpReqFailed { op: CompareOp, limit: f64 },
}

/// The objectives, all of which a step must meet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// As the user wrote it.
    pub text: String,
    pub objectives: Vec<Objective>,
}

/// What a step's window offers the objectives.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub latency: &'a LatencyHistogram,
    pub requests: u64,
    pub failed: u64,
}

impl Objective {
    /// The figure observed, in the unit of the limit (µs or a 0–1 share).
    pub fn observed(&self, seen: &Observed<'_>) -> f64 {
        match self {
            Objective::HttpReqDuration { stat, .. } => {
                let h = seen.latency;
                if h.is_empty() {
                    return f64::NAN;
                }
                match stat {
                    Aggregation::Avg => h.mean_micros(),
                    Aggregation::Min => h.min_micros() as f64,
                    Aggregation::Max => h.max_micros() as f64,
                    Aggregation::Med => h.percentile_micros(50.0) as f64,
                    Aggregation::Percentile(p) => h.percentile_micros(*p) as f64,
                    _ => f64::NAN,
                }
            }
            Objective::HttpReqFailed { .. } => {
                if seen.requests == 0 {
                    f64::NAN
                } else {
                    seen.failed as f64 / seen.requests as f64
                }
            }
        }
    }

    /// Whether the window meets it; a window with nothing to judge (no responses) does not.
    pub fn met(&self, seen: &Observed<'_>) -> bool {
        let value = self.observed(seen);
        !value.is_nan()
            && match self {
                Objective::HttpReqDuration { op, limit_us, .. } => compare(value, *op, *limit_us),
                Objective::HttpReqFailed { op, limit } => compare(value, *op, *limit),
            }
    }

    /// `p(99)<200ms` again, normalised.
    pub fn label(&self) -> String {
        match self {
            Objective::HttpReqDuration { stat, op, limit_us } => {
                format!("{}{}{}", stat.label(), op_text(*op), ms_text(*limit_us))
            }
            Objective::HttpReqFailed { op, limit } => {
                format!("http_req_failed{}{}%", op_text(*op), limit * 100.0)
            }
        }
    }

    /// The observed figure as text, in the objective's unit.
    pub fn observed_text(&self, seen: &Observed<'_>) -> String {
        let value = self.observed(seen);
        if value.is_nan() {
            return "n/a".into();
        }
        match self {
            Objective::HttpReqDuration { .. } => ms_text(value),
            Objective::HttpReqFailed { .. } => format!("{:.2}%", value * 100.0),
        }
    }

    /// The latency limit, µs, when the objective is one.
    pub fn latency_limit_us(&self) -> Option<f64> {
        match self {
            Objective::HttpReqDuration { limit_us, .. } => Some(*limit_us),
            Objective::HttpReqFailed { .. } => None,
        }
    }
}

fn op_text(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Lt => "<",
        CompareOp::Le => "<=",
        CompareOp::Gt => ">",
        CompareOp::Ge => ">=",
        CompareOp::Eq => "==",
        _ => "!=",
    }
}

/// Microseconds as milliseconds, as people write them.
pub fn ms_text(us: f64) -> String {
    let ms = us / 1e3;
    if ms >= 100.0 {
        format!("{ms:.0}ms")
    } else if ms >= 1.0 {
        format!("{ms:.2}ms")
    } else {
        format!("{ms:.3}ms")
    }
}

impl Slo {
    /// Parses `p(99)<200ms,http_req_failed<1%`. Latency values take `us`, `ms` (the default,
    /// as k6) or `s`; the failed rate a share (`0.01`) or a percentage (`1%`).
    pub fn parse(text: &str) -> Result<Slo, String> {
        let objectives = text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(parse_objective)
            .collect::<Result<Vec<_>, _>>()?;
        if objectives.is_empty() {
            return Err("no objective given, e.g. \"p(99)<200ms,http_req_failed<1%\"".into());
        }
        Ok(Slo {
            text: text.trim().to_string(),
            objectives,
        })
    }

    /// The labels of the objectives the window breaks (empty: the SLO is met).
    pub fn breaches(&self, seen: &Observed<'_>) -> Vec<String> {
        self.objectives
            .iter()
            .filter(|o| !o.met(seen))
            .map(|o| format!("{} (observed {})", o.label(), o.observed_text(seen)))
            .collect()
    }

    /// The tightest latency limit, µs (what generator lag is weighed against).
    pub fn latency_limit_us(&self) -> Option<f64> {
        self.objectives
            .iter()
            .filter_map(Objective::latency_limit_us)
            .reduce(f64::min)
    }
}

fn parse_objective(item: &str) -> Result<Objective, String> {
    let at = item.find(['<', '>', '=', '!']).ok_or_else(|| {
        format!("`{item}`: expected STAT OPERATOR VALUE, like p(99)<200ms or http_req_failed<1%")
    })?;
    let (left, rest) = item.split_at(at);
    let op_len = if rest[1..].starts_with('=') { 2 } else { 1 };
    let op = match &rest[..op_len] {
        op @ ("<" | "<=" | ">" | ">=" | "==" | "!=") => {
            CompareOp::parse(op).expect("a comparison operator")
        }
        other => return Err(format!("`{item}`: unknown operator `{other}`")),
    };
    let value = rest[op_len..].trim();
    let left = left.trim();
    if matches!(left, "http_req_failed" | "http_req_failed:rate" | "errors") {
        let limit = match value.strip_suffix('%') {
            Some(pct) => number(item, pct)? / 100.0,
            None => number(item, value)?,
        };
        if !(0.0..=1.0).contains(&limit) {
            return Err(format!("`{item}`: the failed rate must be within 0–100%"));
        }
        return Ok(Objective::HttpReqFailed { op, limit });
    }
    let stat_text = left.strip_prefix("http_req_duration:").unwrap_or(left);
    let stat = Aggregation::parse(stat_text)
        .filter(|a| {
            matches!(
                a,
                Aggregation::Avg
                    | Aggregation::Min
                    | Aggregation::Max
                    | Aggregation::Med
                    | Aggregation::Percentile(_)
            )
        })
        .ok_or_else(|| {
            format!(
                "`{item}`: unknown statistic `{left}` (known: p(N), avg, med, min, max of http_req_duration, and http_req_failed)"
            )
        })?;
    let (digits, scale) = if let Some(v) = value.strip_suffix("us") {
        (v, 1.0)
    } else if let Some(v) = value.strip_suffix("µs") {
        (v, 1.0)
    } else if let Some(v) = value.strip_suffix("ms") {
        (v, 1e3)
    } else if let Some(v) = value.strip_suffix('s') {
        (v, 1e6)
    } else {
        (value, 1e3)
    };
    let limit_us = number(item, digits)? * scale;
    if limit_us < 0.0 {
        return Err(format!("`{item}`: a latency cannot be negative"));
    }
    Ok(Objective::HttpReqDuration { stat, op, limit_us })
}

fn number(item: &str, text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("`{item}`: `{}` is not a number", text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_example_and_units() {
        let slo = Slo::parse("p(99)<200ms, http_req_failed<1%").unwrap();
        assert_eq!(
            slo.objectives,
            vec![
                Objective::HttpReqDuration {
                    stat: Aggregation::Percentile(99.0),
                    op: CompareOp::Lt,
                    limit_us: 200_000.0
                },
                Objective::HttpReqFailed {
                    op: CompareOp::Lt,
                    limit: 0.01
                }
            ]
        );
        let slo = Slo::parse("avg<=1.5s,http_req_duration:med<500us,max<30,http_req_failed<0.05")
            .unwrap();
        let limits: Vec<_> = slo.objectives.iter().map(Objective::label).collect();
        assert_eq!(
            limits,
            [
                "avg<=1500ms",
                "med<0.500ms",
                "max<30.00ms",
                "http_req_failed<5%"
            ]
        );
        assert_eq!(slo.latency_limit_us(), Some(500.0));
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (text, says) in [
            ("", "no objective"),
            ("p(99)", "expected STAT OPERATOR VALUE"),
            ("p(101)<2ms", "unknown statistic"),
            ("rate<2ms", "unknown statistic"),
            ("p(99)<fast", "not a number"),
            ("http_req_failed<150%", "within 0–100%"),
            ("p(99)=~2", "unknown operator"),
            ("p(99)<-1ms", "negative"),
        ] {
            let err = Slo::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn verdicts_on_a_window() {
        let slo = Slo::parse("p(99)<10ms,http_req_failed<1%").unwrap();
        let mut h = LatencyHistogram::new();
        for i in 0..1000 {
            h.record_micros(1000 + i);
        }
        let seen = Observed {
            latency: &h,
            requests: 1000,
            failed: 5,
        };
        assert!(slo.breaches(&seen).is_empty());
        h.record_micros_n(50_000, 20);
        let seen = Observed {
            latency: &h,
            requests: 1020,
            failed: 20,
        };
        let breaches = slo.breaches(&seen);
        assert_eq!(breaches.len(), 2, "{breaches:?}");
        assert!(
            breaches[0].starts_with("p(99)<10.00ms (observed 50"),
            "{breaches:?}"
        );
        // Nothing answered: not met.
        let empty = LatencyHistogram::new();
        let seen = Observed {
            latency: &empty,
            requests: 0,
            failed: 0,
        };
        assert_eq!(slo.breaches(&seen).len(), 2);
    }
}
