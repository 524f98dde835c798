//! The HTML report: self-contained, charts with data, optional sections when present.

use super::*;
use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord, RunMetrics};
use barrage_results::{Machine, PlannedArrivalsBits, RunMeta};
use std::time::Duration;

pub(crate) fn sample_results() -> ResultsFile {
    let mut metrics = RunMetrics::new(2).with_checks([("status is 200", false)]);
    for i in 0..3_000u64 {
        metrics.record_response(&ResponseRecord {
            tag: (i % 2) as usize,
            second: i / 300,
            latency: Duration::from_micros(500 + (i * 7919) % 4_000 + (i / 300) * 100),
            phases: PhaseTimings::default(),
            status: if i % 50 == 0 { 503 } else { 200 },
            bytes_sent: 40,
            bytes_received: 100,
            body_bytes: 20,
            decoded_body_bytes: 0,
            expected_interval: None,
        });
    }
    metrics.record_error(1, 4, ErrorKind::Timeout, 40);
    metrics.record_check(0, true);
    for i in 0..1_500u64 {
        metrics.record_session_start(i / 150);
    }
    let meta = RunMeta {
        command: "run".into(),
        name: "checkout <flow>".into(),
        target: "http://127.0.0.1:8080".into(),
        barrage_version: "0.1.0".into(),
        plan: {
            use barrage_plan::*;
            Plan {
                format_version: PLAN_FORMAT_VERSION,
                name: "checkout <flow>".into(),
                target: Target::parse("http://127.0.0.1:8080").unwrap(),
                options: TestOptions::default(),
                workload: Workload::open(
                    Stages::from_targets(100.0, [(std::time::Duration::from_secs(10), 200.0)]),
                    None,
                    std::time::Duration::from_secs(5),
                ),
                tags: vec!["GET /".into(), "POST /cart".into()],
                sessions: vec![],
                data_sources: vec![],
                metrics: MetricsSpec::default(),
            }
        },
        script: Some("checkout.js".into()),
        overrides: Default::default(),
        seed: Some(1),
        machine: Machine::current(),
        started_at_unix_ns: 1_795_423_660_000_000_000,
        ended_at_unix_ns: 1_795_423_670_000_000_000,
        elapsed_ns: 10_000_000_000,
        interrupted: false,
        threads: 2,
        tags: vec!["GET /".into(), "POST /cart".into()],
        planned_arrivals: Some(PlannedArrivalsBits {
            expected_f64_bits: 1500f64.to_bits(),
            seconds_f64_bits: 10f64.to_bits(),
        }),
        merged_from: Vec::new(),
        request_id_prefix: None,
        segment: None,
        segments: None,
    };
    ResultsFile {
        meta,
        metrics,
        thresholds: None,
        self_check: None,
        active_clients: None,
        capacity: None,
    }
}

fn render(results: &ResultsFile) -> String {
    render_html(
        results,
        &crate::summary_of(results, &crate::DEFAULT_TREND_STATS),
    )
}

