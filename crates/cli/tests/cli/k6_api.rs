//! k6 scripts' lifecycle and API beyond the basics, against the bundled target: `setup()`
//! data reaching every iteration and `teardown(data)`, failing stages exiting 107.

use super::k6::{check_counts, k6_script, metric, run_k6};
use crate::support::*;

/// The summary has `count` checks, each passed `times` times and never failed.
fn every_check_passed(summary: &serde_json::Value, count: usize, times: u64, stderr: &str) {
    let checks = summary["checks"].as_array().unwrap();
    assert_eq!(checks.len(), count, "{checks:?}");
    for check in checks {
        assert_eq!(
            (u(check, "passed"), u(check, "failed")),
            (times, 0),
            "{check}\n{stderr}"
        );
    }
}

const LIFECYCLE: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

export function setup() {
  const res = http.get('BASE/get?stage=setup');
  check(res, { 'setup request': (r) => r.status === 200 });
  return { token: 'abc', n: 3, list: [1, 2] };
}

export default function (data) {
  data.n += 1; // a VU's copy: teardown still sees 3
  check(data, {
    'data reaches default': (d) => d.token === 'abc' && d.list.length === 2,
    'vu is not 0': () => __VU > 0,
  });
  http.get('BASE/get?stage=default');
}

export function teardown(data) {
  check(data, { 'teardown saw data': (d) => d.n === 3 && d.token === 'abc', 'teardown vu 0': () => __VU === 0 });
  http.get('BASE/get?stage=teardown');
}
"#;

#[test]
fn setup_data_reaches_every_iteration_and_teardown() {
    let target = Target::start();
    let script = k6_script("lifecycle.js", &target, LIFECYCLE);
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(check_counts(&s, "setup::setup request"), (1, 0));
    assert_eq!(check_counts(&s, "data reaches default"), (4, 0));
    assert_eq!(check_counts(&s, "vu is not 0"), (4, 0));
    assert_eq!(check_counts(&s, "teardown::teardown saw data"), (1, 0));
    assert_eq!(check_counts(&s, "teardown::teardown vu 0"), (1, 0));
    // Setup's and teardown's requests count, their iterations do not (as in k6).
    assert_eq!(u(&s, "requests"), 6, "{}", out.stdout);
    assert_eq!(u(&s["sessions"], "completed"), 4);
    assert_eq!(
        metric(&s, "iterations")["values"]["count"].as_f64(),
        Some(4.0)
    );
}

