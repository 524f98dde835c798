//! The hostile-target suite: every chaos case of `barrage target` (`/chaos/...`) against
//! `quick` and `run`, over HTTP/1.1 and HTTP/2 where the case applies. Each run must end on
//! time, count its failures under the expected error kinds, and keep its peak RSS bounded.

use crate::support::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Peak RSS allowed for 20 clients against any case.
const MAX_RSS_KIB: u64 = 100 * 1024;
/// `-z 2s -t 1s`: a run ends by about 3 s; the rest is slack for a busy machine.
const ON_TIME: Duration = Duration::from_secs(15);

/// Runs barrage to its end, sampling its peak RSS (VmHWM) while it runs.
fn run_measured(args: &[&str]) -> (Output, u64) {
    let mut running = Running::spawn(args);
    let status_file = format!("/proc/{}/status", running.pid());
    let started = Instant::now();
    let mut peak = 0;
    while running.child.try_wait().expect("try_wait").is_none() && started.elapsed() < ON_TIME * 2 {
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            if let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (running.wait(ON_TIME * 2), peak)
}

/// Checks one run: on time, bounded, and every error of an allowed kind (at least one of
/// them when `must_fail`).
fn check(
    label: &str,
    out: &Output,
    peak_kib: u64,
    summary: &Value,
    allowed: &[&str],
    must_fail: bool,
) {
    assert!(
        matches!(out.code(), Some(0 | 1)),
        "{label}: exit {:?}\n{}",
        out.code(),
        out.stderr
    );
    assert!(out.elapsed < ON_TIME, "{label}: took {:?}", out.elapsed);
    assert!(
        peak_kib > 0 && peak_kib <= MAX_RSS_KIB,
        "{label}: peak RSS {peak_kib} KiB"
    );
    let kinds = summary["errors_by_kind"]
        .as_object()
        .expect("errors_by_kind");
    for (kind, count) in kinds {
        assert!(
            allowed.contains(&kind.as_str()),
            "{label}: {count} errors of kind {kind}, expected only {allowed:?}\n{summary:#}"
        );
    }
    if must_fail {
        let failed: u64 = kinds.values().filter_map(Value::as_u64).sum();
        assert!(failed > 0, "{label}: no errors counted\n{summary:#}");
    }
}

/// `quick -z 2s -c 20 -t 1s` against `path` (plus `extra` flags): the summary, checked.
fn quick_case(
    target: &Target,
    path: &str,
    extra: &[&str],
    allowed: &[&str],
    must_fail: bool,
) -> Value {
    let url = target.url(path);
    let mut argv = vec!["quick", "-o", "json", "-z", "2s", "-c", "20", "-t", "1s"];
    argv.extend_from_slice(extra);
    argv.push(&url);
    let (out, peak) = run_measured(&argv);
    let summary = out.json();
    check(
        &format!("quick {extra:?} {path}"),
        &out,
        peak,
        &summary,
        allowed,
        must_fail,
    );
    check_invariants(&summary);
    summary
}

const TIMEOUT: &[&str] = &["timeout"];
const CUT: &[&str] = &["reset", "closed"];
const BAD: &[&str] = &["malformed"];

#[test]
fn quick_over_http1_classifies_every_chaos_case_within_time_and_memory() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let cases: &[(&str, &[&str], bool)] = &[
        ("/chaos/reset", CUT, true),
        ("/chaos/reset-mid", CUT, true),
        ("/chaos/close", &["closed"], true),
        ("/chaos/stall?secs=5", TIMEOUT, true),
        ("/chaos/stall-body?secs=5", TIMEOUT, true),
        ("/chaos/slow-body?size=100000&rate=1000", TIMEOUT, true),
        ("/chaos/endless", TIMEOUT, true),
        ("/chaos/endless-chunked", TIMEOUT, true),
        ("/chaos/endless-gzip", TIMEOUT, true),
        ("/chaos/huge-length", TIMEOUT, true),
        ("/chaos/lying-length", &["closed"], true),
        ("/chaos/many-headers?n=300", BAD, true),
        ("/chaos/huge-header", BAD, true),
        ("/chaos/malformed-status", BAD, true),
        ("/chaos/bad-chunk", BAD, true),
        ("/chaos/garbage", BAD, true),
        ("/chaos/bad-gzip", &[], false),
        ("/chaos/many-headers?n=250", &[], false),
    ];
    for (path, allowed, must_fail) in cases {
        quick_case(&target, path, &[], allowed, *must_fail);
    }
    // A bomb is counted at its decoded size, never kept.
    let s = quick_case(
        &target,
        "/chaos/gzip-bomb?size=8388608",
        &[],
        TIMEOUT,
        false,
    );
    if u(&s, "responses") > 0 {
        assert!(
            u(&s, "decoded_data_bytes") >= u(&s, "responses") * 8_388_608,
            "{s:#}"
        );
        assert!(
            u(&s, "total_data_bytes") * 100 < u(&s, "decoded_data_bytes"),
            "{s:#}"
        );
    }
    // `--max-headers` lets a larger head through.
    quick_case(
        &target,
        "/chaos/many-headers?n=300",
        &["--max-headers", "400"],
        &[],
        false,
    );
}

