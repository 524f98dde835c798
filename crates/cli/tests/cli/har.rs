//! `barrage convert har` and `barrage replay` end to end against the bundled target: recorded
//! flows converted into scripts that run, replay with and without correlation, recorded
//! arrival offsets kept, and bad recordings refused with one line and exit 2.

use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../har/tests/fixtures")
        .join(name);
    path.to_str().unwrap().to_string()
}

fn summary(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Replays `har` against `target` (its recorded host mapped there); the summary.
fn replay(target: &Target, har: &str, host: &str, extra: &[&str]) -> Value {
    replay_to(&target.addr.to_string(), har, host, extra)
}

/// Replays `har` with its recorded `host` mapped to `addr`; the summary.
fn replay_to(addr: &str, har: &str, host: &str, extra: &[&str]) -> Value {
    let json = scratch_file("replay-summary.json", b"");
    let map = format!("{host}=http://{addr}");
    let mut args = vec![
        "replay",
        har,
        "--map-host",
        &map,
        "--json",
        json.to_str().unwrap(),
        "--no-results",
    ];
    args.extend_from_slice(extra);
    barrage(&args, LIMIT).expect_success();
    summary(&json)
}

#[test]
fn token_then_pings_replayed_with_correlation_each_ping_carries_a_fresh_token() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = fixture("token_pings.har");
    // Three rounds, each its own client: every round's pings carry the token it was issued.
    let s = replay(
        &target,
        &har,
        "api.recorded.test",
        &["--loop", "3", "--speed", "4"],
    );
    assert_eq!(u(&s["status_codes"], "200"), 12, "{s:#}");
    assert!(s["status_codes"].get("401").is_none(), "{s:#}");
    assert_eq!(u(tag(&s, "GET /ping"), "requests"), 9);
    // Every response compared with the recorded one, per tag: all as recorded.
    assert_eq!(check(&s, "GET /ping: status 200 as recorded"), (9, 0));
    assert_eq!(
        check(&s, "GET /ping: content type application/json as recorded"),
        (9, 0)
    );
    // Without correlation the recorded token goes out, which this target never issued.
    let s = replay(&target, &har, "api.recorded.test", &["--no-correlate"]);
    assert_eq!(u(&s["status_codes"], "401"), 3, "{s:#}");
    assert_eq!(u(&s["status_codes"], "200"), 1, "{s:#}");
    assert_eq!(check(&s, "GET /ping: status 200 as recorded"), (0, 3));
    assert_eq!(
        check(&s, "GET /random/get_token: status 200 as recorded"),
        (1, 0)
    );
    assert_eq!(
        check(&s, "GET /random/get_token: JSON shape as recorded"),
        (1, 0)
    );
    // {"ok":false} has the shape of the recorded {"ok":true}: only the status differs.
    assert_eq!(check(&s, "GET /ping: JSON shape as recorded"), (3, 0));

    // The login flow against the target's echo: same statuses mostly, other JSON shapes.
    let s = replay(
        &target,
        &fixture("login_flow.har"),
        "shop.recorded.test",
        &["--speed", "20"],
    );
    assert_eq!(
        check(&s, "POST /anything/api/login: JSON shape as recorded"),
        (0, 1)
    );
    assert_eq!(
        check(&s, "POST /anything/api/orders: status 201 as recorded"),
        (0, 1)
    );
    assert_eq!(
        check(&s, "GET /redirect-to: status 302 as recorded"),
        (1, 0)
    );
}

