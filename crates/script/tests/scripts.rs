//! Scripts end to end: fixture scripts against their committed plan snapshots
//! (`UPDATE_SNAPSHOTS=1` rewrites them), and every kind of bad input with its message.

#[path = "scripts/stormforger.rs"]
mod stormforger;

use barrage_plan::{
    Admission, Binding, Step, Value, Workload, DEFAULT_GRACEFUL_STOP, DEFAULT_MAX_DURATION,
};
use barrage_script::{compile_file, compile_source, ScriptError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn snapshot(name: &str) {
    let script = fixtures().join(format!("{name}.js"));
    let plan = compile_file(&script).unwrap_or_else(|e| panic!("{e}"));
    compare_snapshot(name, &plan);
}

/// Compares `plan` with the committed `{name}.plan.json` (`UPDATE_SNAPSHOTS=1` rewrites it).
fn compare_snapshot(name: &str, plan: &barrage_plan::Plan) {
    let actual = serde_json::to_string_pretty(plan).unwrap() + "\n";
    let expected_path = fixtures().join(format!("{name}.plan.json"));
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::write(&expected_path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_SNAPSHOTS=1 to create it)",
            expected_path.display()
        )
    });
    assert!(
        actual == expected,
        "{name}: the plan differs from {} (UPDATE_SNAPSHOTS=1 rewrites it):\n{actual}",
        expected_path.display()
    );
}

#[test]
fn heartbeat_fixture_matches_its_snapshot() {
    snapshot("heartbeat");
}

#[test]
fn weighted_fixture_matches_its_snapshot() {
    snapshot("weighted");
}

#[test]
fn everything_fixture_matches_its_snapshot() {
    snapshot("everything");
}

#[test]
fn heartbeat_plan_has_the_expected_shape() {
    let plan = compile_file(&fixtures().join("heartbeat.js")).unwrap();
    assert_eq!(plan.name, "heartbeat");
    assert_eq!(plan.tags, vec!["get_token", "ping"]);
    assert_eq!(plan.data_sources.len(), 1);
    assert_eq!(plan.data_sources[0].columns, vec!["id", "name"]);
    assert!(matches!(
        plan.workload.admission,
        Admission::PerArrival { .. }
    ));
    assert_eq!(
        plan.workload.schedule.pieces[0].duration,
        Duration::from_secs(10)
    );
    assert_eq!(plan.workload.grace.end, Duration::from_secs(30));
    let steps = &plan.sessions[0].steps;
    assert!(matches!(
        &steps[0],
        Step::Bind { var, binding: Binding::PickRow { source: 0, sequential: false } } if var == "_row1"
    ));
    let Step::Times {
        count,
        steps: inner,
    } = &steps[4]
    else {
        panic!("{:?}", steps[4])
    };
    assert_eq!(
        count,
        &Value::Var {
            name: "_gen1".into()
        }
    );
    assert_eq!(inner.len(), 2);
}

#[test]
fn a_data_file_is_loaded_once_for_several_sessions() {
    let source = "definition.setTarget('http://localhost:8080');
definition.setArrivalPhases([{duration: 1, rate: 1}]);
['a', 'b'].forEach(function (name) {
  definition.session(name, function (session) {
    var row = session.ds.pickFrom(session.ds.loadStructured('channels.csv'));
    session.get('/c/:id', {params: {id: row.get('id')}});
  });
});";
    let plan = compile_source(source, "two.js", &fixtures()).unwrap();
    assert_eq!(plan.data_sources.len(), 1);
    assert_eq!(plan.tags, vec!["GET /c/:id"]);
}

