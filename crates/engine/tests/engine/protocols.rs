//! The acceptance matrix of issue 6: one scenario over HTTP/1.1, HTTP/1.1 over TLS, h2c and
//! h2 over TLS against the bundled target, with identical request and check counts and the
//! connection counts each connection model promises.

use super::support::*;
use barrage_engine::{run, RunControl};
use barrage_metrics::{ErrorKind, RunMetrics};
use barrage_plan::*;
use barrage_target::{Protocols, SelfSigned, TargetConfig};

fn start(tls: Option<SelfSigned>, protocols: Protocols) -> barrage_target::RunningTarget {
    barrage_target::spawn(TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: Some(1),
        tls,
        protocols,
    })
    .expect("target starts")
}

/// A session that takes a token, asserts it, then pings three times with it.
fn token_session() -> (Vec<&'static str>, Vec<Step>) {
    let mut get_token = RequestStep::simple(Method::Post, "/random/get_token?channel=7", 0);
    get_token.extraction.push(jsonpath("token", "$.token"));
    let steps = vec![
        Step::Request(get_token),
        check("token present", var("token"), "!=", Value::text(""), true),
        Step::Times {
            count: Value::Number { value: 3.0 },
            steps: vec![
                Step::Request(get("/ping?token=:token", 1)),
                check(
                    "ping ok",
                    Value::LastStatus,
                    "==",
                    Value::Number { value: 200.0 },
                    false,
                ),
            ],
        },
    ];
    (vec!["get_token", "ping"], steps)
}

struct Case {
    name: &'static str,
    tls: bool,
    http: HttpVersion,
    model: ConnectionModel,
    vus: u64,
    iterations: u64,
    /// Expected (opened, over TLS, HTTP/2) connections.
    connections: (u64, u64, u64),
}

fn run_case(
    case: &Case,
    plain: &std::net::SocketAddr,
    tls: &std::net::SocketAddr,
    ca: &str,
) -> RunMetrics {
    let (tags, steps) = token_session();
    let addr = if case.tls { tls } else { plain };
    let mut plan = scenario_plan(*addr, &tags, steps, closed(case.vus, case.iterations));
    if case.tls {
        plan.target = Target::parse(&format!("https://localhost:{}", addr.port())).unwrap();
        plan.options.tls.ca_file = Some(ca.to_string());
    }
    plan.options.threads = Some(1);
    plan.options.http = case.http;
    plan.options.connections.model = case.model;
    plan.options.connections.pool_size = 8;
    run(&plan, &RunControl::default()).unwrap().metrics
}

#[test]
fn one_scenario_over_every_protocol_and_connection_model() {
    let cert = SelfSigned::generate().unwrap();
    let ca = scratch_pem(&cert.cert_pem);
    let plain = start(None, Protocols::Any);
    let secure = start(Some(cert), Protocols::Any);
    use ConnectionModel::*;
    use HttpVersion::*;
    let case = |name, tls, http, model, vus, iterations, connections| Case {
        name,
        tls,
        http,
        model,
        vus,
        iterations,
        connections,
    };
    let cases = [
        // Per client: each of the 20 VUs keeps its own connection for its 10 iterations.
        case("http/1.1", false, Http1, PerClient, 20, 200, (20, 0, 0)),
        case("http/1.1+tls", true, Http1, PerClient, 20, 200, (20, 20, 0)),
        case("h2c", false, Http2, PerClient, 20, 200, (20, 0, 20)),
        case(
            "h2+tls (alpn)",
            true,
            Auto,
            PerClient,
            20,
            200,
            (20, 20, 20),
        ),
        // 1,000 clients share a pool of 8 connections.
        case("h2c shared", false, Http2, Shared, 1000, 1000, (8, 0, 8)),
        case("h2+tls shared", true, Http2, Shared, 1000, 1000, (8, 8, 8)),
        case(
            "http/1.1 shared",
            false,
            Http1,
            Shared,
            1000,
            1000,
            (8, 0, 0),
        ),
        case(
            "https/1.1 shared",
            true,
            Http1,
            Shared,
            1000,
            1000,
            (8, 8, 0),
        ),
        // A connection per request: 4 requests per iteration.
        case(
            "h2c per request",
            false,
            Http2,
            NewPerRequest,
            10,
            50,
            (200, 0, 200),
        ),
        case(
            "https per request",
            true,
            Auto,
            NewPerRequest,
            10,
            50,
            (200, 200, 200),
        ),
    ];
    for case in &cases {
        let metrics = run_case(case, &plain.addr(), &secure.addr(), &ca);
        let name = case.name;
        let total = metrics.total();
        let errors: Vec<_> = ErrorKind::ALL
            .iter()
            .filter(|k| total.errors[k.index()] > 0)
            .map(|k| (k.name(), total.errors[k.index()]))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let iterations = case.iterations;
        assert_eq!(metrics.tags[0].status.get(200), iterations, "{name}");
        assert_eq!(metrics.tags[1].status.get(200), 3 * iterations, "{name}");
        assert_eq!(
            check_counts(&metrics, "token present"),
            (iterations, 0),
            "{name}"
        );
        assert_eq!(
            check_counts(&metrics, "ping ok"),
            (3 * iterations, 0),
            "{name}"
        );
        assert_eq!(
            (
                metrics.connections_opened,
                metrics.connections_tls,
                metrics.connections_h2
            ),
            case.connections,
            "{name}: (opened, tls, h2)"
        );
        let handshakes = total.tls.stats().count;
        assert_eq!(
            handshakes, case.connections.1,
            "{name}: timed TLS handshakes"
        );
    }
    plain.shutdown();
    secure.shutdown();
}

