//! Measures the memory a client costs while it waits (think time): clients arrive, send one
//! request and then wait 30 s; the resident set size is sampled against the number of active
//! clients and the slope (bytes per waiting client) printed. The target runs in a child
//! process so its own per-connection memory is not counted.
//!
//! Usage: cargo run --release -p barrage-engine --example waiting_memory [CLIENTS]

use barrage_engine::{run, RunControl};
use barrage_plan::*;
use std::time::{Duration, Instant};

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve") {
        let config = barrage_target::TargetConfig {
            listen: args[2].parse().expect("address"),
            threads: Some(1),
            ..Default::default()
        };
        barrage_target::serve_blocking(config, |_| {}).expect("target");
        return;
    }
    let clients: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["serve", &addr.to_string()])
        .spawn()
        .expect("target process");
    while std::net::TcpStream::connect(addr).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let arrival = Duration::from_secs(4);
    let plan = Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "waiting".into(),
        target: Target::parse(&format!("http://{addr}")).expect("target url"),
        options: TestOptions {
            threads: Some(1),
            ..TestOptions::default()
        },
        workload: Workload::open(
            Stages::from_targets(
                clients as f64 / arrival.as_secs_f64(),
                [(arrival, clients as f64 / arrival.as_secs_f64())],
            ),
            None,
            Duration::from_secs(60),
        ),
        tags: vec!["t".into()],
        sessions: vec![Session {
            name: "wait".into(),
            weight: 1,
            steps: vec![
                Step::Request(RequestStep::simple(Method::Get, "/", 0)),
                Step::Wait(Wait::Fixed { seconds: 30.0 }),
                Step::Request(RequestStep::simple(Method::Get, "/", 0)),
            ],
        }],
        data_sources: vec![],
        metrics: Default::default(),
    };
    let control = RunControl::default();
    let engine_control = control.clone();
    let engine = std::thread::spawn(move || run(&plan, &engine_control));
    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < arrival + Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(50));
        let active = control.live.snapshot().active_clients as f64;
        samples.push((active, rss_bytes() as f64));
    }
    let (last_clients, last_rss) = *samples.last().expect("samples");
    control.stop.stop();
    let _ = engine.join();
    let _ = child.kill();
    let _ = child.wait();
    // Least squares over the samples taken while clients were arriving.
    let points: Vec<(f64, f64)> = samples.into_iter().filter(|(c, _)| *c > 0.0).collect();
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), (x, y)| {
        (sxy + (x - mx) * (y - my), sxx + (x - mx) * (x - mx))
    });
    println!(
        "{last_clients} waiting clients, RSS {:.1} MB, {:.0} bytes per waiting client (slope over {} samples)",
        last_rss / 1e6,
        sxy / sxx,
        points.len()
    );
}
