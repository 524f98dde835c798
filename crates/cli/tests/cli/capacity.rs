//! `barrage capacity`: the knee of the bundled target given a known capacity
//! (`capacity=R`: at most R requests per second, queueing beyond), for an open and a closed
//! workload with repeat bands; the search's results file through `report`, `compare
//! --fail-on` and `merge`; segments stepping together; a starved generator reported as
//! generator-bound, and one out of file descriptors too; usage errors naming their flag.

use super::*;
use std::path::Path;

/// The known capacity of the target, requests per second.
const R: f64 = 200.0;
/// The closed workload's target: slower requests, a lower capacity.
const R_CLOSED: f64 = 50.0;
/// Bound of one search (a handful of steps of a few seconds each, on a busy machine).
const SEARCH_LIMIT: Duration = Duration::from_secs(240);

fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the --json file");
    serde_json::from_str(&text).expect("--json is JSON")
}

/// The `--json` document against docs/capacity.schema.json.
fn validate_against_schema(document: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/capacity.schema.json");
    let schema = json_file(&schema_path);
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

fn knee(search: &Value) -> &Value {
    let i = search["knee"].as_u64().expect("a knee") as usize;
    &search["levels"][i]
}

#[test]
fn capacity_finds_a_known_capacity_open_and_closed_with_repeat_bands() {
    let _heavy = heavy_lock();
    let open_target = Target::start();
    let closed_target = Target::start();
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(format!("{}-{name}", std::process::id()));
    let (open_json, open_brr, open_html) = (file("open.json"), file("open.brr"), file("open.html"));
    let (closed_json, closed_brr) = (file("closed.json"), file("closed.brr"));
    let open_history = file("open-history.db");
    let _ = std::fs::remove_file(&open_history);
    let open_url = open_target.url("/health?capacity=200");
    // Open: paced arrivals; below R nothing queues, above it the queue grows every second.
    let open = Running::spawn(&[
        "capacity",
        &open_url,
        "--slo",
        "p(99)<200ms,http_req_failed<1%",
        "--start",
        "75",
        "--step",
        "x2",
        "--max",
        "1000",
        "--warmup",
        "1s",
        "--measure",
        "2s",
        "--precision",
        "10",
        "--repeat",
        "2",
        "--json",
        open_json.to_str().unwrap(),
        "--results",
        open_brr.to_str().unwrap(),
        "--html",
        open_html.to_str().unwrap(),
        "--history",
        open_history.to_str().unwrap(),
    ]);
    // Closed: each request takes 200 ms, and the target serves R_CLOSED = 50/s, so N virtual
    // users ask for N/0.2 per second; past N = 10 they wait in the queue and latency is
    // N/R_CLOSED: p99 < 250 ms breaks at N = 13. (SLOs of a few hundred ms keep the verdicts
    // clear of a busy machine's event-loop lag, which counts against a quarter of the limit.)
    let closed_url = closed_target.url("/health?capacity=50&delay=200");
    let closed = Running::spawn(&[
        "capacity",
        &closed_url,
        "--vus",
        "--slo",
        "p(99)<250ms",
        "--start",
        "2",
        "--step",
        "x2",
        "--max",
        "64",
        "--warmup",
        "1s",
        "--measure",
        "2s",
        "--repeat",
        "2",
        "--json",
        closed_json.to_str().unwrap(),
        "--results",
        closed_brr.to_str().unwrap(),
        "--no-history",
    ]);
    let open = open.wait(SEARCH_LIMIT);
    let closed = closed.wait(SEARCH_LIMIT);
    open.expect_success();
    closed.expect_success();

    let open_document = json_file(&open_json);
    validate_against_schema(&open_document);
    validate_against_schema(&json_file(&closed_json));
    let open_search = &open_document["capacity"];
    assert_eq!(open_search["verdict"], "target_capacity", "{}", open.stdout);
    let k = knee(open_search);
    let load = k["load"].as_f64().unwrap();
    assert!(
        (0.9 * R..=1.1 * R).contains(&load),
        "open knee {load}/s is not within 10% of {R}\n{}",
        open.stdout
    );
    let throughput = k["bands"]["throughput"]["median"].as_f64().unwrap();
    assert!((0.9 * R..=1.1 * R).contains(&throughput), "{}", open.stdout);
    // The breach was confirmed, then bisected; each step ran twice, with bands.
    let roles: Vec<&str> = open_search["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["role"].as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"confirm") && roles.contains(&"bisect"),
        "{roles:?}"
    );
    assert_eq!(k["runs"].as_array().unwrap().len(), 2);
    let band = &k["bands"]["throughput"];
    assert!(band["min"].as_f64() <= band["median"].as_f64());
    assert!(band["median"].as_f64() <= band["max"].as_f64());
    assert!(band["spread_percent"].as_f64().is_some());
    assert!(open.stdout.contains("min–med–max"), "{}", open.stdout);
    assert!(open.stdout.contains("knee (◆)"), "{}", open.stdout);
    assert!(open.stdout.contains("target capacity"), "{}", open.stdout);
    assert!(!open.stdout.contains("generator-bound"), "{}", open.stdout);

    let closed_search = &json_file(&closed_json)["capacity"];
    assert_eq!(
        closed_search["verdict"], "target_capacity",
        "{}",
        closed.stdout
    );
    assert_eq!(closed_search["config"]["kind"], "vus");
    let k = knee(closed_search);
    let vus = k["load"].as_f64().unwrap();
    assert_eq!(vus.fract(), 0.0);
    let throughput = k["bands"]["throughput"]["median"].as_f64().unwrap();
    assert!(
        (0.9 * R_CLOSED..=1.1 * R_CLOSED).contains(&throughput),
        "closed knee {vus} VUs at {throughput} req/s is not within 10% of {R_CLOSED}\n{}",
        closed.stdout
    );
    assert!((10.0..13.0).contains(&vus), "{}", closed.stdout);
    assert_eq!(k["runs"].as_array().unwrap().len(), 2);

    // The history row shows the knee — its load, throughput and p99 — not the steps added up.
    let k = knee(open_search);
    let listed = barrage(
        &["history", "--history", open_history.to_str().unwrap()],
        LIMIT,
    );
    listed.expect_success();
    let row = listed.stdout.lines().nth(1).expect("the search's row");
    let load = k["load"].as_f64().unwrap();
    let load_text = if load.fract() == 0.0 {
        format!("{load:.0}/s")
    } else {
        format!("{load:.1}/s")
    };
    let knee_figures = [
        load_text,
        format!("{:.1}", k["merged"]["throughput"].as_f64().unwrap()),
        format!("{:.2}ms", k["merged"]["p99_us"].as_f64().unwrap() / 1e3),
        k["merged"]["requests"].to_string(),
    ];
    assert!(listed.stdout.lines().next().unwrap().contains("knee"));
    for figure in &knee_figures {
        assert!(
            row.split_whitespace().any(|cell| cell == figure),
            "{figure} not in the history row\n{}",
            listed.stdout
        );
    }

    // The HTML page draws the curve.
    let page = std::fs::read_to_string(&open_html).unwrap();
    assert!(page.contains("Throughput–latency curve") && page.contains(r#"data-name="p99""#));

    // One results file for the whole search: `report` shows the search again.
    let report = barrage(&["report", open_brr.to_str().unwrap()], LIMIT);
    report.expect_success();
    assert!(report.stdout.contains("knee (◆)"), "{}", report.stdout);
    assert!(
        report.stdout.contains("target capacity"),
        "{}",
        report.stdout
    );
    let report_html = file("report.html");
    barrage(
        &[
            "report",
            open_brr.to_str().unwrap(),
            "--html",
            report_html.to_str().unwrap(),
        ],
        LIMIT,
    )
    .expect_success();
    assert!(std::fs::read_to_string(&report_html)
        .unwrap()
        .contains(r#"data-name="knee""#));

    // `compare`: the same search is no regression; the closed search (another target, a
    // quarter of the capacity) is, by its knee's load and by its throughput.
    let same = barrage(
        &[
            "compare",
            open_brr.to_str().unwrap(),
            open_brr.to_str().unwrap(),
            "--fail-on",
            "capacity:-10%,p99:+1000%",
        ],
        LIMIT,
    );
    same.expect_success();
    assert!(
        same.stdout.contains("capacity (the knee of each search)"),
        "{}",
        same.stdout
    );
    let fewer = barrage(
        &[
            "compare",
            open_brr.to_str().unwrap(),
            closed_brr.to_str().unwrap(),
            "--fail-on",
            "capacity:-10%",
        ],
        LIMIT,
    );
    assert_eq!(fewer.code(), Some(3), "{}\n{}", fewer.stdout, fewer.stderr);
    assert!(
        fewer.stderr.contains("regression:") && fewer.stderr.contains("capacity changed"),
        "{}",
        fewer.stderr
    );
    let rps = barrage(
        &[
            "compare",
            open_brr.to_str().unwrap(),
            closed_brr.to_str().unwrap(),
            "--fail-on",
            "knee_rps:-90%,knee_p99:+1000%",
        ],
        LIMIT,
    );
    assert_eq!(rps.code(), Some(0), "{}\n{}", rps.stdout, rps.stderr);
    // The closed search's knee serves a quarter of the open one's: past a -50% rule.
    let rps = barrage(
        &[
            "compare",
            open_brr.to_str().unwrap(),
            closed_brr.to_str().unwrap(),
            "--fail-on",
            "knee_rps:-50%",
        ],
        LIMIT,
    );
    assert_eq!(rps.code(), Some(3), "{}\n{}", rps.stdout, rps.stderr);
    assert!(rps.stderr.contains("knee_rps changed -7"), "{}", rps.stderr);
}

#[test]
fn capacity_segments_step_together_and_merge_into_one_search() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let url = target.url("/health?capacity=200");
    let start_at = (std::time::SystemTime::now() + Duration::from_secs(2))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let part = |i: usize| dir.join(format!("{}-capseg{i}.brr", std::process::id()));
    let runs: Vec<Running> = (0..2)
        .map(|i| {
            let segment = format!("{i}/2");
            Running::spawn(&[
                "capacity",
                &url,
                "--slo",
                "p(99)<200ms",
                "--start",
                "75",
                "--step",
                "x2",
                "--max",
                "300",
                "--warmup",
                "1s",
                "--measure",
                "2s",
                "--segment",
                &segment,
                "--start-at",
                &start_at,
                "--results",
                part(i).to_str().unwrap(),
                "--no-history",
            ])
        })
        .collect();
    for run in runs {
        let out = run.wait(SEARCH_LIMIT);
        // Each segment alone sees half the load: the whole ladder, no decision of its own.
        assert!(
            out.code() == Some(0) || out.code() == Some(1),
            "{}\n{}",
            out.stdout,
            out.stderr
        );
        assert!(!out.stdout.contains("bisect"), "{}", out.stdout);
    }
    let merged = dir.join(format!("{}-capseg-merged.brr", std::process::id()));
    let out = barrage(
        &[
            "merge",
            part(0).to_str().unwrap(),
            part(1).to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ],
        LIMIT,
    );
    out.expect_success();
    let report = barrage(&["report", merged.to_str().unwrap()], LIMIT);
    report.expect_success();
    // 75 and 150/s met the SLO on the merged windows, 300/s (1.5 R) broke it.
    assert!(
        report.stdout.contains("target capacity 150/s"),
        "{}",
        report.stdout
    );
}

#[test]
fn capacity_segment_step_past_its_slot_is_marked() {
    let target = Target::start();
    // A --start-at 60 s in the past: the first step's wall-clock slot (1 + 2 s, a 2 s drain
    // and 2 s of margin) ended long ago, so the step runs past it — as a segment whose step
    // overran would, deterministically.
    let start_at = (std::time::SystemTime::now() - Duration::from_secs(60))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let results = scratch_file("capacity-overrun.brr", b"");
    let out = barrage(
        &[
            "capacity",
            &target.url("/health"),
            "--slo",
            "p(99)<500ms",
            "--start",
            "20",
            "--max",
            "20",
            "--warmup",
            "1s",
            "--measure",
            "2s",
            "--segment",
            "0/2",
            "--start-at",
            &start_at,
            "--results",
            results.to_str().unwrap(),
            "--no-history",
        ],
        LIMIT,
    );
    assert!(
        out.stdout.contains("WARNING: the step at 20/s ran ")
            && out.stdout.contains("s past its wall-clock slot")
            && out
                .stdout
                .contains("at 20/s: OVERRAN its wall-clock slot by "),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // The mark is kept in the results file: the report (and a merge of it) says so again.
    let json = scratch_file("capacity-overrun.json", b"");
    let report = barrage(
        &[
            "report",
            results.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(report.code(), out.code(), "{}", report.stderr);
    let overrun = json_file(&json)["capacity"]["levels"][0]["merged"]["overrun_ms"]
        .as_u64()
        .unwrap();
    assert!(overrun > 50_000, "{overrun}");
}

#[test]
fn capacity_reports_a_starved_generator_as_generator_bound() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // The generator shares core 0 with a process that never sleeps: `timeout` bounds it
    // (3 minutes) and passes the SIGTERM sent below on to the loop.
    let busy = Command::new("taskset")
        .args([
            "-c",
            "0",
            "timeout",
            "180",
            "sh",
            "-c",
            "while :; do :; done",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("taskset (util-linux)");
    let url = target.url("/health");
    let out = Command::new("taskset")
        .args([
            "-c",
            "0",
            BIN,
            "capacity",
            &url,
            "--threads",
            "1",
            "--slo",
            "p(99)<20ms",
        ])
        .args([
            "--start", "1000", "--step", "x2", "--max", "64000", "--warmup", "1s",
        ])
        .args([
            "--measure",
            "2s",
            "--precision",
            "25",
            "--no-results",
            "--no-history",
        ])
        .output()
        .expect("run barrage capacity");
    let mut busy = busy;
    let _ = Command::new("kill").arg(busy.id().to_string()).status();
    let _ = busy.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("generator-bound at "), "{stdout}");
    assert!(!stdout.contains("target capacity"), "{stdout}");
    assert!(stdout.contains("fix: "), "{stdout}");
}

#[test]
fn capacity_out_of_file_descriptors_is_generator_bound() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // A closed search under `ulimit -n 40`: a few VUs connect, but past ~35 the generator's
    // connects fail with EMFILE (local_fd_limit), which breaks `http_req_failed<1%` — the
    // generator's limit, not the target's. Slow requests (200 ms) keep the load small.
    let url = target.url("/health?delay=200");
    let search = format!(
        "ulimit -n 40 && exec {BIN} capacity '{url}' --vus --threads 1 \
         --slo 'p(99)<1000ms,http_req_failed<1%' --start 4 --step x8 --max 64 \
         --warmup 1s --measure 2s --precision 50 --no-results --no-history"
    );
    let out = Command::new("sh")
        .args(["-c", &search])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let verdict = stdout
        .lines()
        .find(|l| l.starts_with("generator-bound at "))
        .unwrap_or_else(|| panic!("no generator-bound verdict\n{stdout}\n{stderr}"));
    assert!(
        verdict.contains("connections failed for want of file descriptors")
            && verdict.contains("not the target's capacity"),
        "{stdout}"
    );
    assert!(!stdout.contains("target capacity"), "{stdout}");
    assert!(
        stdout.contains("fix: raise `ulimit -n`") && stdout.contains("--local-addrs"),
        "{stdout}"
    );
    // The step that met the SLO at 4 VUs is the lower bound it names.
    assert!(
        verdict.contains("the target met the SLO up to "),
        "{stdout}"
    );
}

#[test]
fn capacity_usage_errors_name_the_flag() {
    for (args, says) in [
        (vec!["--slo", "p(99)<<2"], "--slo:"),
        (vec!["--slo", "fast"], "--slo:"),
        (vec!["--slo", "p(99)<20ms", "--step", "x0.5"], "--step:"),
        (vec!["--slo", "p(99)<20ms", "--step", "1.5"], "--step:"),
        (
            vec!["--slo", "p(99)<20ms", "--start", "100", "--max", "50"],
            "--max (50) is below --start (100)",
        ),
        (
            vec!["--slo", "p(99)<20ms", "--measure", "1.5s"],
            "--measure:",
        ),
        (vec!["--slo", "p(99)<20ms", "--repeat", "0"], "--repeat"),
        (
            vec!["--slo", "p(99)<20ms", "--precision", "100"],
            "--precision",
        ),
    ] {
        let mut argv = vec!["capacity", "http://127.0.0.1:9/"];
        argv.extend(&args);
        if !args.contains(&"--max") {
            argv.extend(["--max", "100"]);
        }
        let out = barrage(&argv, LIMIT);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
        assert!(lines[0].contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn capacity_steps_a_scripts_open_workload() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // A DSL script with an open workload (Poisson arrivals): the search steps its rate.
    let script = scratch_file(
        "capacity-open.js",
        format!(
            "definition.setTarget(\"{}\");\n\
             definition.setArrivalPhases([{{ duration: 60, rate: 5 }}]);\n\
             definition.session(\"one\", function (session) {{\n\
             \x20 session.get(\"/health?capacity=50\", {{ tag: \"health\" }});\n\
             }});\n",
            target.url("")
        )
        .as_bytes(),
    );
    let json = scratch_file("capacity-open.json", b"");
    let out = barrage(
        &[
            "capacity",
            script.to_str().unwrap(),
            "--slo",
            "p(99)<150ms",
            "--start",
            "20",
            "--step",
            "x2",
            "--max",
            "100",
            "--warmup",
            "1s",
            "--measure",
            "2s",
            "--precision",
            "30",
            "--json",
            json.to_str().unwrap(),
            "--no-results",
            "--no-history",
        ],
        SEARCH_LIMIT,
    );
    out.expect_success();
    let search = &json_file(&json)["capacity"];
    assert_eq!(search["config"]["kind"], "rate");
    assert_eq!(search["verdict"], "target_capacity", "{}", out.stdout);
    // 20 and 40/s met; 80/s and 60/s queue beyond the capacity of 50/s (50/s itself, Poisson
    // arrivals at the capacity, may go either way over a short window).
    let load = knee(search)["load"].as_f64().unwrap();
    assert!((20.0..=50.0).contains(&load), "{}", out.stdout);
}

#[test]
fn capacity_steps_a_k6_scripts_virtual_users() {
    let _heavy = heavy_lock();
    let target = Target::start();
    // 20/s at most, 100 ms each: 2 VUs ask for 20/s; with a third, every request waits
    // 50 ms in the queue (150 ms). Slow requests keep the test's verdict clear of a busy
    // machine's event-loop lag (a quarter of the SLO's limit).
    let script = scratch_file(
        "capacity-k6.js",
        format!(
            "import http from 'k6/http';\n\
             export const options = {{ vus: 1, duration: '10s' }};\n\
             export default function () {{ http.get('{}'); }}\n",
            target.url("/health?capacity=20&delay=100")
        )
        .as_bytes(),
    );
    let json = scratch_file("capacity-k6.json", b"");
    let out = barrage(
        &[
            "capacity",
            script.to_str().unwrap(),
            "--slo",
            "p(99)<130ms",
            "--start",
            "1",
            "--step",
            "x2",
            "--max",
            "16",
            "--warmup",
            "1s",
            "--measure",
            "2s",
            "--json",
            json.to_str().unwrap(),
            "--no-results",
            "--no-history",
        ],
        SEARCH_LIMIT,
    );
    out.expect_success();
    let search = &json_file(&json)["capacity"];
    assert_eq!(search["config"]["kind"], "vus");
    assert_eq!(search["verdict"], "target_capacity", "{}", out.stdout);
    let vus = knee(search)["load"].as_f64().unwrap();
    assert!((2.0..=3.0).contains(&vus), "{}", out.stdout);
    // The k6 VUs really ran: requests in every step.
    for level in search["levels"].as_array().unwrap() {
        assert!(
            level["merged"]["responses"].as_u64().unwrap() > 0,
            "{}",
            out.stdout
        );
    }
}

#[test]
fn capacity_stopped_by_sigterm_keeps_the_steps_done() {
    let target = Target::start();
    let results = scratch_file("capacity-stopped.brr", b"");
    let history = scratch_file("capacity-history.db", b"");
    std::fs::remove_file(&history).unwrap();
    let url = target.url("/health");
    let run = Running::spawn(&[
        "capacity",
        &url,
        "--slo",
        "p(99)<500ms",
        "--start",
        "20",
        "--max",
        "40",
        "--warmup",
        "1s",
        "--measure",
        "60s",
        "--results",
        results.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_secs(4));
    let status = Command::new("kill")
        .args(["-TERM", &run.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let out = run.wait(Duration::from_secs(40));
    assert!(out.elapsed < Duration::from_secs(40), "{}", out.stderr);
    // Not finished: never a green exit.
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stdout.contains("stopped before the end"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // The results file holds the search as far as it went, stopped: `report` exits as the
    // search did.
    let report = barrage(&["report", results.to_str().unwrap()], LIMIT);
    assert_eq!(
        report.code(),
        Some(1),
        "{}\n{}",
        report.stdout,
        report.stderr
    );
    let json = scratch_file("capacity-stopped.json", b"");
    barrage(
        &[
            "report",
            results.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(json_file(&json)["capacity"]["outcome"], "stopped");
    assert!(
        report.stdout.contains("stopped before the end"),
        "{}\n{}",
        report.stdout,
        report.stderr
    );
    // And the search is in the history, with its results file.
    let listed = barrage(&["history", "--history", history.to_str().unwrap()], LIMIT);
    listed.expect_success();
    assert!(
        listed.stdout.contains("capacity") && listed.stdout.contains("capacity-stopped.brr"),
        "{}",
        listed.stdout
    );
}
