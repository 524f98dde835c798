//! `barrage replay`: a recording compiled straight into a plan — one session per flow, each
//! started once at its recorded offset (scaled by the speed) as an open model of recorded
//! arrivals, requests as recorded (correlated values from extractions), think times from the
//! recorded gaps.

use crate::convert::path_pieces;
use crate::correlate::{split, FlowCorrelation, Piece};
use crate::recording::{Flow, RecordedRequest, Recording};
use barrage_plan::{
    Binding, Body, Check, CompareOp, Condition, Extraction, HeaderField, JwtAlgorithm, JwtResign,
    MetricsSpec, Plan, RecordedArrival, RequestStep, Session, Step, TestOptions, Value, Wait,
    Workload, PLAN_FORMAT_VERSION,
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
    /// Check each response against the recorded one (status, content type), counted per
    /// request tag as named checks.
    pub compare: bool,
    pub transforms: Transforms,
}

/// What replay changes in the recorded requests, per client at run time (JWTs) or in the
/// plan it compiles (the recording itself is never edited).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transforms {
    /// Re-sign every JWT the requests carry (`--jwt-*`).
    pub jwt: Option<JwtOptions>,
    /// `--replace OLD=NEW`: in paths, header values and bodies.
    pub replace: Vec<(String, String)>,
    /// `--set-header 'Name: value'`: replaces a recorded header of that name, or adds it.
    pub set_headers: Vec<(String, String)>,
    /// `--remove-header Name`.
    pub remove_headers: Vec<String>,
    /// `--shift-timestamps`: ISO 8601 UTC timestamps in the requests move with the present.
    pub shift_timestamps: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JwtOptions {
    pub algorithm: JwtAlgorithm,
    pub key: String,
    pub lifetime: Option<Duration>,
    pub claims: Vec<(String, String)>,
}

/// A JWT in compact serialisation: two base64url JSON objects (`eyJ` is `{"`) and a signature.
fn find_jwts(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let is_b64 = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find("eyJ") {
        let start = at + offset;
        let mut end = start;
        let mut dots = 0;
        while end < bytes.len() && (is_b64(bytes[end]) || (bytes[end] == b'.' && dots < 2)) {
            dots += usize::from(bytes[end] == b'.');
            end += 1;
        }
        let candidate = &text[start..end];
        let boundary = start == 0 || !is_b64(bytes[start - 1]);
        if boundary
            && dots == 2
            && candidate
                .split('.')
                .nth(1)
                .is_some_and(|p| p.starts_with("eyJ"))
        {
            found.push(candidate);
        }
        at = end.max(start + 3);
    }
    found
}

/// The plan that replays `recording`.
pub fn replay_plan(recording: &Recording, options: &ReplayOptions) -> Plan {
    let mut tags: Vec<String> = Vec::new();
    let sessions: Vec<Session> = recording
        .flows
        .iter()
        .map(|flow| flow_session(flow, recording.start, options, &mut tags))
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
        workload: Workload::recorded(arrivals, REPLAY_GRACE),
        tags,
        sessions,
        data_sources: Vec::new(),
        metrics: MetricsSpec::default(),
    }
}

fn flow_session(
    flow: &Flow,
    start: time::OffsetDateTime,
    options: &ReplayOptions,
    tags: &mut Vec<String>,
) -> Session {
    let flow = &transformed(flow, &options.transforms);
    let mut correlation = if options.correlate {
        FlowCorrelation::find(flow)
    } else {
        FlowCorrelation::none(flow)
    };
    let binds = match &options.transforms.jwt {
        Some(jwt) => resign_jwts(flow, &mut correlation, jwt),
        None => JwtBinds::default(),
    };
    let mut steps = binds.at_start;
    if options.transforms.shift_timestamps {
        steps.extend(crate::timestamps::shift_timestamps(
            flow,
            start,
            &mut correlation,
        ));
    }
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
        if options.compare {
            comparisons(request, &mut step, &mut steps);
        } else {
            steps.push(Step::Request(step));
        }
        steps.extend(
            binds
                .after
                .iter()
                .filter(|(at, _)| *at == i)
                .map(|(_, step)| step.clone()),
        );
    }
    Session {
        name: flow.name.clone(),
        weight: 1,
        steps,
    }
}

