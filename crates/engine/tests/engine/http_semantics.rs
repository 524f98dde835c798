//! Redirects (each hop its own request), basic authentication from the plan's credentials,
//! against the bundled target's httpbin-style endpoints.

use super::{run_plan, target};
use crate::support::*;
use barrage_plan::*;

fn plan_of(addr: std::net::SocketAddr, steps: Vec<Step>, options: TestOptions) -> Plan {
    let tags: Vec<String> = (0..steps.len()).map(|i| format!("r{i}")).collect();
    let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
    let mut plan = scenario_plan(addr, &tags, steps, closed(1, 2));
    plan.options = TestOptions {
        threads: Some(1),
        ..options
    };
    plan
}

#[test]
fn redirects_are_followed_hop_by_hop_up_to_the_limit() {
    let target = target();
    let mut chain = get("/redirect/3", 0);
    chain.extraction.push(jsonpath("url", "$.url"));
    let mut limited = get("/redirect/3", 1);
    limited.max_redirects = Some(1);
    let steps = vec![
        Step::Request(chain),
        check(
            "ended on /get",
            var("url"),
            "contains",
            Value::text("/get"),
            false,
        ),
        Step::Request(limited),
    ];
    let options = TestOptions {
        max_redirects: 10,
        ..TestOptions::default()
    };
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    // Tag 0: three 302 hops and the final 200 per iteration; tag 1: stops after one hop.
    assert_eq!(metrics.tags[0].status.get(302), 6);
    assert_eq!(metrics.tags[0].status.get(200), 2);
    assert_eq!(metrics.tags[1].status.get(302), 4);
    assert_eq!(metrics.tags[1].status.get(200), 0);
    assert_eq!(check_counts(&metrics, "ended on /get"), (2, 0));
    // Without a limit the 3xx is the response.
    let steps = vec![Step::Request(get("/redirect/3", 0))];
    let metrics = run_plan(&plan_of(target.addr(), steps, TestOptions::default()));
    assert_eq!(metrics.tags[0].status.get(302), 2);
    target.shutdown();
}

#[test]
fn redirected_posts_become_gets_except_after_307() {
    let target = target();
    let post = |path: &str, tag| RequestStep {
        body: Some(Body::Raw {
            bytes: b"x=1".to_vec(),
        }),
        ..RequestStep::simple(Method::Post, path, tag)
    };
    let steps = vec![
        // 302 → GET /redirect/1 → GET /get: a POST would be refused there with 405.
        Step::Request(post("/status/302", 0)),
        // 307 keeps the method and body: /post answers only a POST.
        Step::Request(post("/redirect-to?url=/post&status_code=307", 1)),
    ];
    let options = TestOptions {
        max_redirects: 5,
        ..TestOptions::default()
    };
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    assert_eq!(
        metrics.tags[0].status.get(200),
        2,
        "{:?}",
        metrics.tags[0].status
    );
    assert_eq!(
        metrics.tags[1].status.get(200),
        2,
        "{:?}",
        metrics.tags[1].status
    );
    assert_eq!(metrics.tags[1].status.get(405), 0);
    target.shutdown();
}

#[test]
fn plan_credentials_authenticate_every_request() {
    let target = target();
    let steps = vec![Step::Request(get("/basic-auth/u-1/p:w", 0))];
    let mut options = TestOptions::default();
    let metrics = run_plan(&plan_of(target.addr(), steps.clone(), options.clone()));
    assert_eq!(metrics.tags[0].status.get(401), 2);
    options.basic_auth = Credentials::from_url("http://u-1:p%3Aw@127.0.0.1/");
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    assert_eq!(metrics.tags[0].status.get(200), 2);
    target.shutdown();
}

/// GET `path`, extracting cookie `name` from the `/cookies` JSON into `var`.
fn cookie_of(var: &str, name: &str, path: &str, tag: usize) -> RequestStep {
    let mut request = get(path, tag);
    request.extraction.push(Extraction {
        var: var.into(),
        extractor: Extractor::Regexp {
            pattern: format!(r#""{name}":"(\w+)""#),
        },
    });
    request
}

#[test]
fn a_cookie_jar_keeps_set_cookies_for_the_client_and_starts_empty_each_iteration() {
    let target = target();
    let steps = vec![
        // No cookie yet at the start of every iteration: the extraction finds nothing.
        Step::Request(cookie_of("before", "a", "/cookies", 0)),
        // Set-Cookie on a 302, followed to /cookies, which shows what the jar sent.
        Step::Request(cookie_of("set", "a", "/cookies/set?a=v1", 1)),
        check("sent after set", var("set"), "==", Value::text("v1"), false),
        // A request that extracts nothing and follows nothing still fills the jar.
        Step::Request(RequestStep {
            max_redirects: Some(0),
            ..get("/cookies/set?b=v2", 2)
        }),
        Step::Request(cookie_of("later", "b", "/cookies", 3)),
        check("kept", var("later"), "==", Value::text("v2"), false),
    ];
    let options = TestOptions {
        max_redirects: 10,
        cookies: true,
        ..TestOptions::default()
    };
    let metrics = run_plan(&plan_of(target.addr(), steps.clone(), options.clone()));
    assert_eq!(
        metrics.tags[0].extraction_failures, 2,
        "fresh jar per iteration"
    );
    assert_eq!(check_counts(&metrics, "sent after set"), (2, 0));
    assert_eq!(check_counts(&metrics, "kept"), (2, 0));
    // Without a jar nothing is sent back.
    let options = TestOptions {
        cookies: false,
        ..options
    };
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    assert_eq!(check_counts(&metrics, "kept"), (0, 2));
    target.shutdown();
}

fn tls_target(cert: barrage_target::SelfSigned) -> barrage_target::RunningTarget {
    barrage_target::spawn(barrage_target::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: Some(1),
        tls: Some(cert),
        protocols: barrage_target::Protocols::Any,
    })
    .expect("TLS target starts")
}

