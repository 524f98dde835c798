//! Stop signals: Ctrl-C (SIGINT), SIGTERM and SIGHUP stop a run gracefully the first time and
//! at once the second; either way the summary, the results file, `--json` and `--html` are
//! written and readable. `barrage target --tls` removes its temporary certificate on SIGTERM.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn send(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} failed");
}

struct Paths {
    results: PathBuf,
    json: PathBuf,
    html: PathBuf,
}

impl Paths {
    fn new(name: &str) -> Paths {
        let path = |ext: &str| {
            let p = scratch_file(&format!("{name}.{ext}"), b"");
            std::fs::remove_file(&p).expect("start without the file");
            p
        };
        Paths {
            results: path("brr"),
            json: path("json"),
            html: path("html"),
        }
    }
}

/// Runs `quick` on `path` of the target, sends `signal` `times` times (the second after the
/// grace period has begun), and checks the exit code and every output.
fn stop_with(target: &Target, signal: &str, times: usize) {
    let paths = Paths::new(&format!("signal-{signal}-{times}"));
    // Once: requests of 300 ms finish within the grace period. Twice: requests of 10 s are cut
    // off by the second signal.
    let url = target.url(if times == 1 {
        "/delay/300"
    } else {
        "/delay/10000"
    });
    let running = Running::spawn(&[
        "quick",
        "-z",
        "30s",
        "-c",
        "4",
        "--grace",
        "20s",
        "--results",
        paths.results.to_str().unwrap(),
        "--json",
        paths.json.to_str().unwrap(),
        "--html",
        paths.html.to_str().unwrap(),
        "--no-history",
        &url,
    ]);
    std::thread::sleep(Duration::from_millis(1200));
    let first = Instant::now();
    send(running.pid(), signal);
    if times == 2 {
        std::thread::sleep(Duration::from_millis(500));
        send(running.pid(), signal);
    }
    let out = running.wait(Duration::from_secs(30));
    let took = first.elapsed();
    let expected = if times == 1 { 0 } else { 130 };
    assert_eq!(
        out.code(),
        Some(expected),
        "{signal} x{times}\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        took < Duration::from_secs(5),
        "{signal} x{times}: exit took {took:?}"
    );
    assert!(
        out.stderr.contains("grace period of 20s"),
        "the grace period is announced: {}",
        out.stderr
    );
    assert!(out.stdout.contains("Summary:"), "{}", out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(&read(&paths.json)).expect("--json holds a JSON summary");
    check_invariants(&summary);
    assert_eq!(summary["interrupted"], true, "{summary:#}");
    if times == 1 {
        assert!(u(&summary, "responses") > 0, "{summary:#}");
    } else {
        // Requests open when the run was cut off are counted, not lost.
        assert_eq!(u(&summary, "interrupted_requests"), 4, "{summary:#}");
    }
    let html = read(&paths.html);
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"),
        "--html is a whole page"
    );
    let rerendered = barrage(
        &["report", paths.results.to_str().unwrap()],
        Duration::from_secs(10),
    );
    rerendered.expect_success();
    assert!(
        rerendered.stdout.contains("Summary:"),
        "the results file reads back: {}",
        rerendered.stdout
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_stop_signal_once_is_graceful_and_keeps_every_output() {
    let _heavy = heavy_lock();
    let target = Target::start();
    for signal in ["INT", "TERM", "HUP"] {
        stop_with(&target, signal, 1);
    }
}

#[test]
fn every_stop_signal_twice_stops_at_once_and_keeps_every_output() {
    let _heavy = heavy_lock();
    let target = Target::start();
    for signal in ["INT", "TERM", "HUP"] {
        stop_with(&target, signal, 2);
    }
}

#[test]
fn target_removes_its_temporary_certificate_on_sigterm() {
    let target = Target::start_with(&["--threads", "1", "--tls"]);
    let cert = target.cert_path.clone().expect("a certificate line");
    assert!(Path::new(&cert).exists(), "{cert} written");
    let pid = target.pid();
    send(pid, "TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&cert).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !Path::new(&cert).exists(),
        "{cert} left behind after SIGTERM"
    );
}