#[test]
fn a_failing_setup_exits_107_before_any_load() {
    let target = Target::start();
    let script = k6_script(
        "setup-throws.js",
        &target,
        "import http from 'k6/http';\nexport const options = { vus: 2, iterations: 4 };\nexport function setup() {\n  http.get('BASE/get');\n  throw new Error('no token');\n}\nexport default function () { http.get('BASE/get'); }\nexport function teardown() { http.get('BASE/get'); }\n",
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(107), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("setup() failed") && out.stderr.contains("no token"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("setup-throws.js:5"), "{}", out.stderr);
    let s = summary.expect("the summary of what was done");
    assert_eq!(u(&s, "requests"), 1, "only setup's request");
    assert_eq!(u(&s["sessions"], "completed"), 0);
}

#[test]
fn a_failing_teardown_exits_107_after_the_load() {
    let target = Target::start();
    let script = k6_script(
        "teardown-throws.js",
        &target,
        "import http from 'k6/http';\nexport const options = { vus: 1, iterations: 2 };\nexport default function () { http.get('BASE/get'); }\nexport function teardown() {\n  throw new Error('cleanup failed');\n}\n",
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(107), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("teardown() failed"), "{}", out.stderr);
    assert_eq!(u(&summary.unwrap(), "requests"), 2);
}

const SUMMARY: &str = r#"import http from 'k6/http';
import { check, group } from 'k6';

export const options = {
  vus: 1, iterations: 3,
  summaryTrendStats: ['avg', 'p(99)', 'max'],
  thresholds: { http_req_duration: ['p(99)<5000'], checks: ['rate>0.9'] },
};

export default function () {
  const r = http.get('BASE/get');
  check(r, { 'is 200': (x) => x.status === 200 });
  group('g', () => { check(r, { 'inner': () => false }); });
}

export function handleSummary(data) {
  const d = data.metrics.http_req_duration;
  return {
    stdout: 'custom summary: ' + data.metrics.http_reqs.values.count + ' requests\n',
    stderr: 'to stderr\n',
    'OUT/summary.json': JSON.stringify(data),
    'OUT/facts.txt': [
      data.root_group.checks[0].name, data.root_group.checks[0].passes,
      data.root_group.groups[0].checks[0].path, data.root_group.groups[0].checks[0].fails,
      d.type, d.contains, Object.keys(d.values).sort().join('|'), d.thresholds['p(99)<5000'].ok,
      data.metrics.checks.thresholds['rate>0.9'].ok, data.metrics.checks.values.rate,
      data.options.summaryTrendStats.join('|'), data.state.testRunDurationMs > 0,
    ].join(','),
  };
}
"#;

#[test]
fn handle_summary_gets_k6s_data_and_replaces_the_default_summary() {
    let target = Target::start();
    let out_dir = scratch_file("k6-handle-summary", b"");
    std::fs::remove_file(&out_dir).unwrap();
    std::fs::create_dir_all(&out_dir).unwrap();
    let body = SUMMARY.replace("OUT", out_dir.to_str().unwrap());
    let script = k6_script("handle-summary.js", &target, &body);
    let (out, _) = run_k6(&script, &[]);
    // Checks fail half the time: thresholds still decide the exit code.
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "custom summary: 3 requests\n");
    assert!(out.stderr.contains("to stderr\n"), "{}", out.stderr);
    let facts = std::fs::read_to_string(out_dir.join("facts.txt")).unwrap();
    assert_eq!(
        facts,
        "is 200,3,::g::inner,3,trend,time,avg|max|p(99),true,false,0.5,avg|p(99)|max,true"
    );
    let data: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(data["metrics"]["iterations"]["values"]["count"], 3.0);
}

#[test]
fn a_throwing_handle_summary_falls_back_to_the_default_summary() {
    let target = Target::start();
    let script = k6_script(
        "handle-summary-throws.js",
        &target,
        "import http from 'k6/http';\nexport const options = { vus: 1, iterations: 1 };\nexport default function () { http.get('BASE/get'); }\nexport function handleSummary(data) {\n  throw new Error('bad summary');\n}\n",
    );
    let (out, _) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("handleSummary() failed")
            && out.stderr.contains("handle-summary-throws.js:5"),
        "{}",
        out.stderr
    );
    // k6 v1's layout, with barrage's own lines around it.
    for part in [
        "█ TOTAL RESULTS",
        "\n    HTTP\n    http_req_duration..............: avg=",
        "\n    EXECUTION\n",
        "\n    NETWORK\n    data_received..................: ",
        "generator  CPU",
    ] {
        assert!(out.stdout.contains(part), "{part}\n---\n{}", out.stdout);
    }
    assert!(!out.stdout.contains("http_req_blocked"), "{}", out.stdout);

    let bad = k6_script(
        "bad-trend-stats.js",
        &target,
        "import http from 'k6/http';\nexport const options = { summaryTrendStats: ['avg', 'p95'] };\nexport default function () { http.get('BASE/get'); }\n",
    );
    let (out, _) = run_k6(&bad, &[]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("`options.summaryTrendStats`: `p95`"),
        "{}",
        out.stderr
    );
}