#[test]
fn requests_to_an_added_target_keep_their_origin() {
    let source = "definition.setTarget('http://localhost:8080');
definition.addTarget('https://cdn.example.test:8443');
definition.setArrivalPhases([{duration: 1, rate: 1}]);
definition.session('s', function (session) {
  session.get('/page');
  session.get('http://localhost:8080/again');
  session.get('https://cdn.example.test:8443/app.css?v=1');
});";
    let plan = compile_source(source, "targets.js", &fixtures()).unwrap();
    assert_eq!(plan.target.to_string(), "http://localhost:8080");
    let requests: Vec<(Option<String>, String)> = plan.sessions[0]
        .steps
        .iter()
        .filter_map(|step| match step {
            barrage_plan::Step::Request(r) => {
                Some((r.origin.as_ref().map(ToString::to_string), r.path.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        requests,
        [
            (None, "/page".to_string()),
            (None, "/again".to_string()),
            (
                Some("https://cdn.example.test:8443".to_string()),
                "/app.css?v=1".to_string()
            ),
        ]
    );
}

/// The error message of compiling `source` as `bad.js` next to the fixtures.
fn error(source: &str) -> String {
    match compile_source(source, "bad.js", &fixtures()) {
        Ok(plan) => panic!("compiled: {plan:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains('\n'), "not one line: {text}");
            text
        }
    }
}

const HEAD: &str = "definition.setTarget('http://localhost:8080');
definition.setArrivalPhases([{duration: 1, rate: 1}]);
";

/// `HEAD` plus one session whose body is `body` (its first line is line 4).
fn in_session(body: &str) -> String {
    format!("{HEAD}definition.session('s', function (session) {{\n{body}\n}});\n")
}

#[test]
fn syntax_errors_have_file_line_and_column() {
    let e = error("definition.setTarget('http://localhost:8080');\nvar x = {a: 1,,};\n");
    assert_eq!(e, "bad.js:2:15: SyntaxError: invalid property name");
}

#[test]
fn runtime_errors_have_the_location_of_the_failing_call() {
    let e = error(&in_session("  session.get('/');\n  notAFunction(1);"));
    assert_eq!(e, "bad.js:5:3: ReferenceError: notAFunction is not defined");
}

#[test]
fn unknown_verbs_are_named() {
    let e = error("\ndefinition.setTargett('http://localhost:8080');");
    assert!(
        e.starts_with(
            "bad.js:2:1: unknown verb `definition.setTargett` (definition has: setTarget,"
        ),
        "{e}"
    );
    let e = error(&in_session("  session.gett('/');"));
    assert!(
        e.starts_with("bad.js:4:3: unknown verb `session.gett`"),
        "{e}"
    );
    let e = error(&in_session("  session.ds.loadCsv('channels.csv');"));
    assert!(
        e.starts_with("bad.js:4:3: unknown verb `session.ds.loadCsv`"),
        "{e}"
    );
}

#[test]
fn unknown_option_keys_are_named() {
    let e = error(&format!(
        "{HEAD}definition.setTestOptions({{timeout: 5, timeot: 1}});"
    ));
    assert!(
        e.starts_with(
            "bad.js:3:12: `definition.setTestOptions`: unknown option `timeot` (known: timeout,"
        ),
        "{e}"
    );
    let e = error(&in_session("  session.get('/', {tga: 'x'});"));
    assert!(
        e.starts_with("bad.js:4:11: `session.get`: unknown option `tga` (known: tag,"),
        "{e}"
    );
    let e = error(&in_session("  session.wait(1, {randm: true});"));
    assert!(e.contains("unknown option `randm`"), "{e}");
    let e = error(&format!(
        "{HEAD}definition.session('s', function (session) {{ session.get('/', {{extraction: {{css: {{a: 'a'}}}}}}); }});"
    ));
    assert!(
        e.contains("unknown option `css` (known: jsonpath, regexp, header, xpath)"),
        "{e}"
    );
}

#[test]
fn data_file_problems_name_the_file() {
    let e = error(&in_session(
        "  session.ds.loadStructured('nope.csv');\n  session.get('/');",
    ));
    assert!(
        e.starts_with("bad.js:4:14: data file `nope.csv` not found (looked for "),
        "{e}"
    );
    let e = error(&in_session("  var r = session.ds.pickFrom(session.ds.loadStructured('channels.csv'));\n  session.get('/c/:x', {params: {x: r.get('title')}});"));
    assert_eq!(
        e,
        "bad.js:5:39: `row.get`: column `title` is not in `channels.csv` (its columns: id, name)"
    );
    let e = error(&in_session(
        "  session.ds.pickFrom(session.ds.loadStructured('empty.csv'));\n  session.get('/');",
    ));
    assert!(
        e.starts_with("bad.js:4:34: data file `empty.csv` has no rows"),
        "{e}"
    );
    let e = error(&in_session(
        "  session.ds.loadStructured('short_row.csv');\n  session.get('/');",
    ));
    assert_eq!(
        e,
        "bad.js:4:14: `short_row.csv:3`: the row has 1 field, but the header has 2"
    );
}

#[test]
fn arrival_phases_are_validated_by_position() {
    let body = "definition.setTarget('http://localhost:8080');\ndefinition.session('s', function (s) { s.get('/'); });\n";
    let e = error(&format!(
        "{body}definition.setArrivalPhases([{{duration: 5, rate: 1}}, {{duration: 5, rate: -1}}]);"
    ));
    assert_eq!(
        e,
        "bad.js:3:12: arrival phase 2: `rate` must not be negative, got -1"
    );
    let e = error(&format!(
        "{body}definition.setArrivalPhases([{{duration: 0, rate: 1}}]);"
    ));
    assert_eq!(
        e,
        "bad.js:3:12: arrival phase 1: `duration` must be greater than zero"
    );
    let e = error(&format!(
        "{body}definition.setArrivalPhases([{{duration: 5, rate: 1, ramp: 3}}]);"
    ));
    assert!(
        e.contains(
            "arrival phase 1: unknown option `ramp` (known: duration, rate, rampTo, max_users, max_clients)"
        ),
        "{e}"
    );
}

#[test]
fn unresolvable_placeholders_are_named() {
    let e = error(&in_session(
        "  session.get('/a');\n  session.get('/items/:item');",
    ));
    assert!(
        e.starts_with("bad.js:5:11: `session.get`: placeholder `:item` can never be filled"),
        "{e}"
    );
    // A variable extracted later does not count: document order.
    let e = error(&in_session(
        "  session.get('/t/:token');\n  session.get('/login', {extraction: {jsonpath: {token: '$.t'}}});",
    ));
    assert!(e.contains("placeholder `:token`"), "{e}");
}

#[test]
fn get_var_of_a_never_bound_variable_is_an_error() {
    let e = error(&in_session(
        "  session.get('/');\n  session.get('/a', {headers: {Authorization: 'Bearer ' + session.getVar('tokn')}});",
    ));
    assert!(
        e.starts_with("bad.js:5:67: `session.getVar`: variable `tokn` is never extracted or bound in session `s`"),
        "{e}"
    );
}

#[test]
fn unknown_comparison_operators_are_named() {
    let e = error(&in_session(
        "  session.get('/');\n  session.check('ok', session.lastHttpStatus(), '===', 200);",
    ));
    // QuickJS places a call whose arguments hold calls at the last of those: same line.
    assert!(
        e.starts_with("bad.js:5:")
            && e.contains(": `session.check`: unknown comparison operator `===` (known: =="),
        "{e}"
    );
}

#[test]
fn endless_loops_are_stopped_with_a_clear_error() {
    let started = Instant::now();
    let e = error(&in_session("  while (true) {}"));
    assert!(
        // Interrupted loops are located at the function that runs them (line 3).
        e.starts_with("bad.js:3:") && e.contains("stopped after 5 s (an endless loop?)"),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn other_misuse_is_reported_where_it_happens() {
    let cases: &[(&str, &str)] = &[
        (
            "  session.get('/');\n  session.ds.generate('dice');",
            "bad.js:5:14: `session.ds.generate`: unknown generator `dice`",
        ),
        (
            "  session.wait(-1);",
            "bad.js:4:11: `session.wait`: `seconds` must not be negative, got -1",
        ),
        (
            "  session.get('/', {payload: 'x', gzip: 'yes'});",
            "bad.js:4:11: `session.get`: `gzip` must be true or false",
        ),
        (
            "  session.times(3, 4);",
            "bad.js:4:11: `session.times`: the last argument must be a function",
        ),
        (
            "  session.get('/', {extraction: {jsonpath: {_row1: '$.a'}}});",
            "bad.js:4:11: `session.get`: `_row1` is reserved",
        ),
        (
            "  session.get('nope');",
            "bad.js:4:11: `session.get`: the path `nope` must start with `/`",
        ),
        (
            "  session.get('/', {extraction: {jsonpath: {t: '$$$['}}});",
            "bad.js:4:11: `session.get`: `extraction.jsonpath.t`: invalid JSONPath `$$$[`: ",
        ),
        (
            "  session.get('/', {extraction: {regexp: {t: 'id=(('}}});",
            "bad.js:4:11: `session.get`: `extraction.regexp.t`: invalid regular expression `id=((`: unclosed group",
        ),
    ];
    for (body, expected) in cases {
        let e = error(&in_session(body));
        assert!(
            e.starts_with(expected),
            "{body}\n  got: {e}\n  want: {expected}"
        );
        assert!(!e.trim_end().contains('\n'), "one line: {e}");
    }
}

#[test]
fn definition_level_misuse_is_reported() {
    let e = error(&format!(
        "{HEAD}definition.session('s', function (s) {{ s.get('/'); }});\ndefinition.session('s', function (s) {{ s.get('/'); }});"
    ));
    assert!(
        e.starts_with("bad.js:4:12: `definition.session`: there is already a session named `s`"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}definition.session('s', function (s) {{ s.get('/'); }});\ndefinition.setSessionWeights({{t: 1}});"
    ));
    assert!(
        e.starts_with("bad.js:4:12: `definition.setSessionWeights`: there is no session named `t`"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}definition.session('s', function (s) {{}});"
    ));
    assert!(e.contains("session `s` has no steps"), "{e}");
    let e = error(&format!(
        "{HEAD}var saved;\ndefinition.session('s', function (s) {{ saved = s; s.get('/'); }});\nsaved.get('/late');"
    ));
    assert!(
        e.starts_with("bad.js:5:7: `session.get` can only be used while a session function runs"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}var row;\ndefinition.session('a', function (s) {{ row = s.ds.pickFrom(s.ds.loadStructured('channels.csv')); s.get('/'); }});\ndefinition.session('b', function (s) {{ s.get('/c/:c', {{params: {{c: row.get('id')}}}}); }});"
    ));
    assert!(
        e.contains("session `b` uses a row picked in another session"),
        "{e}"
    );
}

#[test]
fn unreadable_script_files_are_reported() {
    let e = compile_file(&fixtures().join("missing.js")).unwrap_err();
    assert!(matches!(e, ScriptError::Read { .. }), "{e}");
    assert!(e.to_string().contains("missing.js"), "{e}");
}

#[test]
fn calls_made_through_helper_functions_point_at_the_helper() {
    let source = format!(
        "{HEAD}function ping(s, path) {{\n  s.get(path, {{tga: 1}});\n}}\ndefinition.session('s', function (session) {{\n  session.times(2, function (s) {{ ping(s, '/p'); }});\n}});"
    );
    let e = error(&source);
    // The line of the call inside the helper (QuickJS's column is that of the last
    // expression in the arguments that can fail, here `path`).
    assert!(
        e.starts_with("bad.js:4:9: `session.get`: unknown option `tga`"),
        "{e}"
    );
}

#[test]
fn thresholds_and_custom_metrics_compile_into_the_plan() {
    let source = format!(
        "{HEAD}definition.metric('errors', 'rate');
definition.metric('ttfb', 'trend');
definition.setThresholds({{
  'http_req_duration{{tag:ping}}': ['p(95)<200', {{threshold: 'max<5000', abortOnFail: true, delayAbortEval: '5s'}}],
  errors: 'rate<0.1',
  ttfb: 'avg<100',
}});
definition.session('s', function (session) {{
  session.get('/ping', {{tag: 'ping'}});
  session.add('errors', session.lastHttpStatus(), '>=', 400);
  session.add('ttfb', session.lastResponse('waiting'));
}});
"
    );
    let plan = compile_source(&source, "ok.js", &fixtures()).unwrap_or_else(|e| panic!("{e}"));
    let spec = &plan.metrics;
    assert_eq!(spec.custom.len(), 2);
    assert_eq!(spec.thresholds.len(), 3);
    assert_eq!(spec.thresholds[0].tag.as_deref(), Some("ping"));
    assert!(spec.thresholds[0].rules[1].abort_on_fail);
    let adds = plan.sessions[0]
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Add(_)))
        .count();
    assert_eq!(adds, 2);
}

#[test]
fn threshold_and_metric_mistakes_point_at_the_call() {
    let e = error(&format!(
        "{HEAD}definition.session('s', function (session) {{ session.get('/'); }});\ndefinition.setThresholds({{http_req_duraton: 'p(95)<1'}});"
    ));
    assert!(
        e.starts_with("bad.js:4:12: `definition.setThresholds`: threshold on unknown metric `http_req_duraton`"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}definition.setThresholds({{http_req_duration: 'p95<1'}});"
    ));
    assert!(
        e.starts_with("bad.js:3:12:") && e.contains("unknown aggregation `p95`"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}definition.setThresholds({{'http_reqs{{tag:nope}}': 'count>1'}});\ndefinition.session('s', function (session) {{ session.get('/'); }});"
    ));
    assert!(e.contains("no request has the tag `nope`"), "{e}");
    let e = error(&in_session(
        "  session.get('/');\n  session.add('nope', 1);",
    ));
    assert!(
        e.starts_with("bad.js:5:11: `session.add`: `nope` is not a custom metric"),
        "{e}"
    );
    let e = error(&format!("{HEAD}definition.metric('m', 'histogram');"));
    assert!(e.contains("unknown metric kind `histogram`"), "{e}");
    let e = error(&in_session(
        "  session.get('/' + session.lastResponse('duration'));",
    ));
    assert!(e.contains("only session.add takes"), "{e}");
}