/// (passed, failed) of the check called `name`.
fn check(summary: &Value, name: &str) -> (u64, u64) {
    let check = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {summary:#}"));
    (u(check, "passed"), u(check, "failed"))
}

#[test]
fn a_mitmproxy_recording_replays_with_correlation_and_fails_without() {
    // Recorded by mitmproxy 11.0.2 (`mitmdump --set hardump=...`) from curl through the
    // proxy to the bundled target: a token, three pings with it, a JSON POST.
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = fixture("mitmproxy_token_pings.har");
    let s = replay(&target, &har, "127.0.0.1:34489", &["--speed", "4"]);
    assert_eq!(
        check(&s, "GET /ping: status 200 as recorded"),
        (3, 0),
        "{s:#}"
    );
    assert_eq!(u(&s["status_codes"], "200"), 5, "{s:#}");
    let s = replay(
        &target,
        &har,
        "127.0.0.1:34489",
        &["--speed", "4", "--no-correlate"],
    );
    assert_eq!(u(&s["status_codes"], "401"), 3, "{s:#}");
}

#[test]
fn converted_recordings_plan_and_run_as_they_are() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = format!("http://{}", target.addr);
    for (name, extra) in [
        ("token_pings", &[][..]),
        ("mitmproxy_token_pings", &[][..]),
        ("login_flow", &[][..]),
        ("chromium_playwright", &[][..]),
        (
            "browser_page_load",
            &["--skip-host", "www.google-analytics.com"][..],
        ),
    ] {
        let script = scratch_file(&format!("{name}.js"), b"");
        let mut args = vec!["convert", "har"];
        let har = fixture(&format!("{name}.har"));
        args.push(&har);
        args.extend_from_slice(&["-o", script.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = barrage(&args, LIMIT);
        out.expect_success();
        assert!(out.stdout.starts_with("wrote "), "{}", out.stdout);
        let json = scratch_file(&format!("{name}-summary.json"), b"");
        let run = barrage(
            &[
                "run",
                script.to_str().unwrap(),
                "--target",
                &url,
                "--duration-limit",
                "2s",
                "--json",
                json.to_str().unwrap(),
                "--no-results",
            ],
            LIMIT,
        );
        run.expect_success();
        let s = summary(&json);
        assert!(u(&s["status_codes"], "200") > 0, "{name}: {s:#}");
        if name.ends_with("token_pings") {
            assert!(s["status_codes"].get("401").is_none(), "{name}: {s:#}");
        }
        if name == "browser_page_load" {
            assert!(u(tag(&s, "static css"), "requests") > 0, "{s:#}");
        }
    }
}

#[test]
fn a_chromium_recording_made_by_playwright_replays_with_correlation_and_fails_without() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = fixture("chromium_playwright.har");
    // Recorded against a target on a port of its own: that host:port is mapped here.
    let recorded: Value = summary(std::path::Path::new(&har));
    let url = recorded["log"]["entries"][0]["request"]["url"]
        .as_str()
        .unwrap();
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let s = replay(&target, &har, host, &[]);
    assert_eq!(u(&s["status_codes"], "200"), 5, "{s:#}");
    assert_eq!(check(&s, "GET /ping: status 200 as recorded"), (2, 0));
    assert_eq!(
        check(&s, "GET /base64/:id: content type text/html as recorded"),
        (1, 0)
    );
    let s = replay(&target, &har, host, &["--no-correlate"]);
    assert_eq!(u(&s["status_codes"], "401"), 2, "{s:#}");
    assert_eq!(check(&s, "GET /ping: status 200 as recorded"), (0, 2));
    // The summary and the HTML report say it per tag, in words.
    let html = scratch_file("chromium-no-correlate.html", b"");
    let map = format!("{host}=http://{}", target.addr);
    let out = barrage(
        &[
            "replay",
            &har,
            "--map-host",
            &map,
            "--no-correlate",
            "--no-results",
            "--html",
            html.to_str().unwrap(),
        ],
        LIMIT,
    );
    out.expect_success();
    let line = "GET /ping: 100 % status differs: 200 recorded, 401 replayed";
    // The pings' status differs; and /anything echoes the request's headers, of which the
    // replay leaves the connection's own out: the echo's shape differs too, and says where.
    let echo = "GET /anything/app.css: 100 % JSON shape differs: key `headers.Connection` string recorded, missing (and 1 more)";
    assert!(
        out.stdout.contains(&format!(
            "compared with the recording\n  {echo}\n  {line}\n\n"
        )),
        "{}",
        out.stdout
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(&format!("<li>{line}</li>")),
        "no difference line in the HTML report"
    );
}

/// A recording whose responses the bundled target answers otherwise: a page recorded as
/// HTML (the target answers JSON), and two `/json` calls recorded with other JSON shapes.
fn differing_recording() -> PathBuf {
    let entry = |second: u32, path: &str, mime: &str, text: &str| {
        format!(
            r#"{{"startedDateTime":"2026-11-20T09:00:0{second}.000Z","time":3,
            "request":{{"method":"GET","url":"http://diff.recorded.test{path}","headers":[]}},
            "response":{{"status":200,"headers":[{{"name":"Content-Type","value":"{mime}"}}],
            "content":{{"mimeType":"{mime}","text":{}}}}}}}"#,
            Value::from(text)
        )
    };
    let slides = r#"[{"title":"t","type":"all"}]"#;
    let entries = [
        entry(
            0,
            "/anything/page",
            "text/html; charset=utf-8",
            "<html></html>",
        ),
        entry(
            1,
            "/json?v=1",
            "application/json",
            &format!(r#"{{"slideshow":{{"author":7,"date":"d","slides":{slides},"title":"s"}}}}"#),
        ),
        entry(
            2,
            "/json?v=2",
            "application/json",
            &format!(
                r#"{{"slideshow":{{"author":"a","date":"d","id":1,"slides":{slides},"title":"s"}}}}"#
            ),
        ),
    ];
    har_file("differing.har", &entries)
}

/// A HAR 1.2 file of `entries` (JSON objects), without pages.
fn har_file(name: &str, entries: &[String]) -> PathBuf {
    let har = format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"test","version":"1"}},"entries":[{}]}}}}"#,
        entries.join(",")
    );
    scratch_file(name, har.as_bytes())
}

#[test]
fn content_type_and_json_shape_differences_are_said_per_tag_in_text_and_html() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = differing_recording();
    let html = scratch_file("differing.html", b"");
    let json = scratch_file("differing.json", b"");
    let map = format!("diff.recorded.test=http://{}", target.addr);
    let out = barrage(
        &[
            "replay",
            har.to_str().unwrap(),
            "--map-host",
            &map,
            "--no-results",
            "--html",
            html.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        LIMIT,
    );
    out.expect_success();
    let s = summary(&json);
    assert_eq!(u(&s["status_codes"], "200"), 3, "{s:#}");
    assert_eq!(check(&s, "GET /json: status 200 as recorded"), (2, 0));
    assert_eq!(
        check(&s, "GET /json: content type application/json as recorded"),
        (2, 0)
    );
    assert_eq!(check(&s, "GET /json: JSON shape as recorded"), (0, 2));
    let lines = [
        "GET /anything/page: 100 % content type differs: text/html recorded, application/json replayed",
        "GET /json: 100 % JSON shape differs: key `slideshow.author` number recorded, string replayed (1); \
         key `slideshow.id` number recorded, missing (1)",
    ];
    // Statuses are as recorded: the section has these two lines alone, in plan order.
    assert!(
        out.stdout.contains(&format!(
            "compared with the recording\n  {}\n  {}\n\n",
            lines[0], lines[1]
        )),
        "{}",
        out.stdout
    );
    let html = std::fs::read_to_string(&html).unwrap();
    for line in lines {
        let escaped = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(
            html.contains(&format!("<li>{escaped}</li>")),
            "no line {line:?} in the HTML report"
        );
    }
    // The values behind the lines are in the summary's checks, bounded.
    let shape_check = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "GET /json: JSON shape as recorded")
        .unwrap();
    assert_eq!(shape_check["failed_values"].as_array().unwrap().len(), 2);
    // Other checks keep no values.
    let status_check = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "GET /json: status 200 as recorded")
        .unwrap();
    assert!(
        status_check.get("failed_values").is_none(),
        "{status_check:#}"
    );
}

