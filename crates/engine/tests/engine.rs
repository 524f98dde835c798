//! Engine integration tests: plans executed against the real bundled target on a free port
//! (workload models, then scenario sessions: extraction, checks, loops, bodies, waits).

use barrage_engine::{run, RunControl};
use barrage_metrics::RunMetrics;
use barrage_plan::*;
use std::time::{Duration, Instant};

mod support;
use support::*;
#[path = "engine/http_semantics.rs"]
mod http_semantics;
#[path = "engine/protocols.rs"]
mod protocols;
#[path = "engine/stop_and_metrics.rs"]
mod stop_and_metrics;

fn target() -> barrage_target::RunningTarget {
    barrage_target::spawn(barrage_target::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: Some(1),
        ..Default::default()
    })
    .expect("target starts")
}

fn open_plan(addr: std::net::SocketAddr, path: &str, workload: Workload) -> Plan {
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "open".into(),
        target: Target::parse(&format!("http://{addr}")).unwrap(),
        options: TestOptions {
            threads: Some(2),
            ..TestOptions::default()
        },
        workload,
        tags: vec!["t".into()],
        sessions: vec![Session {
            name: "s".into(),
            weight: 1,
            steps: vec![Step::Request(RequestStep::simple(Method::Get, path, 0)); 2],
        }],
        data_sources: vec![],
        metrics: Default::default(),
    }
}

fn phases(secs: u64, rate: f64) -> Stages {
    Stages::from_targets(rate, [(Duration::from_secs(secs), rate)])
}

#[test]
fn open_arrivals_follow_the_rate_and_every_session_completes() {
    let target = target();
    let plan = open_plan(
        target.addr(),
        "/delay/10",
        Workload::open(phases(3, 100.0), None, Duration::from_secs(5)),
    );
    let outcome = run(&plan, &RunControl::default()).unwrap();
    // The run ends when the last session does, not at the end of the grace period.
    assert!(
        outcome.elapsed < Duration::from_millis(4500),
        "took {:?} for 3 s of arrivals",
        outcome.elapsed
    );
    let s = outcome.metrics.sessions;
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    // 300 expected; a Poisson count has sd ~17, so ±5 sd.
    assert!((s.started as f64 - 300.0).abs() < 87.0, "{s:?}");
    assert_eq!(s.completed, s.started, "{s:?}");
    assert_eq!((s.interrupted, s.dropped), (0, 0));
    let total = outcome.metrics.total();
    assert_eq!(
        total.status.get(200),
        2 * s.started,
        "two requests per session"
    );
    // Each client brings its own connection and closes it when its session ends.
    assert_eq!(outcome.metrics.connections_opened, s.started);
    // Latency counts from the arrival, so it includes the 10 ms delay.
    assert!(total.latency.min_micros() >= 10_000);
    target.shutdown();
}

#[test]
fn arrivals_beyond_max_clients_are_dropped_and_counted() {
    let target = target();
    let plan = open_plan(
        target.addr(),
        "/delay/400",
        Workload::open(phases(1, 200.0), Some(10), Duration::from_secs(3)),
    );
    let outcome = run(&plan, &RunControl::default()).unwrap();
    let s = outcome.metrics.sessions;
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    // Sessions last ~800 ms, so at most ~10 start per 800 ms; most arrivals are dropped.
    assert!(s.started <= 30, "{s:?}");
    assert!(s.dropped >= 100, "{s:?}");
    assert_eq!(s.completed, s.started);
    target.shutdown();
}

#[test]
fn sessions_running_past_the_grace_period_are_interrupted() {
    let target = target();
    let plan = open_plan(
        target.addr(),
        "/delay/3000",
        Workload::open(phases(1, 20.0), None, Duration::from_millis(300)),
    );
    let started = std::time::Instant::now();
    let outcome = run(&plan, &RunControl::default()).unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "the grace period bounds the run"
    );
    let s = outcome.metrics.sessions;
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    assert!(s.started > 0);
    assert_eq!((s.completed, s.interrupted), (0, s.started), "{s:?}");
    target.shutdown();
}

// ---- scenario sessions ----

fn run_plan(plan: &Plan) -> RunMetrics {
    run(plan, &RunControl::default()).unwrap().metrics
}

