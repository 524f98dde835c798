//! k6 scripts run unmodified (`barrage run script.js`) against the bundled target: k6/http
//! verbs, params and Response fields, checks, custom metrics, thresholds and k6's exit codes
//! (99, 107), `__ENV`/`__VU`/`__ITER`, console, exceptions in iterations counted, unsupported
//! modules named at start.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) const LIMIT: Duration = Duration::from_secs(60);

pub(crate) fn k6_script(name: &str, target: &Target, body: &str) -> PathBuf {
    let text = body.replace("BASE", &format!("http://{}", target.addr));
    scratch_file(name, text.as_bytes())
}

/// `barrage run SCRIPT --json FILE ARGS...`: the output and the JSON summary (when written).
pub(crate) fn run_k6(script: &Path, args: &[&str]) -> (Output, Option<Value>) {
    let json = scratch_file("k6-summary.json", b"");
    let mut all = vec![
        "run",
        script.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = barrage(&all, LIMIT);
    let summary = std::fs::read_to_string(&json)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    (out, summary)
}

pub(crate) fn check_counts(summary: &Value, name: &str) -> (u64, u64) {
    let check = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check `{name}` in {}", summary["checks"]));
    (u(check, "passed"), u(check, "failed"))
}

pub(crate) fn metric<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric `{name}`"))
}

const RAMP: &str = r#"import http from 'k6/http';
import { check, sleep, group } from 'k6';
import { Rate, Trend, Counter, Gauge } from 'k6/metrics';

const okRate = new Rate('ok_rate');
const took = new Trend('took', true);
const count = new Counter('my_count');
const last = new Gauge('last_status');

export const options = {
  stages: [{ duration: '1s', target: 4 }, { duration: '1s', target: 0 }],
  thresholds: {
    http_req_duration: ['p(95)<2000'],
    checks: ['rate==1'],
    ok_rate: [{ threshold: 'rate>0.99', abortOnFail: false }],
    my_count: ['count>3'],
  },
};

export default function () {
  const res = http.get('BASE/json');
  const ok = check(res, {
    'status is 200': (r) => r.status === 200,
    'json title': (r) => r.json().slideshow.title.length > 0,
    'json selector': (r) => r.json('slideshow.slides.#') === 2,
    'content type': (r) => r.headers['Content-Type'] === 'application/json',
    'timings': (r) => r.timings.duration > 0 && r.timings.waiting >= 0,
    'url': (r) => r.url === 'BASE/json',
    'response fields': (r) => r.status_text === '200 OK' && r.proto === 'HTTP/1.1'
      && r.request.method === 'GET' && r.request.url === r.url && r.error === ''
      && r.error_code === 0 && r.headers === r.headers && r instanceof http.Response,
    'stringified': (r) => JSON.parse(JSON.stringify(r)).status === 200
      && JSON.parse(JSON.stringify(r)).body === r.body,
  });
  okRate.add(ok);
  took.add(res.timings.duration);
  count.add(1);
  last.add(res.status);
  group('post', function () {
    const p = http.post('BASE/post', JSON.stringify({ a: 1 }), {
      headers: { 'Content-Type': 'application/json' },
      tags: { name: 'post' },
    });
    check(p, { 'echoes the body': (r) => r.json().json.a === 1 });
  });
  sleep(0.05);
}
"#;

#[test]
fn a_k6_ramp_script_runs_with_checks_custom_metrics_and_thresholds() {
    let target = Target::start();
    let script = k6_script("ramp.js", &target, RAMP);
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let iterations = u(&s["sessions"], "completed");
    assert!(iterations >= 4, "{}", s["sessions"]);
    assert_eq!(u(&s["sessions"], "failed"), 0);
    assert_eq!(u(&s, "requests"), 2 * iterations);
    for name in [
        "status is 200",
        "json title",
        "json selector",
        "content type",
        "timings",
        "url",
        "response fields",
        "stringified",
    ] {
        assert_eq!(check_counts(&s, name), (iterations, 0), "{name}");
    }
    assert_eq!(check_counts(&s, "post::echoes the body"), (iterations, 0));
    assert_eq!(
        metric(&s, "my_count")["values"]["count"].as_f64(),
        Some(iterations as f64)
    );
    assert_eq!(metric(&s, "ok_rate")["values"]["rate"].as_f64(), Some(1.0));
    assert_eq!(
        metric(&s, "last_status")["values"]["value"].as_f64(),
        Some(200.0)
    );
    assert_eq!(
        metric(&s, "took")["values"]["count"].as_f64(),
        Some(iterations as f64)
    );
    let thresholds = s["thresholds"].as_array().unwrap();
    assert_eq!(thresholds.len(), 4);
    assert!(
        thresholds.iter().all(|t| t["passed"] == true),
        "{thresholds:?}"
    );
}

