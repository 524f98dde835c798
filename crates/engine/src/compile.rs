//! Compiles a plan for execution: every session to a program (`crate::session`), tags as
//! indices, checks as counter indices, session choice as a cumulative weight table.

use crate::http_debug::DebugPrinter;
use crate::redirect::Origin;
use crate::session::program::compile_session;
use crate::session::request::RequestContext;
use crate::session::{CompiledSession, SessionProblem};
use barrage_metrics::{CustomKind, CustomMetrics, RunMetrics};
use barrage_plan::{DataSource, Header, HttpVersion, MetricKind, Plan, Scheme};

fn custom_kind(kind: MetricKind) -> CustomKind {
    match kind {
        MetricKind::Counter => CustomKind::Counter,
        MetricKind::Gauge => CustomKind::Gauge,
        MetricKind::Rate => CustomKind::Rate,
        MetricKind::Trend => CustomKind::Trend,
    }
}
use rand::Rng;

/// The plan's headers, with `Authorization: Basic` first when the plan has credentials and
/// sets no `Authorization` of its own.
fn headers_with_auth(plan: &Plan) -> Vec<Header> {
    let mut headers = Vec::with_capacity(plan.options.headers.len() + 1);
    let has_own = plan
        .options
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("authorization"));
    if let Some(credentials) = plan.options.basic_auth.as_ref().filter(|_| !has_own) {
        headers.push(Header {
            name: "Authorization".into(),
            value: credentials.basic_header_value(),
        });
    }
    headers.extend(plan.options.headers.iter().cloned());
    headers
}

/// Everything a worker needs from the plan, immutable and shared by all workers.
#[derive(Debug)]
pub(crate) struct CompiledPlan {
    pub sessions: Vec<CompiledSession>,
    /// Running sums of session weights, for weighted picks.
    cumulative_weights: Vec<u64>,
    pub tag_count: usize,
    /// Every check of the plan, `(name, fatal)`, in plan order: sessions in order, steps
    /// depth-first. Metrics count them by this index.
    pub checks: Vec<(String, bool)>,
    pub data: Vec<DataSource>,
    /// The plan's custom metrics, in declaration order.
    pub custom: Vec<(String, CustomKind)>,
    /// The target's origin, that redirects resolve against.
    pub origin: Option<Origin>,
    /// Each client keeps a cookie jar.
    pub cookies: bool,
    /// A redirect chain counts as one request (hey); else each hop is one (k6).
    pub count_redirect_chains: bool,
    /// `--http-debug`: prints the run's first exchanges.
    pub http_debug: Option<DebugPrinter>,
    /// Through a proxy to a plain http:// target: the origin every request target starts
    /// with (absolute form), redirect hops included.
    pub target_prefix: Option<String>,
    /// The plan's target (scripted requests to it use the run's resolved addresses).
    pub target: barrage_plan::Target,
    /// Whether requests ask for compressed responses.
    pub accept_gzip: bool,
    /// Keep latency per status code (a threshold filters latency by status).
    pub latency_by_status: bool,
}

/// Why a plan cannot be compiled for execution.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("session `{session}`: {problem}")]
    Session {
        session: String,
        problem: SessionProblem,
    },
    #[error("the plan asks for {0}, which this engine does not do yet")]
    Unsupported(&'static str),
}

