//! StormForger test cases as their authors meant them: the published heartbeat, every verb
//! and option barrage accepts from StormForger's DSL, multi-file test cases with imports and
//! `--define`, and errors inside imported files naming them.

use super::{compare_snapshot, fixtures};
use barrage_plan::{Admission, Body, Step};
use barrage_script::{compile_file_with, Compiled, ScriptInputs};

fn compile(path: &str, defines: &[(&str, &str)]) -> Result<Compiled, String> {
    let inputs = ScriptInputs {
        defines: defines
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    compile_file_with(&fixtures().join(path), &inputs).map_err(|e| e.to_string())
}

fn requests(compiled: &Compiled, session: usize) -> Vec<&barrage_plan::RequestStep> {
    let mut out = Vec::new();
    fn walk<'a>(steps: &'a [Step], out: &mut Vec<&'a barrage_plan::RequestStep>) {
        for step in steps {
            match step {
                Step::Request(r) => out.push(r),
                Step::Times { steps, .. } | Step::If { steps, .. } | Step::ForEver { steps } => {
                    walk(steps, out)
                }
                _ => {}
            }
        }
    }
    walk(&compiled.plan.sessions[session].steps, &mut out);
    out
}

#[test]
fn the_published_heartbeat_plans_with_one_warning_for_its_unused_param() {
    let compiled = compile("sf_heartbeat.js", &[]).unwrap();
    compare_snapshot("sf_heartbeat", &compiled.plan);
    let unused: Vec<&String> = compiled
        .warnings
        .iter()
        .filter(|w| w.contains("param `id` is not used"))
        .collect();
    assert_eq!(unused.len(), 1, "{:#?}", compiled.warnings);
    assert!(
        unused[0].contains("sf_heartbeat.js:26:29: warning: `session.get`"),
        "{}",
        unused[0]
    );
    assert!(!unused[0].contains('\n'));
    let pings = requests(&compiled, 0);
    // `:token` is left for the session variable; the unused param is dropped.
    assert_eq!(pings[1].path, "/ping?delay=100&token=:token");
    assert!(pings[1].params.is_empty());
    assert_eq!(
        compiled.plan.workload.admission,
        Admission::PerArrival {
            max_clients: Some(200)
        }
    );
}

#[test]
fn stormforger_verbs_and_options_plan_with_their_meaning() {
    let compiled = compile("sf_verbs.js", &[]).unwrap();
    compare_snapshot("sf_verbs", &compiled.plan);
    let plan = &compiled.plan;
    assert_eq!(plan.target.host, "testapp.example.com");
    assert_eq!(plan.target.port, 80);
    // setSessionProbabilities(0.25, 0.75) wins over the session's 0.3 and 0.7.
    let weights: Vec<u32> = plan.sessions.iter().map(|s| s.weight).collect();
    assert_eq!(weights, vec![25, 75]);
    assert_eq!(
        plan.workload.admission,
        Admission::PerArrival {
            max_clients: Some(300)
        },
        "the largest phase limit"
    );
    let browse = requests(&compiled, 0);
    let header = |r: &barrage_plan::RequestStep, name: &str| {
        r.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| format!("{:?}", h.value))
    };
    // gzip: true asks for a gzip response and compresses nothing.
    assert!(header(browse[0], "Accept-Encoding")
        .unwrap()
        .contains("\"gzip\""));
    assert!(!browse[0].gzip && browse[0].compress.is_none());
    // Basic authentication on every request: demo:s3cret.
    assert_eq!(
        plan.options
            .basic_auth
            .as_ref()
            .map(|c| c.basic_header_value()),
        Some("Basic ZGVtbzpzM2NyZXQ=".to_string())
    );
    // An object payload is form-encoded.
    assert!(matches!(&browse[2].body, Some(Body::Form { fields }) if fields.len() == 2));
    assert_eq!(plan.data_sources[0].columns, vec!["name", "password"]);
    assert_eq!(plan.data_sources[0].rows[1], vec!["bob", "builder"]);
    let upload = &requests(&compiled, 1)[2..];
    assert!(
        plan.sessions[1].steps.iter().any(|s| matches!(
            s,
            Step::Bind {
                binding: barrage_plan::Binding::RandomNumber { min: 1, max: 20 },
                ..
            }
        )),
        "generateFrom draws from the defined generator"
    );
    assert_eq!(
        upload[0].body,
        Some(Body::Raw {
            bytes: b"raw body bytes\n".to_vec()
        })
    );
    assert_eq!(upload[0].body, upload[1].body);
    assert!(matches!(&upload[2].body, Some(Body::Json { .. })));
    assert_eq!(upload[3].path, "/absolute?x=1");
    let cloud: Vec<&String> = compiled
        .warnings
        .iter()
        .filter(|w| w.contains("StormForger cloud setting"))
        .collect();
    assert_eq!(cloud.len(), 2, "{:#?}", compiled.warnings);
}