#[test]
fn the_page_is_self_contained_and_draws_every_chart() {
    let html = render(&sample_results());
    for forbidden in ["<link", " src=", " href=", "@import", "url("] {
        assert!(!html.contains(forbidden), "{forbidden} in the page");
    }
    assert!(html.contains("checkout &lt;flow&gt;"));
    assert!(html.contains(r#"class="verdict pass">PASS"#));
    assert!(html.contains("2026-11-23 08:47:40 UTC"));
    // rates (2) + latency all/per tag (3 × 4) + in flight + arrivals (2) + bars + curves (3)
    let paths = html.matches(r#"<path class="series"#).count();
    assert_eq!(paths, 2 + 12 + 1 + 2 + 1 + 3, "{paths}");
    for path in html.split(r#"<path class="series"#).skip(1) {
        let d = path
            .split(r#"d=""#)
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(
            d.starts_with('M') && d.contains('L'),
            "a path without points: {d:.80}"
        );
    }
    for table_heading in [
        "Per tag",
        "Status codes",
        "Errors",
        "Checks and asserts",
        "Test configuration",
    ] {
        assert!(
            html.contains(&format!("<h2>{table_heading}</h2>")),
            "{table_heading}"
        );
    }
    assert!(html.contains("<td>timeout</td>"));
    assert!(html.contains("The plan sets no thresholds."));
    assert!(
        !html.contains(r#"<td>{"#),
        "the configuration is a readable table, not JSON"
    );
}

#[test]
fn the_verdict_shows_its_reasons_thresholds_and_trust() {
    let results = sample_results();
    let mut summary = crate::summary_of(&results, &crate::DEFAULT_TREND_STATS);
    summary.k6.thresholds = vec![
        crate::ThresholdResult {
            metric: "http_req_duration".into(),
            expression: "p(95)<200".into(),
            observed: Some(12.0),
            passed: true,
            abort_on_fail: false,
        },
        crate::ThresholdResult {
            metric: "http_req_failed".into(),
            expression: "rate<0.001".into(),
            observed: Some(0.01),
            passed: false,
            abort_on_fail: false,
        },
    ];
    let html = render_html(&results, &summary);
    assert!(html.contains(r#"class="verdict fail">FAIL"#));
    assert!(html.contains("<li>1 of 2 thresholds failed</li>"), "{html}");
    assert!(html.contains(r#"<tr class="bad"><td class="mark">✗</td><td>http_req_failed</td><td><code>rate&lt;0.001</code></td><td>rate=1.00%</td></tr>"#));
    assert!(html.contains(r#"<tr class="ok"><td class="mark">✓</td><td>http_req_duration</td>"#));

    summary.k6.thresholds.truncate(1);
    summary.trustworthy = false;
    summary.trust_reasons = vec!["the busiest worker used 97% of a CPU".into()];
    let html = render_html(&results, &summary);
    assert!(
        html.contains(r#"class="verdict untrusted">UNTRUSTWORTHY"#),
        "an untrustworthy run never says PASS"
    );
    assert!(!html.contains(">PASS<"));
    assert!(html.contains("These latency figures cannot be trusted."));
    assert!(html.contains("<li>the busiest worker used 97% of a CPU</li>"));
}

#[test]
fn thresholds_and_self_check_show_when_present_and_can_fail_the_run() {
    let mut results = sample_results();
    results.thresholds = Some(serde_json::json!([
        {"metric": "p95", "condition": "< 200ms", "observed": "12ms", "passed": true},
        {"metric": "errors", "condition": "rate < 0.1%", "observed": "0.03%", "passed": false}
    ]));
    results.self_check = Some(serde_json::json!({"verdict": "ok", "cpu_busy": 0.41}));
    results.active_clients = Some(vec![0, 40, 52, 51]);
    let html = render(&results);
    assert!(html.contains("Active clients"));
    assert_eq!(html.matches(r#"data-name="active clients""#).count(), 1);
    assert!(html.contains("<h2>Thresholds</h2>"));
    assert!(html.contains("<h2>Generator self-check</h2>"));
    assert!(html.contains("cpu_busy"));
    // Thresholds decide the verdict, as for exit code 99, not the JSON shown.
    assert!(html.contains(r#"class="verdict pass">PASS"#));
    let mut summary = crate::summary_of(&results, &crate::DEFAULT_TREND_STATS);
    summary.k6.aborted_by_threshold = Some("http_req_failed rate<0.01".into());
    let html = render_html(&results, &summary);
    assert!(html.contains(r#"class="verdict fail">FAIL"#));
}

#[test]
fn failed_checks_do_not_fail_the_run() {
    let mut results = sample_results();
    results.metrics.record_check(0, false);
    let html = render(&results);
    assert!(html.contains(r#"class="verdict pass">PASS"#));
}

#[test]
fn the_request_id_prefix_is_in_the_configuration() {
    let mut results = sample_results();
    assert!(!render(&results).contains("X-Request-Id"));
    results.meta.request_id_prefix = Some("1a2b3c4d-".into());
    assert!(render(&results).contains("<td>X-Request-Id</td><td>1a2b3c4d-*</td>"));
}

#[test]
fn status_codes_are_broken_down_by_tag() {
    let html = render(&sample_results());
    // Every 50th response is a 503, all of them on the first tag (even requests).
    assert!(
        html.contains(r#"<th class="num">GET /</th><th class="num">POST /cart</th>"#),
        "a column per tag"
    );
    assert!(
        html.contains(
            r#"<td>503</td><td class="num">60</td><td class="num">2.00%</td><td class="num">60</td><td class="num">0</td>"#
        ),
        "503s counted on their tag only"
    );
    assert!(html.contains(
        r#"<td>200</td><td class="num">2940</td><td class="num">98.00%</td><td class="num">1440</td><td class="num">1500</td>"#
    ));
}