#[test]
fn quick_over_http2_classifies_every_chaos_case_within_time_and_memory() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let h2 = &["--h2"][..];
    let cases: &[(&str, &[&str], bool)] = &[
        ("/chaos/reset", &["reset", "closed", "h2_protocol"], true),
        ("/chaos/close", &["closed", "h2_protocol"], true),
        ("/chaos/reset-mid", &["h2_stream_reset"], true),
        ("/chaos/goaway", &["h2_goaway"], true),
        ("/chaos/garbage", &["h2_protocol"], true),
        ("/chaos/stall?secs=5", TIMEOUT, true),
        ("/chaos/endless", TIMEOUT, true),
        ("/chaos/endless-gzip", TIMEOUT, true),
        ("/chaos/slow-body?size=100000&rate=1000", TIMEOUT, true),
        ("/chaos/bad-gzip", &[], false),
        ("/chaos/gzip-bomb?size=8388608", TIMEOUT, false),
    ];
    for (path, allowed, must_fail) in cases {
        quick_case(&target, path, h2, allowed, *must_fail);
    }
}

#[test]
fn run_with_extractions_fails_bodies_past_max_body_as_body_too_large() {
    let _heavy = heavy_lock();
    let target = Target::start();
    for (path, extra) in [
        ("/chaos/endless-gzip", &[][..]),
        ("/chaos/endless", &[][..]),
        ("/chaos/gzip-bomb?size=8388608", &[][..]),
        ("/chaos/endless-gzip", &["--h2"][..]),
        ("/chaos/gzip-bomb?size=8388608", &["--h2"][..]),
    ] {
        let source = format!(
            "definition.setTarget(\"http://{}\");\n\
             definition.setArrivalPhases([{{ duration: 2, rate: 10 }}]);\n\
             definition.setTestOptions({{ timeout: 5, gracePeriod: 2, maxBody: \"1MiB\" }});\n\
             definition.session(\"s\", function (session) {{\n\
               session.get(\"{path}\", {{ extraction: {{ jsonpath: {{ v: \"$.v\" }} }} }});\n\
             }});\n",
            target.addr
        );
        let script = scratch_file("hostile.js", source.as_bytes());
        let json = scratch_file("hostile.json", b"");
        let mut argv = vec![
            "run",
            script.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ];
        argv.extend_from_slice(extra);
        let (out, peak) = run_measured(&argv);
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
            .unwrap_or_else(|e| panic!("{path}: no summary ({e})\n{}", out.stderr));
        check(
            &format!("run {extra:?} {path}"),
            &out,
            peak,
            &summary,
            &["body_too_large"],
            true,
        );
    }
}

