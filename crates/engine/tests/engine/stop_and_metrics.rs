//! Stopping a run (graceful with the grace period, then at once), custom metrics and
//! iteration durations recorded by the engine, and live snapshots.

use super::{run_plan, target};
use crate::support::*;
use barrage_engine::{run, RunControl};
use barrage_metrics::{CustomValues, RunMetrics};
use barrage_plan::*;
use std::time::{Duration, Instant};

fn slow_plan(addr: std::net::SocketAddr) -> Plan {
    let steps = vec![Step::Request(get("/delay/800", 0))];
    scenario_plan(addr, &["slow"], steps, closed(2, 1000))
}

/// Runs `plan` on a thread; `steer` gets the control once it started.
fn run_steered(plan: Plan, steer: impl FnOnce(&RunControl)) -> (RunMetrics, Duration) {
    let control = RunControl::default();
    let started = Instant::now();
    let handle = {
        let control = control.clone();
        std::thread::spawn(move || run(&plan, &control).expect("run"))
    };
    steer(&control);
    let outcome = handle.join().expect("engine thread");
    assert!(outcome.interrupted);
    (outcome.metrics, started.elapsed())
}

#[test]
fn a_graceful_stop_lets_running_iterations_finish() {
    let target = target();
    let (metrics, took) = run_steered(slow_plan(target.addr()), |control| {
        std::thread::sleep(Duration::from_millis(300));
        control.stop.stop();
    });
    let s = metrics.sessions;
    assert_eq!((s.started, s.completed, s.interrupted), (2, 2, 0), "{s:?}");
    assert_eq!(metrics.tags[0].status.get(200), 2);
    assert!(took >= Duration::from_millis(750), "{took:?}");
    target.shutdown();
}

#[test]
fn stop_now_cuts_running_iterations_off() {
    let target = target();
    let (metrics, took) = run_steered(slow_plan(target.addr()), |control| {
        std::thread::sleep(Duration::from_millis(300));
        control.stop.stop();
        std::thread::sleep(Duration::from_millis(100));
        control.stop.stop_now();
    });
    let s = metrics.sessions;
    assert_eq!((s.started, s.completed, s.interrupted), (2, 0, 2), "{s:?}");
    assert!(took < Duration::from_millis(700), "{took:?}");
    target.shutdown();
}

#[test]
fn custom_metrics_and_iteration_durations_are_recorded() {
    let target = target();
    let add = |metric: &str, input: SampleInput| {
        Step::Add(MetricSample {
            metric: metric.into(),
            input,
        })
    };
    let steps = vec![
        Step::Request(get("/delay/20", 0)),
        add(
            "ok",
            SampleInput::Condition {
                condition: Condition {
                    value: Value::LastStatus,
                    op: CompareOp::Eq,
                    expected: Value::Number { value: 200.0 },
                },
            },
        ),
        add(
            "took",
            SampleInput::LastResponse {
                timing: ResponseTiming::Duration,
            },
        ),
        add(
            "took",
            SampleInput::Value {
                value: Value::text("5"),
            },
        ),
    ];
    let mut plan = scenario_plan(target.addr(), &["t"], steps, closed(2, 10));
    plan.metrics.custom = vec![
        MetricDecl {
            name: "ok".into(),
            kind: MetricKind::Rate,
        },
        MetricDecl {
            name: "took".into(),
            kind: MetricKind::Trend,
        },
    ];
    let metrics = run_plan(&plan);
    let ok = &metrics.custom.metrics[0].values;
    assert!(
        matches!(
            ok,
            CustomValues::Rate {
                trues: 10,
                samples: 10
            }
        ),
        "{ok:?}"
    );
    let CustomValues::Trend(took) = &metrics.custom.metrics[1].values else {
        panic!("{:?}", metrics.custom)
    };
    assert_eq!(took.count(), 20);
    assert_eq!(took.min, 5.0);
    assert!(
        took.max >= 20.0,
        "the response took at least 20 ms: {}",
        took.max
    );
    assert_eq!(metrics.iteration_duration.count(), 10);
    assert!(metrics.iteration_duration.min_micros() >= 20_000);
    target.shutdown();
}

#[test]
fn snapshots_are_published_while_the_run_goes_on() {
    let target = target();
    let steps = vec![Step::Request(get("/delay/50", 0))];
    let workload = Workload::closed(2, Some(Duration::from_millis(1500)), None);
    let plan = scenario_plan(target.addr(), &["t"], steps, workload);
    let control = RunControl::default();
    control.snapshots.enable();
    let handle = {
        let control = control.clone();
        std::thread::spawn(move || run(&plan, &control).expect("run"))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let live = loop {
        std::thread::sleep(Duration::from_millis(100));
        match control.snapshots.merged() {
            Some(live) if live.metrics.total().responses() > 0 => break live,
            _ => assert!(Instant::now() < deadline, "no snapshot with responses"),
        }
    };
    let outcome = handle.join().expect("engine thread");
    assert!(live.metrics.total().responses() <= outcome.metrics.total().responses());
    assert!(live.as_of < Duration::from_millis(1500), "{:?}", live.as_of);
    target.shutdown();
}