/// Pushes the request and the checks that compare its response with the recorded one:
/// `GET /x: status 200 as recorded`, `GET /x: content type application/json as recorded`,
/// `GET /x: JSON shape as recorded` (same keys, same types: [`barrage_plan::json_shape`]).
fn comparisons(request: &RecordedRequest, step: &mut RequestStep, steps: &mut Vec<Step>) {
    let recorded = &request.response;
    let content_type_var = format!("_content_type_{}", request.entry);
    if !recorded.content_type.is_empty() {
        step.extraction.push(Extraction {
            var: content_type_var.clone(),
            extractor: barrage_plan::Extractor::Header {
                name: "Content-Type".into(),
            },
        });
    }
    let shape = recorded
        .body
        .as_ref()
        .filter(|_| recorded.content_type.contains("json"))
        .and_then(|body| serde_json::from_slice::<serde_json::Value>(body).ok())
        .map(|json| barrage_plan::json_shape(&json));
    let shape_var = format!("_json_shape_{}", request.entry);
    if shape.is_some() {
        step.extraction.push(Extraction {
            var: shape_var.clone(),
            extractor: barrage_plan::Extractor::JsonShape,
        });
    }
    steps.push(Step::Request(step.clone()));
    steps.push(Step::Check(Check {
        name: barrage_plan::status_check_name(&request.tag, recorded.status),
        condition: Condition {
            value: Value::LastStatus,
            op: CompareOp::Eq,
            expected: Value::Number {
                value: f64::from(recorded.status),
            },
        },
        fatal: false,
        // The report says which statuses came from the tag's status codes.
        keep_failed_values: false,
    }));
    if !recorded.content_type.is_empty() {
        steps.push(Step::Check(Check {
            name: barrage_plan::content_type_check_name(&request.tag, &recorded.content_type),
            condition: Condition {
                value: Value::Var {
                    name: content_type_var,
                },
                op: CompareOp::Contains,
                expected: Value::text(recorded.content_type.clone()),
            },
            fatal: false,
            keep_failed_values: true,
        }));
    }
    if let Some(shape) = shape {
        steps.push(Step::Check(Check {
            name: barrage_plan::json_shape_check_name(&request.tag),
            condition: Condition {
                value: Value::Var { name: shape_var },
                op: CompareOp::Eq,
                expected: Value::text(shape),
            },
            fatal: false,
            keep_failed_values: true,
        }));
    }
}

/// The flow with `--replace`, `--set-header` and `--remove-header` applied.
fn transformed(flow: &Flow, transforms: &Transforms) -> Flow {
    let mut flow = flow.clone();
    for request in &mut flow.requests {
        if transforms.jwt.is_some() {
            // Recorded cookies holding a JWT go out with it re-signed (beside the jar's).
            let carrying: Vec<String> = request
                .cookies
                .iter()
                .filter(|(_, value)| !find_jwts(value).is_empty())
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            if !carrying.is_empty() {
                request
                    .headers
                    .push(("Cookie".to_string(), carrying.join("; ")));
            }
        }
        for (old, new) in &transforms.replace {
            request.path = request.path.replace(old.as_str(), new);
            for (_, value) in &mut request.headers {
                *value = value.replace(old.as_str(), new);
            }
            if let Some(text) = request
                .body
                .as_ref()
                .and_then(|b| std::str::from_utf8(b).ok())
            {
                request.body = Some(text.replace(old.as_str(), new).into_bytes());
            }
        }
        request.headers.retain(|(name, _)| {
            !transforms
                .remove_headers
                .iter()
                .any(|r| r.eq_ignore_ascii_case(name))
        });
        for (name, value) in &transforms.set_headers {
            match request
                .headers
                .iter_mut()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                Some(header) => header.1 = value.clone(),
                None => request.headers.push((name.clone(), value.clone())),
            }
        }
    }
    flow
}

/// The `jwt` bindings of a flow: recorded tokens re-signed when the session starts, tokens a
/// response returned (correlated) re-signed right after that response.
#[derive(Debug, Default)]
struct JwtBinds {
    at_start: Vec<Step>,
    /// (request index, bind step) to run after that request.
    after: Vec<(usize, Step)>,
}

/// Substitutes every JWT of the flow's requests by a re-signed variable.
fn resign_jwts(flow: &Flow, correlation: &mut FlowCorrelation, jwt: &JwtOptions) -> JwtBinds {
    let mut binds = JwtBinds::default();
    // recorded token → the variable holding its re-signed form.
    let mut resigned: Vec<(String, String)> = Vec::new();
    let bind = |var: &str, token: Value| Step::Bind {
        var: var.to_string(),
        binding: Binding::Jwt(Box::new(JwtResign {
            token,
            algorithm: jwt.algorithm,
            key: jwt.key.clone(),
            lifetime: jwt.lifetime,
            claims: jwt.claims.clone(),
        })),
    };
    for (i, request) in flow.requests.iter().enumerate() {
        let text = request.text();
        for token in find_jwts(&text) {
            let var =
                match resigned.iter().find(|(t, _)| t == token) {
                    Some((_, var)) => var.clone(),
                    None => {
                        let var = format!("jwt_{}", resigned.len() + 1);
                        // A token a response returned is re-signed after that response.
                        let source = correlation.extractions[..i].iter().enumerate().find_map(
                            |(at, list)| {
                                list.iter()
                                    .find(|c| c.recorded == token)
                                    .map(|c| (at, c.var.clone()))
                            },
                        );
                        match source {
                            Some((at, from)) => binds
                                .after
                                .push((at, bind(&var, Value::Var { name: from }))),
                            None => binds.at_start.push(bind(&var, Value::text(token))),
                        }
                        resigned.push((token.to_string(), var.clone()));
                        var
                    }
                };
            let subs = &mut correlation.substitutions[i];
            subs.retain(|(value, _)| value != token);
            subs.push((token.to_string(), var));
            subs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        }
    }
    binds
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
    step.origin = request.origin.clone();
    step.headers = request
        .headers
        .iter()
        .map(|(name, value)| HeaderField {
            name: name.clone(),
            value: value_of(split(value, subs)),
        })
        .collect();
    step.body = request
        .body
        .as_ref()
        .map(|bytes| match std::str::from_utf8(bytes) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwts_are_found_in_text() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln";
        assert_eq!(find_jwts(&format!("Bearer {jwt}, x.eyJ")), [jwt]);
        assert!(find_jwts("aeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln").is_empty());
    }
}