#[test]
fn k6_cli_flags_summary_export_no_thresholds_and_short_forms() {
    let target = Target::start();
    let script = k6_script(
        "flags.js",
        &target,
        "import http from 'k6/http';\nimport { check, group } from 'k6';\nexport const options = { thresholds: { http_req_duration: ['max<0'] } };\nexport default function () {\n  const r = http.get('BASE/get?env=' + __ENV.WHO);\n  check(r, { 'env seen': () => __ENV.WHO === 'me' });\n  group('g', () => check(r, { 'inner': (x) => x.status === 200 }));\n}\n",
    );
    let export = scratch_file("k6-export.json", b"");
    let (out, summary) = run_k6(
        &script,
        &[
            "-u",
            "2",
            "-i",
            "5",
            "-e",
            "WHO=me",
            "-q",
            "--summary-export",
            export.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(u(&summary.unwrap()["sessions"], "completed"), 5);
    let e: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    // k6's export: checks and groups keyed by name, values flat, `thresholds` saying
    // whether each failed.
    assert_eq!(e["root_group"]["checks"]["env seen"]["passes"], 5);
    assert_eq!(
        e["root_group"]["groups"]["g"]["checks"]["inner"]["path"],
        "::g::inner"
    );
    assert_eq!(e["metrics"]["http_reqs"]["count"], 5.0);
    assert_eq!(
        e["metrics"]["http_req_duration"]["thresholds"]["max<0"],
        true
    );
    assert_eq!(e["metrics"]["http_req_failed"]["value"], 0.0);
    let stats: Vec<&String> = e["metrics"]["http_req_duration"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        stats,
        ["avg", "max", "med", "min", "p(90)", "p(95)", "thresholds"],
        "k6's default trend stats"
    );

    // --no-thresholds: the same run passes; -s/--stage repeat as in k6.
    let (out, summary) = run_k6(
        &script,
        &[
            "--no-thresholds",
            "-s",
            "300ms:2",
            "--stage",
            "200ms:0",
            "-e",
            "WHO=me",
        ],
    );
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let s = summary.unwrap();
    assert!(
        s["thresholds"].as_array().is_none_or(|t| t.is_empty()),
        "{}",
        s["thresholds"]
    );
    assert!(u(&s["sessions"], "completed") > 0);
    let (out, _) = run_k6(
        &script,
        &["-d", "200ms", "-u", "1", "--no-summary", "-e", "WHO=me"],
    );
    assert_eq!(out.code(), Some(99), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "", "--no-summary prints nothing");
}

#[test]
fn k6_crypto_digests_hmacs_and_random_bytes_match_k6() {
    let target = Target::start();
    // Expected values: k6 v1.8.1 printed them for the same calls.
    let script = k6_script(
        "crypto.js",
        &target,
        r#"import http from 'k6/http';
import { check } from 'k6';
import crypto from 'k6/crypto';
import { sha256, hmac, createHash, createHMAC, randomBytes, md5 } from 'k6/crypto';
export const options = { vus: 1, iterations: 2 };
export default function () {
  const res = http.get('BASE/get');
  const h = createHash('sha1'); h.update('a'); h.update('bc');
  const m = createHMAC('sha512', 'key'); m.update('The quick brown fox');
  const bytes = new Uint8Array([0xfb, 0xff, 0x00]).buffer;
  check(res, {
    'sha256 hex': () => sha256('abc', 'hex') === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    'md5 base64': () => md5('hello', 'base64') === 'XUFAKrxLKna5cZ2REBfFkg==',
    'sha1 streamed': () => h.digest('hex') === 'a9993e364706816aba3e25717850c26c9cd0d89d',
    'hmac sha256': () => hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'hex') === '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    'hmac base64url': () => crypto.hmac('sha1', 'k', 'v', 'base64url') === 'lPxqL36JuBls904QeajBHrZ5pVI=',
    'hmac streamed': () => m.digest('base64rawurl') === 'NvRLElqKkGOdxGczA5VxeS4IHg_YaF_3RnhLAu0UqjVinVYscRfN5KcBVwVR-qWl4bfvHrXDvNTMH9uJI_zxTg',
    'bytes input': () => crypto.sha1(bytes, 'hex') === 'ba0891b0c4a9f175a49079852df2625b345df926',
    'utf-8 text': () => crypto.md5('héllo', 'hex') === 'be50e8478cf24ff3595bc7307fb91b50',
    'binary output': () => crypto.sha512('x', 'binary').byteLength === 64,
    'sha384 and friends': () => crypto.sha384('x', 'hex').length === 96 && crypto.sha512_256('x', 'hex').length === 64 && crypto.ripemd160('x', 'hex').length === 40 && crypto.md4('x', 'hex').length === 32,
    'hexEncode': () => crypto.hexEncode(bytes) === 'fbff00',
    'randomBytes': () => randomBytes(16).byteLength === 16,
    'bad algorithm throws': () => { try { crypto.hmac('sha3', 'k', 'v', 'hex'); return false; } catch (e) { return String(e).includes('invalid algorithm'); } },
    'bad encoding throws': () => { try { sha256('x', 'latin1'); return false; } catch (e) { return String(e).includes('invalid output encoding'); } },
  });
}
"#,
    );
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    every_check_passed(&s, 14, 2, &out.stderr);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// Redirects and cookies; `OTHER` is a second target (another origin).
pub(crate) const REDIRECTS: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4, maxRedirects: 3 };

export default function () {
  const fresh = http.get('BASE/cookies');
  check(fresh, { 'a fresh jar each iteration': (r) => Object.keys(r.json().cookies).length === 0 });
  const set = http.get('BASE/cookies/set?flavour=oat&n=' + __ITER);
  check(set, {
    'followed to /cookies': (r) => r.status === 200 && r.url === 'BASE/cookies',
    'jar sent the cookies': (r) => r.json().cookies.flavour === 'oat',
  });
  const again = http.get('BASE/cookies', { cookies: { extra: 'yes' } });
  check(again, { 'jar and params cookies': (r) => r.json().cookies.flavour === 'oat' && r.json().cookies.extra === 'yes' });
  const hops = http.get('BASE/redirect/3');
  check(hops, { 'three hops followed': (r) => r.status === 200 && r.url === 'BASE/get' });
  const capped = http.get('BASE/redirect/5');
  check(capped, { 'stops after maxRedirects': (r) => r.status === 302 && r.url === 'BASE/redirect/2' });
  const none = http.get('BASE/redirect/2', { redirects: 0 });
  check(none, { 'redirects: 0 follows none': (r) => r.status === 302 && r.headers['Location'] === '/redirect/1' });
  const posted = http.post('BASE/redirect-to?url=%2Fget&status_code=303', 'body');
  check(posted, { '303 turns a POST into a GET': (r) => r.status === 200 && r.json().url.endsWith('/get') });
  const away = http.get('BASE/redirect-to?url=' + encodeURIComponent('OTHER/get?from=base'));
  check(away, { 'another origin': (r) => r.status === 200 && r.url === 'OTHER/get?from=base' && r.json().args.from === 'base' });
}
"#;

#[test]
fn redirects_and_the_vu_cookie_jar_behave_as_in_k6() {
    let target = Target::start();
    let other = Target::start();
    let body = REDIRECTS.replace("OTHER", &format!("http://{}", other.addr));
    let script = k6_script("redirects.js", &target, &body);
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    every_check_passed(&s, 9, 4, &out.stderr);
    // Per iteration, each hop a request: 1 + 2 + 1 + 4 + 4 + 1 + 2 + 2 (k6 counts the same:
    // see the differential test).
    assert_eq!(u(&s, "requests"), 4 * 17, "{}", out.stdout);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// Thresholds on requests' `name` tag: given in `params.tags`, or the URL by default.
pub(crate) const NAME_TAGS: &str = r#"import http from 'k6/http';

export const options = {
  vus: 2, iterations: 6,
  thresholds: {
    'http_reqs{name:login}': ['count==6'],
    'http_req_duration{name:login}': ['p(95)<5000'],
    'http_reqs{name:BASE/get?page=1}': ['count==12'],
    'http_reqs{name:never}': ['count>0'],
    'http_req_failed{name:broken}': ['rate<0.5'],
    http_reqs: ['count==30'],
  },
};

export default function () {
  http.post('BASE/post', 'user=u', { tags: { name: 'login' } });
  http.get('BASE/get?page=1');
  http.get('BASE/get?page=1');
  http.get('BASE/status/500', { tags: { name: 'broken' } });
  http.get('BASE/get?page=2');
}
"#;

#[test]
fn thresholds_on_name_tags_see_exactly_their_requests() {
    let target = Target::start();
    let script = k6_script("name-tags.js", &target, NAME_TAGS);
    let export = scratch_file("name-tags-export.json", b"");
    let (out, summary) = run_k6(&script, &["--summary-export", export.to_str().unwrap()]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    // `never` has no requests and `broken` fails all of its: exit 99.
    assert_eq!(out.code(), Some(99), "{}\n{}", out.stdout, out.stderr);
    let verdicts: Vec<(String, bool)> = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["metric"].as_str().unwrap().to_string(),
                t["passed"] == true,
            )
        })
        .collect();
    let base = script_base(&out, &s);
    let expected = [
        ("http_reqs{name:login}".to_string(), true),
        ("http_req_duration{name:login}".to_string(), true),
        (format!("http_reqs{{name:{base}/get?page=1}}"), true),
        ("http_reqs{name:never}".to_string(), false),
        ("http_req_failed{name:broken}".to_string(), false),
        ("http_reqs".to_string(), true),
    ];
    for (metric, passed) in expected {
        assert!(
            verdicts.contains(&(metric.clone(), passed)),
            "{metric} {passed}: {verdicts:?}"
        );
    }
    let e: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    assert_eq!(e["metrics"]["http_reqs{name:login}"]["count"], 6.0);
    assert_eq!(e["metrics"]["http_req_failed{name:broken}"]["value"], 1.0);
    assert_eq!(e["metrics"]["http_reqs"]["count"], 30.0);
}

