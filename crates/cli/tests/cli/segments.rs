//! Execution segments end to end: `barrage run --segment i/N --start-at T` in N processes,
//! then `barrage merge` into one results file with single-run semantics.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const LIMIT: Duration = Duration::from_secs(60);

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A script of two requests per iteration and a threshold on the request count.
fn script(target: &Target, threshold: &str) -> PathBuf {
    let source = format!(
        r#"definition.setTarget("http://{addr}");
definition.setArrivalPhases([{{ duration: 1, rate: 10 }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 5 }});
definition.setThresholds({{ http_reqs: "{threshold}" }});
definition.session("two", function (session) {{
  session.get("/health", {{ tag: "a" }});
  session.check("ok", session.lastHttpStatus(), "==", 200);
  session.get("/health", {{ tag: "b" }});
}});
"#,
        addr = target.addr
    );
    scratch_file("segments.js", source.as_bytes())
}

/// Runs `count` segments of `script` side by side, aligned by `--start-at`; their files.
fn run_segments(script: &Path, count: u64, extra: &[&str]) -> Vec<PathBuf> {
    let flags: Vec<Vec<String>> = (0..count)
        .map(|i| vec!["--segment".into(), format!("{i}/{count}")])
        .collect();
    run_segments_with(script, &flags, extra)
}

/// Runs one process per entry of `segments` (each its segment flags) side by side.
fn run_segments_with(script: &Path, segments: &[Vec<String>], extra: &[&str]) -> Vec<PathBuf> {
    let count = segments.len() as u64;
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0;
    let start = format!("{start:.3}");
    let files: Vec<PathBuf> = (0..count)
        .map(|i| scratch_file(&format!("segment-{i}.brr"), b""))
        .collect();
    let running: Vec<Running> = (0..count)
        .map(|i| {
            let mut argv = vec!["run", path(script)];
            argv.extend(segments[i as usize].iter().map(String::as_str));
            argv.extend([
                "--start-at",
                &start,
                "--threads",
                "1",
                "--results",
                path(&files[i as usize]),
            ]);
            argv.extend_from_slice(extra);
            Running::spawn(&argv)
        })
        .collect();
    for run in running {
        let out = run.wait(LIMIT);
        assert!(
            matches!(out.code(), Some(0) | Some(99)),
            "{}\n{}",
            out.stdout,
            out.stderr
        );
    }
    files
}

fn summary(file: &Path) -> (Value, Option<i32>) {
    let json = scratch_file("seg-summary.json", b"");
    let out = barrage(&["report", path(file), "--json", path(&json)], LIMIT);
    (
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(),
        out.code(),
    )
}

#[test]
fn segments_merge_into_one_run_of_the_whole_test() {
    let target = Target::start();
    // 41 iterations shared by 3 VUs: 21 + 20 over two segments, 82 requests in all.
    let script = script(&target, "count<50");
    let files = run_segments(&script, 2, &["--vus", "3", "--iterations", "41"]);
    let parts: Vec<Value> = files.iter().map(|f| summary(f).0).collect();
    assert_eq!(
        parts.iter().map(|s| u(s, "iterations")).collect::<Vec<_>>(),
        vec![21, 20]
    );
    let merged = scratch_file("merged-segments.brr", b"");
    let out = barrage(
        &[
            "merge",
            path(&files[0]),
            path(&files[1]),
            "-o",
            path(&merged),
        ],
        LIMIT,
    );
    out.expect_success();
    assert!(out.stdout.contains("segments   2 merged"), "{}", out.stdout);
    let (s, code) = summary(&merged);
    assert_eq!(u(&s, "requests"), 82, "{s:#}");
    assert_eq!(u(&s, "iterations"), 41, "{s:#}");
    assert_eq!(u(&s["latency"], "count"), 82, "{s:#}");
    assert_eq!(u(&s["segments"], "count"), 2, "{s:#}");
    assert!(
        u(&s["segments"], "start_spread_ns") < 1_000_000_000,
        "aligned starts: {s:#}"
    );
    // Each segment alone passes count<50; the whole test (82) fails it, like one run would.
    assert_eq!(code, Some(99), "{s:#}");
    assert!(
        parts.iter().all(|p| p["thresholds"][0]["passed"] == true),
        "{parts:#?}"
    );
    let text = barrage(&["report", path(&merged)], LIMIT);
    assert!(
        text.stdout.contains("segments   2 merged"),
        "{}",
        text.stdout
    );

    // The same segment twice, or a segment of another split, is refused in one line.
    let overlap = barrage(
        &[
            "merge",
            path(&files[0]),
            path(&files[0]),
            "-o",
            path(&merged),
        ],
        LIMIT,
    );
    assert_eq!(overlap.code(), Some(2));
    assert!(
        overlap.stderr.contains("overlapping segments"),
        "{}",
        overlap.stderr
    );
    assert_eq!(overlap.stderr.lines().count(), 1, "{}", overlap.stderr);
    let other = run_segments(&script, 3, &["--vus", "3", "--iterations", "41"]);
    let mismatch = barrage(
        &[
            "merge",
            path(&files[0]),
            path(&other[1]),
            "-o",
            path(&merged),
        ],
        LIMIT,
    );
    assert_eq!(mismatch.code(), Some(2));
    assert!(
        mismatch.stderr.contains("different splits"),
        "{}",
        mismatch.stderr
    );
    let three: Vec<&str> = other.iter().map(|f| path(f)).collect();
    let merged3 = scratch_file("merged-three.brr", b"");
    barrage(
        &[&["merge"][..], &three[..], &["-o", path(&merged3)][..]].concat(),
        LIMIT,
    )
    .expect_success();
    assert_eq!(u(&summary(&merged3).0, "iterations"), 41);
}