#[test]
fn certificate_failures_and_missing_h2_are_classified() {
    let cert = SelfSigned::generate().unwrap();
    let ca = scratch_pem(&cert.cert_pem);
    let secure = start(Some(cert), Protocols::Http1Only);
    let port = secure.addr().port();
    let (tags, steps) = token_session();
    let attempt = |url: &str, edit: &dyn Fn(&mut Plan)| {
        let mut plan = scenario_plan(secure.addr(), &tags, steps.clone(), closed(2, 4));
        plan.target = Target::parse(url).unwrap();
        plan.options.threads = Some(1);
        edit(&mut plan);
        let total = run(&plan, &RunControl::default()).unwrap().metrics.total();
        ErrorKind::ALL
            .iter()
            .filter(|k| total.errors[k.index()] > 0)
            .map(|k| k.name())
            .collect::<Vec<_>>()
    };
    let localhost = format!("https://localhost:{port}");
    assert_eq!(attempt(&localhost, &|_| {}), ["tls_unknown_ca"]);
    assert_eq!(
        attempt(&localhost, &|p| {
            p.options.tls.ca_file = Some(ca.clone());
            p.options.tls.server_name = Some("wrong.example".into());
        }),
        ["tls_bad_name"]
    );
    assert_eq!(
        attempt(&localhost, &|p| {
            p.options.tls.ca_file = Some(ca.clone());
            p.options.http = HttpVersion::Http2;
        }),
        ["h2_not_offered"]
    );
    // Trusted, or not verified at all: no errors; and the server's http/1.1 is used.
    assert!(attempt(&localhost, &|p| p.options.tls.ca_file = Some(ca.clone())).is_empty());
    assert!(attempt(&localhost, &|p| p.options.tls.insecure = true).is_empty());
    secure.shutdown();
}

#[test]
fn bodies_are_compressed_both_ways_against_echo() {
    let target = start(None, Protocols::Any);
    let text = "heartbeat position=1234 channel=news; ".repeat(30);
    for http in [HttpVersion::Http1, HttpVersion::Http2] {
        for coding in [BodyCoding::Gzip, BodyCoding::Deflate, BodyCoding::Br] {
            let mut echo = RequestStep::simple(Method::Post, "/echo", 0);
            echo.body = Some(Body::Raw {
                bytes: text.as_bytes().to_vec(),
            });
            echo.compress = Some(coding);
            echo.extraction.push(jsonpath("body", "$.body"));
            echo.extraction.push(jsonpath("from", "$.decoded_from"));
            let steps = vec![
                Step::Request(echo),
                check(
                    "body arrived",
                    var("body"),
                    "==",
                    Value::text(text.clone()),
                    false,
                ),
                check(
                    "decoded",
                    var("from"),
                    "==",
                    Value::text(coding.name()),
                    false,
                ),
            ];
            let mut plan = scenario_plan(target.addr(), &["echo"], steps, closed(2, 10));
            plan.options.http = http;
            let metrics = run(&plan, &RunControl::default()).unwrap().metrics;
            let name = format!("{http:?} {coding:?}");
            assert_eq!(check_counts(&metrics, "body arrived"), (10, 0), "{name}");
            assert_eq!(check_counts(&metrics, "decoded"), (10, 0), "{name}");
            let tag = &metrics.tags[0];
            assert_eq!(tag.status.get(200), 10, "{name}");
            // Sent compressed: the whole request is smaller than the plain body.
            assert!(
                tag.bytes_sent < 10 * text.len() as u64,
                "{name}: {}",
                tag.bytes_sent
            );
            // The target gzips its answers: decoded bytes exceed the bytes on the wire.
            assert!(
                tag.decoded_body_bytes > tag.body_bytes && tag.body_bytes > 0,
                "{name}: wire {} decoded {}",
                tag.body_bytes,
                tag.decoded_body_bytes
            );
        }
    }
    target.shutdown();
}

#[test]
fn h2c_to_an_http1_only_server_is_h2_not_offered() {
    let target = start(None, Protocols::Http1Only);
    let (tags, steps) = token_session();
    let mut plan = scenario_plan(target.addr(), &tags, steps, closed(1, 3));
    plan.options.http = HttpVersion::Http2;
    let total = run(&plan, &RunControl::default()).unwrap().metrics.total();
    assert_eq!(total.errors[ErrorKind::H2NotOffered.index()], 3);
    assert_eq!(total.responses(), 0);
    target.shutdown();
}