#[test]
fn closed_fixture_matches_its_snapshot() {
    snapshot("closed");
}

/// The workload a `setVirtualUsers(form)` definition compiles to.
fn virtual_users(form: &str) -> Workload {
    let source = format!(
        "definition.setTarget('http://localhost:8080');\ndefinition.setVirtualUsers({form});\ndefinition.session('s', function (session) {{ session.get('/'); }});\n"
    );
    compile_source(&source, "vus.js", &fixtures())
        .unwrap()
        .workload
}

#[test]
fn every_virtual_user_form_compiles_to_its_model() {
    let secs = Duration::from_secs;
    let grace = DEFAULT_GRACEFUL_STOP;
    assert_eq!(
        virtual_users("{vus: 10, duration: '1h30m'}"),
        Workload::constant_vus(10, secs(5400), grace)
    );
    assert_eq!(
        virtual_users("{vus: 4, iterations: 100, maxDuration: '2m'}"),
        Workload::counted(4, 100, false, secs(120), grace)
    );
    assert_eq!(
        virtual_users("{vus: 3, iterationsPerVU: 7, gracefulStop: 0}"),
        Workload::counted(3, 7, true, DEFAULT_MAX_DURATION, Duration::ZERO)
    );
    let w =
        virtual_users("{rate: 30, timeUnit: '1m', duration: 60, preAllocatedVUs: 5, maxVUs: 20}");
    assert_eq!(
        w.admission,
        Admission::GrowAndDrop {
            pre_allocated: 5,
            max: 20,
            time_unit: secs(60)
        }
    );
    // 30 a minute for a minute: half an iteration a second, 30 in all.
    assert_eq!(w.schedule.value_at(Duration::ZERO), 0.5);
    assert_eq!(w.arrival_schedule().unwrap().total(), 30.0);
    let w = virtual_users("{startRate: 0, stages: [{duration: '10s', target: 100}, {duration: 5, target: 0}], preAllocatedVUs: 10}");
    assert_eq!(
        w,
        Workload::arrival_rate(
            0.0,
            secs(1),
            &[(secs(10), 100.0), (secs(5), 0.0)],
            (10, 10),
            grace
        )
        .unwrap()
    );
}

