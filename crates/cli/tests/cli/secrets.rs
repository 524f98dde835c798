//! No output holds a secret: a test plants one in every place a user can put one (sensitive
//! headers of a script and of `quick`, a header named with `--redact`, `-a`, URL userinfo of
//! `--target` and of quick's URL, a data file's rows) and greps every output for it: the
//! text summary, `--json`, `--junit`, `--csv`, `--html`, the results file, and the history.

use crate::support::*;
use base64::Engine;
use std::path::Path;
use std::time::Duration;

const SECRET: &str = "PLANTED-s3cr3t";
/// A header value that is no secret: proves the plan is readable in the files grepped.
const VISIBLE: &str = "visible-header-value";

fn files_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(files_in(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Asserts that no file under `dir` and neither output stream holds a needle.
fn assert_clean(dir: &Path, out: &Output, needles: &[String]) {
    let mut checked = 0;
    for file in files_in(dir) {
        let bytes = std::fs::read(&file).expect("read output");
        let text = String::from_utf8_lossy(&bytes);
        for needle in needles {
            assert!(
                !text.contains(needle.as_str()),
                "{} holds {needle}",
                file.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 6, "every output was written: {checked} files");
    for needle in needles {
        assert!(
            !out.stdout.contains(needle.as_str()),
            "stdout holds {needle}"
        );
    }
}

fn outputs_dir(name: &str) -> std::path::PathBuf {
    let dir = scratch_file(name, b"");
    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn output_flags(dir: &Path) -> Vec<String> {
    let p = |name: &str| dir.join(name).display().to_string();
    vec![
        "--results".into(),
        p("run.brr"),
        "--json".into(),
        p("run.json"),
        "--junit".into(),
        p("run.xml"),
        "--csv".into(),
        p("run.csv"),
        "--html".into(),
        p("run.html"),
        "--history".into(),
        p("history.db"),
    ]
}

#[test]
fn a_script_run_keeps_no_planted_secret() {
    let target = Target::start();
    let dir = outputs_dir("secrets-run");
    let csv = scratch_file(
        "users.csv",
        format!("user,password\nann,{SECRET}-csv\nbob,{SECRET}-csv2\n").as_bytes(),
    );
    let script = format!(
        r#"definition.setTarget("http://127.0.0.1:9");
definition.setVirtualUsers({{ vus: 1, iterations: 3 }});
definition.setTestOptions({{ headers: {{ Cookie: "sid={SECRET}-cookie", "X-Visible": "{VISIBLE}" }} }});
definition.session("login", function (session) {{
  var row = session.ds.pickFrom(session.ds.loadStructured("{csv}"));
  session.post("/echo?user=:user&pw=:pw", {{
    params: {{ user: row.get("user"), pw: row.get("password") }},
    headers: {{
      Authorization: "Bearer {SECRET}-bearer",
      "Proxy-Authorization": "Basic {SECRET}-proxy",
      "X-Api-Key": "{SECRET}-apikey",
    }},
  }});
}});
"#,
        csv = csv.file_name().unwrap().to_string_lossy(),
    );
    let script = scratch_file("secrets.js", script.as_bytes());
    let override_target = format!("http://ann:{SECRET}-userinfo@{}", target.addr);
    let mut argv: Vec<String> = vec![
        "run".into(),
        script.display().to_string(),
        "--target".into(),
        override_target,
        "--redact".into(),
        "x-api-key".into(),
    ];
    argv.extend(output_flags(&dir));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = barrage(&argv, Duration::from_secs(30));
    out.expect_success();
    let results = std::fs::read(dir.join("run.brr")).unwrap();
    assert!(
        String::from_utf8_lossy(&results).contains(VISIBLE),
        "the results file holds the plan's readable parts"
    );
    assert!(
        String::from_utf8_lossy(&results).contains("users.csv (contents not kept: 2 rows, sha256 "),
        "the data file keeps its name and a hash"
    );
    assert_clean(&dir, &out, &[SECRET.to_string()]);
    let report = barrage(
        &["report", dir.join("run.brr").to_str().unwrap()],
        Duration::from_secs(10),
    );
    report.expect_success();
    assert!(!report.stdout.contains(SECRET), "{}", report.stdout);
}

#[test]
fn a_quick_run_keeps_no_planted_secret() {
    let target = Target::start();
    let dir = outputs_dir("secrets-quick");
    let basic = format!("ann:{SECRET}-basic");
    let encoded = base64::engine::general_purpose::STANDARD.encode(&basic);
    let url = format!("http://ann:{SECRET}-url@{}/echo", target.addr);
    let mut argv: Vec<String> = vec![
        "quick".into(),
        "-n".into(),
        "4".into(),
        "-c".into(),
        "1".into(),
        "-H".into(),
        format!("Authorization: Bearer {SECRET}-bearer"),
        "-H".into(),
        format!("Cookie: sid={SECRET}-cookie"),
        "-H".into(),
        format!("X-Session: {SECRET}-named"),
        "-H".into(),
        format!("X-Visible: {VISIBLE}"),
        "--redact".into(),
        "X-Session".into(),
        "-a".into(),
        basic,
    ];
    argv.extend(output_flags(&dir));
    argv.push(url);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = barrage(&argv, Duration::from_secs(30));
    out.expect_success();
    let results = std::fs::read(dir.join("run.brr")).unwrap();
    assert!(String::from_utf8_lossy(&results).contains(VISIBLE));
    assert_clean(&dir, &out, &[SECRET.to_string(), encoded]);
}