#[test]
fn params_are_substituted_as_written() {
    let compiled = compile("sf_verbs.js", &[]).unwrap();
    let search = requests(&compiled, 0)[1];
    assert_eq!(search.path, "/search?q=:q");
    assert_eq!(
        format!("{:?}", search.params[0].1),
        "Text { value: \"a/b c&d\" }"
    );
}

#[test]
fn a_multi_file_test_case_plans_with_defines() {
    let staging = compile("sf_modules/index.mjs", &[]).unwrap();
    compare_snapshot("sf_modules", &staging.plan);
    assert_eq!(requests(&staging, 0)[0].path, "/hello?env=staging");
    assert_eq!(
        staging.plan.workload.admission,
        Admission::PerArrival {
            max_clients: Some(23)
        }
    );
    let prod = compile(
        "sf_modules/index.mjs",
        &[
            ("defines.env", "prod"),
            ("defines.target", "\"http://127.0.0.2:9\""),
        ],
    )
    .unwrap();
    assert_eq!(requests(&prod, 0)[0].path, "/hello?env=prod");
    assert_eq!(prod.plan.target.host, "127.0.0.2");
    assert_eq!(prod.plan.target.port, 9);
}

#[test]
fn errors_in_imported_files_name_them() {
    let e = compile("sf_broken/index.mjs", &[]).unwrap_err();
    assert!(
        e.contains("sf_broken/modules/invalid.js:3:")
            && e.contains("unknown verb `definition.foo`"),
        "{e}"
    );
    let e = compile("sf_broken/missing.mjs", &[]).unwrap_err();
    assert!(
        e.contains("sf_broken/missing.mjs: cannot import \"./modules/not_there.js\""),
        "{e}"
    );
    let e = compile("sf_broken/syntax.mjs", &[]).unwrap_err();
    assert!(
        e.contains("sf_broken/modules/syntax.js:3:") && e.contains("SyntaxError"),
        "{e}"
    );
    for e in [
        compile("sf_broken/index.mjs", &[]).unwrap_err(),
        compile("sf_broken/missing.mjs", &[]).unwrap_err(),
    ] {
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn test_cases_with_imports_run_sloppy_as_stormforger_bundles_them() {
    // Undeclared assignments (main file and module), and `with`, an octal literal and
    // duplicate parameters in an imported file without import/export: all run, as in
    // StormForger.
    let compiled = compile("sf_sloppy/index.mjs", &[]).unwrap();
    assert_eq!(
        requests(&compiled, 0)[0].path,
        // `n` twice: the second, not passed, wins (sloppy mode's rule).
        "/get?n=undefined&base=8&token=t-2",
        "{:?}",
        requests(&compiled, 0)
    );
    // A file with import/export is an ES module to esbuild too: strict-only syntax there is
    // an error, named by file:line.
    let e = compile("sf_sloppy/strict_syntax.mjs", &[]).unwrap_err();
    assert!(
        e.contains("sf_sloppy/modules/with_export.js:3:") && e.contains("SyntaxError"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // A run-time error in an imported file still names its file and line.
    let e = compile("sf_sloppy/typo.mjs", &[]).unwrap_err();
    assert!(
        e.contains("sf_sloppy/modules/typo.js:3:") && e.contains("tokn"),
        "{e}"
    );
}

#[test]
fn bad_stormforger_input_is_one_line_naming_the_place() {
    let dir = fixtures();
    let cases: &[(&str, &str)] = &[
        (
            "definition.setTarget('http://a:1');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.get('http://b:2/x'); });",
            "bad.js:3:42: this request goes to http://b:2, but the test's target is http://a:1; add it with definition.addTarget to send there",
        ),
        (
            "definition.setTarget('http://a:1');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.post('/', {payload: [1]}); });",
            "bad.js:3:42: `session.post`: `payload` is an array",
        ),
        (
            "definition.setTarget('http://a:1');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.post('/', {payload_from_file: 'nope.bin'}); });",
            "bad.js:3:42: `session.post`: data file `nope.bin` not found",
        ),
        (
            "definition.setTarget('http://a:1');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.ds.loadStructured('channels.csv', {delimiter: ';;'}); s.get('/'); });",
            "bad.js:3:45: `session.ds.loadStructured`: `delimiter` must be one ASCII character",
        ),
        (
            "definition.setTarget('http://a:1');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.get('/', {extraction: {xpath: {t: '//['}}}); });",
            "bad.js:3:42: `session.get`: `extraction.xpath.t`: invalid XPath `//[`",
        ),
        (
            "definition.setTarget('http://a:1');\ndefinition.setAuthentication({username: 'a:b', password: 'x'});",
            "bad.js:2:12: `definition.setAuthentication`: `username` must not contain `:`",
        ),
    ];
    for (source, expected) in cases {
        let e = barrage_script::compile_source(source, "bad.js", &dir)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(expected), "got: {e}\nwant: {expected}");
    }
}

#[test]
fn credentials_in_the_target_url_authenticate_every_request() {
    let plan = barrage_script::compile_source(
        "definition.setTarget('http://u%20x:p%3Aw@127.0.0.1:8080');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\ndefinition.session('s', function (s) { s.get('/'); });",
        "t.js",
        &fixtures(),
    )
    .unwrap();
    let credentials = plan.options.basic_auth.expect("credentials");
    assert_eq!(
        (credentials.username.as_str(), credentials.password.as_str()),
        ("u x", "p:w")
    );
}

#[test]
fn a_script_may_declare_its_own_defines() {
    for declaration in ["const", "let", "var"] {
        let source = format!(
            "{declaration} defines = {{ target: 'http://127.0.0.1:1' }};\ndefinition.setTarget(defines.target);\ndefinition.setArrivalPhases([{{duration: 1, rate: 1}}]);\ndefinition.session('s', function (s) {{ s.get('/'); }});"
        );
        let plan = barrage_script::compile_source(&source, "t.js", &fixtures())
            .unwrap_or_else(|e| panic!("{declaration}: {e}"));
        assert_eq!(plan.target.port, 1);
    }
}

#[test]
fn pick_from_options_without_a_public_meaning_plan_with_one_warning_each() {
    let compiled = compile("sf_unknown_meaning.js", &[]).unwrap();
    let named = |option: &str| {
        compiled
            .warnings
            .iter()
            .filter(|w| w.contains(&format!("`{option}` is accepted and ignored")))
            .count()
    };
    assert_eq!(
        named("pickFrom option unique"),
        1,
        "{:#?}",
        compiled.warnings
    );
    assert!(compiled.warnings.iter().all(|w| !w.contains('\n')));
    let pick = requests(&compiled, 0);
    assert_eq!(pick.len(), 2);
    // `sequential` still takes effect next to an unknown option.
    assert!(
        format!("{:?}", compiled.plan.sessions[0].steps).contains("sequential: true"),
        "{:?}",
        compiled.plan.sessions[0].steps
    );
}

#[test]
fn exclude_tags_leaves_the_tagged_requests_out_of_the_plan() {
    let compiled = compile("sf_exclude_tags.js", &[]).unwrap();
    compare_snapshot("sf_exclude_tags", &compiled.plan);
    let plan = &compiled.plan;
    let tags = |session| -> Vec<&str> {
        requests(&compiled, session)
            .iter()
            .map(|r| plan.tags[r.tag].as_str())
            .collect()
    };
    // Untagged requests (their default tag is method and path) and other tags stay.
    assert_eq!(tags(0), ["page", "GET /health", "items"]);
    assert_eq!(tags(1), ["api"]);
    let excluded = plan.options.excluded.as_ref().expect("the plan says so");
    assert_eq!(excluded.requests, 4);
    assert_eq!(excluded.tags, ["asset", "exclude", "static", "beacon"]);
    // The other origin of an excluded request is never contacted, so never refused.
    assert_eq!(plan.target.host, "testapp.example.com");
    let lines = |needle: &str| -> Vec<&String> {
        compiled
            .warnings
            .iter()
            .filter(|w| w.contains(needle))
            .collect()
    };
    let note = lines("leaves out 4 request definitions");
    assert_eq!(note.len(), 1, "{:#?}", compiled.warnings);
    assert!(note[0].contains("sf_exclude_tags.js:22:"), "{}", note[0]);
    assert_eq!(lines("no request is tagged `beacon`").len(), 1);
    assert_eq!(
        lines("`static` also leaves out the tags that begin with it: static js").len(),
        1,
        "{:#?}",
        compiled.warnings
    );
    assert!(lines("accepted and ignored").is_empty());
    assert!(compiled.warnings.iter().all(|w| !w.contains('\n')));
}

#[test]
fn exclude_tags_mistakes_name_the_place() {
    let plan_of = |options: &str, body: &str| {
        let source = format!(
            "definition.setTarget('http://127.0.0.1:1');\ndefinition.setArrivalPhases([{{duration: 1, rate: 1}}]);\ndefinition.setTestOptions({options});\ndefinition.session('s', function (s) {{\n{body}\n}});"
        );
        barrage_script::compile_source(&source, "t.js", &fixtures()).map_err(|e| e.to_string())
    };
    let one = "s.get('/a', { tag: 'asset' }); s.get('/b');";
    assert!(plan_of("{ exclude_tags: ['asset'] }", one).is_ok());
    for (options, body, expected) in [
        (
            "{ exclude_tags: 'asset' }",
            one,
            "t.js:3:12: `definition.setTestOptions`: `exclude_tags` must be a list of request tags, got the text \"asset\"",
        ),
        ("{ exclude_tags: [''] }", one, "t.js:3:12: `definition.setTestOptions`: `exclude_tags`: a tag must not be empty"),
        ("{ exclude_tags: [1] }", one, "t.js:3:12: `definition.setTestOptions`"),
        (
            "{ exclude_tags: ['asset'] }",
            "s.get('/a', { tag: 'asset' });",
            "session `s` has no steps left: `exclude_tags` leaves out all its requests",
        ),
        (
            "{ exclude_tags: ['login'] }",
            "s.post('/login', { tag: 'login', extraction: { jsonpath: { token: 'token' } } });\ns.get('/me', { headers: { Authorization: s.getVar('token') } });",
            "t.js:6:44: `session.getVar`: variable `token` is extracted only by requests `exclude_tags` leaves out",
        ),
        (
            "{}",
            "s.get('/a', { tag: 'a', exclude_tags: ['a'] });",
            "`exclude_tags` is a test option, not a request's",
        ),
    ] {
        let error = plan_of(options, body).unwrap_err();
        assert!(error.contains(expected), "{options} {body}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
