//! End-to-end tests of the closed workload models (virtual users) and of the generator
//! self-check, against the bundled target.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A script aimed at `target` with `workload` (a `setVirtualUsers` argument) and one
/// session that gets `path`.
fn vu_script(name: &str, target: &Target, workload: &str, path: &str) -> PathBuf {
    let script = format!(
        "definition.setTarget(\"http://{addr}\");\ndefinition.setVirtualUsers({workload});\ndefinition.session(\"s\", function (session) {{\n  session.get(\"{path}\", {{ tag: \"get\" }});\n}});\n",
        addr = target.addr
    );
    scratch_file(name, script.as_bytes())
}

/// Runs `barrage run SCRIPT ARGS --json FILE`, expects exit 0, returns the JSON summary.
fn run_json(script: &Path, args: &[&str], limit: Duration) -> Value {
    run_json_exit(script, args, limit, 0)
}

/// `run_json` for a run expected to exit with `code`.
fn run_json_exit(script: &Path, args: &[&str], limit: Duration, code: i32) -> Value {
    let json = scratch_file("closed-summary.json", b"");
    let mut argv = vec![
        "run",
        script.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    argv.extend_from_slice(args);
    let out = barrage(&argv, limit);
    assert_eq!(out.code(), Some(code), "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&json).unwrap();
    let summary: Value = serde_json::from_str(&text).unwrap();
    check_invariants(&summary);
    summary
}

fn vus_series(summary: &Value) -> Vec<u64> {
    summary["vus"]
        .as_array()
        .expect("a vus series")
        .iter()
        .map(|s| u(s, "vus"))
        .collect()
}

#[test]
fn a_ramp_to_50_vus_and_down_follows_the_stages_within_a_second() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // 0 → 50 over 3 s, hold 2 s, 50 → 0 over 3 s.
    let stages = [(3.0, 50.0), (2.0, 50.0), (3.0, 0.0)];
    let script = vu_script(
        "ramp.js",
        &target,
        "{stages: [{duration: '3s', target: 50}, {duration: 2, target: 50}, {duration: '3s', target: 0}], gracefulRampDown: '1s', gracefulStop: '1s'}",
        "/health?delay=20",
    );
    let s = run_json(&script, &["--threads", "2"], Duration::from_secs(60));
    let target_at = |t: f64| -> f64 {
        let (mut start, mut from) = (0.0, 0.0);
        for (length, to) in stages {
            if t < start + length {
                return from + (to - from) * (t - start) / length;
            }
            start += length;
            from = to;
        }
        from
    };
    let observed = vus_series(&s);
    assert!(observed.len() >= 8, "{observed:?}");
    for (second, &vus) in observed.iter().enumerate().take(8) {
        // The most VUs at once during second `s` must be a value the stages take within one
        // second of it.
        let samples: Vec<f64> = (0..=60)
            .map(|i| {
                target_at(second as f64 - 1.0 + i as f64 * 0.05)
                    .floor()
                    .max(0.0)
            })
            .collect();
        let low = samples.iter().cloned().fold(f64::MAX, f64::min);
        let high = samples.iter().cloned().fold(0.0, f64::max);
        assert!(
            (low..=high).contains(&(vus as f64)),
            "second {second}: {vus} VUs, stages allow {low}..={high}; series {observed:?}"
        );
    }
    assert_eq!(u(&s["vus_peak"], "vus"), 50, "{observed:?}");
    assert_eq!(u(&s["vus_peak"], "vus_max"), 50);
    let sessions = &s["sessions"];
    assert!(u(sessions, "completed") > 500, "{sessions}");
    // Every response is in the corrected histogram too (first iterations included).
    assert!(u(&s["latency_corrected"], "count") >= u(&s["latency"], "count"));
    assert_eq!(
        u(sessions, "started"),
        u(sessions, "completed") + u(sessions, "interrupted"),
        "{sessions}"
    );
    assert_eq!(
        u(&s, "connections_opened"),
        50,
        "one connection per VU, kept"
    );
}

#[test]
fn iteration_counts_are_exact_and_a_full_pool_drops_iterations() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let shared = vu_script("shared.js", &target, "{vus: 4, iterations: 37}", "/health");
    let s = run_json(&shared, &["--threads", "2"], Duration::from_secs(30));
    assert_eq!(u(&s["sessions"], "started"), 37);
    assert_eq!(u(&s["sessions"], "completed"), 37);
    assert_eq!(u(&s, "requests"), 37);
    let per_vu = vu_script(
        "per_vu.js",
        &target,
        "{vus: 3, iterationsPerVU: 5}",
        "/health",
    );
    let s = run_json(&per_vu, &["--threads", "2"], Duration::from_secs(30));
    assert_eq!(u(&s["sessions"], "completed"), 15);
    assert_eq!(u(&s, "connections_opened"), 3);
    // 100 iterations due over 1 s, one VU busy 300 ms each: about 4 run, the rest drop.
    let pool = vu_script(
        "pool.js",
        &target,
        "{rate: 100, timeUnit: '1s', duration: 1, preAllocatedVUs: 1, maxVUs: 1, gracefulStop: 1}",
        "/health?delay=300",
    );
    let s = run_json(&pool, &["--threads", "1"], Duration::from_secs(30));
    let sessions = &s["sessions"];
    assert_eq!(
        u(sessions, "started") + u(sessions, "dropped"),
        100,
        "{sessions}"
    );
    assert!((2..=6).contains(&u(sessions, "started")), "{sessions}");
    assert_eq!(u(&s["vus_peak"], "vus_max"), 1);
}

