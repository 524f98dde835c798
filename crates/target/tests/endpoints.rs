//! End-to-end tests of every endpoint and query parameter, over real HTTP against `spawn`ed servers
//! (then every endpoint again over HTTP/1.1 and h2 over TLS, and h2c).

#[path = "support/client.rs"]
mod client;
#[path = "endpoints/httpbin.rs"]
mod httpbin;
#[path = "support/transports.rs"]
mod transports;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use barrage_target::{spawn, Protocols, RunningTarget, SelfSigned, TargetConfig, TargetError};
use client::{connect, gunzip, receive, request, send, Resp};
use serde_json::Value;
use transports::{Client, Transport};

fn config() -> TargetConfig {
    TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: Some(2),
        ..TargetConfig::default()
    }
}

/// One server shared by the tests that do not depend on server-wide state.
fn shared() -> SocketAddr {
    static SERVER: OnceLock<RunningTarget> = OnceLock::new();
    SERVER.get_or_init(|| spawn(config()).unwrap()).addr()
}

fn get(target: &str) -> Resp {
    request(shared(), "GET", target, &[], b"")
}

fn health_json() -> Value {
    serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})
}

#[test]
fn root_and_health() {
    for path in ["/", "/health"] {
        let r = get(path);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.json(), health_json());
        assert_eq!(r.header("content-encoding"), None);
    }
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let mut stream = connect(shared());
    for _ in 0..5 {
        send(&mut stream, "GET", "/health", &[], b"");
        assert_eq!(receive(&mut stream).json(), health_json());
    }
    // Pipelined.
    for _ in 0..3 {
        send(&mut stream, "GET", "/bytes/3", &[], b"");
    }
    for _ in 0..3 {
        assert_eq!(receive(&mut stream).body, b"ABC");
    }
}

#[test]
fn token_flow() {
    let r = request(
        shared(),
        "POST",
        "/random/get_token?channel=chan%207",
        &[],
        b"",
    );
    assert_eq!(r.status, 200);
    let json = r.json();
    assert_eq!(json["channel"], "chan 7");
    let token = json["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 32);
    assert!(token
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));

    let ok = get(&format!("/ping?token={token}"));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json(), serde_json::json!({"ok": true}));

    let second = request(shared(), "POST", "/random/get_token?channel=x", &[], b"").json();
    assert_ne!(second["token"], json["token"]);

    for target in [
        "/ping?token=0123456789abcdef0123456789abcdef".to_owned(),
        "/ping?token=nope".to_owned(),
        "/ping".to_owned(),
        format!("/ping?token={}", &token[..31]),
    ] {
        let denied = get(&target);
        assert_eq!(denied.status, 401, "{target}");
        assert_eq!(denied.json(), serde_json::json!({"ok": false}));
    }
}

#[test]
fn get_token_requires_a_channel() {
    for target in [
        "/random/get_token",
        "/random/get_token?channel=",
        "/random/get_token?other=1",
    ] {
        let r = request(shared(), "POST", target, &[], b"");
        assert_eq!(r.status, 400, "{target}");
        assert_eq!(r.json()["parameter"], "channel");
    }
}

#[test]
fn delay_endpoint_and_parameter() {
    let start = Instant::now();
    let r = get("/delay/150");
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["delay_ms"], 150);

    let start = Instant::now();
    let r = get("/health?delay=120");
    assert!(start.elapsed() >= Duration::from_millis(120));
    assert_eq!(r.json(), health_json());

    assert_eq!(get("/delay/abc").status, 400);
    assert_eq!(get("/delay/600001").status, 400);
}

#[test]
fn delays_do_not_block_parallel_requests() {
    let addr = shared();
    let start = Instant::now();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || request(addr, "GET", "/health?delay=300", &[], b"").status)
        })
        .collect();
    // A third, undelayed request is answered meanwhile.
    assert_eq!(request(addr, "GET", "/health", &[], b"").status, 200);
    assert!(start.elapsed() < Duration::from_millis(250));
    for w in workers {
        assert_eq!(w.join().unwrap(), 200);
    }
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(550), "{elapsed:?}");
}

