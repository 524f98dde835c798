//! The HTML report in a real browser: headless Chromium loads the file written at the end of
//! a run and the charts must have drawn data, with no script error.

use crate::results::two_tag_script;
use crate::support::*;
use std::process::Command;
use std::time::Duration;

/// The Chromium binary, if installed (`.ci/run` installs Debian's `chromium`).
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The browser for `test`: CI must have one; a developer machine without one is told, loudly.
pub(crate) fn chromium_for(test: &str) -> Option<&'static str> {
    let browser = chromium();
    if browser.is_none() {
        assert!(
            std::env::var_os("BARRAGE_CI").is_none(),
            "chromium is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED {test}: no chromium on this machine");
    }
    browser
}

#[test]
fn html_report_draws_its_charts_in_headless_chromium() {
    let Some(browser) = chromium_for("html_report_draws_its_charts_in_headless_chromium") else {
        return;
    };
    // Chromium's start-up takes the CPU for a while: not alongside timing-sensitive tests.
    let _heavy = heavy_lock();
    let target = Target::start();
    let script = two_tag_script(&target, 2);
    let html = scratch_file("report.html", b"");
    barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--no-results",
            "--html",
            html.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .expect_success();
    let profile = scratch_file("chromium-profile", b"");
    std::fs::remove_file(&profile).unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert!(
        !log.contains("Uncaught"),
        "script error in the console: {log}"
    );
    // The inline script ran to its end and counted the drawn series.
    let ready = dom
        .split("data-ready=\"charts:")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("the page's script did not finish: {dom:.2000}"));
    // rates 2, latency (all + 2 tags) × 4, in flight, active clients, arrivals 2, bars, curves 3
    assert_eq!(ready, 2 + 12 + 1 + 1 + 2 + 1 + 3, "series drawn");
    for path in dom.split("<path class=\"series").skip(1) {
        let d = path
            .split(" d=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("");
        let points = d.matches('L').count();
        assert!(points >= 1, "a chart series without points: {path:.200}");
    }
    assert!(dom.contains("<h2>Per tag</h2>"));
}

/// Loads `html` in headless Chromium: the DOM after the page's script ran, and a screenshot.
fn load_in_chromium(browser: &str, html: &std::path::Path, png: &std::path::Path) -> String {
    let profile = scratch_file("chromium-profile", b"");
    std::fs::remove_file(&profile).unwrap();
    let run = |extra: &[String]| {
        let out = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("file://{}", html.display()))
            .output()
            .expect("run chromium");
        assert!(
            out.status.success(),
            "chromium failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1280,1800".into(),
    ]);
    let shot = std::fs::read(png).expect("the screenshot");
    assert!(shot.starts_with(b"\x89PNG"), "a PNG screenshot");
    run(&["--dump-dom".into()])
}

/// The verdict the HTML shows must be the run's: PASS only for a run whose thresholds passed
/// and whose generator self-check says its figures can be trusted.
#[test]
fn html_verdicts_of_a_passing_a_failing_and_an_untrustworthy_run_in_chromium() {
    let Some(browser) =
        chromium_for("html_verdicts_of_a_passing_a_failing_and_an_untrustworthy_run_in_chromium")
    else {
        return;
    };
    let _heavy = heavy_lock();
    let target = Target::start_with(&["--threads", "2"]);
    let script = |name: &str, rule: &str| {
        let text = format!(
            "definition.setTarget('http://{}');
definition.setVirtualUsers({{ vus: 2, duration: '2s' }});
definition.setThresholds({{ http_req_duration: ['{rule}'], http_req_failed: ['rate<0.01'] }});
definition.metric('tokens', 'counter');
definition.session('s', function (session) {{
  session.get('/health', {{ tag: 'health' }});
  session.check('status is 200', session.lastHttpStatus(), '==', 200);
  session.add('tokens', 1);
  session.wait(0.05);
}});",
            target.addr
        );
        scratch_file(name, text.as_bytes())
    };
    let cases = [
        ("pass", script("verdict-pass.js", "p(95)<5000"), 0),
        ("fail", script("verdict-fail.js", "p(95)<0.001"), 99),
    ];
    for (name, path, code) in cases {
        let html = scratch_file(&format!("verdict-{name}.html"), b"");
        let json = scratch_file(&format!("verdict-{name}.json"), b"");
        let out = barrage(
            &[
                "run",
                path.to_str().unwrap(),
                "--no-results",
                "--no-history",
                "--html",
                html.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(out.code(), Some(code), "{}\n{}", out.stdout, out.stderr);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let png = html.with_extension("png");
        let dom = load_in_chromium(browser, &html, &png);
        eprintln!("screenshot of the {name} run: {}", png.display());
        let expected = match (name, summary["trustworthy"].as_bool()) {
            ("fail", _) => r#"class="verdict fail">FAIL"#,
            (_, Some(true)) => r#"class="verdict pass">PASS"#,
            _ => r#"class="verdict untrusted">UNTRUSTWORTHY"#,
        };
        assert!(dom.contains(expected), "{name}: {expected} in {dom:.3000}");
        assert!(dom.contains("<td>tokens</td>"), "custom metric shown");
        assert!(dom.contains("status is 200"), "checks shown");
        assert!(dom.contains("<td>workload.kind</td>") || dom.contains("<td>workload."));
        let mark = if name == "pass" { "✓" } else { "✗" };
        assert!(
            dom.contains(&format!(
                r#"<td class="mark">{mark}</td><td>http_req_duration</td>"#
            )),
            "{name}: the threshold row"
        );
        if name == "fail" {
            assert!(dom.contains("<li>1 of 2 thresholds failed</li>"));
        }
    }
    // One worker thread pushing 64 connections as fast as it can: its self-check finds the
    // generator saturated, and the report must say so instead of PASS.
    let html = scratch_file("verdict-untrusted.html", b"");
    let json = scratch_file("verdict-untrusted.json", b"");
    let out = barrage(
        &[
            "quick",
            "--threads",
            "1",
            "-c",
            "64",
            "-z",
            "2s",
            "--no-results",
            "--no-history",
            "--html",
            html.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            &target.url("/health"),
        ],
        Duration::from_secs(60),
    );
    out.expect_success();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let png = html.with_extension("png");
    let dom = load_in_chromium(browser, &html, &png);
    eprintln!("screenshot of the saturated run: {}", png.display());
    if summary["trustworthy"] == false {
        assert!(dom.contains(r#"class="verdict untrusted">UNTRUSTWORTHY"#));
        assert!(dom.contains("These latency figures cannot be trusted."));
        let reason = summary["trust_reasons"][0].as_str().unwrap();
        assert!(dom.contains(&reason[..20]), "the reason is shown");
    } else {
        assert!(dom.contains(r#"class="verdict pass">PASS"#));
    }
    assert!(
        !dom.contains(r#"class="verdict pass">PASS"#) || summary["trustworthy"] == true,
        "never PASS for an untrustworthy run"
    );
}
