//! Benchmark helper: writes a synthetic results file of a long, fast run — real recording
//! through `RunMetrics` (per-second histograms sealed as the seconds pass), workers merged
//! exactly, the file written — and prints the time, memory and size of each step.
//!
//! `cargo run --release -p barrage-results --example synth_results -- SECONDS RATE TAGS WORKERS OUT`
//!
//! For `barrage merge` at scale (bench/merge-cost.sh), `... OUT SEED FIRST COUNT TOTAL` writes
//! the run, recorded from SEED, as segments FIRST..FIRST+COUNT of a TOTAL-segment test
//! (`OUT` with `-i` before its extension), each started a few milliseconds apart like
//! `--start-at` segments.

use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord, RunMetrics};
use barrage_results::{Machine, ResultsFile, RunMeta};
use std::time::{Duration, Instant};

/// Peak resident memory of this process, kB (Linux).
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (seconds, rate, tags, workers) = (arg(1, 3600), arg(2, 50_000), arg(3, 2), arg(4, 2));
    let out = args
        .get(5)
        .cloned()
        .unwrap_or_else(|| "synthetic.brr".into());
    let tag_names: Vec<String> = (0..tags).map(|t| format!("GET /api/{t}")).collect();
    let mut shares: Vec<RunMetrics> = (0..workers)
        .map(|_| RunMetrics::new(tags as usize).with_checks([("status is 200", false)]))
        .collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ arg(6, 0).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let started = Instant::now();
    for second in 0..seconds {
        for i in 0..rate {
            // xorshift: cheap, deterministic latencies around 2 ms with a long tail.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let tail = if state.is_multiple_of(1000) {
                40.0
            } else {
                1.0
            };
            let micros = (1_500.0 + 1_000.0 * (-u.max(1e-12).ln()) * tail) as u64;
            // Workers and tags cross, so merging the workers adds histograms of the same seconds.
            let share = &mut shares[((i / 7) % workers) as usize];
            let tag = (i % tags) as usize;
            if state % 5000 == 1 {
                share.record_error(tag, second, ErrorKind::Timeout, 60);
                continue;
            }
            share.record_response(&ResponseRecord {
                tag,
                second,
                latency: Duration::from_micros(micros),
                phases: PhaseTimings {
                    connect: None,
                    tls: None,
                    write: Duration::from_micros(4),
                    wait: Duration::from_micros(micros.saturating_sub(20)),
                    read: Duration::from_micros(12),
                },
                status: if state.is_multiple_of(97) { 503 } else { 200 },
                bytes_sent: 60,
                bytes_received: 180,
                body_bytes: 40,
                decoded_body_bytes: 0,
                expected_interval: None,
            });
            share.record_check(0, true);
            share.record_session_start(second);
        }
    }
    let recorded = started.elapsed();
    let peak_recording = peak_rss_kb();
    let merge_started = Instant::now();
    let mut metrics = RunMetrics::new(tags as usize).with_checks([("status is 200", false)]);
    for share in &shares {
        metrics.merge(share);
    }
    drop(shares);
    let merged = merge_started.elapsed();
    let elapsed_ns = seconds * 1_000_000_000;
    let meta = RunMeta {
        command: "run".into(),
        name: "synthetic".into(),
        target: "http://127.0.0.1:8080".into(),
        barrage_version: env!("CARGO_PKG_VERSION").into(),
        plan: barrage_plan::Plan {
            format_version: barrage_plan::PLAN_FORMAT_VERSION,
            name: "synthetic".into(),
            target: barrage_plan::Target::parse("http://127.0.0.1:8080").expect("a url"),
            options: Default::default(),
            workload: barrage_plan::Workload::closed(1, Some(Duration::from_secs(seconds)), None),
            tags: tag_names.clone(),
            sessions: Vec::new(),
            data_sources: Vec::new(),
            metrics: Default::default(),
        },
        script: None,
        overrides: Default::default(),
        seed: None,
        machine: Machine::current(),
        started_at_unix_ns: 1_795_420_000_000_000_000,
        ended_at_unix_ns: 1_795_420_000_000_000_000 + elapsed_ns,
        elapsed_ns,
        interrupted: false,
        threads: workers as usize,
        tags: tag_names,
        planned_arrivals: None,
        merged_from: Vec::new(),
        request_id_prefix: None,
        segment: None,
        segments: None,
    };
    let file = ResultsFile {
        meta,
        metrics,
        thresholds: None,
        self_check: None,
        active_clients: None,
        capacity: None,
    };
    let (first, count, total) = (arg(7, 0), arg(8, 0), arg(9, 0));
    if count > 0 {
        write_segments(file, &out, first..first + count, total);
        return;
    }
    let write_started = Instant::now();
    file.write(std::path::Path::new(&out))
        .expect("write the results file");
    let written = write_started.elapsed();
    let size = std::fs::metadata(&out).map_or(0, |m| m.len());
    let requests = file.metrics.total().requests();
    println!(
        "requests {requests}  seconds {seconds}  tags {tags}  workers {workers}\n\
         record {:.2} s ({:.1} ns/request)  peak RSS while recording {} MB\n\
         merge workers {:.3} s  write {:.3} s  file {out}: {:.2} MB ({:.0} B per tag-second)",
        recorded.as_secs_f64(),
        recorded.as_secs_f64() * 1e9 / requests.max(1) as f64,
        peak_recording / 1024,
        merged.as_secs_f64(),
        written.as_secs_f64(),
        size as f64 / 1e6,
        size as f64 / (seconds * tags) as f64,
    );
}

/// Writes `file` as segments `indices` of a `total`-segment test: `OUT-i.brr`, each started
/// `(i × 7) mod 50` ms after the first (as `--start-at` segments are, within milliseconds).
fn write_segments(mut file: ResultsFile, out: &str, indices: std::ops::Range<u64>, total: u64) {
    let started = file.meta.started_at_unix_ns;
    let (stem, extension) = out.rsplit_once('.').unwrap_or((out, "brr"));
    for index in indices {
        let offset_ns = (index * 7 % 50) * 1_000_000;
        file.meta.started_at_unix_ns = started + offset_ns;
        file.meta.ended_at_unix_ns = file.meta.started_at_unix_ns + file.meta.elapsed_ns;
        file.meta.segment = Some(barrage_results::SegmentRun {
            index,
            count: total,
            start_at_unix_ns: Some(started),
            start_offset_ns: Some(offset_ns as i64),
            clock_source: Some("tsc".into()),
        });
        let path = format!("{stem}-{index}.{extension}");
        file.write(std::path::Path::new(&path))
            .expect("write the results file");
        println!("{path}");
    }
}
