//! End-to-end tests of `barrage run` and `barrage plan`: scripts compiled once, run natively
//! against the bundled target.

use crate::support::*;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Writes the heartbeat scenario (and its CSV) aimed at `target`, returns the script path.
pub(crate) fn heartbeat_script(target: &Target, rate: u32, seconds: u32) -> PathBuf {
    let csv = scratch_file(
        "channels.csv",
        b"id,name\n1,news\n2,sports\n3,movies\n4,kids\n",
    );
    let script = format!(
        r#"definition.setTarget("http://{addr}");
definition.setArrivalPhases([{{ duration: {seconds}, rate: {rate} }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 10 }});
definition.session("heartbeat", function (session) {{
  var row = session.ds.pickFrom(session.ds.loadStructured("{csv}"));
  session.post("/random/get_token?channel=:id&delay=20", {{
    tag: "get_token",
    params: {{ id: row.get("id") }},
    extraction: {{ jsonpath: {{ token: "$.token" }} }},
  }});
  session.assert("token present", session.getVar("token"), "!=", "");
  session.times(session.ds.generate("random_number", {{ range: [3, 6] }}), function (s) {{
    s.get("/ping?token=:token&delay=20", {{ tag: "ping" }});
    s.waitExp(0.2);
  }});
}});
"#,
        addr = target.addr,
        csv = csv.file_name().unwrap().to_string_lossy(),
    );
    scratch_file("heartbeat.js", script.as_bytes())
}

#[test]
fn heartbeat_scenario_runs_end_to_end() {
    let _heavy = heavy_lock();
    let target = Target::start_with(&["--threads", "2"]);
    let script = heartbeat_script(&target, 100, 10);
    let json = scratch_file("heartbeat-summary.json", b"");
    let out = barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--seed",
            "42",
            "--threads",
            "2",
        ],
        Duration::from_secs(60),
    );
    out.expect_success();
    assert!(out.stdout.contains("get_token"), "{}", out.stdout);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sessions = &s["sessions"];
    let completed = u(sessions, "completed");
    assert!(completed > 0, "{s:#}");
    assert_eq!(
        u(sessions, "started"),
        completed,
        "every session ran to its end"
    );
    for counter in ["failed", "interrupted", "dropped"] {
        assert_eq!(u(sessions, counter), 0, "{counter}: {sessions:#}");
    }
    // Arrivals are Poisson (seeded): the achieved count must be within 5 % of the plan.
    let achieved = u(&s["arrivals"], "achieved") as f64;
    let planned = f(&s["arrivals"], "planned");
    assert!(
        (achieved / planned - 1.0).abs() < 0.05,
        "{:#}",
        s["arrivals"]
    );
    // One token request per session; 3 to 6 pings each.
    let tokens = u(tag(&s, "get_token"), "requests");
    let pings = u(tag(&s, "ping"), "requests");
    assert_eq!(tokens, completed);
    assert!(
        pings >= 3 * completed && pings <= 6 * completed,
        "{pings} pings, {completed} sessions"
    );
    // Tokens really flowed: the target answers 401 to an unknown token.
    assert_eq!(
        s["status_codes"].get("401"),
        None,
        "{:#}",
        s["status_codes"]
    );
    assert_eq!(u(&s["status_codes"], "200"), tokens + pings);
    assert_eq!(u(&s, "errors"), 0);
    let check = s["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "token present")
        .expect("the assert is reported");
    assert_eq!((u(check, "passed"), u(check, "failed")), (completed, 0));
    // Latency includes the target's 20 ms delay on every request.
    assert!(u(&tag(&s, "ping")["latency"], "min_us") >= 20_000);
}

