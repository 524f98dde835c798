//! Thresholds, custom metrics and outputs end to end against the bundled target: exit codes
//! 0 / 99 / 130 with the ✓/✗ lines and JUnit cases, abortOnFail, custom Rate/Trend/Counter
//! values, the JSON summary validated against docs/summary.schema.json, CSV and NDJSON.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// A script loading `target` at `rate`/s for `seconds`, with `extra` definition lines, one
/// session `body`.
fn script(target: &Target, rate: u32, seconds: u32, extra: &str, body: &str) -> PathBuf {
    let text = format!(
        "definition.setTarget(\"http://{}\");
definition.setArrivalPhases([{{ duration: {seconds}, rate: {rate} }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 5 }});
{extra}
definition.session(\"s\", function (session) {{
{body}
}});
",
        target.addr
    );
    scratch_file("thresholds.js", text.as_bytes())
}

/// `barrage run SCRIPT ARGS...`, bounded by `LIMIT`.
fn run(script: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", script.to_str().unwrap()];
    all.extend_from_slice(args);
    barrage(&all, LIMIT)
}

fn out_path(name: &str) -> PathBuf {
    scratch_file(name, b"")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn metric<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {:#}", summary["metrics"]))
}

pub fn validate_against_schema(summary: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/summary.schema.json");
    let schema = json_file(&schema_path);
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(summary)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

const PING_BODY: &str = "  session.get(\"/health\", { tag: \"ping\" });
  session.check(\"status is 200\", session.lastHttpStatus(), \"==\", 200);";

#[test]
fn passing_thresholds_exit_0_and_failing_ones_exit_99_with_marks_and_junit() {
    let target = Target::start();
    let passing = script(
        &target,
        20,
        1,
        "definition.setThresholds({
  'http_req_duration{tag:ping}': ['p(95)<5000', 'avg<5000'],
  http_req_failed: 'rate<0.01',
  checks: 'rate>0.99',
  http_reqs: 'count>5',
});",
        PING_BODY,
    );
    let junit = out_path("pass.xml");
    let out = run(&passing, &["--junit", junit.to_str().unwrap()]);
    out.expect_success();
    for line in [
        "    http_req_duration{tag:ping}\n    ✓ 'p(95)<5000' p(95)=",
        "    ✓ 'rate<0.01' rate=0.00%",
        "    ✓ 'rate>0.99' rate=100.00%",
        "    ✓ 'count>5' count=",
        "    ✓ status is 200",
    ] {
        assert!(
            out.stdout.contains(line),
            "missing {line:?} in\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains('✗'), "{}", out.stdout);
    let xml = read(&junit);
    assert!(xml.contains("tests=\"6\" failures=\"0\""), "{xml}");
    assert!(
        xml.contains("<testcase name=\"http_req_duration{tag:ping} p(95)&lt;5000\" classname=\"barrage.thresholds\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase name=\"status is 200\" classname=\"barrage.checks\"/>"),
        "{xml}"
    );

    let failing = script(
        &target,
        20,
        1,
        "definition.setThresholds({
  http_req_duration: ['p(95)<5000', 'min<0.001'],
  http_req_failed: 'rate<0.01',
});",
        "  session.get(\"/status/503\", { tag: \"down\" });",
    );
    let junit = out_path("fail.xml");
    let out = run(&failing, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("some thresholds have failed"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("    ✓ 'p(95)<5000' p(95)="),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("    ✗ 'min<0.001' min="),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("    ✗ 'rate<0.01' rate=100.00%"),
        "{}",
        out.stdout
    );
    let xml = read(&junit);
    assert!(xml.contains("tests=\"3\" failures=\"2\""), "{xml}");
    assert!(
        xml.contains("<failure message=\"http_req_failed rate&lt;0.01 failed: observed 1\"/>"),
        "{xml}"
    );
}

#[test]
fn abort_on_fail_ends_the_run_early() {
    let target = Target::start();
    let path = script(
        &target,
        20,
        30,
        "definition.setThresholds({
  http_req_duration: [{threshold: 'max<0.001', abortOnFail: true, delayAbortEval: '1s'}],
});",
        "  session.get(\"/health\");",
    );
    let json = out_path("abort.json");
    let started = Instant::now();
    let out = run(&path, &["--json", json.to_str().unwrap()]);
    let took = started.elapsed();
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    assert!(took < Duration::from_secs(15), "a 30 s run took {took:?}");
    assert!(
        out.stderr.contains("stopping: threshold `max<0.001`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("run aborted: threshold"),
        "{}",
        out.stdout
    );
    let s = json_file(&json);
    assert_eq!(s["interrupted"], true, "{s:#}");
    assert!(s["aborted_by_threshold"].is_string(), "{s:#}");
    assert!(
        f(&s, "total_s") >= 1.0,
        "evaluation waits for delayAbortEval"
    );
    validate_against_schema(&s);
}

#[test]
fn custom_metrics_have_exact_values() {
    let target = Target::start();
    let path = script(
        &target,
        10,
        2,
        "definition.metric('failures', 'rate');
definition.metric('score', 'trend');
definition.metric('slow_wait', 'trend');
definition.metric('hits', 'counter');
definition.metric('last_status', 'gauge');
definition.setThresholds({ failures: 'rate==0.25', score: ['avg==20', 'max==30'] });",
        "  session.times(3, function (s) {
    s.get(\"/health\", { tag: \"ok\" });
    s.add('failures', s.lastHttpStatus(), '>=', 400);
  });
  session.get(\"/status/500\", { tag: \"bad\" });
  session.add('failures', session.lastHttpStatus(), '>=', 400);
  session.add('last_status', session.lastHttpStatus());
  session.add('score', 10);
  session.add('score', 20);
  session.add('score', '30');
  session.get(\"/delay/50\", { tag: \"slow\" });
  session.add('slow_wait', session.lastResponse('waiting'));
  session.add('hits', 2);",
    );
    let json = out_path("custom.json");
    let out = run(&path, &["--json", json.to_str().unwrap()]);
    out.expect_success();
    let s = json_file(&json);
    validate_against_schema(&s);
    let sessions = u(&s["sessions"], "completed");
    assert!(sessions >= 5, "{s:#}");
    let failures = &metric(&s, "failures")["values"];
    assert_eq!(failures["rate"], 0.25, "{failures}");
    assert_eq!(failures["passes"].as_f64(), Some(sessions as f64));
    assert_eq!(failures["fails"].as_f64(), Some(3.0 * sessions as f64));
    let score = &metric(&s, "score")["values"];
    assert_eq!(score["avg"], 20.0, "{score}");
    assert_eq!(
        (score["min"].clone(), score["max"].clone()),
        (10.0.into(), 30.0.into())
    );
    assert_eq!(score["count"].as_f64(), Some(3.0 * sessions as f64));
    let slow = &metric(&s, "slow_wait")["values"];
    assert!(
        slow["min"].as_f64().unwrap() >= 50.0,
        "waited at least 50 ms: {slow}"
    );
    assert!(slow["max"].as_f64().unwrap() < 5000.0, "{slow}");
    let hits = &metric(&s, "hits")["values"];
    assert_eq!(hits["count"].as_f64(), Some(2.0 * sessions as f64));
    assert_eq!(metric(&s, "last_status")["values"]["value"], 500.0);
    let iterations = &metric(&s, "iteration_duration")["values"];
    assert!(iterations["min"].as_f64().unwrap() >= 50.0, "{iterations}");
    assert!(
        out.stdout.contains("    ✓ 'rate==0.25' rate=25.00%"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("    ✓ 'avg==20' avg=20"),
        "{}",
        out.stdout
    );
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("score."))
        .unwrap();
    // Percentiles come from the HDR histogram (3 significant digits); mean and extremes are
    // exact.
    assert!(line.contains(": avg=20 min=10 med=20.0"), "{line}");
    assert!(line.contains(" max=30 "), "{line}");
}

#[test]
fn outputs_validate_stream_and_follow_trend_stats() {
    let target = Target::start();
    let path = script(&target, 30, 2, "", PING_BODY);
    let (json, csv, ndjson, samples) = (
        out_path("o.json"),
        out_path("o.csv"),
        out_path("o.ndjson"),
        out_path("samples.ndjson"),
    );
    let ndjson_spec = format!("ndjson={}", ndjson.display());
    let samples_spec = format!("samples={}:0.5", samples.display());
    let out = run(
        &path,
        &[
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--out",
            &ndjson_spec,
            "--out",
            &samples_spec,
            "--summary-trend-stats",
            "avg,p(99.9)",
        ],
    );
    out.expect_success();
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("http_req_duration."))
        .unwrap();
    assert!(
        line.contains(": avg=") && line.contains(" p(99.9)="),
        "{line}"
    );
    assert!(!line.contains("p(95)"), "{line}");
    let s = json_file(&json);
    validate_against_schema(&s);
    let requests = u(&s, "requests");
    // CSV: one row per second and tag, summing to every request.
    let csv = read(&csv);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.split(',').nth(1) == Some("ping")),
        "{csv}"
    );
    let csv_total: u64 = rows
        .iter()
        .map(|r| r.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_total, requests, "{csv}");
    // NDJSON: one line per second, in order, summing to every request.
    let lines: Vec<Value> = read(&ndjson)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seconds: Vec<u64> = lines
        .iter()
        .map(|l| l["second"].as_u64().unwrap())
        .collect();
    assert_eq!(seconds, (0..seconds.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        lines.iter().map(|l| u(l, "requests")).sum::<u64>(),
        requests
    );
    // Samples: about half of the requests, each a JSON line naming its request's
    // X-Request-Id: the run's prefix, then worker and counter, unique.
    let sampled = read(&samples)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect::<Vec<_>>();
    assert!(sampled.iter().all(|l| l["tag"] == "ping"));
    assert!(
        !sampled.is_empty() && (sampled.len() as u64) < requests,
        "{} of {requests}",
        sampled.len()
    );
    let prefix = s["request_id_prefix"].as_str().expect("a prefix");
    let ids: std::collections::HashSet<&str> = sampled
        .iter()
        .map(|l| {
            l["request_id"]
                .as_str()
                .unwrap_or_else(|| panic!("no id: {l}"))
        })
        .collect();
    assert_eq!(ids.len(), sampled.len(), "request ids repeat");
    for id in &ids {
        let rest = id
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{id} vs {prefix}"));
        let (worker, counter) = rest.split_once('-').unwrap_or_else(|| panic!("{id}"));
        assert!(
            [worker, counter]
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit())),
            "{id}"
        );
    }

    // quick writes the same summary and validates too.
    let quick_json = out_path("quick.json");
    let out = barrage(
        &[
            "quick",
            "-n",
            "20",
            "-c",
            "2",
            "--json",
            quick_json.to_str().unwrap(),
            &target.url("/"),
        ],
        LIMIT,
    );
    out.expect_success();
    let q = json_file(&quick_json);
    validate_against_schema(&q);
    assert_eq!(metric(&q, "http_reqs")["values"]["count"], 20.0);
}