#[test]
fn stall_every_pauses_one_request_in_n() {
    // Own server: the stall counter is server-wide.
    let server = spawn(config()).unwrap();
    let addr = server.addr();
    for round in 0..2 {
        let slow: Vec<bool> = (0..3)
            .map(|_| {
                let start = Instant::now();
                let r = request(addr, "GET", "/health?stall=300&stall_every=3", &[], b"");
                assert_eq!(r.status, 200);
                start.elapsed() >= Duration::from_millis(300)
            })
            .collect();
        assert_eq!(slow, [false, false, true], "round {round}");
    }
    server.shutdown();
}

#[test]
fn status_endpoint_and_parameter() {
    for code in [200u16, 201, 204, 302, 404, 418, 500, 503, 599] {
        let r = get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        if code != 204 {
            assert_eq!(r.json()["status"], code);
        }
    }
    for bad in ["/status/99", "/status/600", "/status/abc", "/status/"] {
        let r = get(bad);
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(r.json()["parameter"], "/status/<code>");
    }

    let r = get("/health?status=503");
    assert_eq!(r.status, 503);
    assert_eq!(r.json(), health_json());
    let r = get("/status/201?status=202");
    assert_eq!(r.status, 202);
}

#[test]
fn bytes_endpoint() {
    const PATTERN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for n in [0usize, 1, 100, 65_536, 1_000_003] {
        let r = get(&format!("/bytes/{n}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.body.len(), n);
        assert!(r
            .body
            .iter()
            .enumerate()
            .all(|(i, &b)| b == PATTERN[i % 64]));
    }
    assert_eq!(get("/bytes/104857601").status, 400);
    assert_eq!(get("/bytes/-1").status, 400);
}

#[test]
fn size_pads_bodies() {
    let r = get("/health?size=1000");
    assert_eq!(r.body.len(), 1000);
    assert_eq!(r.json(), health_json());
    assert!(r.body.ends_with(b" "));

    let r = get("/bytes/10?size=20");
    assert_eq!(&r.body[..], b"ABCDEFGHIJ          ");

    // Never truncates.
    let r = get("/bytes/50?size=20");
    assert_eq!(r.body.len(), 50);
}

#[test]
fn fail_ratio() {
    for _ in 0..20 {
        let r = get("/health?fail=1");
        assert_eq!(r.status, 500);
        assert!(r.json()["error"].is_string());
        assert_eq!(get("/health?fail=0").status, 200);
    }
    // fail wins over status.
    assert_eq!(get("/health?fail=1&status=200").status, 500);
    let statuses: Vec<u16> = (0..200).map(|_| get("/health?fail=0.5").status).collect();
    assert!(statuses.contains(&500) && statuses.contains(&200));
}

#[test]
fn close_drops_the_connection_without_answer() {
    for target in ["/health?close=1", "/echo?close=true", "/nope?close=1"] {
        let mut stream = connect(shared());
        send(&mut stream, "GET", target, &[], b"");
        let mut buf = Vec::new();
        // EOF (or a reset) without a single response byte.
        let _ = stream.read_to_end(&mut buf);
        assert!(
            buf.is_empty(),
            "{target}: {:?}",
            String::from_utf8_lossy(&buf)
        );
    }
    assert_eq!(get("/health?close=0").status, 200);
}

#[test]
fn gzip_when_accepted() {
    let r = request(
        shared(),
        "GET",
        "/",
        &[("Accept-Encoding", "gzip, deflate")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(r
        .header("vary")
        .unwrap()
        .to_ascii_lowercase()
        .contains("accept-encoding"));
    let plain: Value = serde_json::from_slice(&gunzip(&r.body)).unwrap();
    assert_eq!(plain, health_json());

    // Dynamic bodies, padded bodies and large bodies (compressed off the worker threads).
    let r = request(
        shared(),
        "GET",
        "/echo?size=5000",
        &[("Accept-Encoding", "gzip")],
        b"",
    );
    let plain = gunzip(&r.body);
    assert_eq!(plain.len(), 5000);
    assert_eq!(
        serde_json::from_slice::<Value>(&plain).unwrap()["path"],
        "/echo"
    );
    assert!(r.body.len() < 5000);

    let r = request(
        shared(),
        "GET",
        "/bytes/1000000",
        &[("Accept-Encoding", "gzip")],
        b"",
    );
    let plain = gunzip(&r.body);
    assert_eq!(plain.len(), 1_000_000);
    assert_eq!(&plain[..3], b"ABC");

    // Errors are compressed too; refusals are honoured.
    let r = request(
        shared(),
        "GET",
        "/health?delay=x",
        &[("Accept-Encoding", "gzip")],
        b"",
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        serde_json::from_slice::<Value>(&gunzip(&r.body)).unwrap()["parameter"],
        "delay"
    );
    let r = request(
        shared(),
        "GET",
        "/",
        &[("Accept-Encoding", "gzip;q=0")],
        b"",
    );
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.json(), health_json());
}

#[test]
fn echo_round_trips_the_request() {
    let r = request(
        shared(),
        "POST",
        "/echo?a=1&b=x%20y&b=2",
        &[("X-Test", "hello"), ("Content-Type", "text/plain")],
        "héllo body".as_bytes(),
    );
    assert_eq!(r.status, 200);
    let json = r.json();
    assert_eq!(json["method"], "POST");
    assert_eq!(json["path"], "/echo");
    assert_eq!(json["raw_query"], "a=1&b=x%20y&b=2");
    assert_eq!(
        json["query"],
        serde_json::json!({"a": "1", "b": ["x y", "2"]})
    );
    assert_eq!(json["headers"]["x-test"], "hello");
    assert_eq!(json["headers"]["content-type"], "text/plain");
    assert_eq!(json["headers"]["host"], "test");
    assert_eq!(json["body"], "héllo body");
    assert_eq!(json["body_encoding"], "utf-8");

    let r = request(shared(), "PUT", "/echo/sub/path", &[], &[0xff, 0x00, 0x01]);
    let json = r.json();
    assert_eq!(json["method"], "PUT");
    assert_eq!(json["path"], "/echo/sub/path");
    assert_eq!(json["raw_query"], Value::Null);
    assert_eq!(json["body"], "/wAB");
    assert_eq!(json["body_encoding"], "base64");
}

#[test]
fn unknown_path_is_404_json() {
    let r = get("/no/such/thing?x=1");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["path"], "/no/such/thing");
    assert_eq!(get("/healthz").status, 404);
}

#[test]
fn bad_parameters_are_400_naming_the_parameter() {
    for (query, name) in [
        ("delay=abc", "delay"),
        ("delay=600001", "delay"),
        ("fail=1.5", "fail"),
        ("fail=-1", "fail"),
        ("status=700", "status"),
        ("status=99", "status"),
        ("size=big", "size"),
        ("close=maybe", "close"),
        ("stall=x&stall_every=2", "stall"),
        ("stall=10&stall_every=0", "stall_every"),
    ] {
        for path in ["/", "/ping", "/echo", "/bytes/10"] {
            let r = get(&format!("{path}?{query}"));
            assert_eq!(r.status, 400, "{path}?{query}");
            let json = r.json();
            assert_eq!(json["parameter"], name, "{path}?{query}");
            assert!(json["error"].as_str().unwrap().contains(name));
        }
    }
}

#[test]
fn h2c_prior_knowledge_works() {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let addr = shared();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = hyper::Request::get(format!("http://{addr}/health?status=202"))
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 202);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap(),
            health_json()
        );
    });
}

