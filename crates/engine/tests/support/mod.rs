//! Helpers of the engine integration tests: building scenario plans, reading check counts,
//! recording HTTP servers and an HTTP/2 server that measures its concurrent streams.

use barrage_metrics::RunMetrics;
use barrage_plan::*;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn scenario_plan(
    addr: std::net::SocketAddr,
    tags: &[&str],
    steps: Vec<Step>,
    workload: Workload,
) -> Plan {
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "scenario".into(),
        target: Target::parse(&format!("http://{addr}")).unwrap(),
        options: TestOptions {
            threads: Some(2),
            request_timeout: Duration::from_secs(5),
            seed: Some(42),
            ..TestOptions::default()
        },
        workload,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        sessions: vec![Session {
            name: "s".into(),
            weight: 1,
            steps,
        }],
        data_sources: vec![],
        metrics: Default::default(),
    }
}

pub fn closed(vus: u64, iterations: u64) -> Workload {
    Workload::closed(vus, None, Some(iterations))
}

pub fn get(path: &str, tag: usize) -> RequestStep {
    RequestStep::simple(Method::Get, path, tag)
}

pub fn var(name: &str) -> Value {
    Value::Var { name: name.into() }
}

pub fn check(name: &str, value: Value, op: &str, expected: Value, fatal: bool) -> Step {
    Step::Check(Check {
        name: name.into(),
        condition: Condition {
            value,
            op: CompareOp::parse(op).unwrap(),
            expected,
        },
        fatal,
        keep_failed_values: false,
    })
}

pub fn jsonpath(var: &str, path: &str) -> Extraction {
    Extraction {
        var: var.into(),
        extractor: Extractor::JsonPath { path: path.into() },
    }
}

/// `(passed, failed)` of the check named `name`.
pub fn check_counts(metrics: &RunMetrics, name: &str) -> (u64, u64) {
    let c = metrics
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {:?}", metrics.checks));
    (c.passed, c.failed)
}

/// A minimal HTTP/1.1 server that answers every request with an empty 200 and records the
/// `X-Request-Id` header of each.
pub fn recording_server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = ids.clone();
    let addr = empty_200_server(
        |_| {},
        move |line| {
            if let Some(id) = line.to_ascii_lowercase().strip_prefix("x-request-id: ") {
                seen.lock().unwrap().push(id.trim().to_string());
            }
        },
    );
    (addr, ids)
}

/// A minimal HTTP/1.1 server that answers every request with an empty 200 and records the
/// source address of each connection it accepts (before it reads from it).
pub fn peer_recording_server() -> (SocketAddr, Arc<Mutex<Vec<IpAddr>>>) {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let seen = peers.clone();
    let addr = empty_200_server(move |peer| seen.lock().unwrap().push(peer.ip()), |_| {});
    (addr, peers)
}

/// Serves HTTP/1.1 on a free loopback port, a thread per connection: `on_accept` gets each
/// connection's peer address, `on_line` each request line and header line; every request is
/// answered with an empty 200.
fn empty_200_server(
    on_accept: impl Fn(SocketAddr) + Send + 'static,
    on_line: impl Fn(&str) + Send + Sync + 'static,
) -> SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let on_line = Arc::new(on_line);
    std::thread::spawn(move || loop {
        let Ok((stream, peer)) = listener.accept() else {
            return;
        };
        on_accept(peer);
        let on_line = on_line.clone();
        std::thread::spawn(move || {
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if line == "\r\n" {
                    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                    if writer.write_all(response).is_err() {
                        return;
                    }
                } else {
                    on_line(&line);
                }
            }
        });
    });
    addr
}

/// Writes `pem` to a file of its own in the temp directory and returns its path.
pub fn scratch_pem(pem: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("barrage-engine-{}-{n}.pem", std::process::id()));
    std::fs::write(&path, pem).unwrap();
    path.to_string_lossy().into_owned()
}

/// What [`h2_streams_server`] saw: connections accepted, and the most streams open at once.
#[derive(Default)]
pub struct StreamCounts {
    pub connections: std::sync::atomic::AtomicUsize,
    open: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
}

/// A cleartext HTTP/2 server (the `h2` crate's, advertising no stream limit) that holds every
/// stream for `hold`, then answers an empty 200, counting the streams open at once. A stream
/// counts from its request's arrival until just before its response is sent, so the count
/// never exceeds the client's own.
pub fn h2_streams_server(hold: Duration) -> (SocketAddr, Arc<StreamCounts>) {
    use std::sync::atomic::Ordering::SeqCst;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(StreamCounts::default());
    let seen = counts.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                seen.connections.fetch_add(1, SeqCst);
                let seen = seen.clone();
                tokio::spawn(async move {
                    let Ok(mut connection) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    while let Some(Ok((_request, mut respond))) = connection.accept().await {
                        let open = seen.open.fetch_add(1, SeqCst) + 1;
                        seen.peak.fetch_max(open, SeqCst);
                        let seen = seen.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(hold).await;
                            seen.open.fetch_sub(1, SeqCst);
                            let response = http::Response::builder().status(200).body(()).unwrap();
                            let _ = respond.send_response(response, true);
                        });
                    }
                });
            }
        });
    });
    (addr, counts)
}
