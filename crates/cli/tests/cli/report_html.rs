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

#[test]
fn html_report_draws_its_charts_in_headless_chromium() {
    let Some(browser) = chromium() else {
        // CI must have a browser; a developer machine without one is told, loudly.
        assert!(
            std::env::var_os("BARRAGE_CI").is_none(),
            "chromium is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED html_report_draws_its_charts_in_headless_chromium: no chromium on this machine");
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
