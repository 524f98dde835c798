//! k6's response callbacks against the bundled target: `http.expectedStatuses`,
//! `http.setResponseCallback` and `params.responseCallback` decide which responses (each
//! redirect hop on its own) count in `http_req_failed`, its thresholds and the exit code.

use super::k6::{k6_script, run_k6};
use crate::support::*;
use serde_json::Value;

/// Runs a k6 script; its exit code, k6-format export and stderr.
fn run_exported(name: &str, target: &Target, body: &str) -> (Option<i32>, Value, String) {
    let script = k6_script(name, target, body);
    let export = scratch_file(&format!("{name}.export.json"), b"");
    let (out, _) = run_k6(&script, &["--summary-export", export.to_str().unwrap()]);
    let exported = serde_json::from_slice(&std::fs::read(&export).unwrap())
        .unwrap_or_else(|e| panic!("{name}: no export ({e}): {}", out.stderr));
    (out.code(), exported, out.stderr)
}

fn failed_rate(export: &Value) -> (f64, f64, f64) {
    let m = &export["metrics"]["http_req_failed"];
    (
        m["value"].as_f64().unwrap(),
        m["passes"].as_f64().unwrap_or(-1.0),
        m["fails"].as_f64().unwrap_or(-1.0),
    )
}

/// Three requests an iteration: a 404, a 200 and a 500 (with its own callback).
pub(crate) const EXPECTED_404: &str = r#"import http from 'k6/http';
export const options = { vus: 1, iterations: 2, thresholds: { http_req_failed: ['rate<0.01'] } };
http.setResponseCallback(http.expectedStatuses(404, { min: 200, max: 204 }));
export default function () {
  http.get('BASE/status/404');
  http.get('BASE/get');
  http.get('BASE/status/500', { responseCallback: http.expectedStatuses(500) });
}
"#;

#[test]
fn expected_statuses_make_404s_pass_and_the_threshold_holds() {
    let target = Target::start();
    let (code, export, stderr) = run_exported("expected-404.js", &target, EXPECTED_404);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(export["metrics"]["http_reqs"]["count"], 6.0);
    // k6's Rate export: `passes` counts the true samples (failed requests).
    assert_eq!(failed_rate(&export), (0.0, 0.0, 6.0), "{stderr}");
    assert_eq!(
        export["metrics"]["http_req_failed"]["thresholds"]["rate<0.01"],
        false
    );
}

#[test]
fn by_default_404_and_500_fail_and_the_threshold_exits_99() {
    let target = Target::start();
    let body = EXPECTED_404
        .replace(
            "http.setResponseCallback(http.expectedStatuses(404, { min: 200, max: 204 }));\n",
            "",
        )
        .replace(", { responseCallback: http.expectedStatuses(500) }", "");
    let (code, export, stderr) = run_exported("default-callback.js", &target, &body);
    assert_eq!(code, Some(99), "{stderr}");
    let (rate, failed, passed) = failed_rate(&export);
    assert_eq!((failed, passed), (4.0, 2.0), "{stderr}");
    assert!((rate - 4.0 / 6.0).abs() < 1e-9, "{rate}");
}

/// A 200 outside the expected statuses fails; so does each redirect hop outside them; what
/// a per-request `responseCallback: null` or `setResponseCallback(null)` leaves unjudged is
/// no sample of `http_req_failed` (as in k6).
pub(crate) const CALLBACK_EDGES: &str = r#"import http from 'k6/http';
export const options = { vus: 1, iterations: 1 };
http.setResponseCallback(http.expectedStatuses(201));
export default function () {
  http.get('BASE/get');
  http.get('BASE/status/500', { responseCallback: null });
  http.get('BASE/cookies/set?a=1', { responseCallback: http.expectedStatuses(200) });
  http.setResponseCallback(null);
  http.get('BASE/status/503');
}
"#;

#[test]
fn unexpected_200s_and_redirect_hops_fail_and_null_callbacks_judge_nothing() {
    let target = Target::start();
    let (code, export, stderr) = run_exported("callback-edges.js", &target, CALLBACK_EDGES);
    assert_eq!(code, Some(0), "{stderr}");
    // /get, /status/500, the 302 hop and /cookies, /status/503.
    assert_eq!(export["metrics"]["http_reqs"]["count"], 5.0, "{stderr}");
    // Failed: the 200 of /get (only 201 expected) and the 302 hop (only 200 expected);
    // passed: /cookies; the 500 and the 503 are no samples.
    let (rate, failed, passed) = failed_rate(&export);
    assert_eq!((failed, passed), (2.0, 1.0), "{stderr}");
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
}

#[test]
fn callbacks_not_made_by_expected_statuses_and_bad_statuses_fail_at_init_with_their_line() {
    let target = Target::start();
    let cases = [
        (
            "bad-status.js",
            "import http from 'k6/http';\nhttp.setResponseCallback(http.expectedStatuses(200, '404'));\nexport default function () {}\n",
            "argument number 2 to expectedStatuses was neither an integer nor an object like {min:100, max:200}",
        ),
        (
            "own-callback.js",
            "import http from 'k6/http';\nhttp.setResponseCallback((r) => r.status === 404);\nexport default function () {}\n",
            "only callbacks made by http.expectedStatuses(...) are supported",
        ),
    ];
    for (name, body, says) in cases {
        let script = k6_script(name, &target, body);
        let (out, _) = run_k6(&script, &[]);
        assert_eq!(out.code(), Some(107), "{name}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("{name}:2")) && out.stderr.contains(says),
            "{name}: {}",
            out.stderr
        );
    }
}
