//! Differential tests: the same k6 scripts run by k6 itself and by barrage against the
//! bundled target, compared on what k6 users rely on — request and iteration counts of
//! iteration-bounded executors, every check's passes and fails by group path, each
//! threshold's verdict (from both tools' `--summary-export`) and the exit code. Skipped
//! with a notice where k6 is not installed; mandatory when `$K6` names it (.ci/run installs
//! it with `go install` where a Go new enough for k6 is present, and sets `$K6`).

use super::k6::k6_script;
use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The k6 binary: `$K6`, `k6` on the PATH, or Go's default install place.
fn k6_binary() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("K6") {
        candidates.push(path.into());
    }
    candidates.push("k6".into());
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join("go/bin/k6"));
    }
    candidates.into_iter().find(|k6| {
        std::process::Command::new(k6)
            .arg("version")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("k6 v"))
    })
}

fn k6_or_skip(test: &str) -> Option<PathBuf> {
    let k6 = k6_binary();
    if k6.is_none() {
        assert!(
            std::env::var_os("K6").is_none(),
            "$K6 names a k6 binary that does not run"
        );
        eprintln!("NOTICE: k6 is not installed; the {test} test is skipped (go install go.k6.io/k6@v1.8.1)");
    }
    k6
}

/// k6's exit code and its `--summary-export`.
fn run_with_k6(k6: &Path, script: &Path) -> (Option<i32>, Option<Value>, String) {
    let export = scratch_file("k6-own-export.json", b"");
    std::fs::remove_file(&export).unwrap();
    let out = std::process::Command::new(k6)
        .args([
            "run",
            "--quiet",
            "--no-color",
            "--no-usage-report",
            "--summary-export",
        ])
        .arg(&export)
        .arg(script)
        .env("K6_NO_USAGE_REPORT", "true")
        .output()
        .expect("k6 runs");
    let summary = std::fs::read(&export)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), summary, text)
}