/// `http://host:port` of the run's target.
fn script_base(out: &Output, summary: &serde_json::Value) -> String {
    summary["target"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no target: {}", out.stdout))
}

#[test]
fn thresholds_on_tags_barrage_cannot_compute_are_refused_at_start() {
    let target = Target::start();
    for (threshold, named) in [
        (
            "'http_req_duration{expected_response:true}'",
            "`expected_response`",
        ),
        (
            "'http_reqs{name:a}': ['count>0'], 'http_reqs{kind:b}'",
            "one request tag key per script",
        ),
    ] {
        let script = k6_script(
            "bad-tags.js",
            &target,
            &format!("import http from 'k6/http';\nexport const options = {{ thresholds: {{ {threshold}: ['count>0'] }} }};\nexport default function () {{ http.get('BASE/get'); }}\n"),
        );
        let (out, _) = run_k6(&script, &[]);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(
            out.stderr.contains("bad-tags.js: threshold") && out.stderr.contains(named),
            "{}",
            out.stderr
        );
    }
}

pub(crate) const BATCH: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

export default function () {
  const list = http.batch([
    'BASE/get?i=0',
    ['POST', 'BASE/post', 'a=1', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }],
    { method: 'GET', url: 'BASE/status/404' },
  ]);
  check(list, {
    'array form': (r) => r.length === 3 && r[0].json().args.i === '0' && r[1].json().form.a === '1' && r[2].status === 404,
  });
  const named = http.batch({ home: 'BASE/get?p=home', echo: { method: 'PUT', url: 'BASE/put', body: 'x' } });
  check(named, { 'object form': (r) => r.home.status === 200 && r.echo.json().data === 'x' });
}
"#;