/// A recording of a page on one host calling an API on another: page, API, page, API.
fn two_origin_recording() -> PathBuf {
    let entries: Vec<String> = [
        ("http://page.recorded.test/anything/page", "text/html"),
        (
            "http://api.recorded.test:8443/anything/api",
            "application/json",
        ),
        ("http://page.recorded.test/anything/next", "text/html"),
        (
            "http://api.recorded.test:8443/anything/api?page=2",
            "application/json",
        ),
    ]
    .iter()
    .enumerate()
    .map(|(i, (url, mime))| {
        format!(
            r#"{{"startedDateTime":"2026-11-20T09:00:0{i}.000Z","time":3,
            "request":{{"method":"GET","url":"{url}","headers":[]}},
            "response":{{"status":200,"content":{{"mimeType":"{mime}"}}}}}}"#
        )
    })
    .collect();
    har_file("two-origins.har", &entries)
}

#[test]
fn a_recording_spanning_two_origins_replays_and_converts_each_to_its_own_mapping() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // The API's origin is a recording proxy in front of the target: what it writes is
    // exactly what was sent to that origin.
    let api_har = scratch_file("two-origins-api-side.har", b"");
    let (recorder, api) = start_recorder(&target, &api_har, &[]);
    let har = two_origin_recording();
    let json = scratch_file("two-origins.json", b"");
    let page_map = format!("page.recorded.test=http://{}", target.addr);
    let api_map = format!("api.recorded.test:8443=http://{api}");
    let out = barrage(
        &[
            "replay",
            har.to_str().unwrap(),
            "--map-host",
            &page_map,
            "--map-host",
            &api_map,
            "--json",
            json.to_str().unwrap(),
            "--no-results",
            "--http-debug",
        ],
        LIMIT,
    );
    out.expect_success();
    let s = summary(&json);
    assert_eq!(u(&s["status_codes"], "200"), 4, "{s:#}");
    assert_eq!(
        check(
            &s,
            "GET /anything/api: content type application/json as recorded"
        ),
        (2, 0)
    );
    // Each request named its own origin's host (`--http-debug` prints what was sent).
    let sent = out.stderr.replace("\r", "");
    for (path, host) in [
        ("/anything/page", target.addr.to_string()),
        ("/anything/api", api.clone()),
        ("/anything/next", target.addr.to_string()),
        ("/anything/api?page=2", api.clone()),
    ] {
        assert!(
            sent.contains(&format!("GET {path} HTTP/1.1\nHost: {host}\n")),
            "{path} not sent to {host}: {sent}"
        );
    }

    // One host left unmapped is still an error naming its entry, never a send.
    let out = barrage(
        &["replay", har.to_str().unwrap(), "--map-host", &page_map],
        LIMIT,
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("log.entries[1].request.url: host `api.recorded.test:8443` is not mapped"),
        "{}",
        out.stderr
    );
    // `--target` alone sends everything there.
    let out = barrage(
        &[
            "replay",
            har.to_str().unwrap(),
            "--target",
            &format!("http://{}", target.addr),
            "--json",
            json.to_str().unwrap(),
            "--no-results",
        ],
        LIMIT,
    );
    out.expect_success();
    assert_eq!(u(&summary(&json)["status_codes"], "200"), 4);
    // Converted, the other origin is an added target and its requests name it by URL; the
    // script runs to both origins.
    let js = scratch_file("two-origins.js", b"");
    barrage(
        &[
            "convert",
            "har",
            har.to_str().unwrap(),
            "-o",
            js.to_str().unwrap(),
            "--map-host",
            &page_map,
            "--map-host",
            &api_map,
        ],
        LIMIT,
    )
    .expect_success();
    let script = std::fs::read_to_string(&js).unwrap();
    assert!(
        script.contains(&format!("definition.addTarget(\"http://{api}\");"))
            && script.contains(&format!("session.get(\"http://{api}/anything/api?page=2\"")),
        "{script}"
    );
    let out = barrage(
        &[
            "run",
            js.to_str().unwrap(),
            "--vus",
            "1",
            "--iterations",
            "1",
            "--json",
            json.to_str().unwrap(),
            "--no-results",
        ],
        LIMIT,
    );
    out.expect_success();
    let s = summary(&json);
    assert_eq!(u(&s["status_codes"], "200"), 4, "{s:#}");
    // Two API requests from the replay and two from the script went through the API origin.
    let stderr = stop_recorder(recorder, "INT");
    assert!(stderr.contains("4 exchanges written"), "{stderr}");
    let api_side = summary(&api_har);
    let entries = api_side["log"]["entries"].as_array().unwrap();
    let urls: Vec<&str> = entries
        .iter()
        .map(|e| e["request"]["url"].as_str().unwrap())
        .collect();
    let base = format!("http://{}", target.addr);
    let api_calls = [
        format!("{base}/anything/api"),
        format!("{base}/anything/api?page=2"),
    ];
    assert_eq!(urls, [&api_calls[..], &api_calls[..]].concat());
}