#[test]
fn bad_virtual_users_are_named_with_their_location() {
    let e = error(
        "definition.setTarget('http://localhost:8080');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.setVirtualUsers({vus: 1, duration: 1});\ndefinition.session('s', function (session) { session.get('/'); });\n",
    );
    assert!(e.starts_with("bad.js:3:12: `definition.setVirtualUsers`: the definition already has arrival phases (`definition.setArrivalPhases` at bad.js:2:12)"), "{e}");
    let bad = |form: &str| {
        error(&format!(
            "definition.setTarget('http://localhost:8080');\ndefinition.setVirtualUsers({form});\ndefinition.session('s', function (session) {{ session.get('/'); }});\n"
        ))
    };
    let e = bad("{vus: 0, duration: 1}");
    assert!(
        e.starts_with(
            "bad.js:2:12: `definition.setVirtualUsers`: `vus` must be a whole number from 1"
        ),
        "{e}"
    );
    let e = bad("{stages: [{duration: '10x', target: 5}]}");
    assert!(
        e.contains("stage 1: `duration`: `10x` has unknown unit `x`"),
        "{e}"
    );
    let e = bad("{startVUs: 0, stages: [{duration: 5, target: 0}]}");
    assert!(e.contains("never ask for a virtual user"), "{e}");
    let e = bad("{vus: 2, duration: 5, stages: [{duration: 5, target: 1}]}");
    assert!(
        e.contains("`vus` does not go with the ramping VUs form"),
        "{e}"
    );
    let e = bad("{rate: 10, duration: 5, preAllocatedVUs: 9, maxVUs: 3}");
    assert!(
        e.contains("`maxVUs` (3) must be at least `preAllocatedVUs` (9)"),
        "{e}"
    );
    let e = bad("{vus: 2}");
    assert!(e.contains("cannot tell the workload model"), "{e}");
    let e = bad("{vus: 2, duration: 1, rampUp: 3}");
    assert!(e.contains("unknown option `rampUp`"), "{e}");
}

