//! Recordings compiled into replay plans: a snapshot of the login flow's plan (recorded
//! arrivals, waits, correlation, comparisons, a re-signed JWT), and speed and loops.

use super::{compare_snapshot, fixture};
use barrage_har::{replay_plan, HostMap, JwtOptions, Recording, ReplayOptions, Transforms};
use barrage_plan::{Binding, JwtAlgorithm, Step, Value};
use std::time::Duration;

fn options(speed: f64, loops: u32, transforms: Transforms) -> ReplayOptions {
    ReplayOptions {
        name: "login_flow".into(),
        speed,
        loops,
        correlate: true,
        compare: true,
        transforms,
    }
}

fn recording(name: &str, host: &str) -> Recording {
    let mut hosts = HostMap::default();
    hosts.add(&format!("{host}=127.0.0.1:8080")).unwrap();
    Recording::new(name, &fixture(name), &hosts, true).unwrap()
}

#[test]
fn the_login_flow_replay_plan_matches_its_snapshot() {
    let transforms = Transforms {
        jwt: Some(JwtOptions {
            algorithm: JwtAlgorithm::HS256,
            key: "test-secret".into(),
            lifetime: Some(Duration::from_secs(600)),
            claims: vec![("role".into(), "\"admin\"".into())],
        }),
        replace: vec![("red+shoes".into(), "blue+socks".into())],
        set_headers: vec![("X-Test-Run".into(), "replay".into())],
        remove_headers: vec!["Origin".into()],
        shift_timestamps: true,
    };
    let plan = replay_plan(
        &recording("login_flow.har", "shop.recorded.test"),
        &options(1.0, 1, transforms),
    );
    plan.validate().unwrap();
    // The token the login returned is re-signed right after the login, and sent from then on.
    let steps = &plan.sessions[0].steps;
    let bind = steps
        .iter()
        .position(|s| {
            matches!(
                s,
                Step::Bind {
                    binding: Binding::Jwt(_),
                    ..
                }
            )
        })
        .unwrap();
    let Step::Bind {
        binding: Binding::Jwt(jwt),
        ..
    } = &steps[bind]
    else {
        unreachable!()
    };
    assert_eq!(
        jwt.token,
        Value::Var {
            name: "token".into()
        }
    );
    assert!(
        matches!(steps[bind - 1], Step::Check(_)),
        "after the login's checks"
    );
    let requests: Vec<&barrage_plan::RequestStep> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Request(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(
        requests[6].body,
        Some(barrage_plan::Body::Raw {
            bytes: b"q=blue+socks&page=2".to_vec()
        })
    );
    assert!(requests
        .iter()
        .all(|r| r.headers.iter().all(|h| h.name != "Origin")));
    assert!(requests
        .iter()
        .all(|r| r.headers.iter().any(|h| h.name == "X-Test-Run")));
    let text = serde_json::to_string_pretty(&plan).unwrap() + "\n";
    compare_snapshot("login_flow.replay.json", text.as_bytes());
}

#[test]
fn speed_scales_offsets_and_think_times_and_loops_repeat_the_recording() {
    let mut hosts = HostMap::default();
    hosts.add("www.recorded.test=127.0.0.1:8080").unwrap();
    hosts.skip("www.google-analytics.com");
    let recording =
        Recording::new("b.har", &fixture("browser_page_load.har"), &hosts, true).unwrap();
    let plan = replay_plan(&recording, &options(2.0, 3, Transforms::default()));
    let barrage_plan::Admission::Recorded { arrivals } = &plan.workload.admission else {
        panic!("{:?}", plan.workload)
    };
    let offsets: Vec<(u128, usize)> = arrivals
        .iter()
        .map(|a| (a.offset.as_millis(), a.session))
        .collect();
    // Pages at 0 and 4.2 s, the recording 4.616 s long (+1 ms between rounds), twice as fast.
    assert_eq!(
        offsets,
        [
            (0, 0),
            (2100, 1),
            (2308, 0),
            (4408, 1),
            (4617, 0),
            (6717, 1)
        ]
    );
    let waits: Vec<f64> = plan.sessions[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Wait(barrage_plan::Wait::Fixed { seconds }) => Some(*seconds),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [0.1105]);
}