/// Go's client (hey) and k6 follow a redirect to another origin: the hop opens its own
/// connection there (HTTP/1.1, or HTTP/2 over TLS), is timed and counted as a request of its
/// own, keeps cookies per domain, and drops `Authorization` when the host changes (not when
/// only the port does).
#[test]
fn redirects_to_other_origins_connect_there_with_cookies_per_domain_and_no_credentials() {
    let a = target();
    let b = target();
    let cert = barrage_target::SelfSigned::generate().unwrap();
    let ca = scratch_pem(&cert.cert_pem);
    let c = tls_target(cert);
    let (b_port, c_port) = (b.addr().port(), c.addr().port());
    // A (127.0.0.1) → B as `localhost`: B sets a cookie and redirects to its /cookies.
    let mut to_b = get(
        &format!("/redirect-to?url=http://localhost:{b_port}/cookies/set?k=v"),
        0,
    );
    to_b.extraction.push(jsonpath("k", "$.cookies.k"));
    // A → C over TLS (HTTP/2 by ALPN), another host: no Authorization there.
    let mut to_c = get(
        &format!("/redirect-to?url=https://localhost:{c_port}/headers"),
        1,
    );
    to_c.extraction
        .push(jsonpath("c_cookie", "$.headers.Cookie"));
    to_c.extraction
        .push(jsonpath("c_auth", "$.headers.Authorization"));
    // A → B on the same host, another port: Go keeps Authorization (it compares hosts).
    let mut same_host = get(
        &format!("/redirect-to?url=http://127.0.0.1:{b_port}/headers"),
        2,
    );
    same_host
        .extraction
        .push(jsonpath("b_auth", "$.headers.Authorization"));
    same_host
        .extraction
        .push(jsonpath("b_host", "$.headers.Host"));
    let steps = vec![
        Step::Request(to_b),
        check("cookie on B", var("k"), "==", Value::text("v"), false),
        Step::Request(to_c),
        // Cookies are per host, not per port (RFC 6265): B's cookie goes to C as well.
        check(
            "cookie on C",
            var("c_cookie"),
            "==",
            Value::text("k=v"),
            false,
        ),
        Step::Request(same_host),
        check(
            "auth kept",
            var("b_auth"),
            "contains",
            Value::text("Basic "),
            false,
        ),
        check(
            "Host is B's",
            var("b_host"),
            "==",
            Value::text(format!("127.0.0.1:{b_port}")),
            false,
        ),
    ];
    let mut options = TestOptions {
        max_redirects: 10,
        cookies: true,
        basic_auth: Credentials::parse_pair("u:p"),
        ..TestOptions::default()
    };
    options.tls.ca_file = Some(ca);
    let metrics = run_plan(&plan_of(a.addr(), steps, options));
    assert_eq!(check_counts(&metrics, "cookie on B"), (2, 0));
    assert_eq!(check_counts(&metrics, "cookie on C"), (2, 0));
    assert_eq!(check_counts(&metrics, "Host is B's"), (2, 0));
    assert_eq!(check_counts(&metrics, "auth kept"), (2, 0));
    // Per iteration: A's 302, B's 302 (Set-Cookie), B's 200.
    assert_eq!(metrics.tags[0].status.get(302), 4);
    assert_eq!(metrics.tags[0].status.get(200), 2);
    assert_eq!(metrics.tags[1].status.get(200), 2);
    // C showed no Authorization: its extraction failed each time, and only that one.
    assert_eq!(metrics.tags[1].extraction_failures, 2);
    assert_eq!(metrics.tags[2].extraction_failures, 0);
    let errors: u64 = metrics.tags.iter().flat_map(|t| t.errors).sum();
    assert_eq!(errors, 0);
    // One client: A, then B (as localhost), C, and B again (as 127.0.0.1, another origin),
    // each connection kept alive while the client stays on that origin across iterations.
    assert!(metrics.connections_tls >= 1 && metrics.connections_h2 >= 1);
    assert_eq!(metrics.connections_tls, metrics.connections_h2);
    for t in [a, b, c] {
        t.shutdown();
    }
}

/// hey's limit: at most 10 requests per chain, a 10th redirect is the error
/// `too_many_redirects` (Go: "stopped after 10 redirects"), not a response.
#[test]
fn a_redirect_past_a_go_style_limit_is_an_error() {
    let target = target();
    let steps = vec![Step::Request(get("/redirect/12", 0))];
    let options = TestOptions {
        max_redirects: GO_CLIENT_MAX_REDIRECTS,
        too_many_redirects_is_error: true,
        ..TestOptions::default()
    };
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    let too_many = barrage_metrics::ErrorKind::TooManyRedirects.index();
    assert_eq!(metrics.tags[0].errors[too_many], 2);
    // Nine followed 302s per iteration were responses; the tenth was the error.
    assert_eq!(metrics.tags[0].status.get(302), 18);
    // Within the limit the chain ends normally.
    let steps = vec![Step::Request(get("/redirect/9", 0))];
    let options = TestOptions {
        max_redirects: GO_CLIENT_MAX_REDIRECTS,
        too_many_redirects_is_error: true,
        ..TestOptions::default()
    };
    let metrics = run_plan(&plan_of(target.addr(), steps, options));
    assert_eq!(metrics.tags[0].errors.iter().sum::<u64>(), 0);
    assert_eq!(metrics.tags[0].status.get(200), 2);
    target.shutdown();
}
