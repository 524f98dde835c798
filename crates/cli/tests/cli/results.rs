//! End-to-end tests of results files: written by `run` and `quick`, re-rendered identically by
//! `barrage report`, merged exactly by `barrage merge`, and refused in one line when damaged.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// A two-tag open-workload script against `target`, with a check.
pub fn two_tag_script(target: &Target, delay_ms: u32) -> PathBuf {
    let script = format!(
        r#"definition.setTarget("http://{addr}");
definition.setArrivalPhases([{{ duration: 2, rate: 40 }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 5 }});
definition.session("two tags", function (session) {{
  session.get("/health?delay={delay_ms}", {{ tag: "ping" }});
  session.check("ping ok", session.lastHttpStatus(), "==", 200);
  session.get("/status/404", {{ tag: "missing" }});
}});
"#,
        addr = target.addr
    );
    scratch_file("two-tags.js", script.as_bytes())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn run_writes_results_and_report_re_renders_the_same_bytes() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let script = two_tag_script(&target, 1);
    let results = scratch_file("run.brr", b"");
    let at_end = scratch_file("run-end.json", b"");
    let out = barrage(
        &[
            "run",
            path(&script),
            "--seed",
            "3",
            "--json",
            path(&at_end),
            "--results",
            path(&results),
        ],
        LIMIT,
    );
    out.expect_success();
    let again = scratch_file("run-again.json", b"");
    barrage(&["report", path(&results), "--json", path(&again)], LIMIT).expect_success();
    let (a, b) = (
        std::fs::read(&at_end).unwrap(),
        std::fs::read(&again).unwrap(),
    );
    assert!(!a.is_empty());
    assert!(a == b, "the JSON re-rendered from the results file differs");
    let text = barrage(&["report", path(&results)], LIMIT);
    text.expect_success();
    assert_eq!(text.stdout, out.stdout, "text summary differs");
    let summary = read_json(&again);
    assert!(u(&summary, "requests") > 0, "{summary:#}");
    crate::thresholds::validate_against_schema(&summary);
    check_invariants(&summary);
    let tags = summary["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 2);
    // Per tag: its own status codes (404s only under `missing`), error kinds and bytes.
    let (ping, missing) = (&tags[0], &tags[1]);
    assert_eq!(
        (&ping["tag"], &missing["tag"]),
        (&"ping".into(), &"missing".into())
    );
    let (pings, misses) = (u(ping, "responses"), u(missing, "responses"));
    assert!(pings > 0 && misses > 0, "{summary:#}");
    assert_eq!(ping["status_codes"], serde_json::json!({ "200": pings }));
    assert_eq!(
        missing["status_codes"],
        serde_json::json!({ "404": misses })
    );
    for tag in tags {
        assert!(tag["errors_by_kind"].is_object(), "{tag:#}");
        assert!(
            u(tag, "bytes_sent") > 0 && u(tag, "bytes_received") > 0,
            "{tag:#}"
        );
    }
    // The 404 body differs from the health body: each tag counts its own bytes.
    assert_ne!(
        u(ping, "bytes_received") / pings,
        u(missing, "bytes_received") / misses,
        "{summary:#}"
    );
    let text_line = format!("\n  missing     404: {misses}\n");
    assert!(out.stdout.contains(&text_line), "{}", out.stdout);
    // The run names the prefix of its X-Request-Id headers, in the JSON and the text.
    let prefix = summary["request_id_prefix"].as_str().expect("a prefix");
    assert!(
        out.stdout
            .contains(&format!("\nrequest ids {prefix}*  (X-Request-Id header)\n")),
        "{}",
        out.stdout
    );
}

#[test]
fn quick_writes_results_by_default_and_report_re_renders_them() {
    let target = Target::start();
    let dir = scratch_file("default-results-dir", b"");
    std::fs::remove_file(&dir).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["quick", "-n", "200", "-c", "4", "-o", "json"])
        .arg(target.url("/health"))
        .env("BARRAGE_RESULTS_DIR", &dir)
        .env("BARRAGE_HISTORY", scratch_dir().join("history.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("quick-") && name.ends_with(".brr"),
        "{name}"
    );
    let json = scratch_file("quick-again.json", b"");
    barrage(&["report", path(&files[0]), "--json", path(&json)], LIMIT).expect_success();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        std::fs::read_to_string(&json).unwrap()
    );
    let text = barrage(&["report", path(&files[0])], LIMIT);
    assert!(
        text.stdout.contains("Requests/sec:"),
        "hey layout for quick"
    );

    // --no-results and --no-history leave nothing behind.
    let history = dir.join("history.db");
    let quiet = std::process::Command::new(BIN)
        .args(["quick", "-n", "20", "-c", "2", "-o", "json"])
        .args(["--no-results", "--no-history"])
        .arg(target.url("/health"))
        .env("BARRAGE_RESULTS_DIR", &dir)
        .env("BARRAGE_HISTORY", &history)
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    assert!(!history.exists());
}