#[test]
fn unequal_k6_segments_run_exactly_their_stripes_of_the_whole_test() {
    let target = Target::start();
    let script = script(&target, "count<500");
    // k6's example sequence: a half and two quarters. 41 iterations shared by 7 VUs.
    let sequence = "0,1/2,3/4,1";
    let segments: Vec<Vec<String>> = ["0:1/2", "1/2:3/4", "3/4:1"]
        .iter()
        .map(|segment| {
            vec![
                "--execution-segment".to_string(),
                segment.to_string(),
                "--execution-segment-sequence".to_string(),
                sequence.to_string(),
            ]
        })
        .collect();
    let files = run_segments_with(&script, &segments, &["--vus", "7", "--iterations", "41"]);
    let parts: Vec<Value> = files.iter().map(|f| summary(f).0).collect();
    // k6's striping of 41 over 1/2, 1/4, 1/4: 21, 10, 10 (and of 7 VUs: 4, 2, 1).
    assert_eq!(
        parts.iter().map(|s| u(s, "iterations")).collect::<Vec<_>>(),
        vec![21, 10, 10]
    );
    let merged = scratch_file("merged-unequal.brr", b"");
    let names: Vec<&str> = files.iter().map(|f| path(f)).collect();
    barrage(
        &[&["merge"][..], &names[..], &["-o", path(&merged)][..]].concat(),
        LIMIT,
    )
    .expect_success();
    let (s, _) = summary(&merged);
    assert_eq!(u(&s, "iterations"), 41, "{s:#}");
    assert_eq!(u(&s, "requests"), 82, "{s:#}");
    // A segment of another sequence does not merge with these.
    let other = run_segments_with(
        &script,
        &[vec![
            "--execution-segment".to_string(),
            "1/2:3/4".to_string(),
            "--execution-segment-sequence".to_string(),
            "0,1/4,1/2,3/4,1".to_string(),
        ]],
        &["--vus", "7", "--iterations", "41"],
    );
    let out = barrage(
        &[
            "merge",
            path(&files[0]),
            path(&other[0]),
            "-o",
            path(&merged),
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn bad_segments_are_one_line_usage_errors() {
    let target = Target::start();
    let script = script(&target, "count<50");
    for (flags, needle) in [
        (&["--segment", "4/4"][..], "--segment"),
        (&["--segment", "x"][..], "--segment"),
        (&["--execution-segment", "1/2:1/4"][..], "a:b"),
        (
            &[
                "--execution-segment",
                "0:1/2",
                "--execution-segment-sequence",
                "0,1/3,1",
            ][..],
            "sequence",
        ),
        (&["--start-at", "tomorrow"][..], "--start-at"),
    ] {
        let mut argv = vec!["run", path(&script)];
        argv.extend_from_slice(flags);
        let out = barrage(&argv, LIMIT);
        assert_eq!(out.code(), Some(2), "{flags:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{flags:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{flags:?}: {}", out.stderr);
    }
    // k6's spelling of the same segment plans the same share.
    let plan = |flags: &[&str]| {
        let mut argv = vec!["plan", path(&script)];
        argv.extend_from_slice(flags);
        let out = barrage(&argv, LIMIT);
        out.expect_success();
        out.json()["options"]["segment"].clone()
    };
    assert_eq!(
        plan(&["--segment", "1/4"]),
        plan(&[
            "--execution-segment",
            "25%:50%",
            "--execution-segment-sequence",
            "0,1/4,1/2,3/4,1"
        ])
    );
    assert_eq!(plan(&["--segment", "1/4"])["count"], 4);
}
