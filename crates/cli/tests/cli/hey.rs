//! hey's command lines: every flag in one-dash and two-dash spelling with a bad value each,
//! redirects and URL credentials against the bundled target, and a parity test that gives the
//! same command line to hey (when installed) and to `barrage quick` and compares what a
//! recording server received.

use super::{print_plan, LIMIT};
use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// One hey flag: its name, a good value (none for a bool), what the plan must show, and a
/// bad value with what its error line mentions.
struct FlagCase {
    name: &'static str,
    value: Option<&'static str>,
    check: fn(&Value),
    bad: Option<&'static str>,
}

fn request_of(plan: &Value) -> &Value {
    &plan["sessions"][0]["steps"][0]
}

fn header_of(plan: &Value, name: &str) -> Option<String> {
    request_of(plan)["headers"]
        .as_array()?
        .iter()
        .find(|h| {
            h["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .and_then(|h| h["value"]["value"].as_str().map(str::to_owned))
}

fn flag_cases() -> Vec<FlagCase> {
    let body_file = scratch_file("hey-flag-body.txt", b"from a file");
    let body_file: &'static str = Box::leak(body_file.to_string_lossy().into_owned().into());
    vec![
        FlagCase {
            name: "n",
            value: Some("120"),
            check: |p| assert_eq!(p["workload"]["bound"]["count"], 120, "{p}"),
            bad: Some("many"),
        },
        FlagCase {
            name: "c",
            value: Some("3"),
            check: |p| assert_eq!(p["workload"]["schedule"][0]["from"], 3.0, "{p}"),
            bad: Some("0"),
        },
        FlagCase {
            name: "q",
            value: Some("5"),
            check: |p| assert_eq!(p["workload"]["schedule"][0]["from"], 250.0, "{p}"),
            bad: Some("-1"),
        },
        FlagCase {
            name: "z",
            value: Some("2s"),
            check: |p| assert_eq!(p["workload"]["schedule"][0]["duration"], 2000, "{p}"),
            bad: Some("2parsecs"),
        },
        FlagCase {
            name: "o",
            value: Some("json"),
            check: |_| {},
            bad: Some("xml"),
        },
        FlagCase {
            name: "m",
            value: Some("PUT"),
            check: |p| assert_eq!(request_of(p)["method"], "PUT"),
            bad: Some("BREW"),
        },
        FlagCase {
            name: "H",
            value: Some("X-A: 1"),
            check: |p| assert_eq!(header_of(p, "X-A").as_deref(), Some("1")),
            bad: Some("novalue"),
        },
        FlagCase {
            name: "t",
            value: Some("3"),
            check: |p| assert_eq!(p["options"]["request_timeout"], 3000),
            bad: Some("-1"),
        },
        FlagCase {
            name: "A",
            value: Some("text/plain"),
            check: |p| assert_eq!(header_of(p, "Accept").as_deref(), Some("text/plain")),
            bad: Some("a\u{1}b"),
        },
        FlagCase {
            name: "d",
            value: Some("-body"),
            check: |p| assert!(request_of(p)["body"].is_object(), "{p}"),
            bad: None,
        },
        FlagCase {
            name: "D",
            value: Some(body_file),
            check: |p| assert!(request_of(p)["body"].is_object()),
            bad: Some("/no/such/file"),
        },
        FlagCase {
            name: "T",
            value: Some("application/json"),
            check: |p| {
                assert_eq!(
                    header_of(p, "Content-Type").as_deref(),
                    Some("application/json")
                )
            },
            bad: Some("a\u{1}b"),
        },
        FlagCase {
            name: "U",
            value: Some("ua/1"),
            check: |p| {
                let expected = format!("ua/1 barrage/{}", env!("CARGO_PKG_VERSION"));
                assert_eq!(header_of(p, "User-Agent"), Some(expected));
            },
            bad: Some("a\u{1}b"),
        },
        FlagCase {
            name: "a",
            value: Some("u:pw"),
            check: |p| assert_eq!(p["options"]["basic_auth"]["password"], "pw"),
            bad: Some("nocolon"),
        },
        FlagCase {
            name: "h2",
            value: None,
            check: |p| assert_eq!(p["options"]["http"], "2"),
            bad: Some("maybe"),
        },
        FlagCase {
            name: "host",
            value: Some("example.test"),
            check: |p| assert_eq!(header_of(p, "Host").as_deref(), Some("example.test")),
            bad: Some("a\u{1}b"),
        },
        FlagCase {
            name: "cpus",
            value: Some("2"),
            check: |p| assert_eq!(p["options"]["threads"], 2),
            bad: Some("0"),
        },
        FlagCase {
            name: "disable-compression",
            value: None,
            check: |p| assert_eq!(p["options"]["compression"], false),
            bad: Some("maybe"),
        },
        FlagCase {
            name: "disable-keepalive",
            value: None,
            check: |p| assert_eq!(p["options"]["keep_alive"], false),
            bad: Some("maybe"),
        },
        FlagCase {
            name: "disable-redirects",
            value: None,
            check: |p| assert!(p["options"].get("max_redirects").is_none(), "{p}"),
            bad: Some("maybe"),
        },
        FlagCase {
            name: "x",
            value: Some("127.0.0.1:3128"),
            check: |p| assert_eq!(p["options"]["proxy"]["target"]["port"], 3128, "{p}"),
            bad: Some("https://127.0.0.1:3128"),
        },
    ]
}

/// The exit code and stderr of `barrage quick ARGS`, expecting exactly one stderr line.
fn one_line_error(args: &[String]) -> String {
    let mut argv = vec!["quick"];
    argv.extend(args.iter().map(String::as_str));
    let out = barrage(&argv, LIMIT);
    assert_eq!(
        out.code(),
        Some(2),
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {:?}", out.stderr);
    lines[0].to_string()
}

#[test]
fn every_hey_flag_means_the_same_with_one_or_two_dashes_and_a_bad_value_names_it() {
    let url = "http://127.0.0.1:9/p".to_string();
    for case in flag_cases() {
        for dashes in ["-", "--"] {
            let flag = format!("{dashes}{}", case.name);
            let spellings: Vec<Vec<String>> = match case.value {
                Some(value) => vec![
                    vec![flag.clone(), value.to_string()],
                    vec![format!("{flag}={value}")],
                ],
                None => vec![vec![flag.clone()], vec![format!("{flag}=true")]],
            };
            for spelling in spellings {
                let mut args: Vec<&str> = spelling.iter().map(String::as_str).collect();
                args.push(&url);
                let plan = print_plan(&args);
                (case.check)(&plan);
            }
            if let Some(bad) = case.bad {
                let args = match case.value {
                    Some(_) => vec![flag.clone(), bad.to_string(), url.clone()],
                    None => vec![format!("{flag}={bad}"), url.clone()],
                };
                let line = one_line_error(&args);
                let named = format!("-{}", case.name);
                assert!(
                    line.contains(&named),
                    "{args:?}: {line:?} does not name {named}"
                );
            }
        }
    }
    // A misspelt flag is named, not read as a short flag with the rest as its value.
    let line = one_line_error(&["-disable-keepalives".into(), url.clone()]);
    assert!(line.contains("-disable-keepalives: unknown flag"), "{line}");
    // A bool set false is off.
    let plan = print_plan(&["-disable-keepalive=false", &url]);
    assert_eq!(plan["options"]["keep_alive"], true);
}

#[test]
fn quick_follows_redirects_like_hey_unless_disabled() {
    let target = Target::start();
    let url = target.url("/redirect/2");
    let s = quick_json(&["-n", "4", "-c", "1", &url], LIMIT);
    // As hey: a chain (two 302s and the final 200) is one request with its final status.
    assert_eq!(s["status_codes"], serde_json::json!({"200": 4}), "{s:#}");
    assert_eq!(s["requests"], 4, "{s:#}");
    // Its latency runs from the first hop's start to the last response, and its bytes
    // on the wire are the three hops'.
    let one = quick_json(&["-n", "4", "-c", "1", &target.url("/get")], LIMIT);
    assert!(
        s["bytes_sent"].as_u64().unwrap() > 2 * one["bytes_sent"].as_u64().unwrap(),
        "{s:#}\n{one:#}"
    );
    let s = quick_json(&["-n", "4", "-c", "1", "-disable-redirects", &url], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"302": 4}), "{s:#}");
}

#[test]
fn a_tenth_redirect_is_heys_error_and_csv_has_a_row_per_chain() {
    let target = Target::start();
    // hey (Go's client) sends at most 10 requests per chain; the 10th 302 is an error.
    // The chain is one request, and so one error (no response: exit 1, never green).
    let s = quick_json_unanswered(&["-n", "2", "-c", "1", &target.url("/redirect/12")], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({}), "{s:#}");
    assert_eq!(
        s["errors_by_kind"],
        serde_json::json!({"too_many_redirects": 2}),
        "{s:#}"
    );
    assert_eq!(s["requests"], 2, "{s:#}");
    let s = quick_json(&["-n", "2", "-c", "1", &target.url("/redirect/9")], LIMIT);
    assert_eq!(s["status_codes"]["200"], 2, "{s:#}");
    // -o csv: one row per chain (its final status), as hey writes one per client.Do.
    let out = barrage(
        &[
            "quick",
            "-n",
            "3",
            "-c",
            "1",
            "-o",
            "csv",
            &target.url("/redirect/2"),
        ],
        LIMIT,
    );
    out.expect_success();
    let rows: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{}", out.stdout);
    assert!(
        rows.iter().all(|r| r.split(',').nth(6) == Some("200")),
        "{}",
        out.stdout
    );
}

/// The lines of `section` ("Status code distribution:") in hey's text layout, with an
/// error's message cut to its count (hey prints Go's error, barrage its kind).
fn hey_section(text: &str, section: &str) -> Vec<String> {
    let Some(rest) = text.split(section).nth(1) else {
        return Vec::new();
    };
    rest.lines()
        .skip(1)
        .take_while(|line| line.starts_with("  ["))
        .map(|line| line.split(']').next().unwrap_or(line).to_string())
        .collect()
}

#[test]
fn a_redirect_chain_is_one_request_in_the_summary_as_hey_counts_it() {
    if !hey_installed_or_skip("hey chain") {
        return;
    }
    let target = Target::start();
    for (path, hey_code, barrage_code) in [
        ("/redirect/3", Some(0), Some(0)),
        // Every chain stops after 10 requests: one error each; hey exits 0, barrage 1 (a
        // run without a response is never green).
        ("/redirect/12", Some(0), Some(1)),
    ] {
        let url = target.url(path);
        let args = ["-n", "6", "-c", "2", url.as_str()];
        let hey = std::process::Command::new("hey")
            .args(args)
            .output()
            .expect("run hey");
        assert_eq!(hey.status.code(), hey_code, "{hey:?}");
        let hey_text = String::from_utf8_lossy(&hey.stdout).to_string();
        let mut argv = vec!["quick"];
        argv.extend_from_slice(&args);
        let ours = barrage(&argv, LIMIT);
        assert_eq!(
            ours.code(),
            barrage_code,
            "{}\n{}",
            ours.stdout,
            ours.stderr
        );
        for section in ["Status code distribution:", "Error distribution:"] {
            assert_eq!(
                hey_section(&ours.stdout, section),
                hey_section(&hey_text, section),
                "{path} {section}\nhey:\n{hey_text}\nbarrage:\n{}",
                ours.stdout
            );
        }
        // One histogram entry per chain (hey's eleven rows add up to its responses).
        let counted: u64 = ours
            .stdout
            .split("Response time histogram:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .map_or(0, |rows| {
                rows.lines()
                    .filter_map(|r| r.split('[').nth(1)?.split(']').next()?.parse::<u64>().ok())
                    .sum()
            });
        let expected = if path == "/redirect/3" { 6 } else { 0 };
        assert_eq!(counted, expected, "{}", ours.stdout);
    }
    // The summary's figures are per chain too.
    let s = quick_json(&["-n", "6", "-c", "2", &target.url("/redirect/3")], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"200": 6}), "{s:#}");
    assert_eq!(s["latency"]["count"], 6, "{s:#}");
}