#[test]
fn http_batch_array_and_object_forms() {
    let target = Target::start();
    let script = k6_script("batch.js", &target, BATCH);
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(check_counts(&s, "array form"), (4, 0), "{}", out.stderr);
    assert_eq!(check_counts(&s, "object form"), (4, 0));
    assert_eq!(u(&s, "requests"), 4 * 5);
}

pub(crate) const COOKIE_JAR: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

export default function () {
  const jar = http.cookieJar();
  jar.set('BASE/cookies', 'session', 's' + __ITER, { path: '/' });
  jar.set('BASE/cookies', 'scoped', 'x', { path: '/cookies' });
  jar.set('BASE/cookies', 'expired', 'e', { max_age: -1 });
  const seen = http.get('BASE/cookies', { jar: jar });
  check(seen, {
    'set cookies are sent': (r) => r.json().cookies.session === 's' + __ITER && r.json().cookies.scoped === 'x',
    'expired ones are not': (r) => r.json().cookies.expired === undefined,
  });
  http.get('BASE/cookies/set?server=1');
  const all = jar.cookiesForURL('BASE/cookies');
  check(all, {
    'cookiesForURL lists values': (c) => c.session[0] === 's' + __ITER && c.server[0] === '1' && c.scoped[0] === 'x',
    'path scoping': () => jar.cookiesForURL('BASE/get').scoped === undefined,
  });
  jar.delete('BASE/cookies', 'session');
  check(http.get('BASE/cookies'), { 'deleted': (r) => r.json().cookies.session === undefined && r.json().cookies.server === '1' });
  // As in k6, clear() expires the URL's cookies at its default path (`/`): `scoped`
  // (path /cookies) stays.
  jar.clear('BASE/cookies');
  check(http.get('BASE/cookies'), { 'cleared': (r) => Object.keys(r.json().cookies).join() === 'scoped' });
}
"#;