impl CompiledPlan {
    pub(crate) fn compile(plan: &Plan) -> Result<Self, CompileError> {
        // Never run a plan differently from what it says.
        // Through a proxy, a plain http:// request names its whole URL (absolute form).
        let plain_proxy = plan
            .options
            .proxy
            .as_ref()
            .filter(|_| plan.target.scheme == Scheme::Http);
        if plain_proxy.is_some() && plan.options.http == HttpVersion::Http2 {
            return Err(CompileError::Unsupported(
                "cleartext HTTP/2 (h2c) through a proxy",
            ));
        }
        let target_prefix = plain_proxy.map(|_| plan.target.to_string());
        let authority = plan.target.authority();
        let mut headers = headers_with_auth(plan);
        if let Some(value) = plain_proxy.and_then(|proxy| proxy.authorization()) {
            headers.push(Header {
                name: "Proxy-Authorization".into(),
                value,
            });
        }
        let request_cx = RequestContext {
            authority: &authority,
            keep_alive: plan.options.keep_alive,
            accept_gzip: plan.options.compression,
            headers: &headers,
            max_redirects: plan.options.max_redirects,
            too_many_redirects_is_error: plan.options.too_many_redirects_is_error,
            cookies: plan.options.cookies,
            target_prefix: target_prefix.as_deref(),
        };
        let mut sessions = Vec::with_capacity(plan.sessions.len());
        let mut cumulative_weights = Vec::with_capacity(plan.sessions.len());
        let mut checks = Vec::new();
        let mut total_weight = 0u64;
        for session in &plan.sessions {
            let compiled = compile_session(
                session,
                &plan.data_sources,
                &request_cx,
                &mut checks,
                &plan.metrics.custom,
            )
            .map_err(|problem| CompileError::Session {
                session: session.name.clone(),
                problem,
            })?;
            sessions.push(compiled);
            total_weight += u64::from(session.weight);
            cumulative_weights.push(total_weight);
        }
        Ok(Self {
            sessions,
            cumulative_weights,
            tag_count: plan.tags.len(),
            checks,
            data: plan.data_sources.clone(),
            custom: plan
                .metrics
                .custom
                .iter()
                .map(|d| (d.name.clone(), custom_kind(d.kind)))
                .collect(),
            origin: Origin::new(&plan.target),
            cookies: plan.options.cookies,
            count_redirect_chains: plan.options.count_redirect_chains,
            http_debug: plan.options.http_debug.map(DebugPrinter::new),
            target_prefix,
            target: plan.target.clone(),
            accept_gzip: plan.options.compression,
            latency_by_status: plan.metrics.thresholds.iter().any(|t| t.status.is_some()),
        })
    }

    /// Fresh metrics for this plan: its tags, checks and custom metrics, all zero.
    pub(crate) fn new_metrics(&self) -> RunMetrics {
        let mut metrics = RunMetrics::new(self.tag_count)
            .with_checks(self.checks.iter().map(|(n, f)| (n.clone(), *f)));
        metrics.custom = CustomMetrics::new(self.custom.iter().map(|(n, k)| (n.clone(), *k)));
        metrics.latency_by_status = self.latency_by_status;
        metrics
    }

    /// The session at `index` of the plan (a recorded arrival names its own).
    pub(crate) fn session(&self, index: usize) -> &CompiledSession {
        &self.sessions[index.min(self.sessions.len() - 1)]
    }

    /// Whether any session waits between requests (think times, pauses): its clients then
    /// spend most of their life idle, and box each request while it is in flight so that an
    /// idle client holds only its small state (see `Client::run_iteration`).
    pub(crate) fn idles(&self) -> bool {
        use crate::session::program::Instr;
        self.sessions.iter().any(|s| {
            s.program
                .iter()
                .any(|i| matches!(i, Instr::Wait(_) | Instr::WaitFor(_)))
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
            workload: Workload::closed(1, None, Some(1)),
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
            metrics: MetricsSpec::default(),
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
    fn plain_requests_take_the_static_path_and_errors_name_the_session() {
        let compiled = CompiledPlan::compile(&plan(&[1])).unwrap();
        let request = &compiled.sessions[0].requests[0];
        assert!(request.is_static());
        assert_eq!(request.tag, 0);

        let mut bad = plan(&[1]);
        let Step::Request(request) = &mut bad.sessions[0].steps[0] else {
            unreachable!()
        };
        request.extraction.push(Extraction {
            var: "x".into(),
            extractor: Extractor::JsonPath {
                path: "$..[".into(),
            },
        });
        let e = CompiledPlan::compile(&bad).unwrap_err().to_string();
        assert!(
            e.starts_with("session `w1`: invalid JSONPath `$..[`"),
            "{e}"
        );
    }

    #[test]
    fn checks_are_numbered_in_plan_order() {
        let check = |name: &str, fatal| {
            Step::Check(Check {
                name: name.into(),
                condition: Condition {
                    value: Value::LastStatus,
                    op: CompareOp::Eq,
                    expected: Value::Number { value: 200.0 },
                },
                fatal,
                keep_failed_values: false,
            })
        };
        let mut plan = plan(&[1, 1]);
        plan.sessions[0].steps.push(Step::Times {
            count: Value::Number { value: 2.0 },
            steps: vec![check("a", false)],
        });
        plan.sessions[0].steps.push(check("b", true));
        plan.sessions[1].steps.push(check("c", false));
        let compiled = CompiledPlan::compile(&plan).unwrap();
        let names: Vec<&str> = compiled.checks.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(compiled.sessions[1].checks[0].metric, 2);
        assert!(compiled.checks[1].1);
    }
}