#[test]
fn credentials_in_the_url_authenticate() {
    let target = Target::start();
    let url = format!("http://u%40x:p%3Aw@{}/basic-auth/u@x/p:w", target.addr);
    let s = quick_json(&["-n", "2", "-c", "1", &url], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"200": 2}), "{s:#}");
    let plain = target.url("/basic-auth/u@x/p:w");
    let s = quick_json(&["-n", "2", "-c", "1", &plain], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"401": 2}), "{s:#}");
}

#[test]
fn text_summary_has_hey_details() {
    let target = Target::start();
    let out = barrage(&["quick", "-n", "20", "-c", "2", &target.url("/")], LIMIT);
    out.expect_success();
    let text = &out.stdout;
    assert!(text.contains("\n  DNS-lookup:\t"), "{text}");
    let histogram = text
        .split("Response time histogram:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no histogram in {text}"));
    assert_eq!(histogram.lines().count(), 11, "hey's 11 rows:\n{histogram}");
}

#[test]
fn o_csv_streams_heys_rows_one_per_request() {
    let target = Target::start();
    let out = barrage(
        &[
            "quick",
            "-n",
            "30",
            "-c",
            "3",
            "-o",
            "csv",
            &target.url("/"),
        ],
        LIMIT,
    );
    out.expect_success();
    let mut lines = out.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset"),
        "{}",
        out.stdout
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        30,
        "one row per request, no summary:\n{}",
        out.stdout
    );
    for row in &rows {
        assert_eq!(row.len(), 8, "{row:?}");
        assert_eq!(row[6], "200", "{row:?}");
        let seconds: Vec<f64> = [0, 1, 2, 3, 4, 5, 7]
            .iter()
            .map(|&i| {
                let (_, decimals) = row[i].split_once('.').expect("hey's %4.4f");
                assert_eq!(decimals.len(), 4, "{row:?}");
                row[i].parse::<f64>().unwrap()
            })
            .collect();
        assert!(
            seconds
                .iter()
                .all(|s| (0.0..LIMIT.as_secs_f64()).contains(s)),
            "{row:?}"
        );
        // The phases fit in the response time (each rounded to 0.1 ms).
        assert!(
            seconds[3] + seconds[4] + seconds[5] <= seconds[0] + 0.0003,
            "{row:?}"
        );
    }
    // A loopback request may round to 0.0000 s; all of them together take time.
    let total: f64 = rows.iter().map(|r| r[0].parse::<f64>().unwrap()).sum();
    assert!(total > 0.0, "{}", out.stdout);
    let samples = scratch_file("o-csv-samples.ndjson", b"");
    let samples = format!("samples={}:1", samples.display());
    let bad = barrage(
        &[
            "quick",
            "-n",
            "1",
            "-c",
            "1",
            "-o",
            "csv",
            "--out",
            &samples,
            &target.url("/"),
        ],
        LIMIT,
    );
    assert_eq!(bad.code(), Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("-o csv"), "{}", bad.stderr);
}

