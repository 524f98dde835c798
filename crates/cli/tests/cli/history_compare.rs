//! End-to-end tests of the run history and `barrage compare`: runs against the bundled target
//! are recorded, listed, and compared; a raised target delay is caught by `--fail-on`.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// A one-tag open-workload script whose requests the target delays by `delay_ms`.
fn delayed_script(target: &Target, delay_ms: u32) -> PathBuf {
    let script = format!(
        r#"definition.setTarget("http://{addr}");
definition.setArrivalPhases([{{ duration: 2, rate: 50 }}]);
definition.setTestOptions({{ timeout: 5, gracePeriod: 5 }});
definition.session("api", function (session) {{
  session.get("/health?delay={delay_ms}", {{ tag: "api" }});
}});
"#,
        addr = target.addr
    );
    scratch_file("delayed.js", script.as_bytes())
}

fn fresh(name: &str) -> PathBuf {
    let path = scratch_file(name, b"");
    std::fs::remove_file(&path).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(script: &Path, db: &Path) {
    barrage(
        &["run", s(script), "--threads", "1", "--history", s(db)],
        LIMIT,
    )
    .expect_success();
}

#[test]
fn compare_catches_a_raised_delay_and_passes_identical_runs() {
    let _heavy = heavy_lock();
    let target = Target::start();
    let db = fresh("compare-history.db");
    // Delays long next to a busy machine's scheduling noise (tens of ms at p95 with seven
    // builds running), so identical runs stay within the +50% rules and the slow one is 4×.
    let fast = delayed_script(&target, 100);
    let slow = delayed_script(&target, 400);
    run(&fast, &db); // id 1
    run(&fast, &db); // id 2
    run(&slow, &db); // id 3

    let listed = barrage(&["history", "--history", s(&db)], LIMIT);
    listed.expect_success();
    let rows: Vec<&str> = listed.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{}", listed.stdout);
    let header = listed.stdout.lines().next().unwrap();
    assert!(header.contains("verdict  trust"), "{header}");
    for (row, id) in rows.iter().zip(["1", "2", "3"]) {
        assert!(row.starts_with(id), "{row}");
        assert!(
            row.contains(" pass     ok ") || row.contains(" pass     UNTRUSTED "),
            "the trust verdict has its column: {row}"
        );
        assert!(row.contains("delayed.js"), "{row}");
        assert!(row.contains(".brr"), "the results file is listed: {row}");
    }
    let last = barrage(&["history", "--history", s(&db), "--last", "1"], LIMIT);
    assert_eq!(last.stdout.lines().count(), 2, "{}", last.stdout);
    assert!(last.stdout.lines().nth(1).unwrap().starts_with('3'));
    let name = fast.file_name().unwrap().to_str().unwrap();
    let by_script = barrage(&["history", "--history", s(&db), "--script", name], LIMIT);
    assert_eq!(by_script.stdout.lines().count(), 3, "{}", by_script.stdout);

    let rules = "p95:+50%,p50:+50%";
    let same = barrage(
        &["compare", "1", "2", "--fail-on", rules, "--history", s(&db)],
        LIMIT,
    );
    assert_eq!(same.code(), Some(0), "{}\n{}", same.stdout, same.stderr);
    assert!(same.stdout.contains("p95"), "{}", same.stdout);
    assert!(!same.stdout.contains("REGRESSION"), "{}", same.stdout);
    assert!(
        !same.stderr.contains("warning"),
        "the same plan: {}",
        same.stderr
    );

    let html = fresh("compare.html");
    let slower = barrage(
        &[
            "compare",
            "1,2",
            "vs",
            "3",
            "--fail-on",
            rules,
            "--history",
            s(&db),
            "--html",
            s(&html),
        ],
        LIMIT,
    );
    assert_eq!(
        slower.code(),
        Some(3),
        "{}\n{}",
        slower.stdout,
        slower.stderr
    );
    assert!(slower.stdout.contains("REGRESSION"), "{}", slower.stdout);
    assert!(
        slower.stderr.contains("regression: api p95"),
        "{}",
        slower.stderr
    );
    assert!(
        slower
            .stderr
            .contains("warning: #3 ran a different plan than the baseline #1 (sessions differ)"),
        "{}",
        slower.stderr
    );
    // The same script sent elsewhere (`--target`): another target, another plan.
    barrage(
        &[
            "run",
            s(&fast),
            "--threads",
            "1",
            "--history",
            s(&db),
            "--target",
            &format!("http://localhost:{}", target.addr.port()),
        ],
        LIMIT,
    )
    .expect_success();
    let elsewhere = barrage(&["compare", "1", "4", "--history", s(&db)], LIMIT);
    assert!(
        elsewhere.stderr.contains(&format!(
            "warning: #4 ran against http://localhost:{}, the baseline #1 against http://{}",
            target.addr.port(),
            target.addr
        )),
        "{}",
        elsewhere.stderr
    );
    // The baseline group's band: mean (min–max) over its two runs.
    assert!(slower.stdout.contains("ms–"), "{}", slower.stdout);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches(r#"<path class="series"#).count(),
        3,
        "one curve per run"
    );
    assert!(page.contains("REGRESSION"));
}

#[test]
fn compare_names_unknown_runs_and_bad_rules_in_one_line() {
    let db = fresh("empty-history.db");
    let unknown = barrage(&["compare", "41", "42", "--history", s(&db)], LIMIT);
    assert_eq!(unknown.code(), Some(2), "{}", unknown.stderr);
    assert_eq!(unknown.stderr.lines().count(), 1, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("run id 41 is not in the history"),
        "{}",
        unknown.stderr
    );
    let bad = barrage(
        &["compare", "a.brr", "b.brr", "--fail-on", "p95:10%"],
        LIMIT,
    );
    assert_eq!(bad.code(), Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--fail-on: `p95:10%`"),
        "{}",
        bad.stderr
    );
}
