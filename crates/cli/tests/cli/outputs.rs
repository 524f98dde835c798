//! Outputs are checked before any load: every output flag of `run`, `quick` and `report`
//! pointing at a path that cannot be written fails at once with exit 2 naming the flag, and
//! sends nothing; output files are created owner-only (0600).

use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// A path that cannot be created, even by root: its parent is a regular file.
fn unwritable(name: &str) -> String {
    let file = scratch_file("not-a-dir", b"");
    file.join(name).display().to_string()
}

#[test]
fn an_unwritable_output_fails_before_any_load_naming_its_flag() {
    let target = Target::start();
    let url = target.url("/health");
    let script = scratch_file(
        "outputs.js",
        format!(
            "definition.setTarget('{}');
definition.setVirtualUsers({{ vus: 1, duration: '20s' }});
definition.session('s', function (session) {{ session.get('/health'); }});",
            target.url("")
        )
        .as_bytes(),
    );
    let script = script.to_str().unwrap().to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("--json", vec!["--json".into(), unwritable("s.json")]),
        ("--junit", vec!["--junit".into(), unwritable("s.xml")]),
        ("--csv", vec!["--csv".into(), unwritable("s.csv")]),
        ("--html", vec!["--html".into(), unwritable("s.html")]),
        ("--results", vec!["--results".into(), unwritable("s.brr")]),
        (
            "--out ndjson",
            vec!["--out".into(), format!("ndjson={}", unwritable("s.ndjson"))],
        ),
        (
            "--out samples",
            vec![
                "--out".into(),
                format!("samples={}:0.5", unwritable("s.log")),
            ],
        ),
    ];
    for (flag, extra) in &cases {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut quick = vec!["quick", "-z", "20s", "-c", "1", "--no-history"];
        quick.extend(&extra);
        quick.push(&url);
        let mut run = vec!["run", script.as_str(), "--no-history"];
        run.extend(&extra);
        for argv in [quick, run] {
            let out = barrage(&argv, Duration::from_secs(10));
            assert_eq!(
                out.code(),
                Some(2),
                "{argv:?}\nstdout:\n{}\nstderr:\n{}",
                out.stdout,
                out.stderr
            );
            assert!(
                out.elapsed < Duration::from_secs(1),
                "{argv:?} took {:?}",
                out.elapsed
            );
            assert!(
                out.stderr
                    .starts_with(&format!("error: {flag}: cannot write ")),
                "{argv:?}: {}",
                out.stderr
            );
            assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
            assert!(out.stdout.is_empty(), "no summary: no run\n{}", out.stdout);
        }
    }
}

#[test]
fn report_outputs_are_checked_too_and_files_are_private() {
    let target = Target::start();
    let dir = scratch_file("private-dir", b"");
    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    let (results, json, html, junit, csv) = (
        path("r.brr"),
        path("r.json"),
        path("r.html"),
        path("r.xml"),
        path("r.csv"),
    );
    barrage(
        &[
            "quick",
            "-n",
            "20",
            "-c",
            "2",
            "--no-history",
            "--results",
            &results,
            "--json",
            &json,
            "--html",
            &html,
            "--junit",
            &junit,
            "--csv",
            &csv,
            "-o",
            "json",
            &target.url("/health"),
        ],
        Duration::from_secs(30),
    )
    .expect_success();
    for file in [&results, &json, &html, &junit, &csv] {
        let mode = std::fs::metadata(file).expect(file).permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file} is mode {mode:o}");
    }
    for flag in ["--json", "--html", "--junit", "--csv"] {
        let out = barrage(
            &["report", &results, flag, &unwritable("x")],
            Duration::from_secs(10),
        );
        assert_eq!(out.code(), Some(2), "{flag}: {}", out.stderr);
        assert!(
            out.stderr
                .starts_with(&format!("error: {flag}: cannot write ")),
            "{}",
            out.stderr
        );
    }
    let again = path("again.html");
    barrage(
        &["report", &results, "--html", &again],
        Duration::from_secs(10),
    )
    .expect_success();
    let mode = std::fs::metadata(&again).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "report --html is mode {mode:o}");
}