// ---------------------------------------------------------------------------------------
// Parity with hey
// ---------------------------------------------------------------------------------------

/// One request as a recording server saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seen {
    connection: usize,
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header lines compared between the tools (lower-case names, in a stable order).
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Headers either tool sends of its own: its name, compression offer, request ids, and
/// barrage's default `Accept: */*` (hey sends none). Everything else must match.
fn compared(name: &str, value: &str) -> bool {
    let own = matches!(
        name,
        "user-agent" | "accept-encoding" | "x-request-id" | "content-length"
    );
    let default_accept = name == "accept" && value == "*/*";
    !(own || default_accept)
}

/// An HTTP/1.1 server on a free loopback port recording every request; `/r` redirects to
/// `/final` with 302, `/x` to `http://localhost:PORT/final` (the same server under another
/// host name: another origin), `/loop` to itself; everything else answers 200 `ok`.
pub(crate) fn recording_server() -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (connection, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let log = log.clone();
            let port = addr.port();
            std::thread::spawn(move || serve_recording(connection, stream, port, &log));
        }
    });
    (addr, seen)
}

fn serve_recording(
    connection: usize,
    stream: std::net::TcpStream,
    port: u16,
    log: &Mutex<Vec<Seen>>,
) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((&header, ""));
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            }
            headers.push((name, value));
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        headers.retain(|(n, v)| compared(n, v));
        headers.sort();
        let redirect =
            |to: &str| format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
        let response = match path.as_str() {
            "/r" => redirect("/final"),
            "/x" => redirect(&format!("http://localhost:{port}/final")),
            "/loop" => redirect("/loop"),
            _ => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_string(),
        };
        log.lock().unwrap().push(Seen {
            connection,
            method,
            path,
            headers,
            body,
        });
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// What the server at `addr` saw from `program ARGS URL`, connections numbered from 0 in the
/// order they first sent a request.
fn requests_of(program: &str, args: &[&str], url: &str, seen: &Mutex<Vec<Seen>>) -> Vec<Seen> {
    seen.lock().unwrap().clear();
    let mut argv: Vec<&str> = args.to_vec();
    argv.push(url);
    let status = if program == "hey" {
        let out = std::process::Command::new("hey")
            .args(&argv)
            .output()
            .expect("run hey");
        out.status
    } else {
        let mut full = vec!["quick"];
        full.extend_from_slice(&argv);
        let out = barrage(&full, LIMIT);
        // A chain that never ends is one error (hey: "stopped after 10 redirects"), so no
        // request got a response: barrage exits 1 where hey exits 0 (never green).
        if url.ends_with("/loop") && out.code() == Some(1) {
            assert!(
                out.stderr.contains("no request got a response"),
                "{}",
                out.stderr
            );
            std::process::ExitStatus::default()
        } else {
            out.status
        }
    };
    assert!(status.success(), "{program} {argv:?}: {status:?}");
    let mut seen = std::mem::take(&mut *seen.lock().unwrap());
    let mut order: Vec<usize> = Vec::new();
    for s in &mut seen {
        let index = match order.iter().position(|&c| c == s.connection) {
            Some(index) => index,
            None => {
                order.push(s.connection);
                order.len() - 1
            }
        };
        s.connection = index;
    }
    seen
}

