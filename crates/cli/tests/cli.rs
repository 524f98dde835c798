//! End-to-end tests of the `barrage` binary: `quick` against the bundled target (run as a
//! separate `barrage target` process), usage errors, output formats, `demo`, and Ctrl-C.

#[path = "cli/capacity.rs"]
mod capacity;
#[path = "cli/closed.rs"]
mod closed;
#[path = "cli/har.rs"]
mod har;
#[path = "cli/hey.rs"]
mod hey;
#[path = "cli/history_compare.rs"]
mod history_compare;
#[path = "cli/hostile.rs"]
mod hostile;
#[path = "cli/k6.rs"]
mod k6;
#[path = "cli/k6_api.rs"]
mod k6_api;
#[path = "cli/k6_callbacks.rs"]
mod k6_callbacks;
#[path = "cli/k6_differential.rs"]
mod k6_differential;
#[path = "cli/live_exports.rs"]
mod live_exports;
#[path = "cli/never_answering.rs"]
mod never_answering;
#[path = "cli/outputs.rs"]
mod outputs;
#[path = "cli/protocols.rs"]
mod protocols;
#[path = "cli/report_html.rs"]
mod report_html;
#[path = "cli/results.rs"]
mod results;
#[path = "cli/scenarios.rs"]
mod scenarios;
#[path = "cli/secrets.rs"]
mod secrets;
#[path = "cli/segments.rs"]
mod segments;
#[path = "cli/signals.rs"]
mod signals;
#[path = "cli/stormforger.rs"]
mod stormforger;
mod support;
#[path = "cli/thresholds.rs"]
mod thresholds;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use support::*;

/// Upper bound for any one short `barrage` run (generous: the machine may be busy).
const LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Counting: closed loop, duration, rate
// ---------------------------------------------------------------------------------------

