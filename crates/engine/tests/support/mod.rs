//! Helpers of the engine integration tests: building scenario plans, reading check counts,
//! and a recording HTTP server.

use barrage_metrics::RunMetrics;
use barrage_plan::*;
use std::net::SocketAddr;
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
    Workload::ClosedVus(ClosedVus {
        vus,
        duration: None,
        iterations: Some(iterations),
    })
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
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = ids.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let seen = seen.clone();
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
                    } else if let Some(id) =
                        line.to_ascii_lowercase().strip_prefix("x-request-id: ")
                    {
                        seen.lock().unwrap().push(id.trim().to_string());
                    }
                }
            });
        }
    });
    (addr, ids)
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