#[test]
fn a_request_cut_off_by_its_timeout_counts_the_bytes_that_arrived() {
    let target = Target::start();
    // `stall-body` sends its head and 1 KB of body, then nothing: every request times out
    // with over 1 KB received (HTTP/2: the HEADERS and DATA frames).
    let url = target.url("/chaos/stall-body?secs=5");
    for extra in [&[][..], &["--h2"][..]] {
        let mut argv = vec!["quick", "-o", "json", "-n", "2", "-c", "1", "-t", "300ms"];
        argv.extend_from_slice(extra);
        argv.push(&url);
        let s = barrage(&argv, ON_TIME).json();
        assert_eq!(s["errors_by_kind"]["timeout"], 2, "{extra:?}\n{s:#}");
        assert_eq!(u(&s, "responses"), 0, "{extra:?}\n{s:#}");
        assert!(
            u(&s, "bytes_received") >= 2 * 1024,
            "{extra:?}: bytes that arrived before the timeout count\n{s:#}"
        );
        let per_second: u64 = s["per_second"]
            .as_array()
            .expect("per_second")
            .iter()
            .map(|b| b["bytes_received"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(per_second, u(&s, "bytes_received"), "{extra:?}\n{s:#}");
    }
}

/// `-c 1000000`: clients start progressively, so the run sends at once, ends on time and
/// holds only the clients it started (all up front: 22 s, 2.9 GB and no request at all); the
/// summary says how many started, and the descriptor limit is named before the run.
#[test]
fn a_million_clients_start_progressively_and_the_run_ends_on_time() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = target.url("/");
    let argv = ["quick", "-o", "json", "-z", "1s", "-c", "1000000", &url];
    let (out, peak) = run_measured(&argv);
    assert!(matches!(out.code(), Some(0 | 1)), "{}", out.stderr);
    assert!(out.elapsed < ON_TIME, "took {:?}", out.elapsed);
    assert!(peak > 0 && peak < 1024 * 1024, "peak RSS {peak} KiB");
    assert!(out.stderr.contains("ulimit -n"), "{}", out.stderr);
    let summary = out.json();
    assert_eq!(u(&summary["vus_peak"], "vus_max"), 1_000_000, "{summary:#}");
    let started = u(&summary["sessions"], "started");
    assert!(started > 0 && started < 1_000_000, "{summary:#}");
    assert!(u(&summary, "responses") > 0, "{summary:#}");
}

/// Ramping VUs to a million (`--stages`, k6 `ramping-vus`; also `--vus` with `--duration`,
/// k6 `constant-vus`, and per-VU iterations): VUs are made as the target passes them, a batch
/// per turn, so the run sends at once, ends on time and holds only the VUs it got to (all
/// made up front: no request in the run's time, gigabytes of VUs).
#[test]
fn a_ramp_to_a_million_vus_starts_them_progressively_and_ends_on_time() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let source = format!(
        "definition.setTarget(\"http://{}\");\n\
         definition.setArrivalPhases([{{ duration: 1, rate: 1 }}]);\n\
         definition.session(\"s\", function (session) {{ session.get(\"/\"); }});\n",
        target.addr
    );
    let script = scratch_file("million-vus.js", source.as_bytes());
    for workload in [
        &["--stages", "1s:1000000"][..],
        &["--vus", "1000000", "--duration", "1s"][..],
        &["--vus", "1000000", "--iterations", "1", "--duration", "1s"][..],
    ] {
        let json = scratch_file("million-vus.json", b"");
        let mut argv = vec![
            "run",
            script.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ];
        argv.extend_from_slice(workload);
        let (out, peak) = run_measured(&argv);
        assert!(
            matches!(out.code(), Some(0 | 1)),
            "{workload:?}: {}",
            out.stderr
        );
        assert!(
            out.elapsed < ON_TIME,
            "{workload:?}: took {:?}",
            out.elapsed
        );
        assert!(
            peak > 0 && peak < 1024 * 1024,
            "{workload:?}: peak RSS {peak} KiB"
        );
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
            .unwrap_or_else(|e| panic!("{workload:?}: no summary ({e})\n{}", out.stderr));
        assert_eq!(
            u(&summary["vus_peak"], "vus_max"),
            1_000_000,
            "{workload:?}: {summary:#}"
        );
        let started = u(&summary["sessions"], "started");
        assert!(
            started > 0 && started < 1_000_000,
            "{workload:?}: {summary:#}"
        );
        assert!(u(&summary, "responses") > 0, "{workload:?}: {summary:#}");
    }
}

/// Out of descriptors: with a hard `nofile` limit of 64 and 200 clients, the connects past
/// the limit fail as `local_fd_limit` (the generator's error, not the target's), the limit
/// is named before the run, and failed connects back off instead of retrying in a tight
/// loop (without the back-off: 788,521 attempts in 3 s and a 3 s event-loop stall).
#[test]
fn connects_past_the_descriptor_limit_are_the_generators_errors_and_back_off() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = target.url("/");
    let started = Instant::now();
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\"", BIN])
        .args([
            "quick", "-o", "json", "-z", "2s", "-c", "200", "-t", "1s", &url,
        ])
        .env("BARRAGE_RESULTS_DIR", scratch_dir().join("results"))
        .output()
        .expect("sh runs barrage");
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(elapsed < ON_TIME, "took {elapsed:?}");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    assert!(
        stderr.contains("ulimit -n") && stderr.contains("local_fd_limit"),
        "the limit is named before the run: {stderr}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no summary ({e}): {stderr}"));
    let fd_errors = error_kind(&summary, "local_fd_limit");
    assert!(fd_errors > 0, "{summary:#}");
    assert_eq!(
        u(&summary, "errors"),
        fd_errors,
        "only the generator's descriptors failed: {summary:#}"
    );
    // Backing off to 250 ms, 200 clients make at most about 200 × 20 attempts in 2 s.
    assert!(fd_errors < 20_000, "{fd_errors} failed connects in 2 s");
    assert!(u(&summary, "responses") > 0, "{summary:#}");
}