#[test]
fn token_flow_extracts_asserts_and_loops_a_random_number_of_times() {
    let target = target();
    let mut get_token = RequestStep::simple(Method::Post, "/random/get_token?channel=:id", 0);
    get_token.params.push((
        "id".into(),
        Value::Column {
            var: "channel".into(),
            column: "id".into(),
        },
    ));
    get_token.extraction.push(jsonpath("token", "$.token"));
    let steps = vec![
        Step::Bind {
            var: "channel".into(),
            binding: Binding::PickRow {
                source: 0,
                sequential: false,
            },
        },
        Step::Request(get_token),
        check("token present", var("token"), "!=", Value::text(""), true),
        Step::Bind {
            var: "n".into(),
            binding: Binding::RandomNumber { min: 3, max: 6 },
        },
        Step::Times {
            count: var("n"),
            steps: vec![
                Step::Request(get("/ping?token=:token", 1)),
                check(
                    "ping ok",
                    Value::LastStatus,
                    "==",
                    Value::Number { value: 200.0 },
                    false,
                ),
            ],
        },
    ];
    let mut plan = scenario_plan(
        target.addr(),
        &["get_token", "ping"],
        steps,
        Workload::open(phases(2, 50.0), None, Duration::from_secs(5)),
    );
    plan.data_sources.push(DataSource {
        name: "channels.csv".into(),
        columns: vec!["id".into(), "name".into()],
        rows: (1..=4)
            .map(|i| vec![i.to_string(), format!("channel {i}")])
            .collect(),
    });
    let metrics = run_plan(&plan);
    let s = metrics.sessions;
    assert!(s.started > 40, "{s:?}");
    assert_eq!((s.completed, s.failed), (s.started, 0), "{s:?}");
    assert_eq!(check_counts(&metrics, "token present"), (s.started, 0));
    let (token, ping) = (&metrics.tags[0], &metrics.tags[1]);
    assert_eq!(token.status.get(200), s.started);
    assert_eq!(token.extraction_failures, 0);
    assert_eq!(
        ping.status.get(401),
        0,
        "every ping carried an issued token"
    );
    // One "ping ok" per loop iteration: the pings are exactly the sum of the loop counts.
    let (ok, not_ok) = check_counts(&metrics, "ping ok");
    assert_eq!((ok, not_ok), (ping.responses(), 0));
    assert!(
        (3 * s.started..=6 * s.started).contains(&ping.responses()),
        "{} pings for {} sessions",
        ping.responses(),
        s.started
    );
    let mean = ping.responses() as f64 / s.started as f64;
    assert!((mean - 4.5).abs() < 0.6, "mean loop count {mean}");
    target.shutdown();
}

#[test]
fn a_failed_assert_ends_the_session_as_failed() {
    let target = target();
    let steps = vec![
        Step::Request(get("/status/404", 0)),
        check(
            "is 200",
            Value::LastStatus,
            "==",
            Value::Number { value: 200.0 },
            true,
        ),
        Step::Request(get("/", 1)),
    ];
    let plan = scenario_plan(target.addr(), &["404", "after"], steps, closed(2, 20));
    let metrics = run_plan(&plan);
    let s = metrics.sessions;
    assert_eq!((s.started, s.completed, s.failed), (20, 0, 20), "{s:?}");
    assert_eq!(check_counts(&metrics, "is 200"), (0, 20));
    assert_eq!(
        metrics.tags[1].requests(),
        0,
        "nothing runs after the assert"
    );
    target.shutdown();
}

#[test]
fn abort_on_error_ends_the_session_and_if_follows_the_last_status() {
    let target = target();
    let mut abort = get("/status/500", 2);
    abort.abort_on_error = true;
    let steps = vec![
        // Without abort_on_error a failure does not end the session.
        Step::Request(get("/status/503", 0)),
        Step::If {
            condition: Condition {
                value: Value::LastStatus,
                op: CompareOp::Eq,
                expected: Value::Number { value: 503.0 },
            },
            steps: vec![Step::Request(get("/", 1))],
        },
        Step::If {
            condition: Condition {
                value: Value::LastStatus,
                op: CompareOp::Eq,
                expected: Value::Number { value: 503.0 },
            },
            steps: vec![Step::Request(get("/never", 3))],
        },
        Step::Request(abort),
        Step::Request(get("/", 3)),
    ];
    let plan = scenario_plan(
        target.addr(),
        &["503", "if", "500", "after"],
        steps,
        closed(2, 10),
    );
    let metrics = run_plan(&plan);
    let s = metrics.sessions;
    assert_eq!((s.completed, s.failed), (0, 10), "{s:?}");
    assert_eq!(metrics.tags[1].status.get(200), 10, "the first if ran");
    assert_eq!(metrics.tags[2].status.get(500), 10);
    assert_eq!(
        metrics.tags[3].requests(),
        0,
        "neither the second if (last status 200) nor what follows the abort ran"
    );
    target.shutdown();
}

