//! `session.add`: a compiled sample for a custom metric (the metric resolved to its index),
//! and the timings of a client's last response it may read.

use super::program::Scope;
use super::values::{CValue, Eval};
use super::SessionProblem;
use barrage_metrics::PhaseTimings;
use barrage_plan::{MetricDecl, MetricSample, ResponseTiming, SampleInput};
use std::time::Duration;

/// The timings of a client's last response; zero before any, or after a transport error.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LastResponse {
    pub duration: Duration,
    pub phases: PhaseTimings,
}

impl LastResponse {
    /// `timing` in milliseconds.
    pub(crate) fn millis(&self, timing: ResponseTiming) -> f64 {
        let d = match timing {
            ResponseTiming::Duration => self.duration,
            ResponseTiming::Blocked | ResponseTiming::Connecting => {
                self.phases.connect.unwrap_or_default()
            }
            ResponseTiming::Sending => self.phases.write,
            ResponseTiming::Waiting => self.phases.wait,
            ResponseTiming::Receiving => self.phases.read,
        };
        d.as_secs_f64() * 1000.0
    }
}

/// Where a compiled sample's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SampleSource {
    Value(CValue),
    /// Index into the session's condition table: 1 when it holds, else 0.
    Condition(u32),
    Timing(ResponseTiming),
}

/// One `session.add`, compiled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompiledSample {
    /// Index of the metric in the plan's custom metrics (and in `RunMetrics::custom`).
    pub metric: usize,
    pub source: SampleSource,
}

impl CompiledSample {
    /// Compiles `sample`; `condition` compiles a condition into the session's table.
    pub(crate) fn compile(
        sample: &MetricSample,
        custom: &[MetricDecl],
        scope: &mut Scope,
        condition: impl FnOnce(&barrage_plan::Condition, &mut Scope) -> Result<u32, SessionProblem>,
    ) -> Result<Self, SessionProblem> {
        let metric = custom
            .iter()
            .position(|d| d.name == sample.metric)
            .ok_or_else(|| SessionProblem::UnknownMetric(sample.metric.clone()))?;
        let source = match &sample.input {
            SampleInput::Value { value } => SampleSource::Value(CValue::compile(value, scope)?),
            SampleInput::Condition { condition: c } => {
                SampleSource::Condition(condition(c, scope)?)
            }
            SampleInput::LastResponse { timing } => SampleSource::Timing(*timing),
        };
        Ok(Self { metric, source })
    }
}

/// A value as a sample: numbers as they are, numeric text parsed, `true` as 1, anything
/// else 0.
pub(crate) fn sample_number(value: &CValue, cx: Eval<'_>, text: &mut String) -> f64 {
    match value {
        CValue::Number { value, .. } => *value,
        CValue::LastStatus => f64::from(cx.state.last_status),
        other => {
            text.clear();
            other.write(cx, text);
            let trimmed = text.trim();
            if trimmed == "true" {
                1.0
            } else {
                trimmed
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .unwrap_or(0.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::state::SessionState;

    #[test]
    fn samples_read_numbers_text_and_timings() {
        let mut state = SessionState::default();
        state.reset(1);
        state.last_status = 503;
        let cx = Eval {
            state: &state,
            data: &[],
        };
        let mut text = String::new();
        assert_eq!(sample_number(&CValue::LastStatus, cx, &mut text), 503.0);
        assert_eq!(
            sample_number(&CValue::Text(" 2.5 ".into()), cx, &mut text),
            2.5
        );
        assert_eq!(
            sample_number(&CValue::Text("true".into()), cx, &mut text),
            1.0
        );
        assert_eq!(
            sample_number(&CValue::Text("nope".into()), cx, &mut text),
            0.0
        );
        let last = LastResponse {
            duration: Duration::from_micros(12_500),
            phases: PhaseTimings {
                connect: None,
                tls: None,
                write: Duration::from_micros(10),
                wait: Duration::from_micros(12_000),
                read: Duration::from_micros(490),
            },
        };
        assert_eq!(last.millis(ResponseTiming::Duration), 12.5);
        assert_eq!(last.millis(ResponseTiming::Waiting), 12.0);
        assert_eq!(last.millis(ResponseTiming::Blocked), 0.0);
    }
}
