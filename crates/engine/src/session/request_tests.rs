//! Tests of request templates: static encoding, placeholders, bodies, gzip, request ids.

use super::*;
use crate::session::state::SessionState;
use barrage_plan::{Binding, HeaderField, Method, Step};
use std::io::Read;

fn cx(headers: &[Header]) -> RequestContext<'_> {
    RequestContext {
        authority: "example.test:80",
        keep_alive: true,
        accept_gzip: false,
        headers,
        max_redirects: 0,
        too_many_redirects_is_error: false,
        cookies: false,
        target_prefix: None,
    }
}

struct Built {
    text: String,
    head: String,
    body: Vec<u8>,
}

/// Compiles `request` in a session that binds `tok` and `row`, and builds it with `tok=a b`.
fn build(request: &RequestStep) -> (CompiledRequest, Built) {
    let data = vec![barrage_plan::DataSource {
        name: "d.csv".into(),
        columns: vec!["id".into()],
        rows: vec![vec!["7/8".into()]],
    }];
    let steps = vec![
        Step::Bind {
            var: "tok".into(),
            binding: Binding::Uuid,
        },
        Step::Bind {
            var: "row".into(),
            binding: Binding::PickRow {
                source: 0,
                sequential: true,
            },
        },
    ];
    let mut scope = Scope::new(&steps, &data).unwrap();
    let compiled =
        CompiledRequest::compile(request, &cx(&[]), Extractions::default(), &mut scope).unwrap();
    let mut state = SessionState::default();
    state.reset(scope.var_count());
    state.set_text(scope.var("tok")).push_str("a b");
    state.set_row(scope.var("row"), 0);
    let mut out = b"junk".to_vec();
    out.clear();
    compiled.build(
        Eval {
            state: &state,
            data: &data,
        },
        b"id-1",
        &mut BuildScratch::default(),
        &mut out,
    );
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let built = Built {
        text: String::from_utf8_lossy(&out).into_owned(),
        head: String::from_utf8_lossy(&out[..split]).into_owned(),
        body: out[split..].to_vec(),
    };
    (compiled, built)
}

#[test]
fn a_fixed_request_is_static_and_encoded_like_the_http_encoder_plus_an_id() {
    let request = RequestStep::simple(Method::Get, "/a?b=1", 0);
    let (compiled, built) = build(&request);
    assert!(compiled.is_static());
    let reference = barrage_http::RequestSpec {
        method: "GET",
        authority: "example.test:80",
        path: "/a?b=1",
        headers: &[],
        body: None,
        keep_alive: true,
        accept_gzip: false,
    }
    .encode()
    .unwrap();
    let (head, _) = reference.head_and_body();
    let mut expected = head.to_vec();
    expected.extend_from_slice(b"X-Request-Id: id-1\r\n\r\n");
    assert_eq!(built.text.as_bytes(), expected.as_slice());
}

#[test]
fn placeholders_take_params_then_vars_as_written_and_leave_others() {
    let mut request = RequestStep::simple(Method::Get, "/t/:tok?c=:id&at=10:30&x=:unknown", 0);
    request.params.push((
        "id".into(),
        Value::Column {
            var: "row".into(),
            column: "id".into(),
        },
    ));
    let (compiled, built) = build(&request);
    assert!(!compiled.is_static());
    assert!(
        built
            .text
            .starts_with("GET /t/a%20b?c=7/8&at=10:30&x=:unknown HTTP/1.1\r\n"),
        "{}",
        built.text
    );
    assert!(!built.head.contains("Content-Length"), "GET without body");
}