#[test]
fn fixed_count_runs_exactly_n_requests_over_c_connections() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let out = barrage(
        &[
            "quick",
            "-n",
            "500",
            "-c",
            "10",
            "-o",
            "json",
            &target.url("/"),
        ],
        LIMIT,
    );
    out.expect_success();
    assert!(
        out.stderr.is_empty(),
        "nothing on stderr when not on a terminal, got:\n{}",
        out.stderr
    );
    let s = out.json();
    check_invariants(&s);
    assert_eq!(u(&s, "requests"), 500, "{s:#}");
    assert_eq!(u(&s, "responses"), 500, "{s:#}");
    assert_eq!(u(&s, "errors"), 0, "{s:#}");
    assert_eq!(s["status_codes"], serde_json::json!({"200": 500}), "{s:#}");
    assert_eq!(s["errors_by_kind"], serde_json::json!({}), "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 10, "{s:#}");
    assert_eq!(u(&s, "iterations"), 500, "{s:#}");
    assert_eq!(s["interrupted"], Value::Bool(false));
    assert_eq!(s["name"], "quick");
    assert_eq!(s["target"], format!("http://{}", target.addr));
    let tags = s["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 1, "{s:#}");
    assert_eq!(tags[0]["tag"], "GET /");
    assert_eq!(u(&tags[0], "requests"), 500);
    assert_eq!(u(&tags[0], "responses"), 500);
    assert_eq!(u(&tags[0]["latency"], "count"), 500);
    assert!(
        u(&s, "bytes_sent") > 0 && u(&s, "bytes_received") > 0,
        "{s:#}"
    );
    assert!(u(&s, "total_data_bytes") > 0, "{s:#}");
    // Phase details: every response was written, waited for and read; 10 connects.
    for phase in ["write", "wait", "read"] {
        assert_eq!(u(&s["details"][phase], "count"), 500, "{phase}: {s:#}");
    }
    assert_eq!(u(&s["details"]["connect"], "count"), 10, "{s:#}");
    let started = f(&s, "started_at_unix_s");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        started <= now && started > now - 120.0,
        "started_at_unix_s {started} is not about now ({now})"
    );
}

#[test]
fn duration_run_lasts_its_duration() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let s = quick_json(&["-z", "2s", "-c", "5", &target.url("/")], LIMIT);
    let total = f(&s, "total_s");
    assert!((1.9..=2.5).contains(&total), "total_s {total}\n{s:#}");
    assert!(u(&s, "requests") > 100, "{s:#}");
    assert_eq!(u(&s, "errors"), 0, "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 5, "{s:#}");
    assert_eq!(s["interrupted"], Value::Bool(false));
    // Every second of the run has a bucket with responses in it.
    let seconds = s["per_second"].as_array().unwrap();
    assert!(
        (2..=3).contains(&seconds.len()),
        "{} per-second buckets",
        seconds.len()
    );
    assert!(seconds[..2].iter().all(|b| u(b, "responses") > 0), "{s:#}");
}

#[test]
fn rate_limit_paces_the_whole_run() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let s = quick_json(
        // hey's -q is per worker: 100/s for each of 20 workers is 2000/s for the run.
        &["-q", "100", "-z", "5s", "-c", "20", &target.url("/")],
        LIMIT,
    );
    let total = f(&s, "total_s");
    let responses = u(&s, "responses") as f64;
    let rate = responses / total;
    assert!(
        (rate - 2000.0).abs() <= 40.0,
        "achieved {rate:.1} req/s, wanted 2000 ± 2%\n{s:#}"
    );
    let requests = u(&s, "requests") as f64;
    assert!(
        (requests - 10_000.0).abs() <= 200.0,
        "{requests} requests, wanted 10000 ± 2%"
    );
    assert_eq!(u(&s, "errors"), 0, "{s:#}");
    assert!((4.9..=6.0).contains(&total), "total_s {total}");

    // With -n the rate paces exactly n requests: 100 at 200/s take about half a second.
    let s = quick_json(
        &["--rate", "200", "-n", "100", "-c", "5", &target.url("/")],
        LIMIT,
    );
    assert_eq!(u(&s, "requests"), 100, "{s:#}");
    assert_eq!(u(&s, "responses"), 100, "{s:#}");
    let total = f(&s, "total_s");
    assert!(
        (0.45..=1.5).contains(&total),
        "100 requests at 200/s took {total} s"
    );
}

// ---------------------------------------------------------------------------------------
// Errors are counted by kind; responses of any status are responses
// ---------------------------------------------------------------------------------------

#[test]
fn refused_connections_are_counted_and_reported() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let s = quick_json_unanswered(&["-n", "20", "-c", "2", &url], LIMIT);
    assert_eq!(u(&s, "requests"), 20, "{s:#}");
    assert_eq!(u(&s, "errors"), 20, "{s:#}");
    assert_eq!(u(&s, "responses"), 0, "{s:#}");
    assert_eq!(error_kind(&s, "refused"), 20, "{s:#}");
    assert_eq!(u(&s["latency"], "count"), 0, "no latency without responses");
    assert_eq!(s["status_codes"], serde_json::json!({}));

    let out = barrage(&["quick", "-n", "20", "-c", "2", &url], LIMIT);
    assert_eq!(out.code(), Some(1), "no response: exit 1");
    assert!(out.stdout.contains("Error distribution:"), "{}", out.stdout);
    assert!(out.stdout.contains("[20]\trefused"), "{}", out.stdout);
}

#[test]
fn timeouts_are_counted_and_do_not_wait_for_the_server() {
    let target = Target::start();
    let s = quick_json_unanswered(
        &[
            "-t",
            "200ms",
            "-n",
            "4",
            "-c",
            "2",
            &target.url("/delay/2000"),
        ],
        LIMIT,
    );
    assert_eq!(u(&s, "errors"), 4, "{s:#}");
    assert_eq!(error_kind(&s, "timeout"), 4, "{s:#}");
    assert_eq!(u(&s, "responses"), 0, "{s:#}");
    let total = f(&s, "total_s");
    assert!(
        total < 1.5,
        "total_s {total}: timeouts must end requests early"
    );
    assert!(
        total >= 0.35,
        "two rounds of 200 ms timeouts took only {total} s"
    );
}

#[test]
fn connections_closed_without_a_response_are_errors() {
    let target = Target::start();
    let s = quick_json_unanswered(&["-n", "10", "-c", "2", &target.url("/?close=1")], LIMIT);
    assert_eq!(u(&s, "requests"), 10, "{s:#}");
    assert_eq!(u(&s, "errors"), 10, "{s:#}");
    let closed = error_kind(&s, "closed") + error_kind(&s, "reset");
    assert_eq!(closed, 10, "closed/reset should cover every error\n{s:#}");
}

#[test]
fn unresolvable_hosts_are_dns_errors() {
    let s = quick_json_unanswered(
        &["-n", "4", "-c", "2", "http://no-such-host.invalid/"],
        LIMIT,
    );
    assert_eq!(u(&s, "requests"), 4, "{s:#}");
    assert_eq!(error_kind(&s, "dns"), 4, "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 0, "{s:#}");
}

#[test]
fn error_statuses_are_responses_not_errors() {
    let target = Target::start();
    let s = quick_json(&["-n", "20", "-c", "2", &target.url("/status/503")], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"503": 20}), "{s:#}");
    assert_eq!(u(&s, "errors"), 0, "{s:#}");
    assert_eq!(u(&s["latency"], "count"), 20, "{s:#}");

    let s = quick_json(&["-n", "20", "-c", "2", &target.url("/?fail=1")], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"500": 20}), "{s:#}");
    assert_eq!(u(&s, "errors"), 0, "{s:#}");

    let out = barrage(
        &["quick", "-n", "20", "-c", "2", &target.url("/status/503")],
        LIMIT,
    );
    out.expect_success();
    assert!(out.stdout.contains("[503]\t20 responses"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("Error distribution:"),
        "no error section without errors:\n{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------------
// Usage errors: one line on stderr, exit code 2
// ---------------------------------------------------------------------------------------

fn assert_usage_error(args: &[&str], mentions: &[&str]) {
    let mut argv = vec!["quick"];
    argv.extend_from_slice(args);
    let out = barrage(&argv, LIMIT);
    assert_eq!(
        out.code(),
        Some(2),
        "{args:?}: exit code\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{args:?}: stdout {:?}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{args:?}: stderr must be exactly one line, got {:?}",
        out.stderr
    );
    let line = lines[0];
    assert!(
        line.starts_with("error:"),
        "{args:?}: stderr {line:?} does not start with `error:`"
    );
    assert!(
        line.len() > "error:".len() + 5,
        "{args:?}: empty message {line:?}"
    );
    assert!(
        mentions.iter().any(|m| line.contains(m)),
        "{args:?}: {line:?} mentions none of {mentions:?}"
    );
}

#[test]
fn bad_input_is_a_one_line_usage_error() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let url = url.as_str();
    let cases: &[(&[&str], &[&str])] = &[
        (&["not a url"], &["not a url", "URL"]),
        (&["ftp://example.com/"], &["ftp", "scheme"]),
        (&["-c", "0", url], &["-c"]),
        (&["-c", "-3", url], &["-c"]),
        (&["-n", "-5", url], &["-n"]),
        (&["-n", "0", url], &["-n"]),
        (&["-z", "10parsecs", url], &["unit"]),
        (&["-z", "10", url], &["-z"]),
        (&["-z", "0s", url], &["-z"]),
        (&["-n", "5", "-c", "10", url], &["-n"]),
        (&["-H", "novalue", url], &["-H"]),
        (&["-H", ": empty-name", url], &["-H"]),
        (
            &["-D", "/no/such/barrage/file", url],
            &["/no/such/barrage/file"],
        ),
        (&["-o", "xml", url], &["-o", "xml"]),
        (&["-q", "-3", url], &["-q"]),
        (&["-q", "0", url], &["-q"]),
        (&["-m", "BREW", url], &["-m", "BREW"]),
        (&["-t", "soon", url], &["-t"]),
        (&["-a", "no-colon", url], &["-a"]),
        (&["--threads", "0", url], &["--threads"]),
        (&["-n", "abc", url], &["abc", "-n"]),
        (&["--no-such-flag", url], &["--no-such-flag"]),
        (&["-d", "x", "-D", "/etc/hostname", url], &["-d", "-D"]),
        // Issue 12: these panicked (exit 101), aborted (134) or silently meant no timeout.
        (&["-t", "1e20", url], &["'-t "]),
        (&["-t", "18446744073709551615", url], &["'-t "]),
        (&["-t", "0.0000000001", url], &["shortest timeout, 1ms"]),
        (&["--pool-size", "4294967295", url], &["--pool-size"]),
        (&["--h2-window", "0", url], &["--h2-window"]),
        (&["--h2-window", "2147483648", url], &["--h2-window"]),
        (
            &["--h2-connection-window", "0", url],
            &["--h2-connection-window"],
        ),
        // Issue 13: a missing unit says so.
        (&["-z", "10", url], &["10s?"]),
    ];
    for (args, mentions) in cases {
        assert_usage_error(args, mentions);
    }
}

/// A header that cannot be sent (not a token, or carrying a line break) is a mistake in the
/// command line, so it must be reported like every other bad -H: exit 2, one clear line.
#[test]
fn unsendable_headers_are_usage_errors() {
    let target = Target::start();
    let url = target.url("/echo");
    assert_usage_error(&["-n", "1", "-c", "1", "-H", "X(A): 1", &url], &["X(A)"]);
    assert_usage_error(
        &["-n", "1", "-c", "1", "-H", "X-A: a\r\nX-Injected: b", &url],
        &["X-A"],
    );
    // The message names the problem once, not twice over.
    let out = barrage(
        &["quick", "-n", "1", "-c", "1", "-H", "X(A): 1", &url],
        LIMIT,
    );
    assert_eq!(
        out.stderr.matches("not a valid HTTP token").count(),
        1,
        "{:?}",
        out.stderr
    );
}

/// Leaving out the URL is a usage error whose one line says what is missing.
#[test]
fn missing_url_is_named() {
    let out = barrage(&["quick", "-n", "1"], LIMIT);
    assert_eq!(out.code(), Some(2), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{:?}", out.stderr);
    assert!(
        lines[0].contains("URL"),
        "the message should name the missing <URL>: {:?}",
        lines[0]
    );
}

#[test]
fn target_rejects_bad_listen_addresses() {
    for args in [
        &["target", "--listen", "nowhere"][..],
        &["target", "--listen", "127.0.0.1:0", "--threads", "0"][..],
    ] {
        let out = barrage(args, LIMIT);
        assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {:?}", out.stderr);
        assert!(out.stderr.starts_with("error:"), "{:?}", out.stderr);
    }
}

// ---------------------------------------------------------------------------------------
// What is sent: method, headers, body, auth, keep-alive, compression
// ---------------------------------------------------------------------------------------

fn print_plan(args: &[&str]) -> Value {
    let mut argv = vec!["quick", "--print-plan"];
    argv.extend_from_slice(args);
    let out = barrage(&argv, LIMIT);
    out.expect_success();
    out.json()
}

fn plan_request(plan: &Value) -> &Value {
    &plan["sessions"][0]["steps"][0]
}

fn plan_header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| {
            h["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .and_then(|h| {
            assert_eq!(h["value"]["kind"], "text", "quick's headers are fixed text");
            h["value"]["value"].as_str()
        })
}

fn plan_body(request: &Value) -> Vec<u8> {
    assert_eq!(request["body"]["kind"], "raw", "{request:#}");
    request["body"]["bytes"]
        .as_array()
        .unwrap_or_else(|| panic!("no body in {request:#}"))
        .iter()
        .map(|b| b.as_u64().expect("byte") as u8)
        .collect()
}

#[test]
fn method_headers_body_and_auth_land_in_the_plan() {
    let plan = print_plan(&[
        "-m",
        "POST",
        "-d",
        "hello",
        "-H",
        "X-Test: yes",
        "-a",
        "u:pw",
        "-T",
        "application/json",
        "-t",
        "500ms",
        "--disable-keepalive",
        "--disable-compression",
        "-n",
        "1",
        "-c",
        "1",
        "http://127.0.0.1:9/echo?x=1",
    ]);
    let r = plan_request(&plan);
    assert_eq!(r["method"], "POST", "{plan:#}");
    assert_eq!(r["path"], "/echo?x=1", "{plan:#}");
    assert_eq!(plan_body(r), b"hello");
    assert_eq!(plan_header(r, "X-Test"), Some("yes"), "{plan:#}");
    assert_eq!(
        plan["options"]["basic_auth"],
        serde_json::json!({"username": "u", "password": "pw"})
    );
    assert_eq!(plan_header(r, "Content-Type"), Some("application/json"));
    assert_eq!(plan["options"]["keep_alive"], false);
    assert_eq!(plan["options"]["compression"], false);
    assert_eq!(plan["options"]["request_timeout"], 500);
    assert_eq!(plan["target"]["port"], 9);
    assert_eq!(plan["tags"], serde_json::json!(["POST /echo?x=1"]));

    // -D reads the body from a file, bytes as they are.
    let bytes: Vec<u8> = (0u8..=255).collect();
    let file = scratch_file("body.bin", &bytes);
    let plan = print_plan(&[
        "-m",
        "PUT",
        "-D",
        file.to_str().unwrap(),
        "-n",
        "1",
        "-c",
        "1",
        "http://127.0.0.1:9/",
    ]);
    let r = plan_request(&plan);
    assert_eq!(r["method"], "PUT");
    assert_eq!(plan_body(r), bytes);
    let _ = std::fs::remove_file(file);
}

#[test]
fn body_and_headers_reach_the_target() {
    let target = Target::start();
    let url = target.url("/echo");
    let base = &["--disable-compression", "-n", "1", "-c", "1"];
    let plain = quick_json(&[&base[..], &[&url]].concat(), LIMIT);
    assert_eq!(plain["status_codes"], serde_json::json!({"200": 1}));
    let body = "b".repeat(1000);
    let header = format!("X-Test: {}", "h".repeat(500));
    let posted = quick_json(
        &[&base[..], &["-m", "POST", "-d", &body, "-H", &header, &url]].concat(),
        LIMIT,
    );
    assert_eq!(posted["status_codes"], serde_json::json!({"200": 1}));
    let (plain, posted) = (
        u(&plain, "size_per_request_bytes"),
        u(&posted, "size_per_request_bytes"),
    );
    assert!(
        posted >= plain + 1500,
        "the echo of a 1000-byte body and a 500-byte header should be ≥1500 bytes longer: \
         {posted} vs {plain}"
    );

    // A body from a file arrives too.
    let file = scratch_file("echo-body.txt", "f".repeat(2000).as_bytes());
    let from_file = quick_json(
        &[
            &base[..],
            &["-m", "POST", "-D", file.to_str().unwrap(), &url],
        ]
        .concat(),
        LIMIT,
    );
    let _ = std::fs::remove_file(file);
    assert!(
        u(&from_file, "size_per_request_bytes") >= plain + 2000,
        "{from_file:#}"
    );
}

#[test]
fn head_requests_get_no_body_and_keep_the_connection() {
    let target = Target::start();
    let s = quick_json(
        &[
            "-m",
            "HEAD",
            "--disable-compression",
            "-n",
            "10",
            "-c",
            "2",
            &target.url("/bytes/1000"),
        ],
        LIMIT,
    );
    assert_eq!(s["status_codes"], serde_json::json!({"200": 10}), "{s:#}");
    assert_eq!(u(&s, "total_data_bytes"), 0, "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 2, "{s:#}");
    let get = quick_json(
        &[
            "--disable-compression",
            "-n",
            "10",
            "-c",
            "2",
            &target.url("/bytes/1000"),
        ],
        LIMIT,
    );
    assert_eq!(u(&get, "total_data_bytes"), 10_000, "{get:#}");
}

#[test]
fn keep_alive_reuses_connections_unless_disabled() {
    let target = Target::start();
    let s = quick_json(
        &[
            "--disable-keepalive",
            "-n",
            "50",
            "-c",
            "5",
            &target.url("/"),
        ],
        LIMIT,
    );
    assert_eq!(u(&s, "responses"), 50, "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 50, "{s:#}");
    assert_eq!(u(&s["details"]["connect"], "count"), 50, "{s:#}");
    let s = quick_json(&["-n", "50", "-c", "5", &target.url("/")], LIMIT);
    assert_eq!(u(&s, "responses"), 50, "{s:#}");
    assert_eq!(u(&s, "connections_opened"), 5, "{s:#}");
}

#[test]
fn compression_is_asked_for_unless_disabled() {
    let target = Target::start();
    let url = target.url("/?size=20000");
    let compressed = quick_json(&["-n", "10", "-c", "2", &url], LIMIT);
    let plain = quick_json(
        &["--disable-compression", "-n", "10", "-c", "2", &url],
        LIMIT,
    );
    assert_eq!(compressed["status_codes"], serde_json::json!({"200": 10}));
    assert_eq!(plain["status_codes"], serde_json::json!({"200": 10}));
    let (c, p) = (
        u(&compressed, "total_data_bytes"),
        u(&plain, "total_data_bytes"),
    );
    assert!(
        p >= 200_000,
        "uncompressed: 10 bodies of ≥20000 bytes, got {p}"
    );
    assert!(
        (c as f64) < 0.5 * p as f64,
        "gzip should shrink the padded bodies: {c} vs {p}"
    );
    assert!(c > 0, "compressed bodies are still bodies");
}

// ---------------------------------------------------------------------------------------
// Output formats and other commands
// ---------------------------------------------------------------------------------------

#[test]
fn text_output_has_every_hey_section() {
    let target = Target::start();
    let out = barrage(&["quick", "-n", "100", "-c", "5", &target.url("/")], LIMIT);
    out.expect_success();
    let text = &out.stdout;
    for needle in [
        "Summary:",
        "Total:",
        "Slowest:",
        "Fastest:",
        "Average:",
        "Requests/sec:",
        "Total data:",
        "Size/request:",
        "Response time histogram:",
        "Latency distribution:",
        "10% in ",
        "50% in ",
        "99% in ",
        "99.9% in ",
        "max in ",
        "Details (average, fastest, slowest):",
        "DNS+dialup:",
        "req write:",
        "resp wait:",
        "resp read:",
        "Status code distribution:",
        "[200]\t100 responses",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("Error distribution:"), "{text}");
    assert!(
        serde_json::from_str::<Value>(text).is_err(),
        "text is not JSON"
    );
    // Sections appear in hey's order.
    let order = [
        "Summary:",
        "Response time histogram:",
        "Latency distribution:",
        "Details (average, fastest, slowest):",
        "Status code distribution:",
    ];
    let positions: Vec<usize> = order.iter().map(|s| text.find(s).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn demo_runs_and_prints_a_summary() {
    let _heavy = heavy_lock();
    let out = barrage(&["demo", "-z", "1s", "-c", "5"], LIMIT);
    out.expect_success();
    assert!(out.stdout.contains("Summary:"), "{}", out.stdout);
    assert!(out.stdout.contains("Requests/sec:"), "{}", out.stdout);
    assert!(out.stdout.contains("[200]\t"), "{}", out.stdout);
    assert!(
        out.elapsed < Duration::from_secs(15),
        "a 1 s demo took {:?}",
        out.elapsed
    );
}

#[test]
fn print_plan_shows_the_workload_model() {
    let closed = print_plan(&["-n", "30", "-c", "3", "http://127.0.0.1:9/"]);
    // Three clients looping back to back (a schedule of 3), bounded by 30 iterations shared.
    let w = &closed["workload"];
    assert_eq!(w["admission"]["kind"], "loop", "{closed:#}");
    assert_eq!(w["schedule"][0]["from"], 3.0);
    assert_eq!(w["bound"]["kind"], "iterations");
    assert_eq!(w["bound"]["count"], 30);
    assert_eq!(w["bound"]["per_client"], false);
    assert_eq!(w["bound"]["max_duration"], Value::Null);
    assert_eq!(plan_request(&closed)["method"], "GET");

    // hey's -q is per worker: 50/s for each of 4 clients is 200/s for the run.
    let paced = print_plan(&["-q", "50", "-z", "3s", "-c", "4", "http://127.0.0.1:9/"]);
    let w = &paced["workload"];
    assert_eq!(w["admission"]["kind"], "paced", "{paced:#}");
    assert_eq!(w["admission"]["clients"], 4);
    // -q is per worker (hey): 50/s for each of 4 workers, for 3 s.
    assert_eq!(w["schedule"][0]["from"], 200.0);
    assert_eq!(w["schedule"][0]["duration"], 3000);
    assert_eq!(w["bound"]["kind"], "duration");

    // Printing the plan loads nothing: a refused port would otherwise show up as errors.
    let out = barrage(
        &[
            "quick",
            "--print-plan",
            "-n",
            "1",
            "-c",
            "1",
            "http://127.0.0.1:9/",
        ],
        LIMIT,
    );
    assert!(!out.stdout.contains("Summary:"), "{}", out.stdout);

    let help = barrage(&["quick", "--help"], LIMIT);
    help.expect_success();
    for flag in [
        "-n",
        "-c",
        "-z",
        "-q",
        "--disable-keepalive",
        "--print-plan",
    ] {
        assert!(
            help.stdout.contains(flag),
            "--help lacks {flag}:\n{}",
            help.stdout
        );
    }
    barrage(&["--version"], LIMIT).expect_success();
}

#[test]
fn target_serves_health_on_the_printed_address() {
    let target = Target::start_with(&[]);
    assert!(
        target
            .first_line
            .starts_with("barrage target listening on "),
        "{:?}",
        target.first_line
    );
    assert!(target.addr.ip().is_loopback() && target.addr.port() != 0);
    let mut stream = TcpStream::connect(target.addr).expect("connect to the target");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .expect("read the response");
    let response = String::from_utf8_lossy(&response);
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "unexpected response:\n{response}"
    );
    let (head, body) = response.split_once("\r\n\r\n").expect("head and body");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    serde_json::from_str::<Value>(body.trim()).expect("/health answers JSON");
}

#[test]
fn ctrl_c_stops_the_run_and_reports_what_was_done() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = target.url("/");
    let running = Running::spawn(&["quick", "-z", "30s", "-c", "5", "-o", "json", &url]);
    std::thread::sleep(Duration::from_secs(1));
    let interrupted_at = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &running.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success(), "kill -INT failed");
    let out = running.wait(Duration::from_secs(10));
    let took = interrupted_at.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "exit took {took:?} after SIGINT"
    );
    out.expect_success();
    let s = out.json();
    check_invariants(&s);
    assert_eq!(s["interrupted"], Value::Bool(true), "{s:#}");
    assert!(u(&s, "requests") > 0, "{s:#}");
    let total = f(&s, "total_s");
    assert!(
        (0.5..10.0).contains(&total),
        "total_s {total} should be about the second before the interrupt"
    );
}
