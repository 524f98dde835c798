//! Live metric exports end to end: `--out prometheus-rw` into a real Prometheus (Debian's
//! package, started here with its remote-write receiver), `--out otlp` into a receiver that
//! decodes the OTLP protobuf, an unreachable endpoint, and malformed specs.

use crate::scenarios::heartbeat_script;
use crate::support::*;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point, NumberDataPoint};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A Prometheus server on a free loopback port with a throwaway data directory.
struct Prometheus {
    child: Child,
    addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prometheus_binary() -> Option<&'static str> {
    ["prometheus", "/usr/bin/prometheus"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A GET on loopback; returns the body.
fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split(' ').nth(1)?;
    (status == "200").then(|| body.to_string())
}

impl Prometheus {
    /// Starts Prometheus with its remote-write receiver, and with native histograms when
    /// `native_histograms`.
    fn start(binary: &str, native_histograms: bool) -> Prometheus {
        let dir = scratch_file("prometheus-data", b"");
        std::fs::remove_file(&dir).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1h\n").unwrap();
        let addr = format!("127.0.0.1:{}", closed_port());
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .args(native_histograms.then_some("--enable-feature=native-histograms"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus { child, addr };
        let started = Instant::now();
        while http_get(&prometheus.addr, "/-/ready").is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "prometheus did not get ready on {}",
                prometheus.addr
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// An instant PromQL query; the result vector.
    fn query(&self, promql: &str) -> Vec<Value> {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let body = http_get(&self.addr, &format!("/api/v1/query?query={encoded}"))
            .unwrap_or_else(|| panic!("query {promql} failed"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{v:#}");
        v["data"]["result"].as_array().unwrap().clone()
    }
}

fn sample_value(series: &Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

/// Runs the heartbeat scenario with extra `--out` specs; the summary and stderr.
fn heartbeat_with(target: &Target, out: &[String]) -> (Value, String) {
    let script = heartbeat_script(target, 40, 3);
    let json = scratch_file("live-export-summary.json", b"");
    let mut args = vec![
        "run".to_string(),
        script.to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into_owned(),
        "--seed".into(),
        "7".into(),
    ];
    for spec in out {
        args.push("--out".into());
        args.push(spec.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = barrage(&args, Duration::from_secs(60));
    run.expect_success();
    let summary = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (summary, run.stderr)
}

/// Prometheus for `test`: CI must have it; a developer machine without it is told, loudly.
fn prometheus_for(test: &str) -> Option<&'static str> {
    let binary = prometheus_binary();
    if binary.is_none() {
        assert!(
            std::env::var_os("BARRAGE_CI").is_none(),
            "prometheus is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED {test}: no prometheus on this machine (apt-get install prometheus)");
    }
    binary
}

#[test]
fn prometheus_remote_write_holds_the_runs_exact_counts() {
    let Some(binary) = prometheus_for("prometheus_remote_write_holds_the_runs_exact_counts") else {
        return;
    };
    let prometheus = Prometheus::start(binary, false);
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = format!(
        "experimental-prometheus-rw=http://{}/api/v1/write,testid=rw-test,percentiles=50+99",
        prometheus.addr
    );
    let (summary, stderr) = heartbeat_with(&target, &[url]);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(stderr.contains("testid=rw-test"), "{stderr}");
    // Without --enable-feature=native-histograms the server refuses them: percentiles only.
    assert!(
        stderr.contains("latency as percentile gauges only: the server refused native histograms"),
        "{stderr}"
    );
    assert!(prometheus
        .query(r#"k6_http_req_duration_seconds{testid="rw-test"}"#)
        .is_empty());
    let total: f64 = prometheus
        .query(r#"sum(k6_http_reqs_total{testid="rw-test"})"#)
        .first()
        .map(sample_value)
        .expect("a request counter");
    assert_eq!(total as u64, u(&summary, "requests"), "{summary:#}");
    for name in ["get_token", "ping"] {
        let series = prometheus.query(&format!(
            r#"k6_http_reqs_total{{testid="rw-test",name="{name}"}}"#
        ));
        assert_eq!(series.len(), 1, "{series:?}");
        assert_eq!(
            sample_value(&series[0]) as u64,
            u(tag(&summary, name), "requests"),
            "{name}"
        );
    }
    let p99 = prometheus.query(r#"k6_http_req_duration_p99{testid="rw-test",name="ping"}"#);
    assert_eq!(p99.len(), 1, "{p99:?}");
    let seconds = sample_value(&p99[0]);
    assert!(
        seconds > 0.015 && seconds < 5.0,
        "ping has a 20 ms delay: {seconds}"
    );
    // Flushed during the run too, not only at its end: several samples in the last minute.
    let samples = prometheus
        .query(r#"count_over_time(k6_http_reqs_total{testid="rw-test",name="ping"}[1m])"#);
    assert!(sample_value(&samples[0]) >= 3.0, "{samples:?}");
}

#[test]
fn prometheus_with_native_histograms_gets_latency_as_native_histograms() {
    let Some(binary) =
        prometheus_for("prometheus_with_native_histograms_gets_latency_as_native_histograms")
    else {
        return;
    };
    let prometheus = Prometheus::start(binary, true);
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = format!(
        "prometheus-rw=http://{}/api/v1/write,testid=rw-native",
        prometheus.addr
    );
    let (summary, stderr) = heartbeat_with(&target, &[url]);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        stderr.contains("latency as native histograms (k6_http_req_duration_seconds)"),
        "{stderr}"
    );
    for name in ["get_token", "ping"] {
        let count = prometheus.query(&format!(
            r#"histogram_count(k6_http_req_duration_seconds{{testid="rw-native",name="{name}"}})"#
        ));
        assert_eq!(count.len(), 1, "{name}: {count:?}");
        assert_eq!(
            sample_value(&count[0]) as u64,
            u(tag(&summary, name), "responses"),
            "{name}: every response is in the histogram"
        );
    }
    let p99 = prometheus.query(
        r#"histogram_quantile(0.99, k6_http_req_duration_seconds{testid="rw-native",name="ping"})"#,
    );
    let seconds = sample_value(&p99[0]);
    assert!(
        seconds > 0.015 && seconds < 5.0,
        "ping has a 20 ms delay: {seconds}"
    );
    // The percentile gauges go too, for dashboards that read them.
    assert_eq!(
        prometheus
            .query(r#"k6_http_req_duration_p99{testid="rw-native",name="ping"}"#)
            .len(),
        1
    );
}

/// A loopback OTLP/HTTP receiver keeping every decoded request.
fn otlp_receiver() -> (String, Arc<Mutex<Vec<ExportMetricsServiceRequest>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let received = Arc::new(Mutex::new(Vec::new()));
    let keep = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten().take(1000) {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                line.clear();
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let request: ExportMetricsServiceRequest =
                prost::Message::decode(body.as_slice()).expect("a valid OTLP protobuf");
            keep.lock().unwrap().push(request);
            let _ = reader
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (addr, received)
}

fn attribute<'a>(point: &'a NumberDataPoint, key: &str) -> Option<&'a str> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    point
        .attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}

fn as_double(point: &NumberDataPoint) -> f64 {
    match point.value {
        Some(number_data_point::Value::AsDouble(v)) => v,
        _ => panic!("a double"),
    }
}

#[test]
fn otlp_carries_the_same_counts() {
    let _heavy = heavy_lock();
    let (addr, received) = otlp_receiver();
    let target = Target::start();
    let (summary, stderr) = heartbeat_with(&target, &[format!("otlp=http://{addr}/v1/metrics")]);
    assert!(!stderr.contains("warning"), "{stderr}");
    let received = received.lock().unwrap();
    assert!(
        received.len() >= 3,
        "flushed every second: {}",
        received.len()
    );
    let last = received.last().unwrap();
    let resource = last.resource_metrics[0].resource.as_ref().unwrap();
    assert!(resource.attributes.iter().any(|a| a.key == "testid"));
    let metrics = &last.resource_metrics[0].scope_metrics[0].metrics;
    let reqs = metrics
        .iter()
        .find(|m| m.name == "k6_http_reqs_total")
        .expect("request counter");
    let Some(Data::Sum(sum)) = &reqs.data else {
        panic!("the request counter is a monotonic sum")
    };
    assert!(sum.is_monotonic);
    let mut total = 0;
    for point in &sum.data_points {
        let name = attribute(point, "name").unwrap();
        assert_eq!(
            as_double(point) as u64,
            u(tag(&summary, name), "requests"),
            "{name}"
        );
        total += as_double(point) as u64;
    }
    assert_eq!(total, u(&summary, "requests"));
    let p99 = metrics
        .iter()
        .find(|m| m.name == "k6_http_req_duration_p99")
        .expect("a percentile gauge");
    assert_eq!(p99.unit, "s");
    assert!(matches!(p99.data, Some(Data::Gauge(_))));
}

#[test]
fn an_unreachable_endpoint_costs_one_warning_not_the_run() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let port = closed_port();
    let (summary, stderr) = heartbeat_with(
        &target,
        &[format!(
            "prometheus-rw=http://127.0.0.1:{port}/api/v1/write"
        )],
    );
    assert!(u(&summary, "requests") > 0);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("batches not delivered"), "{stderr}");
    assert!(warnings[0].contains("cannot connect"), "{stderr}");
}

#[test]
fn a_malformed_export_url_is_a_usage_error_before_the_run() {
    for spec in [
        "prometheus-rw=localhost:9090/api/v1/write",
        "otlp=http://",
        "prometheus-rw=http://127.0.0.1:1/,interval=10ms",
    ] {
        let out = barrage(
            &[
                "quick",
                "-n",
                "1",
                "-c",
                "1",
                "--out",
                spec,
                "http://127.0.0.1:1/",
            ],
            Duration::from_secs(30),
        );
        assert_eq!(out.code(), Some(2), "{spec}: {}", out.stderr);
        assert!(out.stderr.contains("--out `"), "{spec}: {}", out.stderr);
    }
}

#[test]
fn the_dashboard_streams_frames_and_offers_the_report() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let script = heartbeat_script(&target, 30, 4);
    let addr = format!("127.0.0.1:{}", closed_port());
    let run = Running::spawn(&[
        "run",
        script.to_str().unwrap(),
        "--dashboard",
        &addr,
        "--seed",
        "3",
    ]);
    let started = Instant::now();
    let page = loop {
        if let Some(page) = http_get(&addr, "/") {
            break page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no dashboard on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(page.contains("EventSource(\"/events\")"), "{page}");
    // Frames arrive while the run goes on: read until one counts requests of both tags.
    let mut events = TcpStream::connect(&addr).unwrap();
    events
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(events, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reader = BufReader::new(events);
    let mut line = String::new();
    let frame: Value = loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the event stream ended"
        );
        if let Some(json) = line.strip_prefix("data: ") {
            let frame: Value = serde_json::from_str(json).unwrap();
            let counted = frame["tags"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["requests"].as_u64().unwrap() > 0);
            if counted && frame["done"] == false {
                break frame;
            }
        }
    };
    assert_eq!(frame["tags"].as_array().unwrap().len(), 2, "{frame}");
    assert!(frame["self_check"].as_str().is_some(), "{frame}");
    // The last frame says the run is done, and the report is served before barrage exits.
    let done = loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the event stream ended"
        );
        if let Some(json) = line.strip_prefix("data: ") {
            let frame: Value = serde_json::from_str(json).unwrap();
            if frame["done"] == true {
                break frame;
            }
        }
    };
    assert!(done["tags"][0]["requests"].as_u64().unwrap() > 0);
    let report = http_get(&addr, "/report").expect("the final report");
    assert!(
        report.contains("<html"),
        "{}",
        &report[..200.min(report.len())]
    );
    run.wait(Duration::from_secs(60)).expect_success();
}

/// Node.js, which drives Chromium over its DevTools pipe for the mid-run dashboard test: CI
/// must have it (.ci/run installs it); a developer machine without it is told, loudly.
fn node_for(test: &str) -> bool {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("BARRAGE_CI").is_none(),
            "node is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED {test}: no node on this machine");
    }
    found
}

#[test]
fn the_dashboard_draws_live_charts_in_chromium_while_the_run_goes_on() {
    const TEST: &str = "the_dashboard_draws_live_charts_in_chromium_while_the_run_goes_on";
    let Some(browser) = crate::report_html::chromium_for(TEST) else {
        return;
    };
    if !node_for(TEST) {
        return;
    }
    let _heavy = heavy_lock();
    let target = Target::start();
    // Twelve seconds of arrivals: the page is looked at after its fourth frame, long before
    // the end.
    let script = heartbeat_script(&target, 30, 12);
    let addr = format!("127.0.0.1:{}", closed_port());
    let mut run = Running::spawn(&[
        "run",
        script.to_str().unwrap(),
        "--dashboard",
        &addr,
        "--seed",
        "5",
    ]);
    let started = Instant::now();
    while http_get(&addr, "/").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no dashboard on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let screenshot = scratch_dir().join("dashboard-midrun.png");
    let driver = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/dashboard_midrun.mjs"
    );
    let page = Command::new("node")
        .args([
            driver,
            &format!("http://{addr}/"),
            screenshot.to_str().unwrap(),
            "4",
            "20000",
        ])
        .env("CHROMIUM", browser)
        .output()
        .expect("node");
    assert!(
        page.status.success(),
        "{}",
        String::from_utf8_lossy(&page.stderr)
    );
    // The page was read while barrage was still running.
    assert!(run.is_running(), "the run ended before the page was read");
    let seen: Value = serde_json::from_slice(&page.stdout).expect("the page's state");
    assert!(seen["frames"].as_u64().unwrap() >= 4, "{seen}");
    assert_eq!(seen["ended"], false, "{seen}");
    let points = |key: &str| seen["points"][key].as_u64().unwrap_or(0);
    // Rates need two frames; latency and the failed share come with every frame that has data.
    for tag in ["get_token", "ping"] {
        assert!(points(tag) >= 2, "{tag} rate: {seen}");
        assert!(points(&format!("{tag} p95")) >= 2, "{tag} p95: {seen}");
        assert!(
            points(&format!("{tag} failed")) >= 3,
            "{tag} failed: {seen}"
        );
    }
    assert!(points("active clients") >= 4, "{seen}");
    assert!(
        seen["status"].as_str().unwrap().contains("requests"),
        "{seen}"
    );
    let png = std::fs::read(&screenshot).expect("screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    if let Some(dir) = std::env::var_os("BARRAGE_SCREENSHOTS") {
        std::fs::copy(
            &screenshot,
            std::path::Path::new(&dir).join("dashboard-midrun.png"),
        )
        .expect("copy the screenshot");
    }
    run.wait(Duration::from_secs(60)).expect_success();
}

#[test]
fn exports_reach_an_https_endpoint_that_the_given_ca_vouches_for() {
    // The receiver: barrage's own target over TLS (a self-signed certificate for 127.0.0.1),
    // answering any POST to /anything with 200.
    let receiver = Target::start_with(&["--threads", "1", "--tls"]);
    let cert = receiver
        .cert_path
        .clone()
        .expect("the target's certificate");
    let load = Target::start();
    let url = format!("http://{}/", load.addr);
    for kind in ["otlp", "prometheus-rw"] {
        let trusted = format!("{kind}=https://{}/anything,ca={cert}", receiver.addr);
        let out = barrage(
            &["quick", "-n", "40", "-c", "2", "--out", &trusted, &url],
            Duration::from_secs(30),
        );
        out.expect_success();
        assert!(!out.stderr.contains("warning"), "{kind}: {}", out.stderr);
        // Without the CA, the certificate does not verify: every batch fails, named.
        let untrusted = format!("{kind}=https://{}/anything", receiver.addr);
        let out = barrage(
            &["quick", "-n", "40", "-c", "2", "--out", &untrusted, &url],
            Duration::from_secs(30),
        );
        out.expect_success();
        assert!(
            out.stderr
                .contains(&format!("warning: --out {kind} https://"))
                && out.stderr.contains("TLS handshake"),
            "{kind}: {}",
            out.stderr
        );
    }
}

/// Runs a two-phase script with thresholds; `tty`: under `script(1)`, so barrage's stdout and
/// stderr are a terminal. Returns everything it wrote.
fn progress_run(target: &Target, tty: bool) -> String {
    let text = format!(
        "definition.setTarget(\"http://{}\");
definition.setArrivalPhases([{{ duration: 2, rate: 20 }}, {{ duration: 2, rate: 30 }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 5 }});
definition.setThresholds({{ http_req_duration: ['p(95)<5000'], http_req_failed: 'rate<0.5' }});
definition.session(\"s\", function (session) {{
  session.get(\"/delay/5\", {{ tag: \"ping\" }});
}});
",
        target.addr
    );
    let script = scratch_file("progress.js", text.as_bytes());
    let results = scratch_dir().join("results");
    let history = scratch_dir().join("history.db");
    if !tty {
        let out = barrage(&["run", script.to_str().unwrap()], Duration::from_secs(60));
        out.expect_success();
        return format!("{}{}", out.stdout, out.stderr);
    }
    let command = format!(
        "BARRAGE_RESULTS_DIR='{}' BARRAGE_HISTORY='{}' '{BIN}' run '{}'",
        results.display(),
        history.display(),
        script.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_progress_line_shows_latency_errors_phase_and_thresholds_only_on_a_terminal() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let shown = progress_run(&target, true);
    // Redrawn in place: each frame is written over the last one on the same line.
    let frames: Vec<&str> = shown
        .split(['\r', '\n'])
        .filter(|f| f.contains("requests ") && f.contains("clients "))
        .collect();
    assert!(frames.len() >= 3, "{shown}");
    assert!(shown.contains("\r"), "{shown:?}");
    let live = frames
        .iter()
        .find(|f| f.contains("p95 ") && f.contains("p99 "))
        .unwrap_or_else(|| panic!("no frame with p95/p99: {shown}"));
    assert!(live.contains("err 0.00%"), "{live}");
    assert!(live.contains("thresholds ✓ 2"), "{live}");
    assert!(
        frames.iter().any(|f| f.contains("phase 1/2"))
            && frames.iter().any(|f| f.contains("phase 2/2")),
        "{frames:?}"
    );
    // Not a terminal: no progress line at all.
    // Not a terminal: no progress line at all.
    let plain = progress_run(&target, false);
    assert!(
        !plain.contains("requests ") || !plain.contains("clients "),
        "{plain}"
    );
    assert!(!plain.contains("thresholds ✓ 2"), "{plain}");
}
