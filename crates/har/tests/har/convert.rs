//! Conversion into DSL test cases: snapshots of the generated scripts, and the scripts
//! compile into plans as they are.

use super::{compare_snapshot, fixture, fixtures};
use barrage_har::{convert, ConvertOptions, HostMap, Recording};
use barrage_plan::{Body, Extractor, Step, Value};

fn converted(name: &str, skip: &[&str], correlate: bool) -> barrage_har::Converted {
    let har = fixture(&format!("{name}.har"));
    let mut hosts = HostMap::default();
    for host in skip {
        hosts.skip(host);
    }
    let recording = Recording::new(name, &har, &hosts, false).unwrap();
    convert(
        &recording,
        &ConvertOptions {
            script_stem: name.to_string(),
            source: format!("{name}.har"),
            correlate,
        },
    )
}

/// Writes the converted test case into a fresh directory and compiles it into a plan.
fn plan_of(name: &str, converted: &barrage_har::Converted) -> barrage_plan::Plan {
    let dir = std::env::temp_dir().join(format!("barrage-har-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join(format!("{name}.js"));
    std::fs::write(&script, &converted.script).unwrap();
    for (file, bytes) in &converted.files {
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    let plan = barrage_script::compile_file(&script)
        .unwrap_or_else(|e| panic!("{e}\n{}", converted.script));
    std::fs::remove_dir_all(&dir).unwrap();
    plan
}

#[test]
fn converted_scripts_match_their_snapshots() {
    for (name, skip) in [
        ("browser_page_load", &["www.google-analytics.com"][..]),
        ("login_flow", &[][..]),
        ("token_pings", &[][..]),
    ] {
        let out = converted(name, skip, true);
        compare_snapshot(&format!("{name}.js"), out.script.as_bytes());
        for (file, bytes) in &out.files {
            compare_snapshot(file, bytes);
        }
    }
}

#[test]
fn exclude_tags_in_a_converted_script_leave_static_assets_out() {
    let mut out = converted("browser_page_load", &["www.google-analytics.com"], true);
    let all = plan_of("browser_page_load_excluded", &out);
    assert!(all.tags.iter().any(|t| t.starts_with("static ")));
    out.script = out.script.replacen(
        "exclude_tags: [] ",
        "exclude_tags: [\"static image\", \"static js\"] ",
        1,
    );
    let some = plan_of("browser_page_load_excluded", &out);
    let requests = |plan: &barrage_plan::Plan| -> Vec<String> {
        plan.sessions
            .iter()
            .flat_map(|s| s.steps.iter())
            .filter_map(|step| match step {
                Step::Request(r) => Some(plan.tags[r.tag].clone()),
                _ => None,
            })
            .collect()
    };
    let kept = requests(&some);
    assert!(kept.iter().any(|t| t == "static css"), "{kept:?}");
    assert!(
        !kept.iter().any(|t| t == "static image" || t == "static js"),
        "{kept:?}"
    );
    assert_eq!(kept.len() + 3, requests(&all).len(), "{kept:?}");
    assert_eq!(some.options.excluded.as_ref().map(|e| e.requests), Some(3));
    assert_eq!(
        all.options.excluded, None,
        "an empty list leaves nothing out"
    );
    out.script = out
        .script
        .replacen("[\"static image\", \"static js\"]", "[\"static\"]", 1);
    let none = plan_of("browser_page_load_excluded", &out);
    assert!(!requests(&none).iter().any(|t| t.starts_with("static")));
    // Recordings without static assets get no exclude_tags.
    assert!(!converted("token_pings", &[], true)
        .script
        .contains("exclude_tags"));
}

#[test]
fn the_login_flow_correlates_token_ids_and_keeps_large_bodies_in_files() {
    let out = converted("login_flow", &[], true);
    let plan = plan_of("login_flow", &out);
    assert!(plan.options.cookies, "cookies come from the client's jar");
    let steps = &plan.sessions[0].steps;
    let requests: Vec<&barrage_plan::RequestStep> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Request(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 7);
    let extracted: Vec<(&str, &Extractor)> = requests[0]
        .extraction
        .iter()
        .map(|e| (e.var.as_str(), &e.extractor))
        .collect();
    assert_eq!(
        extracted,
        [
            (
                "token",
                &Extractor::JsonPath {
                    path: "$.token".into()
                }
            ),
            (
                "user_id",
                &Extractor::JsonPath {
                    path: "$.user.id".into()
                }
            ),
        ]
    );
    assert_eq!(
        requests[1].path,
        "/anything/api/users/:user_id/orders?limit=10"
    );
    let authorization = requests[1]
        .headers
        .iter()
        .find(|h| h.name == "Authorization")
        .unwrap();
    assert_eq!(
        authorization.value,
        Value::Concat {
            parts: vec![
                Value::text("Bearer "),
                Value::Var {
                    name: "token".into()
                }
            ]
        }
    );
    assert!(requests[1]
        .headers
        .iter()
        .all(|h| !h.name.eq_ignore_ascii_case("cookie")));
    // The order's id, not its whole `Location`, which only starts the next path.
    let order: Vec<&str> = requests[2]
        .extraction
        .iter()
        .map(|e| e.var.as_str())
        .collect();
    assert_eq!(order, ["orderId"]);
    assert_eq!(requests[3].path, "/anything/api/orders/:orderId");
    assert!(matches!(&requests[2].body, Some(Body::Raw { bytes }) if bytes.len() > 2048));
    assert_eq!(out.files.len(), 1);
    // Waits are the recorded gaps.
    assert!(steps.iter().any(|s| matches!(s, Step::Wait(barrage_plan::Wait::Fixed { seconds }) if (*seconds - 1.161).abs() < 1e-9)));
}

#[test]
fn without_correlation_requests_are_sent_as_recorded() {
    let out = converted("token_pings", &[], false);
    assert!(!out.script.contains("getVar"));
    assert!(out
        .script
        .contains("/ping?token=9f8a1c2b3d4e5f60718293a4b5c6d7e8"));
    let plan = plan_of("token_pings_plain", &out);
    assert_eq!(plan.sessions.len(), 1);
}

#[test]
fn the_browser_page_load_plans_with_a_session_per_page() {
    let out = converted("browser_page_load", &["www.google-analytics.com"], true);
    let plan = plan_of("browser_page_load", &out);
    let names: Vec<&str> = plan.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Shop – Home", "Shop – Product 1234567"]);
    assert!(plan.tags.iter().any(|t| t == "static css"));
    let _ = fixtures();
}