#[test]
fn excluded_tags_leave_static_assets_out_of_replays_and_conversions() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = fixture("browser_page_load.har");
    let map = format!("www.recorded.test=http://{}", target.addr);
    let json = scratch_file("exclude-tags-summary.json", b"");
    let base = [
        "replay",
        &har,
        "--map-host",
        &map,
        "--skip-host",
        "www.google-analytics.com",
        "--speed",
        "4",
        "--no-results",
        "--json",
        json.to_str().unwrap(),
    ];
    let mut args = base.to_vec();
    args.extend([
        "--exclude-tags",
        "static image,static font",
        "--exclude-tags",
        "static js",
    ]);
    barrage(&args, LIMIT).expect_success();
    let s = summary(&json);
    let tags: Vec<&str> = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tag"].as_str())
        .collect();
    assert!(tags.contains(&"static css"), "{tags:?}");
    assert!(
        !tags
            .iter()
            .any(|t| ["static image", "static font", "static js"].contains(t)),
        "{tags:?}"
    );
    assert!(tags.contains(&"GET /json"), "{tags:?}");

    let mut args = base.to_vec();
    args.extend(["--exclude-tags", "static"]);
    barrage(&args, LIMIT).expect_success();
    let s = summary(&json);
    let tags: Vec<&str> = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tag"].as_str())
        .collect();
    assert!(!tags.iter().any(|t| t.starts_with("static")), "{tags:?}");

    // Converted without them: the script has no static requests.
    let script = scratch_file("exclude-tags.js", b"");
    barrage(
        &[
            "convert",
            "har",
            &har,
            "-o",
            script.to_str().unwrap(),
            "--skip-host",
            "www.google-analytics.com",
            "--exclude-tags",
            "static",
        ],
        LIMIT,
    )
    .expect_success();
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(!text.contains("static "), "{text}");
    assert!(text.contains("GET /json"), "{text}");

    // Everything excluded: one line, exit 2.
    let mut args = base.to_vec();
    args.extend(["--exclude-tags", "GET,static"]);
    let out = barrage(&args, LIMIT);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--exclude-tags: every request's tag matches"),
        "{}",
        out.stderr
    );
}

/// A recording of four page views, 300 ms apart, each one request.
fn paced_recording() -> PathBuf {
    let entries: Vec<String> = (0..4)
        .map(|i| {
            format!(
                r#"{{"pageref":"p{i}","startedDateTime":"2026-11-20T09:00:0{}.{:03}Z","time":3,
                "request":{{"method":"GET","url":"http://paced.recorded.test/anything/page/{}","headers":[]}},
                "response":{{"status":200,"content":{{"mimeType":"application/json"}}}}}}"#,
                (i * 300) / 1000,
                (i * 300) % 1000,
                ["a", "b", "c", "d"][i]
            )
        })
        .collect();
    let pages: Vec<String> = (0..4)
        .map(|i| {
            format!(
                r#"{{"id":"p{i}","title":"page {i}","startedDateTime":"2026-11-20T09:00:00Z"}}"#
            )
        })
        .collect();
    let har = format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"test","version":"1"}},"pages":[{}],"entries":[{}]}}}}"#,
        pages.join(","),
        entries.join(",")
    );
    scratch_file("paced.har", har.as_bytes())
}

#[test]
fn replay_at_speed_1_keeps_the_recorded_arrival_offsets() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = paced_recording();
    for (speed, gap_ms) in [("1", 300.0), ("2", 150.0)] {
        let samples = scratch_file("paced-samples.ndjson", b"");
        let spec = format!("samples={}:1", samples.display());
        let s = replay(
            &target,
            har.to_str().unwrap(),
            "paced.recorded.test",
            &["--speed", speed, "--out", &spec],
        );
        assert_eq!(u(&s["status_codes"], "200"), 4, "{s:#}");
        let lag_ms = f(&s["self_check"]["scheduler_lag"], "max_us") / 1000.0;
        let mut starts: Vec<(u64, f64)> = std::fs::read_to_string(&samples)
            .unwrap()
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                let phases = ["connecting_ms", "sending_ms", "waiting_ms", "receiving_ms"]
                    .iter()
                    .map(|k| f(&v, k))
                    .sum::<f64>();
                let page = v["tag"].as_str().unwrap().rsplit('/').next().unwrap();
                let index = ["a", "b", "c", "d"]
                    .iter()
                    .position(|p| *p == page)
                    .unwrap();
                (index as u64, f(&v, "t_ms") - phases)
            })
            .collect();
        starts.sort_by_key(|(page, _)| *page);
        assert_eq!(starts.len(), 4, "{starts:?}");
        for (page, start) in starts {
            let planned = page as f64 * gap_ms;
            // Never early; late by no more than the scheduler's own measured lag plus the
            // time from the arrival's wake-up to the first byte written (the client task is
            // spawned then, and on a shared machine its thread may wait for a CPU): 30 ms,
            // well under the 150 ms that tells speed 2 from speed 1.
            assert!(
                start >= planned - 1.0 && start <= planned + lag_ms + 30.0,
                "speed {speed}: page {page} sent at {start:.1} ms, recorded {planned} ms, lag {lag_ms} ms"
            );
        }
    }
}