#[test]
fn source_addresses_and_dns_ttl_open_working_connections() {
    let target = start(None, Protocols::Any);
    let (tags, steps) = token_session();
    let mut plan = scenario_plan(target.addr(), &tags, steps, closed(4, 40));
    plan.target = Target::parse(&format!("http://localhost:{}", target.addr().port())).unwrap();
    plan.options.threads = Some(1);
    plan.options.connections.model = ConnectionModel::NewPerRequest;
    plan.options.connections.dns_ttl = Some(std::time::Duration::from_millis(1));
    plan.options.connections.local_addrs = parse_addr_range("127.0.0.2-127.0.0.5").unwrap();
    let metrics = run(&plan, &RunControl::default()).unwrap().metrics;
    assert_eq!(metrics.tags[1].status.get(200), 120);
    assert_eq!(metrics.connections_opened, 160);
    target.shutdown();
}

#[test]
fn small_http2_windows_still_carry_large_bodies() {
    let target = start(None, Protocols::Any);
    let steps = vec![Step::Request(get("/bytes/200000", 0))];
    let mut plan = scenario_plan(target.addr(), &["bytes"], steps, closed(2, 6));
    plan.options.http = HttpVersion::Http2;
    plan.options.compression = false;
    // Far below the body size: the transfer only completes if received data is released.
    plan.options.http2.initial_window_size = Some(4096);
    plan.options.http2.initial_connection_window_size = Some(65_535);
    let metrics = run(&plan, &RunControl::default()).unwrap().metrics;
    let tag = &metrics.tags[0];
    assert_eq!(tag.status.get(200), 6);
    assert_eq!(tag.body_bytes, 6 * 200_000);
    assert_eq!(metrics.connections_h2, 2);
    target.shutdown();
}

#[test]
fn connections_spread_over_every_source_address_and_no_other() {
    use std::collections::BTreeMap;
    use std::net::IpAddr;
    let (addr, peers) = peer_recording_server();
    let sources = parse_addr_range("127.0.0.1-127.0.0.4").unwrap();
    // (model, VUs, iterations of two requests, connections expected)
    let cases = [
        (ConnectionModel::NewPerRequest, 8, 40, 80),
        (ConnectionModel::PerClient, 8, 40, 8),
    ];
    for (model, vus, iterations, opened) in cases {
        peers.lock().unwrap().clear();
        let steps = vec![Step::Request(get("/a", 0)), Step::Request(get("/b", 0))];
        let mut plan = scenario_plan(addr, &["t"], steps, closed(vus, iterations));
        plan.options.connections.model = model;
        plan.options.connections.local_addrs = sources.clone();
        let metrics = run(&plan, &RunControl::default()).unwrap().metrics;
        assert_eq!(metrics.tags[0].status.get(200), 2 * iterations, "{model:?}");
        assert_eq!(metrics.connections_opened, opened, "{model:?}");
        // Every connection was accepted (and recorded) before its first answer was sent.
        let peers = peers.lock().unwrap();
        let mut used: BTreeMap<IpAddr, u64> = BTreeMap::new();
        for ip in peers.iter() {
            *used.entry(*ip).or_default() += 1;
        }
        assert_eq!(used.values().sum::<u64>(), opened, "{model:?}: {used:?}");
        assert_eq!(
            used.keys().copied().collect::<Vec<_>>(),
            sources,
            "{model:?}: every source address used, and no other"
        );
        // In turn, per worker (two workers): evenly spread.
        let (min, max) = (used.values().min().unwrap(), used.values().max().unwrap());
        assert!(max - min <= 2, "{model:?}: {used:?}");
    }
}

#[test]
fn a_shared_http2_connection_carries_at_most_max_streams_at_once() {
    // (maxConcurrentStreams, VUs) → the most streams the server saw open at once.
    for (max_streams, vus) in [(Some(2), 20), (Some(5), 20), (None, 20)] {
        let (addr, counts) = h2_streams_server(std::time::Duration::from_millis(20));
        let steps = vec![Step::Request(get("/", 0))];
        let mut plan = scenario_plan(addr, &["t"], steps, closed(vus, 60));
        plan.options.threads = Some(1);
        plan.options.http = HttpVersion::Http2;
        plan.options.connections.model = ConnectionModel::Shared;
        plan.options.connections.pool_size = 1;
        plan.options.http2.max_concurrent_streams = max_streams;
        let metrics = run(&plan, &RunControl::default()).unwrap().metrics;
        let name = format!("max streams {max_streams:?}");
        assert_eq!(metrics.tags[0].status.get(200), 60, "{name}");
        assert_eq!(metrics.connections_opened, 1, "{name}");
        assert_eq!(metrics.connections_h2, 1, "{name}");
        use std::sync::atomic::Ordering::SeqCst;
        assert_eq!(counts.connections.load(SeqCst), 1, "{name}");
        let peak = counts.peak.load(SeqCst);
        match max_streams {
            // 20 clients wait on the one connection: it runs exactly as many as allowed.
            Some(max) => assert_eq!(peak, max as usize, "{name}"),
            // Unlimited: the same test sees the clients' requests at once (so a broken cap
            // would show above).
            None => assert!(peak > 5, "{name}: peak {peak}"),
        }
    }
}