#[test]
fn unwritable_outputs_and_bad_output_flags_are_reported_before_the_run() {
    let target = Target::start();
    let path = script(&target, 10, 1, "", PING_BODY);
    let out = run(&path, &["--junit", "/nonexistent-dir/x.xml"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--junit: cannot write /nonexistent-dir/x.xml"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "no run happened: {}", out.stdout);
    let out = run(&path, &["--summary-trend-stats", "avg,p95"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("`p95` is not a trend statistic"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unreachable_target_is_a_runtime_failure() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let text = format!(
        "definition.setTarget('http://127.0.0.1:{port}');
definition.setArrivalPhases([{{ duration: 1, rate: 10 }}]);
definition.session('s', function (session) {{ session.get('/'); }});"
    );
    let path = scratch_file("unreachable.js", text.as_bytes());
    let out = barrage(&["run", path.to_str().unwrap()], LIMIT);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("no request got a response"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("refused"),
        "the summary is still printed: {}",
        out.stdout
    );
}

fn interrupt(pid: u32) {
    let kill = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success(), "kill -INT failed");
}

#[test]
fn ctrl_c_is_graceful_then_immediate_and_outputs_are_still_written() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // Each session waits 10 s on the server: a graceful stop waits for it, a second Ctrl-C
    // does not.
    let text = format!(
        "definition.setTarget('http://{}');
definition.setArrivalPhases([{{ duration: 30, rate: 5 }}]);
definition.setTestOptions({{ timeout: 20, gracePeriod: 20 }});
definition.session('s', function (session) {{ session.get('/health'); session.get('/delay/10000'); }});",
        target.addr
    );
    let path = scratch_file("ctrlc.js", text.as_bytes());
    let json = out_path("ctrlc.json");
    let junit = out_path("ctrlc.xml");
    let mut running = Running::spawn(&[
        "run",
        path.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(running.pid());
    // Graceful: the sessions waiting on /delay/3000 keep it running.
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        running.child.try_wait().expect("try_wait").is_none(),
        "one Ctrl-C must leave running iterations their grace period"
    );
    let second = Instant::now();
    interrupt(running.pid());
    let out = running.wait(Duration::from_secs(30));
    assert!(
        second.elapsed() < Duration::from_secs(2),
        "{:?}",
        second.elapsed()
    );
    assert_eq!(out.code(), Some(130), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("[interrupted]"), "{}", out.stdout);
    let s = json_file(&json);
    assert_eq!(s["interrupted"], true);
    assert!(u(&s["sessions"], "interrupted") > 0, "{s:#}");
    assert!(u(&s, "responses") > 0, "{s:#}");
    validate_against_schema(&s);
    assert!(read(&junit).contains("<testsuites"), "JUnit written too");
}

#[test]
fn ndjson_seconds_are_streamed_while_the_run_goes_on() {
    let target = Target::start();
    let path = script(&target, 20, 8, "", PING_BODY);
    let ndjson = out_path("live.ndjson");
    let spec = format!("ndjson={}", ndjson.display());
    let running = Running::spawn(&["run", path.to_str().unwrap(), "--out", &spec]);
    // Second 0 is complete and written about 2 s into an 8 s run (snapshots every 0.5 s,
    // the stream written once a second); 6 s leaves room for a slow start.
    let deadline = Instant::now() + Duration::from_secs(6);
    let mut lines = 0;
    while Instant::now() < deadline && lines == 0 {
        std::thread::sleep(Duration::from_millis(200));
        lines = read(&ndjson).lines().count();
    }
    let out = running.wait(LIMIT);
    out.expect_success();
    assert!(lines >= 1, "no second was streamed before the run ended");
    assert!(read(&ndjson).lines().count() >= 8, "{}", read(&ndjson));
}
