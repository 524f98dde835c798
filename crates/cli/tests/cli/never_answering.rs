//! A target that accepts connections and never answers is never green: requests still open at
//! the end are counted as interrupted (per tag, in every output), a run in which no request
//! got a response exits 1 in `run` and `quick`, and thresholds over metrics with no data fail.

use crate::support::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn quick_against_a_silent_target_counts_open_requests_and_exits_1() {
    let stalled = Stalled::start();
    let url = stalled.url("/");
    let html = scratch_file("silent-quick.html", b"");
    let csv = scratch_file("silent-quick.csv", b"");
    let ndjson = scratch_file("silent-quick.ndjson", b"");
    let results = scratch_file("silent-quick.brr", b"");
    let ndjson_spec = format!("ndjson={}", ndjson.display());
    let s = quick_json_unanswered(
        &[
            "-z",
            "1s",
            "-c",
            "4",
            "--html",
            html.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--out",
            &ndjson_spec,
            "--results",
            results.to_str().unwrap(),
            &url,
        ],
        LIMIT,
    );
    assert_eq!(u(&s, "interrupted_requests"), 4, "{s:#}");
    assert_eq!(u(&s["tags"][0], "interrupted_requests"), 4, "{s:#}");
    assert_eq!(u(&s, "responses"), 0, "{s:#}");
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(
        page.contains("still open when the run ended"),
        "HTML shows them"
    );
    // The per-second outputs show them too, in the second they were sent.
    let per_second: u64 = s["per_second"]
        .as_array()
        .expect("per_second")
        .iter()
        .map(|b| u(b, "interrupted"))
        .sum();
    assert_eq!(per_second, 4, "{s:#}");
    // All four were sent at the start: no second is added past the run's own.
    assert_eq!(s["per_second"].as_array().unwrap().len(), 1, "{s:#}");
    let csv = std::fs::read_to_string(&csv).expect("csv");
    assert!(
        csv.lines().next().unwrap().ends_with(",interrupted"),
        "{csv}"
    );
    let from_csv: u64 = csv
        .lines()
        .skip(1)
        .map(|row| row.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(from_csv, 4, "{csv}");
    let from_ndjson: u64 = std::fs::read_to_string(&ndjson)
        .expect("ndjson")
        .lines()
        .map(|line| u(&serde_json::from_str(line).unwrap(), "interrupted"))
        .sum();
    assert_eq!(from_ndjson, 4);
    let again = scratch_file("silent-quick-report.json", b"");
    let report = barrage(
        &[
            "report",
            results.to_str().unwrap(),
            "--json",
            again.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(report.code(), Some(0), "{}", report.stderr);
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).expect("report --json");
    let kept: u64 = kept["per_second"]
        .as_array()
        .expect("per_second")
        .iter()
        .map(|b| u(b, "interrupted"))
        .sum();
    assert_eq!(kept, 4, "the results file keeps them per second");

    let text = barrage(&["quick", "-z", "1s", "-c", "4", &url], LIMIT);
    assert_eq!(text.code(), Some(1), "{}\n{}", text.stdout, text.stderr);
    assert!(
        text.stdout.contains("[interrupted]\t4 requests still open"),
        "the text summary shows them: {}",
        text.stdout
    );
    assert!(
        text.stderr.contains("no request got a response"),
        "{}",
        text.stderr
    );
}

#[test]
fn run_against_a_silent_target_fails_its_thresholds_and_exits_1() {
    let stalled = Stalled::start();
    let text = format!(
        "definition.setTarget('http://{}');
definition.setVirtualUsers({{ vus: 3, duration: '1s', gracefulStop: '500ms' }});
definition.setThresholds({{ http_req_duration: ['p(95)<500'], checks: ['rate>0.9'] }});
definition.session('s', function (session) {{
  session.get('/');
  session.check('ok', session.lastHttpStatus(), '==', 200);
}});",
        stalled.addr
    );
    let path = scratch_file("silent.js", text.as_bytes());
    let json = scratch_file("silent.json", b"");
    let out = barrage(
        &[
            "run",
            path.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("no request got a response"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout
            .contains("no data: requests were sent, none got a response"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("interrupted   3 requests still open"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("- ok  never evaluated"),
        "{}",
        out.stdout
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("json");
    assert_eq!(u(&s, "interrupted_requests"), 3, "{s:#}");
    for threshold in s["thresholds"].as_array().expect("thresholds") {
        assert_eq!(threshold["passed"], false, "{threshold}");
    }
}