#[test]
fn corrected_latency_shows_a_stall_that_raw_latency_hides() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // One VU; every 400th request stalls 1 s: well under 1% of requests, so the raw p99
    // stays fast, while the requests the VU could not send during each stall push the
    // corrected p99 up.
    let script = vu_script(
        "stall.js",
        &target,
        "{vus: 1, duration: 4, gracefulStop: 2}",
        "/health?stall=1000&stall_every=400",
    );
    let s = run_json(&script, &["--threads", "1"], Duration::from_secs(30));
    let responses = u(&s, "responses");
    assert!(
        responses >= 400,
        "at least one stall: {responses} responses"
    );
    let p99 = |stats: &Value| -> u64 {
        stats["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0].as_f64() == Some(99.0))
            .and_then(|p| p[1].as_u64())
            .unwrap_or_else(|| panic!("no p99 in {stats}"))
    };
    assert!(
        u(&s["latency_corrected"], "count") > u(&s["latency"], "count"),
        "the correction adds the requests the stall kept from being sent"
    );
    let raw = p99(&s["latency"]);
    let corrected = p99(&s["latency_corrected"]);
    assert!(raw < 100_000, "raw p99 {raw} µs should not show the stall");
    assert!(
        corrected >= 300_000,
        "corrected p99 {corrected} µs should show the 1 s stall (raw {raw} µs)"
    );
    assert!(
        u(&s["latency"], "max_us") >= 1_000_000,
        "the stall itself is in the raw max"
    );
}