#[test]
fn headers_are_extracted_and_sent_back_and_bodies_arrive_as_built() {
    let target = target();
    let mut first = get("/echo", 0);
    first.extraction.push(Extraction {
        var: "ct".into(),
        extractor: Extractor::Header {
            name: "content-type".into(),
        },
    });
    let mut second = get("/echo", 0);
    second.headers.push(HeaderField {
        name: "X-Got".into(),
        value: Value::Concat {
            parts: vec![Value::text("ct="), var("ct")],
        },
    });
    second
        .extraction
        .push(jsonpath("got", "$.headers['x-got']"));

    let mut gzipped = RequestStep::simple(Method::Post, "/echo", 1);
    gzipped.body = Some(Body::Text {
        value: Value::text("hello gzip hello gzip hello gzip"),
    });
    gzipped.gzip = true;
    gzipped.extraction = vec![
        jsonpath("encoding", "$.headers['content-encoding']"),
        jsonpath("gzip_body", "$.body"),
    ];

    let mut form = RequestStep::simple(Method::Post, "/echo", 2);
    form.body = Some(Body::Form {
        fields: vec![
            ("a b".into(), Value::text("1&2")),
            ("r".into(), var("word")),
        ],
    });
    form.extraction = vec![
        jsonpath("form_type", "$.headers['content-type']"),
        jsonpath("form_body", "$.body"),
    ];

    let mut json = RequestStep::simple(Method::Put, "/echo", 3);
    json.body = Some(Body::Json {
        template: JsonTemplate::Object {
            fields: vec![
                (
                    "n".into(),
                    JsonTemplate::Value {
                        value: Value::Number { value: 5.0 },
                    },
                ),
                ("s".into(), JsonTemplate::Value { value: var("word") }),
                (
                    "fixed".into(),
                    JsonTemplate::Literal {
                        json: "[true]".into(),
                    },
                ),
            ],
        },
    });
    json.extraction = vec![jsonpath("json_body", "$.body")];

    let steps = vec![
        Step::Bind {
            var: "word".into(),
            binding: Binding::RandomString { length: 8 },
        },
        Step::Request(first),
        Step::Request(second),
        check(
            "header round trip",
            var("got"),
            "==",
            Value::text("ct=application/json"),
            false,
        ),
        Step::Request(gzipped),
        check(
            "gzip announced",
            var("encoding"),
            "==",
            Value::text("gzip"),
            false,
        ),
        check(
            "gzip body decoded by the target",
            var("gzip_body"),
            "==",
            Value::text("hello gzip hello gzip hello gzip"),
            false,
        ),
        Step::Request(form),
        check(
            "form type",
            var("form_type"),
            "==",
            Value::text("application/x-www-form-urlencoded"),
            false,
        ),
        check(
            "form body",
            var("form_body"),
            "=~",
            Value::text("^a%20b=1%262&r=[A-Za-z0-9]{8}$"),
            false,
        ),
        Step::Request(json),
        check(
            "json body",
            var("json_body"),
            "=~",
            Value::text(r#"^\{"n":5,"s":"[A-Za-z0-9]{8}","fixed":\[true\]\}$"#),
            false,
        ),
    ];
    let plan = scenario_plan(
        target.addr(),
        &["echo", "gzip", "form", "json"],
        steps,
        closed(2, 6),
    );
    let metrics = run_plan(&plan);
    for c in &metrics.checks {
        assert_eq!((c.passed, c.failed), (6, 0), "{c:?}");
    }
    assert_eq!(metrics.checks.len(), 6);
    assert_eq!(metrics.total().extraction_failures, 0);
    target.shutdown();
}

#[test]
fn failed_extractions_are_counted_and_leave_the_variable_empty() {
    let target = target();
    let mut request = get("/status/200", 0);
    request.extraction.push(jsonpath("missing", "$.nope"));
    let steps = vec![
        Step::Request(request),
        check("empty", var("missing"), "==", Value::text(""), false),
    ];
    let metrics = run_plan(&scenario_plan(target.addr(), &["t"], steps, closed(1, 3)));
    assert_eq!(metrics.tags[0].extraction_failures, 3);
    assert_eq!(check_counts(&metrics, "empty"), (3, 0));
    target.shutdown();
}

#[test]
fn waits_lengthen_sessions_but_not_latency() {
    let target = target();
    let steps = vec![
        Step::Request(get("/", 0)),
        Step::Wait(Wait::Fixed { seconds: 0.3 }),
        Step::Request(get("/", 0)),
    ];
    let plan = scenario_plan(target.addr(), &["t"], steps, closed(2, 4));
    let started = Instant::now();
    let metrics = run_plan(&plan);
    // Each VU runs two sessions, each waiting 0.3 s.
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert_eq!(metrics.sessions.completed, 4);
    let latency = &metrics.tags[0].latency;
    assert_eq!(latency.count(), 8);
    assert!(
        latency.max_micros() < 250_000,
        "the request after a wait counts from its own start"
    );
    target.shutdown();
}

#[test]
fn a_per_client_wait_reads_its_seconds_when_it_starts() {
    let target = target();
    let session = |seconds: Value| {
        vec![
            Step::Bind {
                var: "d".into(),
                binding: Binding::RandomNumber { min: 3, max: 3 },
            },
            Step::Request(get("/", 0)),
            Step::Wait(Wait::PerClient { seconds }),
            Step::Request(get("/", 0)),
        ]
    };
    // Two sessions back to back: how long they took, and how many completed.
    let run_two = |seconds: Value| {
        let started = Instant::now();
        let metrics = run_plan(&scenario_plan(
            target.addr(),
            &["t"],
            session(seconds),
            closed(1, 2),
        ));
        (started.elapsed(), metrics.sessions.completed)
    };
    let concat = |prefix: &str| Value::Concat {
        parts: vec![Value::text(prefix), var("d")],
    };
    // "0." + d = 0.3 s per session.
    let (took, completed) = run_two(concat("0."));
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert_eq!(completed, 2);
    // Text that is not a number waits nothing.
    let (took, completed) = run_two(concat("x"));
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(completed, 2);
    target.shutdown();
}

#[test]
fn for_ever_runs_until_the_hard_stop_and_counts_as_interrupted() {
    let target = target();
    let steps = vec![Step::ForEver {
        steps: vec![
            Step::Request(get("/", 0)),
            Step::Wait(Wait::Uniform {
                min: 0.01,
                max: 0.03,
            }),
        ],
    }];
    let workload = Workload::closed(2, Some(Duration::from_millis(800)), None);
    let metrics = run_plan(&scenario_plan(target.addr(), &["t"], steps, workload));
    let s = metrics.sessions;
    assert_eq!((s.started, s.completed, s.interrupted), (2, 0, 2), "{s:?}");
    assert!(metrics.tags[0].status.get(200) > 20);
    target.shutdown();
}

#[test]
fn every_request_carries_a_unique_request_id() {
    let (addr, ids) = recording_server();
    let steps = vec![
        Step::Request(get("/static", 0)),
        Step::Request(get("/dynamic?w=:w", 0)),
        Step::Bind {
            var: "w".into(),
            binding: Binding::Uuid,
        },
    ];
    let plan = scenario_plan(addr, &["t"], steps, closed(4, 50));
    let outcome = run(&plan, &RunControl::default()).unwrap();
    assert_eq!(outcome.metrics.tags[0].status.get(200), 100);
    let ids = ids.lock().unwrap();
    assert_eq!(ids.len(), 100);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 100, "ids repeat: {ids:?}");
    assert!(ids.iter().all(|id| id.split('-').count() == 3), "{ids:?}");
    // The run names the prefix all its ids share: `<8 hex digits>-`.
    let prefix = &outcome.request_id_prefix;
    assert_eq!(prefix.len(), 9, "{prefix}");
    assert!(prefix.ends_with('-'), "{prefix}");
    assert!(
        ids.iter().all(|id| id.starts_with(prefix.as_str())),
        "{prefix}: {ids:?}"
    );
}