/// Whether hey is here to compare with; without it (never in CI, which installs it) the
/// `test` is skipped with a notice.
fn hey_installed_or_skip(test: &str) -> bool {
    let installed = std::process::Command::new("hey")
        .arg("-h")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stderr).contains("Usage: hey"));
    if !installed {
        assert!(
            std::env::var_os("BARRAGE_CI").is_none(),
            "CI installs hey (.ci/run); it must be here"
        );
        eprintln!("NOTICE: hey is not installed; the {test} test is skipped (apt-get install hey)");
    }
    installed
}

#[test]
fn the_same_command_line_sends_what_hey_sends() {
    if !hey_installed_or_skip("hey parity") {
        return;
    }
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "-n",
                "3",
                "-c",
                "1",
                "-m",
                "POST",
                "-d",
                "hello",
                "-T",
                "application/json",
                "-H",
                "X-A: 1",
            ],
            "/p",
        ),
        (
            &[
                "-n",
                "3",
                "-c",
                "1",
                "-disable-keepalive",
                "-A",
                "text/plain",
                "-host",
                "example.test",
            ],
            "/p",
        ),
        (
            &["-n", "2", "-c", "1", "-m", "PUT", "--disable-compression"],
            "/p",
        ),
        (&["-n", "2", "-c", "1", "-m", "POST", "-d", "x=1"], "/r"),
        (&["-n", "2", "-c", "1", "-disable-redirects"], "/r"),
        // To another origin: its own connection, its Host, no Authorization (credentials
        // from the URL: hey's own -a never reaches the wire, its headers replace them).
        (&["-n", "2", "-c", "1", "-H", "X-B: 2"], "user:pw@/x"),
        // Go stops a chain after 10 requests (an error, not an 11th request).
        (&["-n", "1", "-c", "1"], "/loop"),
    ];
    let (addr, seen) = recording_server();
    for (args, path) in cases {
        let url = match path.split_once('@') {
            Some((userinfo, path)) => format!("http://{userinfo}@{addr}{path}"),
            None => format!("http://{addr}{path}"),
        };
        let hey = requests_of("hey", args, &url, &seen);
        let ours = requests_of("barrage", args, &url, &seen);
        assert!(!hey.is_empty(), "{args:?}: hey sent nothing");
        assert_eq!(
            ours, hey,
            "{args:?} {path}: barrage (left) and hey (right) differ"
        );
    }
}

