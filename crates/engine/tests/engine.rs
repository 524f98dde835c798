//! Engine integration tests: plans executed against the real bundled target on a free port.

use barrage_engine::{run, RunControl};
use barrage_plan::*;
use std::time::Duration;

fn target() -> barrage_target::RunningTarget {
    barrage_target::spawn(barrage_target::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: Some(1),
    })
    .expect("target starts")
}

fn open_plan(addr: std::net::SocketAddr, path: &str, workload: OpenArrivals) -> Plan {
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "open".into(),
        target: Target::parse(&format!("http://{addr}")).unwrap(),
        options: TestOptions {
            threads: Some(2),
            ..TestOptions::default()
        },
        workload: Workload::OpenArrivals(workload),
        tags: vec!["t".into()],
        sessions: vec![Session {
            name: "s".into(),
            weight: 1,
            steps: vec![Step::Request(RequestStep::simple(Method::Get, path, 0)); 2],
        }],
        data_sources: vec![],
    }
}

fn phases(secs: u64, rate: f64) -> Vec<ArrivalPhase> {
    vec![ArrivalPhase {
        duration: Duration::from_secs(secs),
        rate,
        ramp_to: None,
    }]
}

#[test]
fn open_arrivals_follow_the_rate_and_every_session_completes() {
    let target = target();
    let plan = open_plan(
        target.addr(),
        "/delay/10",
        OpenArrivals {
            phases: phases(3, 100.0),
            max_clients: None,
            grace_period: Duration::from_secs(5),
        },
    );
    let outcome = run(&plan, &RunControl::default()).unwrap();
    let s = outcome.metrics.sessions;
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
        OpenArrivals {
            phases: phases(1, 200.0),
            max_clients: Some(10),
            grace_period: Duration::from_secs(3),
        },
    );
    let outcome = run(&plan, &RunControl::default()).unwrap();
    let s = outcome.metrics.sessions;
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
        OpenArrivals {
            phases: phases(1, 20.0),
            max_clients: None,
            grace_period: Duration::from_millis(300),
        },
    );
    let started = std::time::Instant::now();
    let outcome = run(&plan, &RunControl::default()).unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "the grace period bounds the run"
    );
    let s = outcome.metrics.sessions;
    assert!(s.started > 0);
    assert_eq!((s.completed, s.interrupted), (0, s.started), "{s:?}");
    target.shutdown();
}