#[test]
fn the_vu_cookie_jar_api_sets_lists_deletes_and_clears() {
    let target = Target::start();
    let script = k6_script("cookie-jar.js", &target, COOKIE_JAR);
    let (out, summary) = run_k6(&script, &[]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    every_check_passed(&s, 6, 4, &out.stderr);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn every_vu_runs_its_init_context_before_the_load_starts() {
    let target = Target::start();
    let script = k6_script(
        "preallocated.js",
        &target,
        "import http from 'k6/http';\nexport const options = { vus: 3, iterations: 6 };\nconsole.log('init of VU ' + __VU);\nexport default function () { console.log('iteration'); http.get('BASE/get'); }\n",
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(u(&summary.unwrap()["sessions"], "completed"), 6);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("init of VU") || l.contains("iteration"))
        .collect();
    // The init evaluation at start (VU 0), then the three VUs, then the iterations.
    let inits = lines
        .iter()
        .take_while(|l| l.contains("init of VU"))
        .count();
    assert_eq!(inits, 4, "{lines:?}");
    assert_eq!(lines.len(), 4 + 6, "{lines:?}");
}

#[test]
fn a_vu_whose_init_fails_stops_the_test_before_load_with_107() {
    let target = Target::start();
    let script = k6_script(
        "vu-init-fails.js",
        &target,
        "import http from 'k6/http';\nexport const options = { vus: 3, iterations: 30 };\nif (__VU === 2) { throw new Error('VU 2 has no data'); }\nexport default function () { http.get('BASE/get'); }\n",
    );
    let (out, summary) = run_k6(&script, &[]);
    assert_eq!(out.code(), Some(107), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("VU 2 has no data"), "{}", out.stderr);
    assert!(out.stderr.contains("vu-init-fails.js:3"), "{}", out.stderr);
    if let Some(s) = summary {
        assert_eq!(u(&s, "requests"), 0, "no load after a failed VU init");
    }
}

#[test]
fn a_scenario_runs_its_exec_function_with_its_env() {
    let target = Target::start();
    let script = k6_script(
        "exec.js",
        &target,
        "import http from 'k6/http';\nimport { check } from 'k6';\nimport exec from 'k6/execution';\nexport const options = { scenarios: { browse: { executor: 'per-vu-iterations', vus: 2, iterations: 2, exec: 'browse', env: { PAGE: 'home', SHARED: 'scenario' } } } };\nexport function browse() {\n  const r = http.get('BASE/get?page=' + __ENV.PAGE);\n  check(r, { 'scenario env': (x) => x.json().args.page === 'home' && __ENV.SHARED === 'scenario' && __ENV.OTHER === 'cli', 'scenario name': () => exec.scenario.name === 'browse' });\n}\n",
    );
    let (out, summary) = run_k6(&script, &["-e", "SHARED=cli", "-e", "OTHER=cli"]);
    let s = summary.unwrap_or_else(|| panic!("no summary: {}\n{}", out.stdout, out.stderr));
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(check_counts(&s, "scenario env"), (4, 0), "{}", out.stderr);
    assert_eq!(check_counts(&s, "scenario name"), (4, 0));
    let missing = k6_script(
        "exec-missing.js",
        &target,
        "import http from 'k6/http';\nexport const options = { scenarios: { a: { executor: 'shared-iterations', exec: 'nope' } } };\nexport default function () {}\n",
    );
    let (out, _) = run_k6(&missing, &[]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("exports no function `nope`"),
        "{}",
        out.stderr
    );
}