#[test]
fn protocol_options_reach_the_plan_and_bad_ones_are_named() {
    let source = format!(
        "{HEAD}definition.setTestOptions({{http: '2', connectionModel: 'shared', poolSize: 8, \
         maxConcurrentStreams: 100, initialWindowSize: 1048576, dnsTtl: '30s', \
         localAddrs: '127.0.0.1-127.0.0.4', \
         tls: {{caFile: 'ca.pem', serverName: 'api.test', minVersion: '1.3', sessionResumption: false}}}});\n\
         definition.session('s', function (session) {{ session.get('/'); }});\n"
    );
    let plan = compile_source(&source, "ok.js", &fixtures()).unwrap();
    let o = &plan.options;
    assert_eq!(o.http, barrage_plan::HttpVersion::Http2);
    assert_eq!(o.connections.model, barrage_plan::ConnectionModel::Shared);
    assert_eq!(o.connections.pool_size, 8);
    assert_eq!(o.connections.local_addrs.len(), 4);
    assert_eq!(
        o.connections.dns_ttl,
        Some(std::time::Duration::from_secs(30))
    );
    assert_eq!(o.http2.max_concurrent_streams, Some(100));
    assert_eq!(o.http2.initial_window_size, Some(1 << 20));
    assert_eq!(o.tls.ca_file.as_deref(), Some("ca.pem"));
    assert_eq!(o.tls.server_name.as_deref(), Some("api.test"));
    assert_eq!(o.tls.min_version, Some(barrage_plan::TlsVersion::Tls13));
    assert!(!o.tls.session_resumption);

    let e = error(&format!("{HEAD}definition.setTestOptions({{http: '3'}});"));
    assert!(
        e.starts_with("bad.js:3:12: `definition.setTestOptions`: `http` must be"),
        "{e}"
    );
    let e = error(&format!(
        "{HEAD}definition.setTestOptions({{connectionModel: 'pool'}});"
    ));
    assert!(e.contains("`connectionModel` must be"), "{e}");
    let e = error(&format!(
        "{HEAD}definition.setTestOptions({{tls: {{verify: false}}}});"
    ));
    assert!(e.contains("unknown option `verify`"), "{e}");
}