/// A sample log kept in memory.
#[derive(Clone, Default)]
struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn sampled_requests_name_the_request_id_the_target_received() {
    let (addr, received) = recording_server();
    // Tag 1 sets its own X-Request-Id: the target sees that one, the samples say null.
    let mut own = get("/own", 1);
    own.headers.push(HeaderField {
        name: "X-Request-Id".into(),
        value: Value::text("mine"),
    });
    let steps = vec![Step::Request(get("/ours", 0)), Step::Request(own)];
    let plan = scenario_plan(addr, &["ours", "own"], steps, closed(3, 30));
    let log = SharedLog::default();
    let control = RunControl {
        samples: Some(std::sync::Arc::new(barrage_engine::SampleSink::new(
            1.0,
            plan.tags.clone(),
            Box::new(log.clone()),
        ))),
        ..RunControl::default()
    };
    let outcome = run(&plan, &control).unwrap();
    control.samples.as_ref().unwrap().finish().unwrap();
    assert_eq!(outcome.metrics.total().status.get(200), 60);
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 60, "{text}");
    let mut sampled = std::collections::BTreeSet::new();
    for line in &lines {
        match line["tag"].as_str().unwrap() {
            "ours" => {
                let id = line["request_id"].as_str().expect("an id").to_string();
                assert!(id.starts_with(&outcome.request_id_prefix), "{line}");
                assert!(sampled.insert(id), "a repeated id: {line}");
            }
            "own" => assert!(line["request_id"].is_null(), "{line}"),
            other => panic!("tag {other}"),
        }
    }
    // Joinable: the samples' ids are exactly the ids the target received from barrage.
    let received = received.lock().unwrap();
    let ours: std::collections::BTreeSet<String> = received
        .iter()
        .filter(|id| *id != "mine")
        .cloned()
        .collect();
    assert_eq!(received.iter().filter(|id| *id == "mine").count(), 30);
    assert_eq!(sampled.len(), 30);
    assert_eq!(sampled, ours);
}