#[test]
fn bad_recordings_are_one_line_and_exit_2() {
    let not_json = scratch_file(
        "broken.har",
        b"{\"log\": {\"version\": \"1.2\",\n \"entries\": [}",
    );
    let out = barrage(&["replay", not_json.to_str().unwrap()], LIMIT);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("broken.har:2:"), "{}", out.stderr);
    assert!(out.stderr.contains("not valid JSON"), "{}", out.stderr);

    let har = fixture("token_pings.har");
    let out = barrage(&["replay", &har], LIMIT);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("log.entries[0].request.url: host `api.recorded.test:8080` is not mapped"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);

    let missing = scratch_file(
        "missing.har",
        br#"{"log":{"version":"1.2","entries":[{"startedDateTime":"2026-01-01T00:00:00Z","request":{"url":"http://a/"},"response":{"status":200}}]}}"#,
    );
    let out = barrage(
        &[
            "convert",
            "har",
            missing.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("log.entries[0].request: missing field `method`"),
        "{}",
        out.stderr
    );

    let out = barrage(
        &["replay", &har, "--map-host", "nothing", "--speed", "0"],
        LIMIT,
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
}

/// The bearer token the bundled target's `/headers` echoed back (seen with `--http-debug`).
fn echoed_token(stderr: &str) -> String {
    let start = stderr
        .find("\"Authorization\":\"Bearer ")
        .unwrap_or_else(|| panic!("no echoed token in:\n{stderr}"))
        + "\"Authorization\":\"Bearer ".len();
    let end = stderr[start..].find('"').unwrap() + start;
    stderr[start..end].to_string()
}

fn run_tool(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed by this test (.ci/run installs it): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Replays the JWT fixture with `--jwt-alg ALG --jwt-key KEY` (and a claim and a lifetime);
/// the token the target received.
fn replayed_token(target: &Target, alg: &str, key: &std::path::Path) -> String {
    let map = format!("api.recorded.test=http://{}", target.addr);
    let har = fixture("jwt_api.har");
    let out = barrage(
        &[
            "replay",
            &har,
            "--map-host",
            &map,
            "--jwt-alg",
            alg,
            "--jwt-key",
            key.to_str().unwrap(),
            "--jwt-claim",
            "role=admin",
            "--jwt-lifetime",
            "10m",
            "--http-debug=full",
            "--no-results",
        ],
        LIMIT,
    );
    out.expect_success();
    // Never the recorded token, and the debug output does not show the header itself.
    assert!(
        !out.stderr.contains("cmVjb3JkZWQtc2lnbmF0dXJl"),
        "{}",
        out.stderr
    );
    echoed_token(&out.stderr)
}

fn check_claims(claims: &Value) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let iat = claims["iat"].as_i64().unwrap();
    assert!((iat - now).abs() < 120, "{claims}");
    assert_eq!(claims["nbf"].as_i64(), Some(iat), "{claims}");
    assert_eq!(claims["exp"].as_i64(), Some(iat + 600), "{claims}");
    assert_eq!(claims["sub"], "4711");
    assert_eq!(claims["scope"], "orders");
    assert_eq!(claims["role"], "admin");
}

#[test]
fn replayed_jwts_are_resigned_and_verify_with_independent_implementations() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // HS256, checked by Python's standard library.
    let secret = scratch_file("jwt-secret.txt", b"replay-secret\n");
    let token = replayed_token(&target, "HS256", &secret);
    let verify = r#"
import base64, hashlib, hmac, json, sys
token, secret = sys.argv[1], open(sys.argv[2], 'rb').read().rstrip(b'\n')
head, body, sig = token.split('.')
pad = lambda s: s + '=' * (-len(s) % 4)
expected = base64.urlsafe_b64encode(hmac.new(secret, (head + '.' + body).encode(), hashlib.sha256).digest()).rstrip(b'=').decode()
assert hmac.compare_digest(expected, sig), 'bad signature'
header = json.loads(base64.urlsafe_b64decode(pad(head)))
assert header['alg'] == 'HS256' and header['kid'] == 'rec-1', header
print(base64.urlsafe_b64decode(pad(body)).decode())
"#;
    let claims: Value = serde_json::from_str(&run_tool(
        "python3",
        &["-c", verify, &token, secret.to_str().unwrap()],
    ))
    .unwrap();
    check_claims(&claims);

    // EdDSA with a key OpenSSL made, and OpenSSL verifying the signature.
    let key = scratch_file("jwt-ed25519.pem", b"");
    let public = scratch_file("jwt-ed25519.pub.pem", b"");
    run_tool(
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "ed25519",
            "-out",
            key.to_str().unwrap(),
        ],
    );
    run_tool(
        "openssl",
        &[
            "pkey",
            "-in",
            key.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ],
    );
    let token = replayed_token(&target, "EdDSA", &key);
    let (signed, signature) = token.rsplit_once('.').unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let message = scratch_file("jwt-message", signed.as_bytes());
    let sig = scratch_file("jwt-signature", &b64.decode(signature).unwrap());
    let verified = run_tool(
        "openssl",
        &[
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            public.to_str().unwrap(),
            "-rawin",
            "-in",
            message.to_str().unwrap(),
            "-sigfile",
            sig.to_str().unwrap(),
        ],
    );
    assert!(
        verified.contains("Signature Verified Successfully"),
        "{verified}"
    );
    let body = signed.split('.').nth(1).unwrap();
    check_claims(&serde_json::from_slice(&b64.decode(body).unwrap()).unwrap());
}

#[test]
fn shifted_timestamps_are_sent_relative_to_the_present() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = scratch_file(
        "timestamps.har",
        br#"{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":[
        {"startedDateTime":"2025-01-01T12:00:00.000Z","time":2,
         "request":{"method":"POST","url":"http://ts.recorded.test/anything/report",
           "headers":[{"name":"Content-Type","value":"application/json"}],
           "postData":{"mimeType":"application/json","text":"{\"from\":\"2024-12-31T12:00:00.000Z\",\"until\":\"2025-01-01T12:00:05Z\",\"local\":\"2025-01-01T13:00:10+01:00\",\"since\":1735732810,\"ms\":1735732800500}"}},
         "response":{"status":200,"content":{"mimeType":"application/json","text":"{}"}}}]}}"#,
    );
    let map = format!("ts.recorded.test=http://{}", target.addr);
    let out = barrage(
        &[
            "replay",
            har.to_str().unwrap(),
            "--map-host",
            &map,
            "--shift-timestamps",
            "--http-debug=full",
            "--no-results",
        ],
        LIMIT,
    );
    out.expect_success();
    let sent = out
        .stderr
        .lines()
        .find(|l| l.starts_with("{\"from\""))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    let body: Value = serde_json::from_str(sent).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let unix = |text: &str| {
        let out = run_tool("date", &["-u", "-d", text, "+%s.%N"]);
        out.trim().parse::<f64>().unwrap()
    };
    let from = body["from"].as_str().unwrap();
    let until = body["until"].as_str().unwrap();
    // A day before the session's start, and 5 s after it; the formats as recorded.
    assert!((unix(from) - (now - 86_400.0)).abs() < 60.0, "{from}");
    assert!((unix(until) - (now + 5.0)).abs() < 60.0, "{until}");
    assert_eq!(from.len(), "2024-12-31T12:00:00.000Z".len());
    assert_eq!(until.len(), "2025-01-01T12:00:05Z".len());
    // At the recorded offset from UTC, and as epoch seconds and milliseconds.
    let local = body["local"].as_str().unwrap();
    assert!((unix(local) - (now + 10.0)).abs() < 60.0, "{local}");
    assert!(local.ends_with("+01:00"), "{local}");
    let since = body["since"].as_f64().unwrap();
    assert!((since - (now + 10.0)).abs() < 60.0, "{since}");
    let ms = body["ms"].as_f64().unwrap();
    assert!((ms / 1000.0 - now).abs() < 60.0, "{ms}");
}