#[test]
fn plan_command_prints_the_compiled_plan_with_overrides() {
    let target = Target::start();
    let script = heartbeat_script(&target, 100, 10);
    let out = barrage(
        &[
            "plan",
            script.to_str().unwrap(),
            "--rate-factor",
            "0.5",
            "--duration-limit",
            "2s",
            "--seed",
            "9",
        ],
        Duration::from_secs(30),
    );
    out.expect_success();
    let plan: Value = serde_json::from_str(&out.stdout).expect("plan JSON");
    assert_eq!(plan["workload"]["admission"]["kind"], "per_arrival");
    assert_eq!(plan["workload"]["schedule"][0]["duration"], 2000);
    assert_eq!(plan["workload"]["schedule"][0]["from"], 50.0);
    // The limit caps the whole test: arrivals run to it, so no grace period is left.
    assert_eq!(plan["workload"]["grace"]["end"], 0);
    assert_eq!(plan["options"]["seed"], 9);
    assert_eq!(plan["tags"], serde_json::json!(["get_token", "ping"]));
    // A limit past the 10 s of arrivals leaves the grace period (10 s) what remains of it.
    let out = barrage(
        &["plan", script.to_str().unwrap(), "--duration-limit", "14s"],
        Duration::from_secs(30),
    );
    out.expect_success();
    let plan: Value = serde_json::from_str(&out.stdout).expect("plan JSON");
    assert_eq!(plan["workload"]["schedule"][0]["duration"], 10_000);
    assert_eq!(plan["workload"]["grace"]["end"], 4_000);
    assert_eq!(plan["data_sources"][0]["rows"].as_array().unwrap().len(), 4);
}

#[test]
fn script_errors_are_one_line_with_their_location() {
    let script = scratch_file(
        "broken.js",
        b"definition.setTarget(\"http://127.0.0.1:1\");\ndefinition.setTargett(1);\n",
    );
    let out = barrage(&["run", script.to_str().unwrap()], Duration::from_secs(30));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("broken.js:2:"), "{}", lines[0]);
    assert!(lines[0].contains("setTargett"), "{}", lines[0]);

    let missing = barrage(&["run", "/no/such/script.js"], Duration::from_secs(30));
    assert_eq!(missing.code(), Some(2));
    assert!(
        missing.stderr.contains("/no/such/script.js"),
        "{}",
        missing.stderr
    );

    let plan = scratch_file("bad-plan.json", b"{\"format_version\": 1,\n \"name\": 3}");
    let bad = barrage(&["run", plan.to_str().unwrap()], Duration::from_secs(30));
    assert_eq!(bad.code(), Some(2));
    assert!(bad.stderr.contains("bad-plan.json:2:"), "{}", bad.stderr);
}

#[test]
fn overrides_are_validated() {
    let target = Target::start();
    let script = heartbeat_script(&target, 10, 1);
    for (args, needle) in [
        (vec!["--rate-factor", "0"], "--rate-factor"),
        (vec!["--duration-limit", "5parsecs"], "--duration-limit"),
        (vec!["--target", "ftp://x/"], "--target"),
    ] {
        let mut argv = vec!["plan", script.to_str().unwrap()];
        argv.extend(args);
        let out = barrage(&argv, Duration::from_secs(30));
        assert_eq!(out.code(), Some(2), "{argv:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{argv:?}: {}", out.stderr);
    }
}

/// A script with the given arrivals (1 s at `rate`), test options and session code, aimed at
/// `target_url`.
fn script_at(name: &str, target_url: &str, rate: u32, options: &str, sessions: &str) -> PathBuf {
    let source = format!(
        "definition.setTarget(\"{target_url}\");\n\
         definition.setArrivalPhases([{{ duration: 1, rate: {rate} }}]);\n\
         definition.setTestOptions({options});\n{sessions}"
    );
    scratch_file(name, source.as_bytes())
}