#[test]
fn request_bodies_name_their_compression() {
    let source = in_session("  session.post('/echo', {payload: 'x', compress: 'br'});");
    let plan = compile_source(&source, "ok.js", &fixtures()).unwrap();
    let barrage_plan::Step::Request(request) = &plan.sessions[0].steps[0] else {
        panic!("not a request: {:?}", plan.sessions[0].steps[0]);
    };
    assert_eq!(request.body_coding(), Some(barrage_plan::BodyCoding::Br));
    let e = error(&in_session(
        "  session.post('/echo', {payload: 'x', compress: 'zip'});",
    ));
    assert!(
        e.contains("`compress` must be \"gzip\", \"deflate\" or \"br\""),
        "{e}"
    );
    let e = error(&in_session("  session.get('/', {compress: 'gzip'});"));
    assert!(e.contains("`compress` needs a `payload`"), "{e}");
}

#[test]
fn a_wait_takes_a_per_client_value() {
    let source = in_session(
        "  var d = session.ds.generate('random_number', {range: [1, 3]});\n  session.get('/');\n  session.wait(d);",
    );
    let plan = compile_source(&source, "w.js", &fixtures()).unwrap_or_else(|e| panic!("{e}"));
    let json = serde_json::to_value(&plan.sessions[0].steps).unwrap();
    let wait = json
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["kind"] == "wait")
        .unwrap_or_else(|| panic!("no wait in {json:#}"));
    assert_eq!(wait["distribution"], "per_client", "{wait:#}");
    assert!(
        wait["seconds"].is_object(),
        "a value, not a number: {wait:#}"
    );
    // Text that is not a number is refused at plan time.
    let e = error(&in_session("  session.wait('soon');"));
    assert!(e.contains("`seconds`"), "{e}");
}