/// `barrage record` on a free port in front of `target`; its proxy address.
fn start_recorder(target: &Target, har: &std::path::Path, extra: &[&str]) -> (Child, String) {
    start_recorder_to(&format!("http://{}", target.addr), har, extra)
}

/// `barrage record` on a free port in front of `upstream`; its proxy address.
fn start_recorder_to(upstream: &str, har: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let (child, addr, _) = start_recorder_reading(upstream, har, extra, 1);
    (child, addr)
}

/// `barrage record` in front of `upstream`, its first `lines` lines of output read; the
/// proxy's address and those lines.
fn start_recorder_reading(
    upstream: &str,
    har: &std::path::Path,
    extra: &[&str],
    lines: usize,
) -> (Child, String, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(["record", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("-o")
        .arg(har)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn barrage record");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let read: Vec<String> = (0..lines)
        .map(|_| {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            line
        })
        .collect();
    let line = &read[0];
    let addr = line.split_whitespace().last().unwrap_or("").to_string();
    assert!(
        line.starts_with("barrage record listening on 127.0.0.1:"),
        "{line:?}"
    );
    (child, addr, read)
}

/// Sends `signal` to the recorder and waits (bounded) for its exit; its stderr.
fn stop_recorder(mut child: Child, signal: &str) -> String {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("barrage record did not stop on SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    stderr
}

#[test]
fn traffic_recorded_through_the_proxy_replays_with_fresh_tokens() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = scratch_file("recorded-through-proxy.har", b"");
    let (recorder, proxy) = start_recorder(&target, &har, &[]);
    // barrage's own traffic through the proxy: the token-then-pings flow, sent to the proxy.
    let s = replay_to(
        &proxy,
        &fixture("token_pings.har"),
        "api.recorded.test",
        &[],
    );
    assert_eq!(u(&s["status_codes"], "200"), 4, "{s:#}");
    let stderr = stop_recorder(recorder, "INT");
    assert!(stderr.contains("4 exchanges written"), "{stderr}");

    // The recording reads as HAR 1.2 with every exchange as the upstream answered it.
    let recorded: Value = summary(&har);
    assert_eq!(recorded["log"]["version"], "1.2");
    let entries = recorded["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    assert!(entries[0]["request"]["url"]
        .as_str()
        .unwrap()
        .starts_with(&format!("http://{}/random/get_token", target.addr)));
    assert_eq!(entries[1]["response"]["status"], 200);
    assert!(entries[1]["response"]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("\"ok\":true"));

    // Replayed: the recorded token is one this target issued, but correlation gives every
    // round its own; without correlation the recorded one still goes out.
    let host = target.addr.to_string();
    let s = replay(
        &target,
        har.to_str().unwrap(),
        &host,
        &["--loop", "2", "--speed", "4"],
    );
    assert_eq!(u(&s["status_codes"], "200"), 8, "{s:#}");
    assert_eq!(check(&s, "GET /ping: status 200 as recorded"), (6, 0));
    let converted = scratch_file("recorded-through-proxy.js", b"");
    barrage(
        &[
            "convert",
            "har",
            har.to_str().unwrap(),
            "-o",
            converted.to_str().unwrap(),
        ],
        LIMIT,
    )
    .expect_success();
    let script = std::fs::read_to_string(&converted).unwrap();
    assert!(script.contains("/ping"), "{script}");
}

#[test]
fn the_recorder_keeps_only_the_first_bytes_of_large_bodies_and_stops_on_sigterm() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = scratch_file("recorded-truncated.har", b"");
    let (recorder, proxy) = start_recorder(&target, &har, &["--max-body-size", "100"]);
    let url = format!("http://{proxy}/bytes/5000");
    // Plain, then gzip-encoded (its 5000 bytes compress to more than the 100 kept).
    let plain = quick_json(
        &["-n", "1", "-c", "1", "--disable-compression", &url],
        LIMIT,
    );
    let gzipped = quick_json(&["-n", "1", "-c", "1", &url], LIMIT);
    for s in [&plain, &gzipped] {
        // The client got every byte through the proxy.
        assert_eq!(u(&s["status_codes"], "200"), 1, "{s:#}");
        assert_eq!(u(s, "decoded_data_bytes"), 5000, "{s:#}");
    }
    let stderr = stop_recorder(recorder, "TERM");
    assert!(stderr.contains("2 exchanges written"), "{stderr}");
    let recorded = summary(&har);
    // The recording kept 100 bytes of the plain one and says so.
    let content = &recorded["log"]["entries"][0]["response"]["content"];
    assert_eq!(content["_truncated"], true, "{content:#}");
    assert_eq!(content["size"], 5000);
    assert_eq!(content["text"].as_str().unwrap().len(), 100, "{content:#}");
    // A cut gzip body cannot be decoded: no text, but its decoded size was counted as it
    // passed, beside the smaller size on the wire.
    let response = &recorded["log"]["entries"][1]["response"];
    let content = &response["content"];
    assert_eq!(content["_truncated"], true, "{content:#}");
    assert!(content.get("text").is_none(), "{content:#}");
    assert_eq!(content["size"], 5000, "{content:#}");
    let wire = response["bodySize"].as_i64().unwrap();
    assert!(wire > 100 && wire < 5000, "{response:#}");
    assert_eq!(content["compression"].as_i64(), Some(5000 - wire));
    // Both read back, convert and replay.
    let host = target.addr.to_string();
    let s = replay(&target, har.to_str().unwrap(), &host, &[]);
    assert_eq!(u(&s["status_codes"], "200"), 2, "{s:#}");
}

#[test]
fn the_recorder_speaks_http2_to_an_h2c_upstream() {
    let _heavy = heavy_lock();
    let target = Target::start_with(&["--threads", "1", "--h2c"]);
    let har = scratch_file("recorded-h2c.har", b"");
    let (recorder, proxy) = start_recorder(&target, &har, &["--upstream-h2c"]);
    let s = quick_json(
        &["-n", "2", "-c", "1", &format!("http://{proxy}/json")],
        LIMIT,
    );
    assert_eq!(u(&s["status_codes"], "200"), 2, "{s:#}");
    let stderr = stop_recorder(recorder, "INT");
    assert!(stderr.contains("2 exchanges written"), "{stderr}");
    let recorded = summary(&har);
    let entry = &recorded["log"]["entries"][0];
    assert_eq!(entry["request"]["httpVersion"], "HTTP/2", "{entry:#}");
    assert_eq!(entry["response"]["status"], 200, "{entry:#}");
}

#[test]
fn the_recorder_forwards_to_an_https_upstream_with_its_own_client() {
    let _heavy = heavy_lock();
    let target = Target::start_with(&["--threads", "1", "--tls"]);
    let cert = target.cert_path.clone().expect("the target's certificate");
    let upstream = format!("https://{}", target.addr);
    let har = scratch_file("recorded-https.har", b"");
    let (recorder, proxy) = start_recorder_to(&upstream, &har, &["--upstream-cacert", &cert]);
    let s = quick_json(
        &["-n", "2", "-c", "1", &format!("http://{proxy}/json")],
        LIMIT,
    );
    assert_eq!(u(&s["status_codes"], "200"), 2, "{s:#}");
    let stderr = stop_recorder(recorder, "INT");
    assert!(stderr.contains("2 exchanges written"), "{stderr}");
    let recorded = summary(&har);
    let url = recorded["log"]["entries"][0]["request"]["url"]
        .as_str()
        .unwrap();
    assert_eq!(url, format!("https://{}/json", target.addr));
    // A certificate nobody said to trust: the client gets 502 and nothing is recorded.
    let untrusted = scratch_file("recorded-untrusted.har", b"");
    let (recorder, proxy) = start_recorder_to(&upstream, &untrusted, &[]);
    let out = barrage(
        &[
            "quick",
            "-n",
            "1",
            "-c",
            "1",
            "-o",
            "json",
            &format!("http://{proxy}/json"),
        ],
        LIMIT,
    );
    assert_eq!(u(&out.json()["status_codes"], "502"), 1, "{}", out.stdout);
    let stderr = stop_recorder(recorder, "TERM");
    assert!(stderr.contains("0 exchanges written"), "{stderr}");
    assert!(
        stderr.contains("(1 not answered by the upstream"),
        "{stderr}"
    );
}

#[test]
fn https_clients_record_through_a_tls_listener_to_an_h2_upstream() {
    let _heavy = heavy_lock();
    // The upstream offers h2 and http/1.1 by ALPN.
    let target = Target::start_with(&["--threads", "1", "--tls"]);
    let target_cert = target.cert_path.clone().expect("the target's certificate");
    let upstream = format!("https://{}", target.addr);
    for (upstream_flags, recorded_version) in
        [(&[][..], "HTTP/2"), (&["--upstream-http1"][..], "HTTP/1.1")]
    {
        let har = scratch_file("recorded-tls-listener.har", b"");
        let mut flags = vec!["--tls", "--upstream-cacert", target_cert.as_str()];
        flags.extend(upstream_flags);
        let (recorder, proxy, lines) = start_recorder_reading(&upstream, &har, &flags, 2);
        // The second line names the listener's certificate: clients trust it by file.
        let words: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            words[..3],
            ["barrage", "record", "certificate"],
            "{lines:?}"
        );
        assert!(words[4].starts_with("sha256:"), "{lines:?}");
        let proxy_cert = words[3].to_string();
        let url = format!("https://{proxy}/json");
        // An HTTP/2 client and an HTTP/1.1 one, both over TLS to the proxy.
        let h2 = quick_json(
            &["-n", "2", "-c", "1", "--h2", "--cacert", &proxy_cert, &url],
            LIMIT,
        );
        let h1 = quick_json(
            &[
                "-n",
                "1",
                "-c",
                "1",
                "--http1.1",
                "--cacert",
                &proxy_cert,
                &url,
            ],
            LIMIT,
        );
        assert_eq!(u(&h2["status_codes"], "200"), 2, "{h2:#}");
        assert_eq!(
            (u(&h2, "connections_tls"), u(&h2, "connections_h2")),
            (1, 1)
        );
        assert_eq!(u(&h1["status_codes"], "200"), 1, "{h1:#}");
        assert_eq!(
            (u(&h1, "connections_tls"), u(&h1, "connections_h2")),
            (1, 0)
        );
        // Without the proxy's certificate the handshake fails: it is a TLS listener.
        let untrusted = quick_json_unanswered(&["-n", "1", "-c", "1", &url], LIMIT);
        assert_eq!(error_kind(&untrusted, "tls_unknown_ca"), 1, "{untrusted:#}");
        let stderr = stop_recorder(recorder, "INT");
        assert!(stderr.contains("3 exchanges written"), "{stderr}");
        assert!(
            !std::path::Path::new(&proxy_cert).exists(),
            "the generated certificate is removed at the stop"
        );
        let recorded = summary(&har);
        for entry in recorded["log"]["entries"].as_array().unwrap() {
            assert_eq!(
                entry["request"]["httpVersion"], recorded_version,
                "{entry:#}"
            );
            assert_eq!(entry["response"]["httpVersion"], recorded_version);
            assert_eq!(
                entry["request"]["url"],
                format!("https://{}/json", target.addr)
            );
            assert_eq!(entry["response"]["status"], 200);
            let body = entry["response"]["content"]["text"].as_str().unwrap();
            assert!(serde_json::from_str::<Value>(body).is_ok(), "{body}");
            // HTTP/2's headers are HPACK-compressed in frames: no size; HTTP/1.1's are.
            let headers_size = entry["response"]["headersSize"].as_i64().unwrap();
            if recorded_version == "HTTP/2" {
                assert_eq!(headers_size, -1);
            } else {
                assert!(headers_size > "HTTP/1.1 200 OK\r\n\r\n".len() as i64);
            }
        }
        // The recording replays against the upstream over TLS.
        let json = scratch_file("replay-tls-summary.json", b"");
        barrage(
            &[
                "replay",
                har.to_str().unwrap(),
                "--map-host",
                &format!("{}=https://{}", target.addr, target.addr),
                "--cacert",
                &target_cert,
                "--json",
                json.to_str().unwrap(),
                "--no-results",
            ],
            LIMIT,
        )
        .expect_success();
        let s = summary(&json);
        assert_eq!(u(&s["status_codes"], "200"), 3, "{s:#}");
    }
}

