//! Helpers for the CLI integration tests: the bundled target as a child process, bounded runs
//! of the real `barrage` binary, and checks on its JSON summary.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_barrage");

/// Tests that saturate the CPU or measure time take this lock, so on a small machine they do
/// not run at the same time as each other (lighter tests still run alongside).
static HEAVY: Mutex<()> = Mutex::new(());

pub fn heavy_lock() -> MutexGuard<'static, ()> {
    HEAVY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `barrage target --listen 127.0.0.1:0 --threads 1`, killed on drop.
pub struct Target {
    child: Child,
    pub addr: SocketAddr,
    pub first_line: String,
    /// With `--tls`: the certificate file the target printed on its second line.
    pub cert_path: Option<String>,
    drain: Option<JoinHandle<()>>,
}

impl Target {
    pub fn start() -> Target {
        Target::start_with(&["--threads", "1"])
    }

    pub fn start_with(extra: &[&str]) -> Target {
        let mut child = Command::new(BIN)
            .args(["target", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn barrage target");
        let stdout = child.stdout.take().expect("target stdout");
        let (tx, rx) = mpsc::channel();
        let tls = extra.contains(&"--tls");
        // Reads the first line (and the certificate line with --tls), then keeps draining so
        // the target never sees a closed pipe.
        let drain = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let mut read = reader.read_line(&mut line);
            if tls && read.is_ok() {
                read = reader.read_line(&mut line);
            }
            let _ = tx.send(read.map(|_| line));
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        let first_line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(line)) => line,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("barrage target did not print its address line: {other:?}");
            }
        };
        let mut lines = first_line.lines();
        let cert_line = if tls { lines.nth(1) } else { None };
        // "barrage target certificate PATH sha256:..."
        let cert_path = cert_line
            .and_then(|l| l.split_whitespace().nth(3))
            .map(String::from);
        let first_line = first_line
            .lines()
            .next()
            .unwrap_or("")
            .trim_end()
            .to_string();
        let addr = match first_line
            .split_whitespace()
            .last()
            .and_then(|token| token.parse::<SocketAddr>().ok())
        {
            Some(addr) => addr,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no address at the end of the target's first line: {first_line:?}");
            }
        };
        Target {
            child,
            addr,
            first_line,
            cert_path,
            drain: Some(drain),
        }
    }

    /// `http://ADDR` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The target process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `https://ADDR` followed by `path`.
    pub fn https_url(&self, path: &str) -> String {
        format!("https://{}{}", self.addr, path)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
    }
}

