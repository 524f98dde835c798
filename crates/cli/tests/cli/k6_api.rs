//! k6 scripts' lifecycle and API beyond the basics, against the bundled target: `setup()`
//! data reaching every iteration and `teardown(data)`, failing stages exiting 107.

use super::k6::{check_counts, k6_script, metric, run_k6};
use crate::support::*;

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
    assert_eq!(check_counts(&s, "setup request"), (1, 0));
    assert_eq!(check_counts(&s, "data reaches default"), (4, 0));
    assert_eq!(check_counts(&s, "vu is not 0"), (4, 0));
    assert_eq!(check_counts(&s, "teardown saw data"), (1, 0));
    assert_eq!(check_counts(&s, "teardown vu 0"), (1, 0));
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