#[test]
fn every_numeric_option_out_of_range_is_refused_with_its_location() {
    let target = "definition.setTarget('http://localhost:8080');\n";
    let session = "definition.session('s', function (s) { s.get('/'); });\n";
    let phases = "definition.setArrivalPhases([{duration: 1, rate: 1}]);\n";
    let options = |o: &str| format!("{target}{phases}definition.setTestOptions({o});\n{session}");
    let arrivals = |p: &str| format!("{target}{session}definition.setArrivalPhases([{p}]);\n");
    let vus = |v: &str| format!("{target}{session}definition.setVirtualUsers({v});\n");
    let wait = |w: &str| in_session(&format!("  session.{w};\n  session.get('/');"));
    let cases = [
        (options("{timeout: 1e20}"), "bad.js:3:12:", "`timeout`"),
        (
            options("{timeout: 86401}"),
            "bad.js:3:12:",
            "longest timeout, 24h",
        ),
        (
            options("{timeout: '500us'}"),
            "bad.js:3:12:",
            "shortest timeout, 1ms",
        ),
        (
            options("{timeout: 0}"),
            "bad.js:3:12:",
            "shortest timeout, 1ms",
        ),
        (options("{gracePeriod: '400d'}"), "bad.js:3:12:", "365d"),
        (options("{gracePeriod: 1e300}"), "bad.js:3:12:", "365d"),
        (
            options("{threads: 2000}"),
            "bad.js:3:12:",
            "`threads` must be a whole number from 1 to 1024",
        ),
        (
            options("{maxClients: 2000000}"),
            "bad.js:3:12:",
            "`maxClients` must be a whole number from 1 to 1000000",
        ),
        (
            options("{poolSize: 4294967295}"),
            "bad.js:3:12:",
            "`poolSize`",
        ),
        (
            options("{initialWindowSize: 2147483648}"),
            "bad.js:3:12:",
            "`initialWindowSize`",
        ),
        (
            options("{initialWindowSize: 0}"),
            "bad.js:3:12:",
            "`initialWindowSize`",
        ),
        (
            options("{maxConcurrentStreams: 0}"),
            "bad.js:3:12:",
            "`maxConcurrentStreams`",
        ),
        (options("{maxBody: '2GiB'}"), "bad.js:3:12:", "`maxBody`"),
        (options("{maxBody: 0}"), "bad.js:3:12:", "`maxBody`"),
        (
            options("{maxResponseHeaders: 100000}"),
            "bad.js:3:12:",
            "`maxResponseHeaders`",
        ),
        (options("{dnsTtl: '400d'}"), "bad.js:3:12:", "`dnsTtl`"),
        (
            arrivals("{duration: 1, rate: 1e10}"),
            "bad.js:3:12:",
            "arrival phase 1: `rate`",
        ),
        (
            arrivals("{duration: 1, rate: 1e-300}"),
            "bad.js:3:12:",
            "arrival phase 1: `rate`",
        ),
        (
            arrivals("{duration: 1, rate: 1, rampTo: 1e10}"),
            "bad.js:3:12:",
            "`rampTo`",
        ),
        (
            arrivals("{duration: '400d', rate: 1}"),
            "bad.js:3:12:",
            "`duration`",
        ),
        (
            arrivals("{duration: 1, rate: 1, max_users: 2000000}"),
            "bad.js:3:12:",
            "`max_users`",
        ),
        (
            vus("{vus: 2000000, duration: 1}"),
            "bad.js:3:12:",
            "`vus` must be a whole number from 1 to 1000000",
        ),
        (
            vus("{vus: 1, iterations: 1e13}"),
            "bad.js:3:12:",
            "`iterations`",
        ),
        (
            vus("{vus: 1, duration: 1e300}"),
            "bad.js:3:12:",
            "`duration`",
        ),
        (
            vus("{stages: [{duration: 1, target: 2000000}]}"),
            "bad.js:3:12:",
            "`target`",
        ),
        (
            vus("{rate: 1e10, duration: 1, preAllocatedVUs: 1}"),
            "bad.js:3:12:",
            "`rate`",
        ),
        (
            vus("{rate: 1, duration: 1, preAllocatedVUs: 2000000}"),
            "bad.js:3:12:",
            "`preAllocatedVUs`",
        ),
        (
            vus("{rate: 1, duration: 1, preAllocatedVUs: 1, maxVUs: 2000000}"),
            "bad.js:3:12:",
            "`maxVUs`",
        ),
        (
            vus("{startRate: 1e10, stages: [{duration: 1, target: 1}], preAllocatedVUs: 1}"),
            "bad.js:3:12:",
            "`startRate`",
        ),
        (
            vus("{vus: 1, duration: 1, gracefulStop: '400d'}"),
            "bad.js:3:12:",
            "`gracefulStop`",
        ),
        (wait("wait(1e300)"), "bad.js:4:", "`seconds`"),
        (wait("waitUniform(1, 1e300)"), "bad.js:4:", "`max`"),
        (wait("waitExp(1e300)"), "bad.js:4:", "`mean`"),
    ];
    for (source, location, named) in &cases {
        let e = error(source);
        assert!(
            e.starts_with(location) && e.contains(named),
            "expected {location} … {named}, got: {e}\n{source}"
        );
    }
}