#[test]
fn http_debug_prints_the_first_exchanges_without_credentials() {
    let target = Target::start();
    // /json does not echo the request back (whose Authorization would then be in the body).
    let url = target.url("/json");
    let args = [
        "quick", "-n", "30", "-c", "1", "-m", "POST", "-d", "the-body", "-a", "u:pw",
    ];
    for (flag, shows_body) in [("-http-debug", false), ("--http-debug=full", true)] {
        let mut argv = args.to_vec();
        argv.extend([flag, url.as_str()]);
        let out = barrage(&argv, LIMIT);
        out.expect_success();
        let err = &out.stderr;
        // The run's first 20 exchanges, each with its request and its response.
        assert_eq!(
            err.matches("Request:\nPOST /json HTTP/1.1\n").count(),
            20,
            "{err}"
        );
        assert_eq!(
            err.matches("\nResponse:\nHTTP/1.1 200\n").count(),
            20,
            "{err}"
        );
        assert!(err.contains("Authorization: [redacted]"), "{err}");
        assert!(!err.contains("dTpwdw"), "credentials never print: {err}");
        assert_eq!(err.contains("the-body"), shows_body, "{flag}: {err}");
        // With =full the response body shows, decoded.
        assert_eq!(
            err.contains("Sample Slide Show"),
            shows_body,
            "{flag}: {err}"
        );
    }
    let line = one_line_error(&["--http-debug=loud".into(), url]);
    assert!(line.contains("--http-debug"), "{line}");
}

