//! `barrage replay`: a recording compiled straight into a plan — one session per flow, each
//! started once at its recorded offset (scaled by the speed) as an open model of recorded
//! arrivals, requests as recorded (correlated values from extractions), think times from the
//! recorded gaps.

use crate::convert::path_pieces;
use crate::correlate::{split, FlowCorrelation, Piece};
use crate::recording::{Flow, RecordedRequest, Recording};
use barrage_plan::{
    Body, Extraction, HeaderField, MetricsSpec, Plan, RecordedArrival, RecordedArrivals,
    RequestStep, Session, Step, TestOptions, Value, Wait, Workload, PLAN_FORMAT_VERSION,
};
use std::time::Duration;

/// How long sessions still running after the last arrival may take to finish.
pub const REPLAY_GRACE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// The test's name (the HAR file's stem).
    pub name: String,
    /// Recorded time runs this many times faster (2: twice as fast; 0.5: half speed).
    pub speed: f64,
    /// Play the recording this many times, one after the other.
    pub loops: u32,
    pub correlate: bool,
}

/// The plan that replays `recording`.
pub fn replay_plan(recording: &Recording, options: &ReplayOptions) -> Plan {
    let mut tags: Vec<String> = Vec::new();
    let sessions: Vec<Session> = recording
        .flows
        .iter()
        .map(|flow| flow_session(flow, options, &mut tags))
        .collect();
    let period = recording.span() + Duration::from_millis(1);
    let mut arrivals: Vec<RecordedArrival> = (0..options.loops.max(1))
        .flat_map(|round| {
            recording
                .flows
                .iter()
                .enumerate()
                .map(move |(session, flow)| RecordedArrival {
                    offset: (flow.offset + period * round).div_f64(options.speed),
                    session,
                })
        })
        .collect();
    arrivals.sort_by_key(|a| a.offset);
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: options.name.clone(),
        target: recording.target.clone(),
        options: TestOptions {
            cookies: true,
            ..TestOptions::default()
        },
        workload: Workload::RecordedArrivals(RecordedArrivals {
            arrivals,
            grace_period: REPLAY_GRACE,
        }),
        tags,
        sessions,
        data_sources: Vec::new(),
        metrics: MetricsSpec::default(),
    }
}

fn flow_session(flow: &Flow, options: &ReplayOptions, tags: &mut Vec<String>) -> Session {
    let correlation = if options.correlate {
        FlowCorrelation::find(flow)
    } else {
        FlowCorrelation::none(flow)
    };
    let mut steps = Vec::new();
    for (i, request) in flow.requests.iter().enumerate() {
        if !request.think.is_zero() {
            steps.push(Step::Wait(Wait::Fixed {
                seconds: request.think.as_secs_f64() / options.speed,
            }));
        }
        let tag = match tags.iter().position(|t| *t == request.tag) {
            Some(index) => index,
            None => {
                tags.push(request.tag.clone());
                tags.len() - 1
            }
        };
        let mut step = request_step(request, tag, &correlation.substitutions[i]);
        step.extraction = correlation.extractions[i]
            .iter()
            .map(|c| Extraction {
                var: c.var.clone(),
                extractor: c.extractor.clone(),
            })
            .collect();
        steps.push(Step::Request(step));
    }
    Session {
        name: flow.name.clone(),
        weight: 1,
        steps,
    }
}

fn request_step(request: &RecordedRequest, tag: usize, subs: &[(String, String)]) -> RequestStep {
    let path: String = path_pieces(&request.path, subs)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text,
            Piece::Var(var) => format!(":{var}"),
        })
        .collect();
    let mut step = RequestStep::simple(request.method, path, tag);
    step.headers = request
        .headers
        .iter()
        .map(|(name, value)| HeaderField {
            name: name.clone(),
            value: value_of(split(value, subs)),
        })
        .collect();
    step.body = request.body.as_ref().map(|bytes| match std::str::from_utf8(bytes) {
        Ok(text) if has_var(&split(text, subs)) => Body::Text {
            value: value_of(split(text, subs)),
        },
        _ => Body::Raw {
            bytes: bytes.clone(),
        },
    });
    step
}

/// A per-client value from text pieces.
fn value_of(pieces: Vec<Piece>) -> Value {
    let mut parts: Vec<Value> = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(value) => Value::Text { value },
            Piece::Var(name) => Value::Var { name },
        })
        .collect();
    match parts.len() {
        0 => Value::text(""),
        1 => parts.remove(0),
        _ => Value::Concat { parts },
    }
}

fn has_var(pieces: &[Piece]) -> bool {
    pieces.iter().any(|p| matches!(p, Piece::Var(_)))
}
