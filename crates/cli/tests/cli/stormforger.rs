//! StormForger test cases run against the bundled target: the published heartbeat (only its
//! target changed, here by `--target`) and a multi-file test case with `--define`.

use crate::support::*;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

fn script_fixture(path: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../script/tests/fixtures")
        .join(path)
}

#[test]
fn the_published_heartbeat_runs_and_its_tokens_flow() {
    let _heavy = heavy_lock();
    let target = Target::start_with(&["--threads", "2"]);
    let json = scratch_file("sf-heartbeat.json", b"");
    let script = script_fixture("sf_heartbeat.js");
    let out = barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--target",
            &target.url("/"),
            "--json",
            json.to_str().unwrap(),
            "--threads",
            "2",
        ],
        Duration::from_secs(60),
    );
    out.expect_success();
    // The unused param is one warning line, naming the place.
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("warning:"))
        .collect();
    assert!(
        warnings
            .iter()
            .filter(|l| l.contains("param `id` is not used"))
            .count()
            == 1
            && warnings.iter().all(|l| l.contains("sf_heartbeat.js:")),
        "{}",
        out.stderr
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completed = u(&s["sessions"], "completed");
    assert!(completed > 0, "{s:#}");
    let tokens = u(tag(&s, "get_token"), "requests");
    let pings = u(tag(&s, "ping"), "requests");
    assert_eq!(tokens, completed, "{s:#}");
    assert_eq!(pings, 3 * completed, "three pings per session");
    // Tokens flowed: the target answers 401 to a ping without an issued token.
    assert_eq!(
        s["status_codes"].get("401"),
        None,
        "{:#}",
        s["status_codes"]
    );
    assert_eq!(u(&s["status_codes"], "200"), tokens + pings);
    let check = s["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "token_received")
        .expect("the check is reported");
    assert_eq!(u(check, "failed"), 0, "{check:#}");
    assert_eq!(u(check, "passed"), tokens);
}

#[test]
fn a_multi_file_test_case_takes_defines_from_the_command_line() {
    let target = Target::start();
    let script = script_fixture("sf_modules/index.mjs");
    let target_json = format!("\"{}\"", target.url("").trim_end_matches('/'));
    let define = format!("defines.target={target_json}");
    let out = barrage(
        &[
            "plan",
            script.to_str().unwrap(),
            "--define",
            "defines.env=prod",
            "--define",
            &define,
        ],
        Duration::from_secs(30),
    );
    out.expect_success();
    let plan = out.json();
    assert_eq!(plan["target"]["port"], target.addr.port(), "{plan:#}");
    assert!(out.stdout.contains("/hello?env=prod"), "{}", out.stdout);
    let bad = barrage(
        &["plan", script.to_str().unwrap(), "--define", "noequals"],
        Duration::from_secs(30),
    );
    assert_eq!(bad.code(), Some(2));
    assert!(
        bad.stderr.trim().lines().count() == 1 && bad.stderr.contains("--define noequals"),
        "{}",
        bad.stderr
    );
    let broken = barrage(
        &[
            "plan",
            script_fixture("sf_broken/index.mjs").to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(broken.code(), Some(2));
    assert!(
        broken.stderr.contains("sf_broken/modules/invalid.js:3:"),
        "{}",
        broken.stderr
    );
}

#[test]
fn excluded_tags_never_reach_the_wire() {
    let (addr, seen) = crate::hey::recording_server();
    let source = format!(
        r#"definition.setTarget("http://{addr}");
definition.setArrivalPhases([{{ duration: 1, rate: 4 }}]);
definition.setTestOptions({{ exclude_tags: ["asset"] }});
definition.session("page", function (session) {{
  session.get("/page", {{ tag: "page" }});
  session.get("/app.css", {{ tag: "asset" }});
  session.get("/plain");
}});
"#
    );
    let script = scratch_file("sf-exclude-tags.js", source.as_bytes());
    let json = scratch_file("sf-exclude-tags.json", b"");
    let out = barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    out.expect_success();
    assert!(
        out.stderr.contains("note: `definition.setTestOptions`: `exclude_tags` leaves out 1 request definition (tags: asset)"),
        "{}",
        out.stderr
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completed = u(&s["sessions"], "completed");
    assert!(completed > 0, "{s:#}");
    let paths: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.path.clone())
        .collect();
    let count = |path: &str| paths.iter().filter(|p| *p == path).count() as u64;
    assert_eq!(count("/app.css"), 0, "{paths:?}");
    assert_eq!(count("/page"), completed, "{paths:?}");
    assert_eq!(count("/plain"), completed, "{paths:?}");
    // Left out, not failed: no errors, and no row for the excluded tag.
    assert_eq!(u(&s, "errors"), 0, "{s:#}");
    assert_eq!(u(&s, "requests"), 2 * completed, "{s:#}");
    assert!(
        s["tags"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["tag"] != "asset"),
        "{s:#}"
    );
}

#[test]
fn stormforger_meanings_reach_the_wire() {
    let target = Target::start();
    let source = format!(
        r#"definition.setTarget("{url}");
definition.setArrivalPhases([{{ duration: 1, rate: 3 }}]);
definition.setAuthentication({{ username: "demo", password: "s3cret" }});
definition.session("wire", function (session) {{
  session.post("/echo?q=:q", {{
    params: {{ q: "a/b&c" }},
    payload: {{ user: "demo x", n: 1 }},
    gzip: true,
    extraction: {{ jsonpath: {{
      rq: "raw_query", body: "body", auth: "headers.authorization",
      ae: "$.headers['accept-encoding']", ct: "$.headers['content-type']",
      ce: "$.headers['content-encoding']",
    }} }},
  }});
  session.check("params as written", session.getVar("rq"), "==", "q=a/b&c");
  session.check("object payload form-encoded", session.getVar("body"), "==", "user=demo%20x&n=1");
  session.check("basic auth", session.getVar("auth"), "==", "Basic ZGVtbzpzM2NyZXQ=");
  session.check("gzip asks for a gzip response", session.getVar("ae"), "==", "gzip");
  session.check("form content type", session.getVar("ct"), "==", "application/x-www-form-urlencoded");
  session.check("body sent uncompressed", session.getVar("ce"), "==", "");
  session.get("/base64/PGZlZWQ-PGVudHJ5IGlkPSJlMSI-PHRpdGxlPkZpcnN0PC90aXRsZT48L2VudHJ5PjwvZmVlZD4=", {{
    tag: "xml",
    extraction: {{ xpath: {{ title: "/feed/entry/title", id: "//entry/@id" }} }},
  }});
  session.check("xpath title", session.getVar("title"), "==", "First");
  session.check("xpath attribute", session.getVar("id"), "==", "e1");
}});
"#,
        url = target.url("")
    );
    let script = scratch_file("sf-wire.js", source.as_bytes());
    let json = scratch_file("sf-wire.json", b"");
    barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--seed",
            "7",
        ],
        Duration::from_secs(60),
    )
    .expect_success();
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let checks = s["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 8, "{checks:#?}");
    for check in checks {
        assert!(u(check, "passed") > 0, "{check:#}");
        assert_eq!(u(check, "failed"), 0, "{check:#}");
    }
}

/// Runs a 1 s script of `/delay/30` requests tagged `slow` with `--nfr` requirements.
fn run_with_nfr(target: &Target, requirements: &str) -> Output {
    let script = scratch_file(
        "sf-nfr.js",
        format!(
            r#"definition.setTarget("{url}");
definition.setArrivalPhases([{{ duration: 1, rate: 5 }}]);
definition.session("s", function (session) {{
  session.get("/delay/30", {{ tag: "slow" }});
  session.check("ok", session.lastHttpStatus(), "==", 200);
}});
"#,
            url = target.url("")
        )
        .as_bytes(),
    );
    let nfr = scratch_file(
        "sf.nfr.yml",
        format!("version: \"0.1\"\nrequirements:\n{requirements}").as_bytes(),
    );
    let json = scratch_file("sf-nfr.json", b"");
    barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--nfr",
            nfr.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
}

#[test]
fn nfr_requirements_are_evaluated_like_thresholds() {
    let target = Target::start();
    let passing = run_with_nfr(
        &target,
        "- test.cluster.utilization.cpu: {select: average, test: [\"<=\", 60]}\n\
         - http.latency: {select: {type: percentile, value: 99}, where: {tag: slow}, test: [\">=\", 30]}\n\
         - http.latency: {enabled: false, select: {type: percentile, value: 99}, test: [\"<\", 1]}\n\
         - http.error_ratio: {test: [\"<\", 0.01]}\n\
         - checks: {test: [\">=\", 0.99]}\n\
         - test.completed: true\n\
         - test.duration: [\">=\", 0.5]\n",
    );
    passing.expect_success();
    assert!(passing.stdout.contains("THRESHOLDS"), "{}", passing.stdout);
    assert!(
        passing.stdout.contains("http_req_duration{tag:slow}")
            && passing.stdout.contains("run_completed")
            && passing.stdout.contains("run_duration"),
        "{}",
        passing.stdout
    );
    assert!(
        passing.stderr.contains("test.cluster.utilization.cpu"),
        "{}",
        passing.stderr
    );
    let failing = run_with_nfr(
        &target,
        "- http.latency: {select: {type: percentile, value: 99}, test: [\"<\", 1]}\n",
    );
    assert_eq!(failing.code(), Some(99), "{}", failing.stderr);
    assert!(
        failing.stderr.contains("thresholds have failed"),
        "{}",
        failing.stderr
    );
    let bad = run_with_nfr(
        &target,
        "- http.latency: {where: {tag: nope}, test: [\"<\", 1]}\n",
    );
    assert_eq!(bad.code(), Some(2));
    assert!(
        bad.stderr.contains("sf.nfr.yml") && bad.stderr.contains("nope"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_run_shorter_than_the_required_test_duration_fails_its_nfr() {
    let target = Target::start();
    let out = run_with_nfr(&target, "- test.duration: [\">\", 600]\n");
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("run_duration"), "{}", out.stdout);
}

#[test]
fn definition_env_reads_the_environment_at_plan_time() {
    let script = scratch_file(
        "sf-env.js",
        b"definition.setTarget(definition.env('SF_TARGET') || 'http://127.0.0.1:1');\n\
definition.setArrivalPhases([{ duration: 1, rate: 1 }]);\n\
definition.session('s', function (s) { s.get('/' + (definition.env('SF_PATH') || 'unset')); });\n",
    );
    let plan = |vars: &[(&str, &str)]| -> Value {
        let mut command = std::process::Command::new(BIN);
        command.args(["plan", script.to_str().unwrap()]);
        command.env_remove("SF_TARGET").env_remove("SF_PATH");
        for (k, v) in vars {
            command.env(k, v);
        }
        let out = command.output().expect("run barrage plan");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let unset = plan(&[]);
    assert_eq!(unset["target"]["port"], 1);
    assert_eq!(unset["tags"][0], "GET /unset");
    let set = plan(&[("SF_TARGET", "http://127.0.0.1:2"), ("SF_PATH", "from-env")]);
    assert_eq!(set["target"]["port"], 2);
    assert_eq!(set["tags"][0], "GET /from-env");
}

#[test]
fn the_stormforger_example_plans_with_its_requirements() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/stormforger");
    let out = barrage(
        &[
            "plan",
            dir.join("index.mjs").to_str().unwrap(),
            "--define",
            "defines.pings=5",
            "--nfr",
            dir.join("requirements.yml").to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    out.expect_success();
    let plan = out.json();
    assert_eq!(
        plan["metrics"]["thresholds"].as_array().unwrap().len(),
        4,
        "{plan:#}"
    );
    assert!(out.stdout.contains("\"value\": 5.0"), "{}", out.stdout);
    assert!(out.stderr.contains("cluster"), "{}", out.stderr);
}

/// NFR `where.status` filters latency by response status (kept per status for it): slow
/// 200s and fast 500s give different verdicts on the same run's latency.
#[test]
fn nfr_latency_filtered_by_status_judges_only_those_responses() {
    let target = Target::start();
    let run = |requirement: &str| {
        let script = scratch_file(
            "sf-nfr-status.js",
            format!(
                r#"definition.setTarget("{url}");
definition.setArrivalPhases([{{ duration: 1, rate: 4 }}]);
definition.session("s", function (session) {{
  session.get("/delay/300", {{ tag: "slow" }});
  session.get("/status/500", {{ tag: "failing" }});
}});
"#,
                url = target.url("")
            )
            .as_bytes(),
        );
        let nfr = scratch_file(
            "sf-status.nfr.yml",
            format!("version: \"0.1\"\nrequirements:\n{requirement}").as_bytes(),
        );
        barrage(
            &[
                "run",
                script.to_str().unwrap(),
                "--nfr",
                nfr.to_str().unwrap(),
            ],
            Duration::from_secs(60),
        )
    };
    let fast_errors = run(
        "- http.latency: {select: maximum, where: {status: [\">=\", 500]}, test: [\"<\", 250]}\n",
    );
    fast_errors.expect_success();
    assert!(
        fast_errors
            .stdout
            .contains("http_req_duration{status:>=500}"),
        "{}",
        fast_errors.stdout
    );
    let slow_successes = run(
        "- http.latency: {select: maximum, where: {status: [\"<\", 500]}, test: [\"<\", 250]}\n",
    );
    assert_eq!(slow_successes.code(), Some(99), "{}", slow_successes.stderr);
}