// ---------------------------------------------------------------------------------------
// Proxies
// ---------------------------------------------------------------------------------------

/// A forwarding HTTP proxy on a free loopback port: CONNECT opens a tunnel, any other request
/// (absolute form) is forwarded to the host it names. Records each connection's first request
/// line and its `Proxy-Authorization`.
/// Each proxied connection's first request line and `Proxy-Authorization`.
type ProxyLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn test_proxy() -> (SocketAddr, ProxyLog) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let log = log.clone();
            std::thread::spawn(move || proxy_connection(client, &log));
        }
    });
    (addr, seen)
}

fn proxy_connection(client: std::net::TcpStream, log: &Mutex<Vec<(String, Option<String>)>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut head = String::new();
    let mut auth = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(value) = line
            .to_ascii_lowercase()
            .strip_prefix("proxy-authorization:")
        {
            auth = Some(value.trim().to_string());
        }
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    let request_line = head.lines().next().unwrap_or("").to_string();
    log.lock().unwrap().push((request_line.clone(), auth));
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let authority = if method == "CONNECT" {
        target.to_string()
    } else {
        let rest = target.strip_prefix("http://").unwrap_or(target);
        rest.split('/').next().unwrap_or("").to_string()
    };
    let Ok(mut upstream) = std::net::TcpStream::connect(&authority) else {
        return;
    };
    let mut client = client;
    if method == "CONNECT" {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .unwrap();
    } else {
        upstream.write_all(head.as_bytes()).unwrap();
    }
    // Whatever the reader buffered past the head goes up first, then bytes flow both ways.
    let buffered = reader.buffer().to_vec();
    upstream.write_all(&buffered).unwrap();
    let mut down = upstream.try_clone().unwrap();
    let mut client_writer = client.try_clone().unwrap();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut down, &mut client_writer);
    });
    let _ = std::io::copy(&mut reader.into_inner(), &mut upstream);
}