#[test]
fn failed_thresholds_exit_99_with_the_failed_checks_counted() {
    let target = Target::start();
    let script = k6_script(
        "fail.js",
        &target,
        r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { vus: 2, iterations: 10, thresholds: { checks: ['rate>0.9'] } };
export default function () {
  const res = http.get('BASE/status/404');
  check(res, { 'is 200': (r) => r.status === 200, 'is 404': (r) => r.status === 404 });
}
"#,
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    assert_eq!(check_counts(&s, "is 200"), (0, 10));
    assert_eq!(check_counts(&s, "is 404"), (10, 0));
    assert!(out.stdout.contains("✗ 'rate>0.9'"), "{}", out.stdout);
}

#[test]
fn verbs_params_env_vu_iter_and_console() {
    let target = Target::start();
    let script = k6_script(
        "verbs.js",
        &target,
        r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { vus: 1, iterations: 2 };
export default function () {
  check(http.put('BASE/put', 'x=1'), { put: (r) => r.json().data === 'x=1' });
  check(http.patch('BASE/patch', { a: 'b c' }), {
    'patch form': (r) => r.json().form.a === 'b c',
  });
  check(http.del('BASE/delete'), { del: (r) => r.status === 200 });
  check(http.request('GET', 'BASE/headers', null, { headers: { 'X-Mine': __ENV.MINE } }), {
    'header sent': (r) => r.json().headers['X-Mine'] === 'from-env',
  });
  check(http.get('BASE/delay/2000', { timeout: '200ms' }), {
    'timed out': (r) => r.status === 0 && r.error.length > 0 && r.error_code > 0,
  });
  const authed = 'BASE/basic-auth/ann/s3cret'.replace('http://', 'http://ann:s3cret@');
  check(http.get(authed), { 'userinfo auth': (r) => r.status === 200 });
  check(http.get('BASE/basic-auth/ann/s3cret'), { 'no auth': (r) => r.status === 401 });
  console.log('vu=' + __VU + ' iter=' + __ITER + ' env=' + __ENV.MINE);
}
"#,
    );
    let (out, summary) = run_k6(&script, &["-e", "MINE=from-env"]);
    let s = summary.unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    for name in [
        "put",
        "patch form",
        "del",
        "header sent",
        "timed out",
        "userinfo auth",
        "no auth",
    ] {
        assert_eq!(check_counts(&s, name), (2, 0), "{name}: {}", out.stderr);
    }
    assert!(
        out.stderr.contains("INFO[VU 1] vu=1 iter=0 env=from-env"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("INFO[VU 1] vu=1 iter=1 env=from-env"),
        "{}",
        out.stderr
    );
    assert_eq!(error_kind(&s, "timeout"), 2);
}

#[test]
fn exceptions_in_iterations_are_counted_and_the_test_goes_on() {
    let target = Target::start();
    let script = k6_script(
        "throws.js",
        &target,
        r#"import http from 'k6/http';
export const options = { vus: 1, iterations: 6 };
export default function () {
  http.get('BASE/get');
  if (__ITER % 2 === 1) {
    throw new Error('odd iteration');
  }
}
"#,
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    assert_eq!(u(&s["sessions"], "completed"), 3);
    assert_eq!(u(&s["sessions"], "failed"), 3);
    assert_eq!(u(&s, "requests"), 6);
    assert!(
        out.stderr.contains("throws.js:6:") && out.stderr.contains("odd iteration"),
        "{}",
        out.stderr
    );
}

#[test]
fn init_errors_exit_107_naming_file_and_line() {
    let target = Target::start();
    let thrown = k6_script(
        "init_throws.js",
        &target,
        "import http from 'k6/http';\n\nthrow new Error('no config');\nexport default function () {}\n",
    );
    let (out, _) = run_k6(&thrown, &[]);
    assert_eq!(out.code(), Some(107), "{}", out.stderr);
    assert!(
        out.stderr.contains("init_throws.js:3") && out.stderr.contains("no config"),
        "{}",
        out.stderr
    );
    let unsupported = k6_script(
        "browser.js",
        &target,
        "import http from 'k6/http';\nimport { browser } from 'k6/browser';\nexport default function () {}\n",
    );
    let (out, _) = run_k6(&unsupported, &[]);
    assert_eq!(out.code(), Some(107), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("browser.js:2: `k6/browser` is not supported"),
        "{}",
        out.stderr
    );
    let request_in_init = k6_script(
        "init_request.js",
        &target,
        "import http from 'k6/http';\nhttp.get('BASE/get');\nexport default function () {}\n",
    );
    let (out, _) = run_k6(&request_in_init, &[]);
    assert_eq!(out.code(), Some(107), "{}", out.stderr);
    assert!(
        out.stderr.contains("init context is not supported"),
        "{}",
        out.stderr
    );
}

#[test]
fn compat_k6_forces_the_front_end_and_cli_overrides_apply() {
    let target = Target::start();
    // No k6 import and an arrow default export: not detected, forced by --compat k6.
    let script = k6_script(
        "arrow.js",
        &target,
        "export default () => { __k6_unused = 1; };\n",
    );
    let (out, _) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let script = k6_script(
        "arrow.js",
        &target,
        "import http from 'k6/http';\nexport default () => { http.get('BASE/get'); };\n",
    );
    let (out, summary) = run_k6(
        &script,
        &["--compat", "k6", "--vus", "2", "--iterations", "7"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(u(&summary.unwrap(), "requests"), 7);
}

#[test]
fn a_k6_run_whose_requests_never_got_a_response_is_never_green() {
    let target = Target::start();
    // Every request stalls past the run's end (no grace period): nothing answered, nothing
    // errored, two requests still open.
    let script = k6_script(
        "stalled.js",
        &target,
        "import http from 'k6/http';\nexport const options = { scenarios: { s: { executor: 'constant-vus', vus: 2, duration: '1s', gracefulStop: '0s' } } };\nexport default function () { http.get('BASE/chaos/stall?secs=60', { timeout: '90s' }); }\n",
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("no request got a response"),
        "{}",
        out.stderr
    );
    let s = summary.unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(u(&s, "responses"), 0);
    assert_eq!(u(&s, "interrupted_requests"), 2);
}

#[test]
fn open_shared_array_and_execution_in_a_k6_script() {
    let target = Target::start();
    let users = scratch_file(
        "k6-users.json",
        br#"[{"name":"ann"},{"name":"bob"},{"name":"cy"}]"#,
    );
    let script = k6_script(
        "lifecycle.js",
        &target,
        &format!(
            r#"import http from 'k6/http';
import {{ check }} from 'k6';
import {{ SharedArray }} from 'k6/data';
import exec from 'k6/execution';
const raw = open('./{users}');
const bytes = open('{users}', 'b');
const users = new SharedArray('users', function () {{ return JSON.parse(raw); }});
export const options = {{ scenarios: {{ main: {{ executor: 'shared-iterations', vus: 2, iterations: 6 }} }} }};
export default function () {{
  const user = users[exec.scenario.iterationInTest % users.length];
  const res = http.get('BASE/get?user=' + user.name);
  check(res, {{
    'user sent': (r) => r.json().args.user === user.name,
    'array reads': () => users.length === 3 && users.map((u) => u.name).join() === 'ann,bob,cy'
      && [...users].length === 3 && users[3] === undefined,
    'read-only': () => {{ try {{ users[0] = 1; return false; }} catch (e) {{ return true; }} }},
    'binary open': () => bytes instanceof ArrayBuffer && bytes.byteLength === raw.length,
    'vu ids': () => exec.vu.idInTest === __VU && exec.vu.iterationInScenario === __ITER,
    'scenario': () => exec.scenario.name === 'main' && exec.scenario.executor === 'shared-iterations',
  }});
  console.log('iter-in-test=' + exec.scenario.iterationInTest);
}}
"#,
            users = users.file_name().unwrap().to_str().unwrap()
        ),
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    for name in [
        "user sent",
        "array reads",
        "read-only",
        "binary open",
        "vu ids",
        "scenario",
    ] {
        assert_eq!(check_counts(&s, name), (6, 0), "{name}: {}", out.stderr);
    }
    for n in 0..6 {
        assert!(
            out.stderr.contains(&format!("iter-in-test={n}\n")),
            "{n}: {}",
            out.stderr
        );
    }
    // open() outside the init context is an error in the iteration, as in k6.
    let late = k6_script(
        "late_open.js",
        &target,
        "import http from 'k6/http';\nexport const options = { iterations: 1 };\nexport default function () { http.get('BASE/get'); open('x.txt'); }\n",
    );
    let (out, summary) = run_k6(&late, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(u(&summary.unwrap()["sessions"], "failed"), 1);
    assert!(
        out.stderr.contains("only available in the init context"),
        "{}",
        out.stderr
    );
}

#[test]
fn test_abort_stops_the_run_with_exit_108() {
    let target = Target::start();
    let script = k6_script(
        "abort.js",
        &target,
        r#"import http from 'k6/http';
import exec from 'k6/execution';
export const options = { vus: 1, duration: '20s' };
export default function () {
  http.get('BASE/get');
  if (__ITER === 2) {
    exec.test.abort('enough');
  }
}
"#,
    );
    let started = std::time::Instant::now();
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(108), "{}\n{}", out.stdout, out.stderr);
    assert!(started.elapsed() < Duration::from_secs(15), "not stopped");
    assert!(
        out.stderr.contains("test aborted: enough"),
        "{}",
        out.stderr
    );
    let s = summary.unwrap();
    assert_eq!(u(&s, "requests"), 3);
    // In the init context: 108 before any load.
    let init = k6_script(
        "abort_init.js",
        &target,
        "import exec from 'k6/execution';\nexec.test.abort('no config');\nexport default function () {}\n",
    );
    let (out, _) = run_k6(&init, &[]);
    assert_eq!(out.code(), Some(108), "{}", out.stderr);
    assert!(
        out.stderr.contains("test aborted: no config"),
        "{}",
        out.stderr
    );
}

#[test]
fn k6_encoding_base64_round_trips_against_the_target() {
    let target = Target::start();
    let script = k6_script(
        "encoding.js",
        &target,
        r#"import http from 'k6/http';
import { check } from 'k6';
import encoding from 'k6/encoding';
export const options = { iterations: 2 };
export default function () {
  const sent = encoding.b64encode('héllo?>');
  check(http.get('BASE/base64/' + encoding.b64encode('héllo?>', 'rawurl')), {
    'target decodes': (r) => r.status === 200 && r.body === 'héllo?>',
  });
  check(null, {
    'std': () => sent === 'aMOpbGxvPz4=',
    'rawstd': () => encoding.b64encode('ab', 'rawstd') === 'YWI',
    'url': () => encoding.b64encode(new Uint8Array([251, 255]).buffer, 'url') === '-_8=',
    'bytes': () => encoding.b64encode(new Uint8Array([251, 255]).buffer) === '+/8=',
    'decode text': () => encoding.b64decode(sent, 'std', 's') === 'héllo?>',
    'decode bytes': () => new Uint8Array(encoding.b64decode('+/8=')).join() === '251,255',
    'bad alphabet': () => { try { encoding.b64encode('x', 'hex'); return false; } catch (e) { return e instanceof TypeError; } },
  });
}
"#,
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    for name in [
        "target decodes",
        "std",
        "rawstd",
        "url",
        "bytes",
        "decode text",
        "decode bytes",
        "bad alphabet",
    ] {
        assert_eq!(check_counts(&s, name), (2, 0), "{name}: {}", out.stderr);
    }
}

#[test]
fn a_request_timeout_out_of_range_throws_in_its_iteration() {
    let target = Target::start();
    let script = k6_script(
        "timeouts.js",
        &target,
        r#"import http from 'k6/http';
export const options = { vus: 1, iterations: 3 };
export default function () {
  const timeouts = [1e300, 0.5, '2s'];
  http.get('BASE/get', { timeout: timeouts[__ITER] });
}
"#,
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    // 1e300 ms and 0.5 ms are no timeout barrage can keep: their iterations fail, the
    // process does not; the third request runs.
    assert_eq!(u(&s["sessions"], "failed"), 2, "{s:#}");
    assert_eq!(u(&s, "requests"), 1, "{s:#}");
    assert!(
        out.stderr.contains("longer than the longest timeout")
            && out.stderr.contains("shorter than the shortest timeout"),
        "{}",
        out.stderr
    );
}