/// Runs `script` with `extra` arguments; the JSON summary.
fn run_summary(script: &std::path::Path, extra: &[&str]) -> Value {
    let json = scratch_file("summary.json", b"");
    let mut argv = vec![
        "run",
        script.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    argv.extend_from_slice(extra);
    barrage(&argv, Duration::from_secs(60)).expect_success();
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn the_same_seed_replays_every_clients_random_draws() {
    let target = Target::start();
    // Random session picks, loop counts and think times: under the same seed every arrival
    // gets the same draws, whichever order the responses come back in.
    let script = script_at(
        "seeded.js",
        &format!("http://{}", target.addr),
        150,
        "{ timeout: 5, gracePeriod: 10 }",
        r#"function body(tag) {
  return function (session) {
    session.times(session.ds.generate("random_number", { range: [1, 20] }), function (s) {
      s.get("/health", { tag: tag });
      s.waitUniform(0, 0.02);
    });
  };
}
definition.session("a", 1, body("a"));
definition.session("b", 2, body("b"));
"#,
    );
    let counts = |seed: &str| {
        let s = run_summary(&script, &["--seed", seed, "--threads", "2"]);
        assert_eq!(u(&s["sessions"], "interrupted"), 0, "{:#}", s["sessions"]);
        (
            u(&s["sessions"], "started"),
            u(tag(&s, "a"), "requests"),
            u(tag(&s, "b"), "requests"),
        )
    };
    let first = counts("11");
    assert!(first.1 > 0 && first.2 > 0, "{first:?}");
    assert_eq!(counts("11"), first, "(sessions, a requests, b requests)");
}

#[test]
fn target_override_sends_the_load_to_the_given_url() {
    let target = Target::start();
    // The script names a port nothing listens on; --target points at the real target.
    let script = script_at(
        "elsewhere.js",
        "http://127.0.0.1:9",
        20,
        "{ timeout: 5, gracePeriod: 5 }",
        r#"definition.session("one", function (session) { session.get("/health", { tag: "one" }); });"#,
    );
    let url = format!("http://{}", target.addr);
    let s = run_summary(&script, &["--target", &url]);
    let one = tag(&s, "one");
    assert!(u(one, "responses") > 0, "{s:#}");
    assert_eq!(u(one, "errors"), 0, "{s:#}");
    assert_eq!(
        s["target"],
        url.as_str(),
        "the summary names the target used"
    );
}

#[test]
fn requests_past_the_timeout_are_counted_and_the_run_completes() {
    let target = Target::start();
    let script = script_at(
        "slow.js",
        &format!("http://{}", target.addr),
        20,
        "{ timeout: 0.2, gracePeriod: 5 }",
        r#"definition.session("s", function (session) {
  session.get("/health", { tag: "fast" });
  session.get("/health?delay=2000", { tag: "slow" });
});
"#,
    );
    let started = std::time::Instant::now();
    let s = run_summary(&script, &[]);
    // 1 s of arrivals, each slow request given up after 0.2 s (not the target's 2 s).
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let (fast, slow) = (tag(&s, "fast"), tag(&s, "slow"));
    let requests = u(slow, "requests");
    assert!(requests > 0, "{s:#}");
    assert_eq!(
        u(slow, "errors"),
        requests,
        "every slow request timed out: {s:#}"
    );
    assert_eq!(u(fast, "errors"), 0, "{s:#}");
    assert_eq!(u(&s["errors_by_kind"], "timeout"), requests, "{s:#}");
    assert_eq!(u(&s["sessions"], "completed"), u(&s["sessions"], "started"));
}

#[test]
fn sessions_that_cannot_end_stop_at_the_end_of_the_test() {
    let target = Target::start();
    // A 30 s grace period, and a session that loops for ever (a wait long enough that the
    // loop's head is not where it notices): it must stop when the test ends, not 30 s later.
    let script = script_at(
        "for_ever.js",
        &format!("http://{}", target.addr),
        5,
        "{ timeout: 5, gracePeriod: 30 }",
        r#"definition.session("ever", function (session) {
  session.get("/health", { tag: "first" });
  session.forEver(function (s) {
    s.get("/health", { tag: "loop" });
    s.wait(5);
  });
});
"#,
    );
    for extra in [&[][..], &["--duration", "2s"][..]] {
        let started = std::time::Instant::now();
        let s = run_summary(&script, extra);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(8), "{extra:?}: {took:?}");
        let sessions = &s["sessions"];
        assert!(u(sessions, "started") > 0, "{extra:?}: {sessions:#}");
        assert_eq!(
            u(sessions, "interrupted"),
            u(sessions, "started"),
            "{extra:?}: cut off, neither completed nor failed: {sessions:#}"
        );
        assert!(u(tag(&s, "loop"), "requests") > 0, "{extra:?}: {s:#}");
        assert_eq!(u(tag(&s, "loop"), "errors"), 0, "{extra:?}: {s:#}");
    }
}