/// barrage's exit code and its `--summary-export`.
fn run_with_barrage(script: &Path) -> (Option<i32>, Option<Value>, String) {
    let export = scratch_file("barrage-export.json", b"");
    std::fs::remove_file(&export).unwrap();
    let out = barrage(
        &[
            "run",
            script.to_str().unwrap(),
            "--summary-export",
            export.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let summary = std::fs::read(&export)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    (out.code(), summary, out.stderr)
}

/// Every check of a `--summary-export` group tree: path → (passes, fails).
fn checks(group: &Value, into: &mut Vec<(String, u64, u64)>) {
    for check in group["checks"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        into.push((
            check["path"].as_str().unwrap_or_default().to_string(),
            check["passes"].as_u64().unwrap_or(u64::MAX),
            check["fails"].as_u64().unwrap_or(u64::MAX),
        ));
    }
    for sub in group["groups"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        checks(sub, into);
    }
    into.sort();
}

/// Every threshold verdict: (metric, expression, failed).
fn verdicts(export: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for (metric, values) in export["metrics"].as_object().unwrap() {
        for (expression, failed) in values["thresholds"].as_object().into_iter().flatten() {
            out.push((
                metric.clone(),
                expression.clone(),
                failed.as_bool().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

fn count(export: &Value, metric: &str) -> f64 {
    export["metrics"][metric]["count"].as_f64().unwrap_or(-1.0)
}

/// Both tools' runs of one script: exit codes, exports and stderr.
struct Both {
    k6_code: Option<i32>,
    our_code: Option<i32>,
    theirs: Value,
    ours: Value,
    our_err: String,
}

/// Runs `script` with k6 and with barrage; both must write their export.
fn run_both(k6: &Path, script: &Path) -> Both {
    let (k6_code, k6_export, k6_err) = run_with_k6(k6, script);
    let (our_code, our_export, our_err) = run_with_barrage(script);
    Both {
        k6_code,
        our_code,
        theirs: k6_export.unwrap_or_else(|| panic!("k6 wrote no export: {k6_err}")),
        ours: our_export.unwrap_or_else(|| panic!("barrage wrote no export: {our_err}")),
        our_err,
    }
}

impl Both {
    /// The same request count, the same checks (path, passes, fails) and the same exit code.
    fn assert_same_requests_checks_and_exit(&self) {
        assert_eq!(
            count(&self.ours, "http_reqs"),
            count(&self.theirs, "http_reqs")
        );
        let (mut k6_checks, mut our_checks) = (Vec::new(), Vec::new());
        checks(&self.theirs["root_group"], &mut k6_checks);
        checks(&self.ours["root_group"], &mut our_checks);
        assert_eq!(our_checks, k6_checks);
        assert_eq!(self.our_code, self.k6_code, "{}", self.our_err);
    }
}

const ITERATIONS: &str = r#"import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { sha256 } from 'k6/crypto';
import encoding from 'k6/encoding';

const pings = new Counter('pings');
const sizes = new Trend('sizes');

export const options = {
  scenarios: { main: { executor: 'shared-iterations', vus: 3, iterations: 12 } },
  thresholds: {
    http_req_duration: ['p(95)<5000'],
    checks: ['rate>0.99'],
    pings: ['count==24'],
    sizes: ['max<0'],
  },
};

export function setup() {
  const res = http.post('BASE/post', JSON.stringify({ user: 'u1' }), { headers: { 'Content-Type': 'application/json' } });
  check(res, { 'setup posted': (r) => r.status === 200 && r.json().json.user === 'u1' });
  return { token: sha256('u1', 'hex') };
}

export default function (data) {
  group('login', function () {
    const res = http.get('BASE/get?token=' + data.token);
    check(res, {
      'token echoed': (r) => r.json().args.token === data.token,
      'status 200': (r) => r.status === 200,
    });
  });
  group('browse', function () {
    for (let i = 0; i < 2; i++) {
      const res = http.get('BASE/base64/' + encoding.b64encode('page ' + i, 'url'));
      pings.add(1);
      sizes.add(res.body.length);
      check(res, { 'decoded': (r) => r.body === 'page ' + i });
    }
    const missing = http.get('BASE/status/404');
    check(missing, { 'is 200 (fails)': (r) => r.status === 200 });
  });
  sleep(0.01);
}

export function teardown(data) {
  check(data, { 'teardown data': (d) => d.token.length === 64 });
}
"#;

#[test]
fn k6_and_barrage_agree_on_counts_checks_thresholds_and_exit_code() {
    let Some(k6) = k6_or_skip("k6 differential") else {
        return;
    };
    let target = Target::start();
    let script = k6_script("differential.js", &target, ITERATIONS);
    let both = run_both(&k6, &script);
    let (theirs, ours) = (&both.theirs, &both.ours);
    // 12 iterations of 4 requests, and setup's.
    assert_eq!(count(theirs, "http_reqs"), 49.0, "k6's own count");
    for metric in ["iterations", "pings"] {
        assert_eq!(count(ours, metric), count(theirs, metric), "{metric}");
    }
    let mut k6_checks = Vec::new();
    checks(&theirs["root_group"], &mut k6_checks);
    assert_eq!(k6_checks.len(), 6, "{k6_checks:?}");
    let k6_verdicts = verdicts(theirs);
    assert_eq!(k6_verdicts.len(), 4);
    assert_eq!(verdicts(ours), k6_verdicts);
    assert_eq!(
        ours["metrics"]["http_req_failed"]["value"],
        theirs["metrics"]["http_req_failed"]["value"]
    );
    assert_eq!(
        both.k6_code,
        Some(99),
        "checks and sizes fail their thresholds in k6"
    );
    both.assert_same_requests_checks_and_exit();
}

#[test]
fn k6_and_barrage_exit_alike_on_script_errors_and_aborts() {
    let Some(k6) = k6_or_skip("k6 exit-code differential") else {
        return;
    };
    let target = Target::start();
    let cases = [
        ("init-throws.js", "import http from 'k6/http';\nthrow new Error('init');\nexport default function () {}\n"),
        ("setup-throws.js", "import http from 'k6/http';\nexport const options = { iterations: 1 };\nexport function setup() { throw new Error('setup'); }\nexport default function () { http.get('BASE/get'); }\n"),
        ("aborts.js", "import http from 'k6/http';\nimport exec from 'k6/execution';\nexport const options = { vus: 1, iterations: 5 };\nexport default function () { http.get('BASE/get'); exec.test.abort('enough'); }\n"),
        ("vu-init-fails.js", "import http from 'k6/http';\nexport const options = { vus: 3, iterations: 30 };\nif (__VU === 2) { throw new Error('VU 2 has no data'); }\nexport default function () { http.get('BASE/get'); }\n"),
        ("passes.js", "import http from 'k6/http';\nimport { check } from 'k6';\nexport const options = { vus: 2, iterations: 4, thresholds: { checks: ['rate==1'] } };\nexport default function () { check(http.get('BASE/get'), { ok: (r) => r.status === 200 }); }\n"),
        ("fails.js", "import http from 'k6/http';\nexport const options = { vus: 1, iterations: 2, thresholds: { http_req_failed: ['rate<0.5'] } };\nexport default function () { http.get('BASE/status/500'); }\n"),
    ];
    for (name, body) in cases {
        let script = k6_script(name, &target, body);
        let (k6_code, _, k6_err) = run_with_k6(&k6, &script);
        let (our_code, _, our_err) = run_with_barrage(&script);
        assert_eq!(
            our_code, k6_code,
            "{name}\nk6: {k6_err}\nbarrage: {our_err}"
        );
    }
}

#[test]
fn k6_and_barrage_agree_on_redirect_hops_and_cookies() {
    let Some(k6) = k6_or_skip("k6 redirects differential") else {
        return;
    };
    let target = Target::start();
    let other = Target::start();
    let body = super::k6_api::REDIRECTS.replace("OTHER", &format!("http://{}", other.addr));
    let script = k6_script("redirects-differential.js", &target, &body);
    let both = run_both(&k6, &script);
    both.assert_same_requests_checks_and_exit();
    assert_eq!(both.our_code, Some(0), "{}", both.our_err);
}

#[test]
fn k6_and_barrage_agree_on_thresholds_filtered_by_name_tags() {
    let Some(k6) = k6_or_skip("k6 tag thresholds differential") else {
        return;
    };
    let target = Target::start();
    let script = k6_script("tags-differential.js", &target, super::k6_api::NAME_TAGS);
    let both = run_both(&k6, &script);
    let k6_verdicts = verdicts(&both.theirs);
    assert_eq!(k6_verdicts.len(), 6, "{k6_verdicts:?}");
    assert_eq!(verdicts(&both.ours), k6_verdicts);
    assert_eq!(
        count(&both.ours, "http_reqs{name:login}"),
        count(&both.theirs, "http_reqs{name:login}")
    );
    both.assert_same_requests_checks_and_exit();
}

#[test]
fn k6_and_barrage_agree_on_batch_requests_and_checks() {
    let Some(k6) = k6_or_skip("k6 batch differential") else {
        return;
    };
    let target = Target::start();
    let body = super::k6_api::BATCH.to_string();
    let script = k6_script("batch-differential.js", &target, &body);
    run_both(&k6, &script).assert_same_requests_checks_and_exit();
}

#[test]
fn k6_and_barrage_agree_on_the_cookie_jar_api() {
    let Some(k6) = k6_or_skip("k6 cookie jar differential") else {
        return;
    };
    let target = Target::start();
    let body = super::k6_api::COOKIE_JAR.to_string();
    let script = k6_script("jar-differential.js", &target, &body);
    run_both(&k6, &script).assert_same_requests_checks_and_exit();
}

#[test]
fn k6_and_barrage_agree_on_response_callbacks() {
    let Some(k6) = k6_or_skip("k6 response callbacks differential") else {
        return;
    };
    let target = Target::start();
    let default = super::k6_callbacks::EXPECTED_404
        .replace(
            "http.setResponseCallback(http.expectedStatuses(404, { min: 200, max: 204 }));\n",
            "",
        )
        .replace(", { responseCallback: http.expectedStatuses(500) }", "");
    let cases = [
        (
            "callbacks-404.js",
            super::k6_callbacks::EXPECTED_404.to_string(),
        ),
        ("callbacks-default.js", default),
        (
            "callbacks-edges.js",
            super::k6_callbacks::CALLBACK_EDGES.to_string(),
        ),
    ];
    for (name, body) in cases {
        let script = k6_script(name, &target, &body);
        let both = run_both(&k6, &script);
        let failed = |export: &Value| {
            let m = &export["metrics"]["http_req_failed"];
            (
                m["value"].as_f64(),
                m["passes"].as_f64(),
                m["fails"].as_f64(),
            )
        };
        assert_eq!(
            failed(&both.ours),
            failed(&both.theirs),
            "{name}: {}",
            both.our_err
        );
        assert_eq!(verdicts(&both.ours), verdicts(&both.theirs), "{name}");
        both.assert_same_requests_checks_and_exit();
    }
}