#[test]
fn json_bodies_send_numbers_as_numbers_and_other_values_as_strings() {
    let mut request = RequestStep::simple(Method::Post, "/echo", 0);
    request.body = Some(Body::Json {
        template: JsonTemplate::Object {
            fields: vec![
                (
                    "token".into(),
                    JsonTemplate::Value {
                        value: Value::Var { name: "tok".into() },
                    },
                ),
                (
                    "n".into(),
                    JsonTemplate::Value {
                        value: Value::Number { value: 4.0 },
                    },
                ),
                (
                    "q\"".into(),
                    JsonTemplate::Array {
                        items: vec![
                            JsonTemplate::Literal {
                                json: "{ \"a\" : [1, null] }".into(),
                            },
                            JsonTemplate::Value {
                                value: Value::text("x\ny"),
                            },
                        ],
                    },
                ),
            ],
        },
    });
    let (_, built) = build(&request);
    assert!(built.head.contains("Content-Type: application/json\r\n"));
    let body = String::from_utf8(built.body.clone()).unwrap();
    assert_eq!(
        body,
        r#"{"token":"a b","n":4,"q\"":[{"a":[1,null]},"x\ny"]}"#
    );
    let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(parsed["q\""][1], "x\ny");
    assert!(built
        .head
        .contains(&format!("Content-Length: {}\r\n", body.len())));
    assert!(built.head.contains("X-Request-Id: id-1\r\n"));
}

#[test]
fn form_bodies_are_urlencoded_and_gzip_compresses_the_body() {
    let mut request = RequestStep::simple(Method::Put, "/echo", 0);
    request.body = Some(Body::Form {
        fields: vec![
            ("a b".into(), Value::Var { name: "tok".into() }),
            ("c".into(), Value::text("1&2")),
        ],
    });
    let (_, built) = build(&request);
    assert!(built
        .head
        .contains("Content-Type: application/x-www-form-urlencoded\r\n"));
    assert_eq!(built.body, b"a%20b=a%20b&c=1%262");

    request.gzip = true;
    let (_, built) = build(&request);
    assert!(built.head.contains("Content-Encoding: gzip\r\n"));
    assert!(built
        .head
        .contains(&format!("Content-Length: {}\r\n", built.body.len())));
    let mut plain = String::new();
    flate2::read::GzDecoder::new(built.body.as_slice())
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(plain, "a%20b=a%20b&c=1%262");

    // A fixed gzipped body is compressed once, with the plan.
    request.body = Some(Body::Text {
        value: Value::text("hello hello hello"),
    });
    let (compiled, built) = build(&request);
    assert!(compiled.is_static());
    let mut plain = String::new();
    flate2::read::GzDecoder::new(built.body.as_slice())
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(plain, "hello hello hello");
}

#[test]
fn dynamic_header_values_cannot_inject_and_user_headers_win() {
    let mut request = RequestStep::simple(Method::Get, "/", 0);
    request.headers = vec![
        HeaderField {
            name: "Authorization".into(),
            value: Value::Concat {
                parts: vec![Value::text("Bearer "), Value::Var { name: "tok".into() }],
            },
        },
        HeaderField {
            name: "X-Request-Id".into(),
            value: Value::text("mine"),
        },
        HeaderField {
            name: "Content-Length".into(),
            value: Value::text("99"),
        },
    ];
    let (_, built) = build(&request);
    assert!(built.head.contains("Authorization: Bearer a b\r\n"));
    assert!(built.head.contains("X-Request-Id: mine\r\n"));
    assert!(!built.head.contains("id-1"), "the plan's id replaces ours");
    assert!(!built.head.contains("99"));

    let data = vec![];
    let steps = vec![];
    let mut scope = Scope::new(&steps, &data).unwrap();
    let bad = HeaderField {
        name: "X-A".into(),
        value: Value::text("a\r\nX-B: b"),
    };
    let mut request = RequestStep::simple(Method::Get, "/", 0);
    request.headers = vec![bad];
    assert!(
        CompiledRequest::compile(&request, &cx(&[]), Extractions::default(), &mut scope).is_err()
    );
    let request = RequestStep::simple(Method::Get, "/a b", 0);
    assert!(
        CompiledRequest::compile(&request, &cx(&[]), Extractions::default(), &mut scope).is_err()
    );
}
