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
fn jwts_in_recorded_cookies_are_resigned_and_other_cookies_left_to_the_jar() {
    let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSIsImV4cCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJl";
    let har = format!(
        r#"{{"log":{{"version":"1.2","entries":[{{"startedDateTime":"2026-01-01T10:00:00.000Z",
        "request":{{"method":"GET","url":"http://cookies.recorded.test/me",
          "headers":[{{"name":"Cookie","value":"theme=dark; session={token}"}}]}},
        "response":{{"status":200}}}}]}}}}"#
    );
    let har = barrage_har::parse_har("c.har", har.as_bytes()).unwrap();
    let mut hosts = HostMap::default();
    hosts.add("cookies.recorded.test=127.0.0.1:8080").unwrap();
    let recording = Recording::new("c.har", &har, &hosts, true).unwrap();
    let jwt = JwtOptions {
        algorithm: JwtAlgorithm::HS256,
        key: "k".into(),
        lifetime: None,
        claims: vec![],
    };
    let headers = |transforms: Transforms| {
        let plan = replay_plan(&recording, &options(1.0, 1, transforms));
        plan.validate().unwrap();
        let request = plan.sessions[0]
            .steps
            .iter()
            .find_map(|s| match s {
                Step::Request(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        serde_json::to_string(&request.headers).unwrap()
    };
    // Re-signing: the session cookie goes out as a re-signed token, the theme from the jar.
    let resigned = headers(Transforms {
        jwt: Some(jwt),
        ..Transforms::default()
    });
    assert!(resigned.contains("Cookie"), "{resigned}");
    assert!(resigned.contains("session="), "{resigned}");
    assert!(resigned.contains("jwt_1"), "{resigned}");
    assert!(!resigned.contains(token), "{resigned}");
    assert!(!resigned.contains("theme"), "{resigned}");
    // Without re-signing, cookies are the jar's alone.
    let plain = headers(Transforms::default());
    assert!(!plain.contains("Cookie"), "{plain}");
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