/// What a finished `barrage` process left behind.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Parses stdout as one JSON document, with a readable panic when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); exit {:?}\nstdout:\n{}\nstderr:\n{}",
                self.code(),
                self.stdout,
                self.stderr
            )
        })
    }

    pub fn expect_success(&self) -> &Self {
        assert_eq!(
            self.code(),
            Some(0),
            "expected exit 0\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A spawned `barrage` whose output is being collected.
pub struct Running {
    pub child: Child,
    started: Instant,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl Running {
    pub fn spawn(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            // Results files and the history go to the test's scratch space, not the user's.
            .env("BARRAGE_RESULTS_DIR", scratch_dir().join("results"))
            .env("BARRAGE_HISTORY", scratch_dir().join("history.db"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn barrage");
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        Running {
            child,
            started: Instant::now(),
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether barrage has not exited yet.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits for the exit; kills the process and panics if it takes longer than `limit`.
    pub fn wait(mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        let status = loop {
            match self.child.try_wait().expect("try_wait") {
                Some(status) => break status,
                None if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let stdout = self.stdout.take().unwrap().join().unwrap_or_default();
                    let stderr = self.stderr.take().unwrap().join().unwrap_or_default();
                    panic!(
                        "barrage did not exit within {limit:?}; killed it\nstdout:\n{stdout}\nstderr:\n{stderr}"
                    );
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let elapsed = self.started.elapsed();
        Output {
            status,
            stdout: self.stdout.take().unwrap().join().unwrap_or_default(),
            stderr: self.stderr.take().unwrap().join().unwrap_or_default(),
            elapsed,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Only when a test panics before `wait`: never leave the child behind.
        if self.stdout.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `barrage ARGS` to its end, within `limit`.
pub fn barrage(args: &[&str], limit: Duration) -> Output {
    Running::spawn(args).wait(limit)
}

/// Runs `barrage quick ARGS -o json`, expects exit 0 and returns the checked summary.
pub fn quick_json(args: &[&str], limit: Duration) -> Value {
    let mut argv = vec!["quick", "-o", "json"];
    argv.extend_from_slice(args);
    let out = barrage(&argv, limit);
    out.expect_success();
    let summary = out.json();
    check_invariants(&summary);
    summary
}

/// Runs `barrage quick ARGS -o json` where no request can get a response: expects exit 1
/// (a run that got no response is never green) and returns the checked summary.
pub fn quick_json_unanswered(args: &[&str], limit: Duration) -> Value {
    let mut argv = vec!["quick", "-o", "json"];
    argv.extend_from_slice(args);
    let out = barrage(&argv, limit);
    assert_eq!(
        out.code(),
        Some(1),
        "no response: exit 1\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stderr.contains("no request got a response"),
        "{}",
        out.stderr
    );
    let summary = out.json();
    check_invariants(&summary);
    summary
}

pub fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` is not an unsigned integer in {v:#}"))
}

pub fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v:#}"))
}

/// `{"a": 1, "b": 2}` → sum of the values.
pub fn sum_map(v: &Value) -> u64 {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .values()
        .map(|n| n.as_u64().expect("count"))
        .sum()
}

/// `errors_by_kind[kind]`, 0 when absent.
pub fn error_kind(summary: &Value, kind: &str) -> u64 {
    summary["errors_by_kind"][kind].as_u64().unwrap_or(0)
}

/// Relations every summary must satisfy, whatever the run.
pub fn check_invariants(s: &Value) {
    let (requests, responses, errors) = (u(s, "requests"), u(s, "responses"), u(s, "errors"));
    assert_eq!(
        requests,
        responses + errors,
        "requests = responses + errors\n{s:#}"
    );
    assert_eq!(
        sum_map(&s["status_codes"]),
        responses,
        "status codes sum to the responses\n{s:#}"
    );
    assert_eq!(
        sum_map(&s["errors_by_kind"]),
        errors,
        "error kinds sum to the errors\n{s:#}"
    );
    assert_eq!(
        u(&s["latency"], "count"),
        responses,
        "latency counts responses only\n{s:#}"
    );
    let histogram: u64 = s["histogram"]
        .as_array()
        .expect("histogram array")
        .iter()
        .map(|b| u(b, "count"))
        .sum();
    assert_eq!(
        histogram, responses,
        "histogram counts the responses\n{s:#}"
    );
    let tags = s["tags"].as_array().expect("tags array");
    assert_eq!(
        tags.iter().map(|t| u(t, "requests")).sum::<u64>(),
        requests,
        "tags sum to the requests\n{s:#}"
    );
    assert_eq!(
        tags.iter().map(|t| u(t, "errors")).sum::<u64>(),
        errors,
        "tags sum to the errors\n{s:#}"
    );
    for tag in tags {
        assert_eq!(
            sum_map(&tag["status_codes"]),
            u(tag, "responses"),
            "a tag's status codes sum to its responses\n{tag:#}"
        );
        assert_eq!(
            sum_map(&tag["errors_by_kind"]),
            u(tag, "errors"),
            "a tag's error kinds sum to its errors\n{tag:#}"
        );
    }
    for key in ["bytes_sent", "bytes_received"] {
        assert_eq!(
            tags.iter().map(|t| u(t, key)).sum::<u64>(),
            u(s, key),
            "tags sum to {key}\n{s:#}"
        );
    }
    let seconds = s["per_second"].as_array().expect("per_second array");
    assert_eq!(
        seconds.iter().map(|b| u(b, "responses")).sum::<u64>(),
        responses,
        "per-second buckets sum to the responses\n{s:#}"
    );
    assert_eq!(
        seconds.iter().map(|b| u(b, "errors")).sum::<u64>(),
        errors,
        "per-second buckets sum to the errors\n{s:#}"
    );
    let total_data = u(s, "total_data_bytes");
    let per_request = u(s, "size_per_request_bytes");
    assert_eq!(
        per_request,
        total_data.checked_div(responses).unwrap_or(0),
        "size/request\n{s:#}"
    );
    assert!(
        u(s, "bytes_received") >= total_data,
        "bytes received include the bodies\n{s:#}"
    );
    let total_s = f(s, "total_s");
    assert!(total_s >= 0.0, "{s:#}");
    if total_s > 0.0 {
        let rps = f(s, "requests_per_second");
        assert!(
            (rps - responses as f64 / total_s).abs() <= 1e-6 * rps.max(1.0),
            "requests_per_second = responses / total_s\n{s:#}"
        );
    }
    let l = &s["latency"];
    if responses > 0 {
        assert!(u(l, "min_us") <= u(l, "max_us"), "{l:#}");
        let mean = f(l, "mean_us");
        assert!(
            mean >= u(l, "min_us") as f64 - 1.0 && mean <= u(l, "max_us") as f64 + 1.0,
            "{l:#}"
        );
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    port
}

/// Cargo's scratch directory for integration tests.
pub fn scratch_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("barrage-cli-tests")
}

/// A fresh path under cargo's scratch directory for integration tests.
pub fn scratch_file(name: &str, contents: &[u8]) -> std::path::PathBuf {
    // Tests run in parallel threads of one process: a per-call sequence number keeps two tests
    // that write a file of the same name from overwriting each other's.
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let sequence = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(format!("{}-{sequence}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

/// A server on 127.0.0.1 that accepts connections, reads nothing and never answers; it
/// holds them until dropped.
pub struct Stalled {
    pub addr: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Stalled {
    pub fn start() -> Stalled {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("address");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Stalled {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The summary's entry for the request tag `name`.
pub fn tag<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .find(|t| t["tag"] == name)
        .unwrap_or_else(|| panic!("no tag {name} in {summary:#}"))
}