#[test]
fn merge_adds_two_runs_exactly_and_refuses_other_plans() {
    let target = Target::start();
    let (a, b, merged) = (
        scratch_file("a.brr", b""),
        scratch_file("b.brr", b""),
        scratch_file("merged.brr", b""),
    );
    let url = target.url("/health?delay=1");
    for (file, n) in [(&a, "100"), (&b, "150")] {
        barrage(
            &[
                "quick",
                "-n",
                n,
                "-c",
                "2",
                "-o",
                "json",
                "--results",
                path(file),
                &url,
            ],
            LIMIT,
        )
        .expect_success();
    }
    let out = barrage(&["merge", path(&a), path(&b), "-o", path(&merged)], LIMIT);
    out.expect_success();
    assert!(out.stdout.contains("250 requests"), "{}", out.stdout);
    let summary = |file: &Path| {
        let json = scratch_file("merged.json", b"");
        barrage(&["report", path(file), "--json", path(&json)], LIMIT).expect_success();
        read_json(&json)
    };
    let (sa, sb, sm) = (summary(&a), summary(&b), summary(&merged));
    assert_eq!(u(&sm, "requests"), 250);
    assert_eq!(u(&sm["latency"], "count"), 250);
    assert_eq!(
        u(&sm["latency"], "max_us"),
        u(&sa["latency"], "max_us").max(u(&sb["latency"], "max_us"))
    );
    assert_eq!(
        u(&sm["latency"], "min_us"),
        u(&sa["latency"], "min_us").min(u(&sb["latency"], "min_us"))
    );
    assert_eq!(sm["status_codes"]["200"], 250);

    let other = scratch_file("other.brr", b"");
    barrage(
        &[
            "quick",
            "-n",
            "10",
            "-c",
            "2",
            "--results",
            path(&other),
            &target.url("/other"),
        ],
        LIMIT,
    )
    .expect_success();
    let refused = barrage(
        &["merge", path(&a), path(&other), "-o", path(&merged)],
        LIMIT,
    );
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("not the same plan"),
        "{}",
        refused.stderr
    );
}

#[test]
fn damaged_results_files_are_one_clear_line() {
    let target = Target::start();
    let good = scratch_file("good.brr", b"");
    barrage(
        &[
            "quick",
            "-n",
            "50",
            "--results",
            path(&good),
            &target.url("/health"),
        ],
        LIMIT,
    )
    .expect_success();
    let bytes = std::fs::read(&good).unwrap();
    let mut flipped = bytes.clone();
    // A bit flipped inside a section's payload (the metadata's JSON), not in a length field
    // (which reads as truncation, a case of its own): the checksum must catch it.
    let inside = bytes
        .windows(b"\"target\"".len())
        .position(|w| w == b"\"target\"")
        .expect("the metadata names its target");
    flipped[inside + 2] ^= 0x04;
    // A file of the previous format (version 1: the plan stored as untyped JSON of the older
    // workload variants), as the previous barrage wrote it (`quick -n 20`), is refused too.
    let older = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/format1-quick.brr"),
    )
    .expect("the committed format 1 file");
    assert_eq!(u16::from_le_bytes([older[8], older[9]]), 1);
    let cases = [
        ("format1.brr", older, "written by an older barrage"),
        (
            "truncated.brr",
            bytes[..bytes.len() * 2 / 3].to_vec(),
            "truncated",
        ),
        ("flipped.brr", flipped, "corrupt"),
        (
            "zip.brr",
            b"PK\x03\x04not results".to_vec(),
            "not a barrage results file",
        ),
        (
            "newer.brr",
            {
                let mut v = bytes.clone();
                v[8] = 42;
                v
            },
            "version 42 is not supported",
        ),
    ];

    for (name, contents, expected) in cases {
        let file = scratch_file(name, &contents);
        let out = barrage(&["report", path(&file)], LIMIT);
        assert_eq!(out.code(), Some(2), "{name}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: {:?}", out.stderr);
        assert!(lines[0].contains(expected), "{name}: {}", lines[0]);
        assert!(lines[0].contains(name), "names the file: {}", lines[0]);
    }
    let missing = barrage(&["report", "/no/such/file.brr"], LIMIT);
    assert_eq!(missing.code(), Some(2));
    assert!(
        missing.stderr.contains("/no/such/file.brr"),
        "{}",
        missing.stderr
    );
}