#[test]
fn lifecycle_bind_errors_shutdown_and_drop() {
    let server = spawn(config()).unwrap();
    let addr = server.addr();
    assert_ne!(addr.port(), 0);

    // The port is taken while the server runs.
    match spawn(TargetConfig {
        listen: addr,
        threads: Some(1),
        ..TargetConfig::default()
    }) {
        Err(TargetError::Bind { addr: failed, .. }) => assert_eq!(failed, addr),
        other => panic!("expected a bind error, got {other:?}"),
    }

    // Shutdown with a request in flight returns promptly and stops listening.
    let mut pending = connect(addr);
    send(&mut pending, "GET", "/delay/10000", &[], b"");
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    server.shutdown();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(TcpStream::connect(addr).is_err());

    // Dropping without shutdown does not hang either, even from an async context.
    let server = spawn(config()).unwrap();
    let mut pending = connect(server.addr());
    send(&mut pending, "GET", "/delay/10000", &[], b"");
    let start = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async move { drop(server) });
    assert!(start.elapsed() < Duration::from_secs(1));
}

// ---- every endpoint over every transport ----

/// Runs every endpoint (and the query parameters every endpoint takes) over `transport`
/// against a server of its own speaking every version (cleartext, or TLS offering h2 and
/// http/1.1 by ALPN), within 30 s.
fn every_endpoint_over(transport: Transport) {
    let cert = SelfSigned::generate().unwrap();
    let ca = cert.cert_pem.clone();
    let server = spawn(TargetConfig {
        tls: transport.tls().then_some(cert),
        protocols: Protocols::Any,
        ..config()
    })
    .unwrap();
    let addr = server.addr();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let checks = async move {
        let t = transport;
        let connect = || Client::connect(addr, t, Some(&ca));
        // One connection for everything but `close=1`: keep-alive (HTTP/1.1) and streams one
        // after the other (HTTP/2) on it.
        let mut client = connect().await.unwrap();
        for path in ["/", "/health"] {
            let (r, _) = timed(&mut client, "GET", path, &[], b"").await;
            assert_eq!(r.status, 200, "{t:?} {path}");
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(r.json(), health_json(), "{t:?} {path}");
        }

        // Tokens: issued, accepted, refused; a channel is required.
        let (r, _) = timed(
            &mut client,
            "POST",
            "/random/get_token?channel=c%201",
            &[],
            b"",
        )
        .await;
        assert_eq!(r.status, 200, "{t:?}");
        let json = r.json();
        assert_eq!(json["channel"], "c 1", "{t:?}");
        let token = json["token"].as_str().unwrap().to_owned();
        assert_eq!(token.len(), 32, "{t:?}");
        let (r, _) = timed(
            &mut client,
            "GET",
            &format!("/ping?token={token}"),
            &[],
            b"",
        )
        .await;
        assert_eq!(
            (r.status, r.json()),
            (200, serde_json::json!({"ok": true})),
            "{t:?}"
        );
        let (r, _) = timed(&mut client, "GET", "/ping?token=nope", &[], b"").await;
        assert_eq!(
            (r.status, r.json()),
            (401, serde_json::json!({"ok": false})),
            "{t:?}"
        );
        let (r, _) = timed(&mut client, "POST", "/random/get_token", &[], b"").await;
        assert_eq!(
            (r.status, r.json()["parameter"].clone()),
            (400, "channel".into()),
            "{t:?}"
        );

        let (r, took) = timed(&mut client, "GET", "/delay/100", &[], b"").await;
        assert_eq!(
            (r.status, r.json()["delay_ms"].clone()),
            (200, 100.into()),
            "{t:?}"
        );
        assert!(took >= Duration::from_millis(100), "{t:?}: {took:?}");

        let (r, _) = timed(&mut client, "GET", "/status/418", &[], b"").await;
        assert_eq!(
            (r.status, r.json()["status"].clone()),
            (418, 418.into()),
            "{t:?}"
        );
        let (r, _) = timed(&mut client, "GET", "/status/204", &[], b"").await;
        assert_eq!((r.status, r.body.len()), (204, 0), "{t:?}");
        // No content, whatever asked for (over HTTP/2 a body would be DATA frames).
        let (r, _) = timed(
            &mut client,
            "GET",
            "/health?status=304&size=100",
            &[("accept-encoding", "gzip")],
            b"",
        )
        .await;
        assert_eq!((r.status, r.body.len()), (304, 0), "{t:?}");

        // Larger than HTTP/2's default 64 KiB windows.
        let (r, _) = timed(&mut client, "GET", "/bytes/300000", &[], b"").await;
        assert_eq!(r.status, 200, "{t:?}");
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.body.len(), 300_000, "{t:?}");
        let pattern = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        assert!(
            r.body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == pattern[i % 64]),
            "{t:?}"
        );

        let (r, _) = timed(
            &mut client,
            "POST",
            "/echo/sub?a=1&b=x%20y",
            &[("x-test", "hello"), ("content-type", "text/plain")],
            "héllo body".as_bytes(),
        )
        .await;
        assert_eq!(r.status, 200, "{t:?}");
        let json = r.json();
        assert_eq!(json["method"], "POST", "{t:?}");
        assert_eq!(json["path"], "/echo/sub", "{t:?}");
        assert_eq!(json["version"], t.echo_version(), "{t:?}");
        assert_eq!(
            json["query"],
            serde_json::json!({"a": "1", "b": "x y"}),
            "{t:?}"
        );
        assert_eq!(json["headers"]["x-test"], "hello", "{t:?}");
        assert_eq!(json["body"], "héllo body", "{t:?}");

        // A gzip-coded request body is decoded; a response is gzipped when accepted.
        let gzipped = {
            use std::io::Write;
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(b"zipped body").unwrap();
            encoder.finish().unwrap()
        };
        let (r, _) = timed(
            &mut client,
            "PUT",
            "/echo?size=5000",
            &[("content-encoding", "gzip"), ("accept-encoding", "gzip")],
            &gzipped,
        )
        .await;
        assert_eq!(r.status, 200, "{t:?}");
        assert_eq!(r.header("content-encoding"), Some("gzip"), "{t:?}");
        assert!(r.body.len() < 5000, "{t:?}");
        let plain = gunzip(&r.body);
        assert_eq!(plain.len(), 5000, "{t:?}");
        let json: Value = serde_json::from_slice(&plain).unwrap();
        assert_eq!(json["method"], "PUT", "{t:?}");
        assert_eq!(json["body"], "zipped body", "{t:?}");
        assert_eq!(json["decoded_from"], "gzip", "{t:?}");

        let (r, _) = timed(&mut client, "GET", "/no/such?x=1", &[], b"").await;
        assert_eq!(
            (r.status, r.json()["path"].clone()),
            (404, "/no/such".into()),
            "{t:?}"
        );

        // The parameters every endpoint takes.
        let (r, _) = timed(&mut client, "GET", "/health?status=503", &[], b"").await;
        assert_eq!((r.status, r.json()), (503, health_json()), "{t:?}");
        let (r, _) = timed(&mut client, "GET", "/bytes/10?size=20", &[], b"").await;
        assert_eq!(&r.body[..], b"ABCDEFGHIJ          ", "{t:?}");
        let (r, _) = timed(&mut client, "GET", "/ping?fail=1", &[], b"").await;
        assert_eq!(r.status, 500, "{t:?}");
        let (r, took) = timed(&mut client, "GET", "/health?delay=80", &[], b"").await;
        assert_eq!(r.status, 200, "{t:?}");
        assert!(took >= Duration::from_millis(80), "{t:?}: {took:?}");
        let (r, took) = timed(
            &mut client,
            "GET",
            "/health?stall=80&stall_every=1",
            &[],
            b"",
        )
        .await;
        assert_eq!(r.status, 200, "{t:?}");
        assert!(took >= Duration::from_millis(80), "{t:?}: {took:?}");
        let (r, _) = timed(&mut client, "GET", "/echo?delay=abc", &[], b"").await;
        assert_eq!(
            (r.status, r.json()["parameter"].clone()),
            (400, "delay".into()),
            "{t:?}"
        );

        // `close=1`: no answer (HTTP/1.1: the connection drops; HTTP/2: the stream is reset).
        let mut doomed = connect().await.unwrap();
        let dropped = doomed.send("GET", "/health?close=1", &[], b"").await;
        assert!(dropped.is_err(), "{t:?}: {dropped:?}");
        // The first connection is unaffected.
        let (r, _) = timed(&mut client, "GET", "/health", &[], b"").await;
        assert_eq!(r.status, 200, "{t:?}");
    };
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), checks).await })
        .expect("every endpoint answers within 30 s");
    server.shutdown();
}

/// Sends one request on `client` and times it; panics when it got no answer.
async fn timed(
    client: &mut Client,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (Resp, Duration) {
    let started = Instant::now();
    let r = client.send(method, target, headers, body).await;
    let r = r.unwrap_or_else(|e| panic!("{:?} {method} {target}: {e}", client.transport()));
    (r, started.elapsed())
}

#[test]
fn every_endpoint_over_http1() {
    every_endpoint_over(Transport::Http1);
}

#[test]
fn every_endpoint_over_http1_tls() {
    every_endpoint_over(Transport::Http1Tls);
}

#[test]
fn every_endpoint_over_h2_tls() {
    every_endpoint_over(Transport::H2Tls);
}

#[test]
fn every_endpoint_over_h2c() {
    every_endpoint_over(Transport::H2c);
}