#[test]
fn timestamp_generator_binds_the_session_start_shifted() {
    let source = format!(
        "{HEAD}definition.session('s', function (session) {{\n\
           var since = session.ds.generate('timestamp', {{ offset: -86400, format: 'epoch_ms' }});\n\
           var now = session.ds.generate('timestamp');\n\
           session.post('/report', {{ payload: JSON.stringify({{ since: since, at: now }}) }});\n\
         }});"
    );
    let plan = compile_source(&source, "ts.js", &fixtures()).unwrap_or_else(|e| panic!("{e}"));
    let bindings: Vec<&Binding> = plan.sessions[0]
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Bind { binding, .. } => Some(binding),
            _ => None,
        })
        .collect();
    assert_eq!(
        bindings,
        [
            &Binding::ShiftedTime {
                offset_ms: -86_400_000,
                fraction_digits: 0,
                format: barrage_plan::TimeFormat::EpochMillis
            },
            &Binding::ShiftedTime {
                offset_ms: 0,
                fraction_digits: 3,
                format: barrage_plan::TimeFormat::Utc
            },
        ]
    );
    let source = format!(
        "{HEAD}definition.session('s', function (session) {{\n  session.ds.generate('timestamp', {{ format: 'rfc2822' }});\n  session.get('/');\n}});"
    );
    let error = compile_source(&source, "bad.js", &fixtures())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "`format` must be \"iso\", \"iso_seconds\", \"epoch\" or \"epoch_ms\", got \"rfc2822\""
        ),
        "{error}"
    );
}

#[test]
fn jwt_generator_binds_a_token_resigned_per_client() {
    let source = format!(
        "{HEAD}definition.setTestOptions({{ cookies: true, maxRedirects: 3 }});\n\
         definition.session('s', function (session) {{\n\
           session.get('/login', {{ extraction: {{ jsonpath: {{ token: '$.token' }} }} }});\n\
           var fresh = session.ds.generate('jwt', {{ token: session.getVar('token'), algorithm: 'HS512',\n\
             key: 'secret\\n', lifetime: 90, claims: {{ role: 'admin', level: 3, tags: ['a'] }} }});\n\
           session.get('/me', {{ headers: {{ Authorization: 'Bearer ' + fresh }} }});\n\
         }});"
    );
    let plan = compile_source(&source, "jwt.js", &fixtures()).unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.options.cookies);
    assert_eq!(plan.options.max_redirects, 3);
    let Step::Bind {
        binding: Binding::Jwt(jwt),
        ..
    } = &plan.sessions[0].steps[1]
    else {
        panic!("{:?}", plan.sessions[0].steps)
    };
    assert_eq!(jwt.algorithm, barrage_plan::JwtAlgorithm::HS512);
    assert_eq!(
        jwt.key, "secret",
        "the secret's trailing newline is not part of it"
    );
    assert_eq!(
        jwt.token,
        Value::Var {
            name: "token".into()
        }
    );
    assert_eq!(jwt.lifetime, Some(Duration::from_secs(90)));
    assert_eq!(
        jwt.claims,
        [
            ("role".to_string(), "\"admin\"".to_string()),
            ("level".to_string(), "3".to_string()),
            ("tags".to_string(), "[\"a\"]".to_string()),
        ]
    );
    for (options, message) in [
        (
            "{ token: 'x', algorithm: 'none', key: 'k' }",
            "`algorithm` must be one of",
        ),
        (
            "{ token: 'x', algorithm: 'HS256' }",
            "needs a `key` or a `keyFile`",
        ),
        (
            "{ token: 'x', algorithm: 'RS256', keyFile: 'nope.pem' }",
            "nope.pem",
        ),
    ] {
        let source = format!(
            "{HEAD}definition.session('s', function (session) {{\n  session.ds.generate('jwt', {options});\n  session.get('/');\n}});"
        );
        let error = compile_source(&source, "bad.js", &fixtures())
            .unwrap_err()
            .to_string();
        // The line of the generate call.
        let line = HEAD.matches('\n').count() + 2;
        assert!(error.starts_with(&format!("bad.js:{line}:")), "{error}");
        assert!(error.contains(message), "{error}");
    }
}