#[test]
fn compressed_responses_are_recorded_with_wire_and_decoded_sizes() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let har = scratch_file("recorded-gzip.har", b"");
    let (recorder, proxy) = start_recorder(&target, &har, &[]);
    let url = format!("http://{proxy}/bytes/5000");
    let plain = quick_json(
        &["-n", "1", "-c", "1", "--disable-compression", &url],
        LIMIT,
    );
    let gzipped = quick_json(&["-n", "1", "-c", "1", &url], LIMIT);
    for s in [&plain, &gzipped] {
        assert_eq!(u(s, "decoded_data_bytes"), 5000, "{s:#}");
    }
    let stderr = stop_recorder(recorder, "INT");
    assert!(stderr.contains("2 exchanges written"), "{stderr}");
    let recorded = summary(&har);
    let entries = recorded["log"]["entries"].as_array().unwrap();
    let header = |entry: &Value, name: &str| {
        entry["response"]["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"].as_str().unwrap().eq_ignore_ascii_case(name))
            .map(|h| h["value"].as_str().unwrap().to_string())
    };
    // Plain: what came over the wire is the content; nothing saved.
    let response = &entries[0]["response"];
    assert_eq!(header(&entries[0], "content-encoding"), None);
    assert_eq!(
        (
            response["bodySize"].as_u64(),
            response["content"]["size"].as_u64()
        ),
        (Some(5000), Some(5000))
    );
    assert!(
        response["content"].get("compression").is_none(),
        "{response:#}"
    );
    // Gzip: the body on the wire (its Content-Length), the decoded content, the bytes saved.
    let response = &entries[1]["response"];
    assert_eq!(
        header(&entries[1], "content-encoding").as_deref(),
        Some("gzip")
    );
    let wire: u64 = header(&entries[1], "content-length")
        .unwrap()
        .parse()
        .unwrap();
    assert!(wire < 5000, "{response:#}");
    assert_eq!(response["bodySize"].as_u64(), Some(wire), "{response:#}");
    assert_eq!(response["content"]["size"], 5000);
    assert_eq!(
        response["content"]["compression"].as_u64(),
        Some(5000 - wire)
    );
    assert_eq!(response["content"]["text"].as_str().unwrap().len(), 5000);
    // The head as HTTP/1.1 wrote it: the status line, each field, the blank line.
    let head: usize = "HTTP/1.1 200 OK\r\n".len()
        + response["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().len() + h["value"].as_str().unwrap().len() + 4)
            .sum::<usize>()
        + 2;
    assert_eq!(response["headersSize"].as_u64(), Some(head as u64));
}

#[test]
fn the_recorder_refuses_bad_flags_with_one_line() {
    let har = scratch_file("never-written.har", b"");
    for (flag, value, says) in [
        (
            "--upstream",
            "ftp://127.0.0.1:1",
            "give an http:// or https:// URL",
        ),
        ("--upstream", "nonsense", "give an http:// or https:// URL"),
        ("--listen", "here", "--listen: `here` is not an address"),
    ] {
        let mut args = vec![
            "record",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:1",
        ];
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = value;
        args.extend(["-o", har.to_str().unwrap()]);
        let out = barrage(&args, LIMIT);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    let missing = scratch_dir().join("no-such-cert.pem");
    let missing = missing.to_str().unwrap();
    for (extra, says) in [
        (
            vec!["--tls-cert", missing, "--tls-key", missing],
            "--tls-cert/--tls-key: TLS setup failed: ",
        ),
        (
            vec!["--upstream-http1"],
            "--upstream-http1 is for https upstreams",
        ),
    ] {
        let mut args = vec![
            "record",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:1",
            "-o",
            har.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = barrage(&args, LIMIT);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
}