#[test]
fn x_sends_requests_through_an_http_proxy_and_https_through_connect() {
    let target = Target::start_with(&["--threads", "1", "--tls"]);
    let cert = target
        .cert_path
        .clone()
        .expect("the TLS target's certificate");
    let plain = Target::start();
    let (proxy, seen) = test_proxy();
    let proxy_url = format!("http://u:pw@{proxy}");
    // Plain HTTP: absolute-form requests to the proxy, credentials in Proxy-Authorization.
    let url = plain.url("/get");
    let s = quick_json(&["-n", "4", "-c", "1", "-x", &proxy_url, &url], LIMIT);
    assert_eq!(s["status_codes"], serde_json::json!({"200": 4}), "{s:#}");
    let first = seen.lock().unwrap().remove(0);
    assert_eq!(first.0, format!("GET {url} HTTP/1.1"));
    assert_eq!(
        first.1.as_deref(),
        Some("basic dtpwdw=="),
        "lower-cased by the recorder"
    );
    // Redirect hops stay in absolute form.
    seen.lock().unwrap().clear();
    let s = quick_json(
        &[
            "-n",
            "1",
            "-c",
            "1",
            "-disable-keepalive",
            "-x",
            &proxy_url,
            &plain.url("/redirect/1"),
        ],
        LIMIT,
    );
    // The chain is one request with its final status, as hey counts it.
    assert_eq!(s["status_codes"], serde_json::json!({"200": 1}), "{s:#}");
    let lines: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(l, _)| l.clone())
        .collect();
    assert_eq!(
        lines,
        [
            format!("GET {} HTTP/1.1", plain.url("/redirect/1")),
            format!("GET {} HTTP/1.1", plain.url("/get"))
        ]
    );
    // A redirect to another origin goes through the proxy too: absolute form (with the
    // proxy's credentials) for http, a CONNECT tunnel for https.
    seen.lock().unwrap().clear();
    let elsewhere = format!("https://localhost:{}/get", target.addr.port());
    let s = quick_json(
        &[
            "-n",
            "1",
            "-c",
            "1",
            "-x",
            &proxy_url,
            "--cacert",
            &cert,
            &plain.url(&format!("/redirect-to?url={elsewhere}")),
        ],
        LIMIT,
    );
    // The chain is one request with its final status, as hey counts it.
    assert_eq!(s["status_codes"], serde_json::json!({"200": 1}), "{s:#}");
    let hops = seen.lock().unwrap().clone();
    assert_eq!(
        hops,
        [
            (
                format!(
                    "GET {} HTTP/1.1",
                    plain.url(&format!("/redirect-to?url={elsewhere}"))
                ),
                Some("basic dtpwdw==".to_string())
            ),
            (
                format!("CONNECT localhost:{} HTTP/1.1", target.addr.port()),
                Some("basic dtpwdw==".to_string())
            ),
        ]
    );
    // HTTPS: a CONNECT tunnel to the target, TLS inside it (hey's -x host:port form).
    seen.lock().unwrap().clear();
    let url = target.https_url("/get");
    let s = quick_json(
        &[
            "-n",
            "4",
            "-c",
            "2",
            "-x",
            &proxy.to_string(),
            "--cacert",
            &cert,
            &url,
        ],
        LIMIT,
    );
    assert_eq!(s["status_codes"], serde_json::json!({"200": 4}), "{s:#}");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for (line, auth) in &seen {
        assert_eq!(
            line,
            &format!("CONNECT {} HTTP/1.1", target.addr),
            "{seen:?}"
        );
        assert_eq!(auth, &None);
    }
    // A proxy that is not there: counted connection errors, not a crash (and, as no request
    // got a response, exit 1).
    let closed = format!("127.0.0.1:{}", closed_port());
    let s = quick_json_unanswered(
        &["-n", "2", "-c", "1", "-x", &closed, &plain.url("/get")],
        LIMIT,
    );
    assert_eq!(u(&s, "errors"), 2, "{s:#}");
    let line = one_line_error(&["-x".into(), "https://p:1".into(), url]);
    assert!(line.contains("-x:"), "{line}");
}