#[test]
fn a_for_ever_loop_of_instant_failures_still_stops_at_the_deadline() {
    // The name does not resolve, so every request fails without awaiting anything: the
    // client must still yield, or the worker would never see its deadline.
    let steps = vec![Step::ForEver {
        steps: vec![Step::Request(get("/", 0))],
    }];
    let mut plan = scenario_plan(
        "127.0.0.1:9".parse().unwrap(),
        &["t"],
        steps,
        Workload::closed(1, Some(Duration::from_millis(300)), None),
    );
    plan.target = Target::parse("http://barrage-test.invalid:80").unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(run(&plan, &RunControl::default()));
    });
    let outcome = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the run ends at its deadline")
        .unwrap();
    let s = outcome.metrics.sessions;
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    assert_eq!((s.started, s.interrupted), (1, 1), "{s:?}");
    assert!(outcome.metrics.tags[0].error_count() > 100);
}

#[test]
fn arrivals_queued_behind_an_overloaded_worker_count_as_started_and_interrupted() {
    // A refused port: sessions fail fast and hold no sockets, so 40,000 arrivals in a second
    // overload one worker without exhausting this test process's file descriptors.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let mut plan = open_plan(
        addr,
        "/",
        Workload::open(phases(1, 40_000.0), None, Duration::ZERO),
    );
    plan.options.threads = Some(1);
    let outcome = run(&plan, &RunControl::default()).unwrap();
    let s = outcome.metrics.sessions;
    // Every arrival is accounted for: it started (then completed, failed or was cut off) or
    // was dropped — even those whose client task never got to run before the hard stop.
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    assert!(s.interrupted <= s.started, "{s:?}");
    // The worker must have taken a large share of the arrivals (a machine shared with other
    // builds starts 10–20k of them in the second), and never more than were planned.
    assert!(s.started > 5_000, "40,000 planned arrivals: {s:?}");
    assert!(
        s.started + s.dropped <= 40_000,
        "40,000 planned arrivals: {s:?}"
    );
}

#[test]
fn idle_paced_clients_at_the_deadline_are_not_interrupted_sessions() {
    let target = target();
    let mut plan = open_plan(
        target.addr(),
        "/",
        Workload::open(phases(1, 1.0), None, Duration::ZERO),
    );
    // Paced: 100 iterations/s over 20 clients that mostly sleep until their next slot.
    plan.workload = Workload::paced(100.0, 20, Some(Duration::from_secs(1)), None);
    let outcome = run(&plan, &RunControl::default()).unwrap();
    let s = outcome.metrics.sessions;
    assert_eq!(s.started, s.completed + s.failed + s.interrupted, "{s:?}");
    // Clients waiting for a slot are not in a session: at most the one or two in flight.
    assert!(s.interrupted <= 2, "{s:?}");
    assert!((95..=101).contains(&s.started), "{s:?}");
    target.shutdown();
}