#[test]
fn an_overloaded_generator_is_flagged_untrustworthy_and_a_light_run_is_not() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let light = vu_script(
        "light.js",
        &target,
        "{rate: 50, duration: 2, preAllocatedVUs: 2, maxVUs: 4}",
        "/health",
    );
    // The machine running the tests may be shared: threads kept from a CPU by other
    // processes are a real distortion the self-check reports, and then says the machine is
    // busy. A light run must come out clean, or be flagged only for lag or stalls while its
    // threads measurably waited for a CPU — never for its own load. Three attempts.
    let (mut attempts, mut clean) = (Vec::new(), false);
    for _ in 0..3 {
        let s = run_json(&light, &["--threads", "1"], Duration::from_secs(30));
        let check = &s["self_check"];
        assert!(u(&check["scheduler_lag"], "count") >= 95, "{check:#}");
        assert!(f(check, "cpu_percent") < 50.0, "{check:#}");
        let reasons: Vec<String> = s["trust_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        assert_eq!(s["trustworthy"] == true, reasons.is_empty(), "{s:#}");
        let busy_machine = f(check, "cpu_wait_percent") >= 1.0;
        clean = reasons
            .iter()
            .all(|r| busy_machine && r.contains("the machine is busy"));
        attempts.push((check.clone(), reasons));
        if clean {
            break;
        }
    }
    assert!(
        clean,
        "a light run was flagged three times without a busy machine to explain it: {attempts:#?}"
    );
    // A rate no single thread can hold: slots start late, the thread is busy.
    let url = target.url("/health");
    let s = quick_json(
        &[
            "-q",
            "500000",
            "-c",
            "100",
            "-z",
            "2s",
            "--threads",
            "1",
            &url,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(s["trustworthy"], false, "{:#}", s["self_check"]);
    let reasons: Vec<&str> = s["trust_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("scheduler lag p99")),
        "{reasons:?}"
    );
    // The text summary says so too.
    let out = barrage(
        &[
            "quick",
            "-q",
            "500000",
            "-c",
            "100",
            "-z",
            "1s",
            "--threads",
            "1",
            &url,
        ],
        Duration::from_secs(30),
    );
    out.expect_success();
    assert!(
        out.stdout
            .contains("WARNING: latency figures are untrustworthy"),
        "{}",
        out.stdout
    );
}

#[test]
fn vu_overrides_replace_the_workload_and_bad_values_name_the_flag() {
    let target = Target::start();
    let script = vu_script("overrides.js", &target, "{vus: 2, duration: 5}", "/health");
    let plan = |args: &[&str]| -> Value {
        let mut argv = vec!["plan", script.to_str().unwrap()];
        argv.extend_from_slice(args);
        let out = barrage(&argv, Duration::from_secs(20));
        out.expect_success();
        out.json()["workload"].clone()
    };
    // (VUs, duration in ms) of a constant-VUs workload: one piece of the schedule.
    let constant = |w: &Value| {
        assert_eq!(w["admission"]["kind"], "loop", "{w:#}");
        assert_eq!(w["bound"]["kind"], "duration", "{w:#}");
        assert_eq!(w["schedule"].as_array().unwrap().len(), 1, "{w:#}");
        let piece = &w["schedule"][0];
        assert_eq!(piece["from"], piece["to"], "{w:#}");
        (piece["from"].as_f64().unwrap(), u(piece, "duration"))
    };
    assert_eq!(constant(&plan(&["--vus", "7"])), (7.0, 5000));
    assert_eq!(constant(&plan(&["--duration", "1m"])), (2.0, 60_000));
    let w = plan(&["--stages", "30s:100,1m:100,10s:0"]);
    assert_eq!(w["admission"]["kind"], "loop");
    // From k6's one VU to 100, held, then down to 0.
    assert_eq!(w["schedule"].as_array().unwrap().len(), 3);
    assert_eq!(w["schedule"][0]["from"], 1.0);
    assert_eq!(u(&w["schedule"][1], "duration"), 60_000);
    let w = plan(&["--iterations", "50", "--vus", "5"]);
    assert_eq!(w["schedule"][0]["from"], 5.0, "{w:#}");
    assert_eq!(
        (w["bound"]["kind"].as_str(), u(&w["bound"], "count")),
        (Some("iterations"), 50)
    );
    assert_eq!(w["bound"]["per_client"], false);
    for (args, start) in [
        (
            &["--vus", "0"][..],
            "error: --vus: `0` must be a whole number",
        ),
        (&["--vus", "many"][..], "error: --vus: `many`"),
        (
            &["--vus", "-1"][..],
            "error: --vus: `-1` must be a whole number from 1 to 1000000",
        ),
        (&["--duration", "5 parsecs"][..], "error: --duration: "),
        (
            &["--stages", "30s=100"][..],
            "error: --stages: stage 1 `30s=100`",
        ),
        (&["--iterations", "1.5"][..], "error: --iterations: "),
        (
            &["--stages", "1s:1", "--vus", "3"][..],
            "error: --stages: cannot be combined",
        ),
    ] {
        let mut argv = vec!["run", script.to_str().unwrap()];
        argv.extend_from_slice(args);
        let out = barrage(&argv, Duration::from_secs(20));
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with(start), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn graceful_stop_and_ramp_down_let_iterations_finish_then_interrupt_them() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // Iterations take 1.5 s; the VUs stop starting them after 1 s.
    let patient = vu_script(
        "patient.js",
        &target,
        "{vus: 2, duration: 1, gracefulStop: 3}",
        "/health?delay=1500",
    );
    let s = run_json(&patient, &["--threads", "1"], Duration::from_secs(30));
    assert_eq!(u(&s["sessions"], "started"), 2, "{}", s["sessions"]);
    assert_eq!(u(&s["sessions"], "completed"), 2, "{}", s["sessions"]);
    let impatient = vu_script(
        "impatient.js",
        &target,
        "{vus: 2, duration: 1, gracefulStop: '200ms'}",
        "/health?delay=1500",
    );
    // No request got a response (both were cut off): exit 1.
    let s = run_json_exit(&impatient, &["--threads", "1"], Duration::from_secs(30), 1);
    assert_eq!(u(&s["sessions"], "interrupted"), 2, "{}", s["sessions"]);
    assert_eq!(u(&s, "interrupted_requests"), 2, "{s:#}");
    assert!(f(&s, "total_s") < 1.5, "stopped at 1.2 s: {}", s["total_s"]);
    // Two VUs by 0.1 s, held to 1.1 s, none by 1.3 s: each VU's 2.5 s iteration still runs
    // when its 0.2 s ramp-down grace is over, so both are interrupted.
    let ramp = vu_script(
        "rampdown.js",
        &target,
        "{stages: [{duration: 0.1, target: 2}, {duration: 1, target: 2}, {duration: 0.2, target: 0}, {duration: 2, target: 0}], gracefulRampDown: 0.2, gracefulStop: 0}",
        "/health?delay=2500",
    );
    let s = run_json_exit(&ramp, &["--threads", "1"], Duration::from_secs(30), 1);
    let sessions = &s["sessions"];
    assert_eq!(
        (
            u(sessions, "started"),
            u(sessions, "completed"),
            u(sessions, "interrupted")
        ),
        (2, 0, 2),
        "{sessions}"
    );
    let vus = vus_series(&s);
    assert_eq!(&vus[..3], &[2, 2, 0], "{vus:?}");
}

#[test]
fn constant_vus_with_multi_step_sessions_stop_on_time() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // Several requests per iteration: a VU finding the iterations over must stop, not loop
    // back before the VU controller has marked the end (that once spun until the hard stop).
    let script = format!(
        "definition.setTarget(\"http://{addr}\");\ndefinition.setVirtualUsers({{vus: 5, duration: 1}});\ndefinition.session(\"s\", function (session) {{\n  session.get(\"/health\", {{ tag: \"a\" }});\n  session.times(3, function (s) {{ s.get(\"/health\", {{ tag: \"b\" }}); }});\n}});\n",
        addr = target.addr
    );
    let script = scratch_file("multi.js", script.as_bytes());
    for _ in 0..3 {
        let s = run_json(&script, &["--threads", "1"], Duration::from_secs(30));
        assert!(f(&s, "total_s") < 2.0, "ran {} s", s["total_s"]);
        let sessions = &s["sessions"];
        assert_eq!(
            u(sessions, "started"),
            u(sessions, "completed"),
            "{sessions}"
        );
        assert_eq!(u(&s, "connections_opened"), 5);
    }
}
