//! Compiles a plan's sessions into what clients execute: requests already encoded to bytes,
//! tags as indices, session choice as a cumulative weight table.

use barrage_http::{RequestBytes, RequestError, RequestSpec};
use barrage_plan::{Body, Plan, RequestStep, Step, Value};
use rand::Rng;

/// A request ready to write.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRequest {
    pub bytes: RequestBytes,
    pub tag: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum CompiledStep {
    Request(CompiledRequest),
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledSession {
    pub steps: Vec<CompiledStep>,
}

/// Everything a worker needs from the plan, immutable and shared by all workers.
#[derive(Debug)]
pub(crate) struct CompiledPlan {
    pub sessions: Vec<CompiledSession>,
    /// Running sums of session weights, for weighted picks.
    cumulative_weights: Vec<u64>,
    pub tag_count: usize,
}

/// Why a plan cannot be compiled for execution.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Request(#[from] RequestError),
    /// Scenario features the engine does not execute yet; refused rather than ignored.
    #[error("this engine cannot execute {0} yet")]
    Unsupported(&'static str),
}

/// The request of a step the static fast path can pre-encode.
fn static_request(step: &Step) -> Result<&RequestStep, CompileError> {
    match step {
        Step::Request(request)
            if request.params.is_empty()
                && request.extraction.is_empty()
                && !request.gzip
                && !request.path.contains(':') =>
        {
            Ok(request)
        }
        Step::Request(_) => Err(CompileError::Unsupported(
            "templated or extracting requests",
        )),
        _ => Err(CompileError::Unsupported("steps other than requests")),
    }
}

impl CompiledPlan {
    pub(crate) fn compile(plan: &Plan) -> Result<Self, CompileError> {
        let authority = plan.target.authority();
        let default_headers: Vec<(String, String)> = plan
            .options
            .headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect();
        let mut sessions = Vec::with_capacity(plan.sessions.len());
        let mut cumulative_weights = Vec::with_capacity(plan.sessions.len());
        let mut total_weight = 0u64;
        for session in &plan.sessions {
            let mut steps = Vec::with_capacity(session.steps.len());
            for step in &session.steps {
                let request = static_request(step)?;
                let mut headers = default_headers.clone();
                for field in &request.headers {
                    let Value::Text { value } = &field.value else {
                        return Err(CompileError::Unsupported("per-client header values"));
                    };
                    headers.push((field.name.clone(), value.clone()));
                }
                let body = match &request.body {
                    None => None,
                    Some(Body::Raw { bytes }) => Some(bytes.as_slice()),
                    Some(_) => return Err(CompileError::Unsupported("computed bodies")),
                };
                let bytes = RequestSpec {
                    method: request.method.as_str(),
                    authority: &authority,
                    path: &request.path,
                    headers: &headers,
                    body,
                    keep_alive: plan.options.keep_alive,
                    accept_gzip: plan.options.compression,
                }
                .encode()?;
                steps.push(CompiledStep::Request(CompiledRequest {
                    bytes,
                    tag: request.tag,
                }));
            }
            total_weight += u64::from(session.weight);
            cumulative_weights.push(total_weight);
            sessions.push(CompiledSession { steps });
        }
        Ok(Self {
            sessions,
            cumulative_weights,
            tag_count: plan.tags.len(),
        })
    }

    /// Picks a session by weight; with one session no random number is drawn.
    pub(crate) fn pick_session(&self, rng: &mut impl Rng) -> &CompiledSession {
        if self.sessions.len() == 1 {
            return &self.sessions[0];
        }
        let total = *self.cumulative_weights.last().unwrap_or(&1);
        let ticket = rng.gen_range(0..total.max(1));
        let index = self.cumulative_weights.partition_point(|&w| w <= ticket);
        &self.sessions[index.min(self.sessions.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::*;
    use rand::SeedableRng;

    fn plan(weights: &[u32]) -> Plan {
        Plan {
            format_version: PLAN_FORMAT_VERSION,
            name: "t".into(),
            target: Target::parse("http://127.0.0.1:9").unwrap(),
            options: TestOptions::default(),
            workload: Workload::ClosedVus(ClosedVus {
                vus: 1,
                duration: None,
                iterations: Some(1),
            }),
            tags: vec!["a".into()],
            sessions: weights
                .iter()
                .map(|&weight| Session {
                    name: format!("w{weight}"),
                    weight,
                    steps: vec![Step::Request(RequestStep::simple(
                        Method::Get,
                        format!("/{weight}"),
                        0,
                    ))],
                })
                .collect(),
            data_sources: vec![],
        }
    }

    #[test]
    fn weighted_pick_follows_weights() {
        let compiled = CompiledPlan::compile(&plan(&[1, 3, 0])).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut counts = [0u32; 3];
        for _ in 0..40_000 {
            let picked = compiled.pick_session(&mut rng);
            let index = compiled
                .sessions
                .iter()
                .position(|s| std::ptr::eq(s, picked))
                .unwrap();
            counts[index] += 1;
        }
        assert_eq!(counts[2], 0, "weight 0 is never picked");
        let share = f64::from(counts[1]) / 40_000.0;
        assert!((share - 0.75).abs() < 0.02, "{counts:?}");
    }

    #[test]
    fn requests_are_encoded_with_target_host() {
        let compiled = CompiledPlan::compile(&plan(&[1])).unwrap();
        let CompiledStep::Request(r) = &compiled.sessions[0].steps[0];
        assert_eq!(r.tag, 0);
        let text = String::from_utf8_lossy(r.bytes.as_bytes()).to_string();
        assert!(
            text.starts_with("GET /1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{text}"
        );
    }
}
