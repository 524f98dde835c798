//! Round trips, exact merges, and refusal of damaged files.

use super::*;
use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord};

/// A latency like real ones: mostly around a mode, with a long tail.
fn latency_us(i: u64) -> u64 {
    let spread = (i.wrapping_mul(2_654_435_761) % 1000) as f64 / 1000.0;
    (800.0
        + 400.0 * spread
        + if i.is_multiple_of(97) {
            20_000.0 * spread
        } else {
            0.0
        }) as u64
}

fn record(metrics: &mut RunMetrics, i: u64, per_second: u64) {
    let second = i / per_second;
    if i.is_multiple_of(211) {
        metrics.record_error((i % 2) as usize, second, ErrorKind::Timeout, 30);
        return;
    }
    metrics.record_response(&ResponseRecord {
        tag: (i % 2) as usize,
        second,
        latency: Duration::from_micros(latency_us(i)),
        phases: PhaseTimings {
            connect: i.is_multiple_of(50).then(|| Duration::from_micros(90)),
            tls: i.is_multiple_of(100).then(|| Duration::from_micros(400)),
            write: Duration::from_micros(3),
            wait: Duration::from_micros(latency_us(i) - 10),
            read: Duration::from_micros(7),
        },
        status: if i.is_multiple_of(13) { 503 } else { 200 },
        bytes_sent: 40,
        bytes_received: 120,
        body_bytes: 20,
        decoded_body_bytes: 35,
        expected_interval: i.is_multiple_of(2).then(|| Duration::from_micros(900)),
    });
}

fn sample_plan() -> barrage_plan::Plan {
    use barrage_plan::*;
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        name: "sample".into(),
        target: Target::parse("http://127.0.0.1:1").unwrap(),
        options: TestOptions::default(),
        workload: Workload::open(
            Stages::from_targets(1.0, [(Duration::from_secs(10), 1.0)]),
            None,
            Duration::ZERO,
        ),
        tags: vec!["tag0".into()],
        sessions: vec![],
        data_sources: vec![],
        metrics: MetricsSpec::default(),
    }
}

fn meta(tags: usize) -> RunMeta {
    RunMeta {
        command: "run".into(),
        name: "sample".into(),
        target: "http://127.0.0.1:1".into(),
        barrage_version: "0.1.0".into(),
        plan: sample_plan(),
        script: Some("sample.js".into()),
        overrides: BTreeMap::from([("seed".to_string(), "7".to_string())]),
        seed: Some(7),
        machine: Machine::current(),
        started_at_unix_ns: 1_700_000_000_123_456_789,
        ended_at_unix_ns: 1_700_000_010_123_456_789,
        elapsed_ns: 10_000_000_000,
        interrupted: false,
        threads: 2,
        tags: (0..tags).map(|i| format!("tag{i}")).collect(),
        planned_arrivals: Some(PlannedArrivalsBits {
            expected_f64_bits: 0.1f64.to_bits(),
            seconds_f64_bits: 10.0f64.to_bits(),
        }),
        merged_from: Vec::new(),
        request_id_prefix: Some("1a2b3c4d-".into()),
        segment: None,
        segments: None,
    }
}

fn sample(requests: u64, per_second: u64) -> ResultsFile {
    let mut metrics = RunMetrics::new(2).with_checks([("ok", false)]);
    for i in 0..requests {
        record(&mut metrics, i, per_second);
    }
    metrics.record_check(0, true);
    for second in 0..5 {
        metrics.record_session_start(second);
    }
    metrics.record_session_dropped(3);
    // Requests the run's end cut off, one in a second past every response (the INTR section).
    metrics.record_interrupted(1, 40);
    metrics.record_interrupted(0, 1);
    // What closed models, the self-check, TLS and custom metrics add (the XMET section).
    metrics.connections_tls = 3;
    metrics.connections_h2 = 2;
    metrics
        .iteration_duration
        .record(Duration::from_micros(2_500));
    metrics.vus.set(0, 10, 12);
    metrics.vus.set(1, 20, 24);
    metrics.self_check.set_times(
        Duration::from_millis(700),
        Duration::from_millis(5),
        Duration::from_millis(1000),
    );
    metrics.self_check.record_lag(Duration::from_micros(1_200));
    metrics.self_check.record_tick(Duration::from_micros(300));
    metrics.custom = barrage_metrics::CustomMetrics::new([
        ("hits", barrage_metrics::CustomKind::Counter),
        ("level", barrage_metrics::CustomKind::Gauge),
        ("errors", barrage_metrics::CustomKind::Rate),
        ("ttfb", barrage_metrics::CustomKind::Trend),
    ]);
    for (index, value) in [(0, 2.5), (1, 7.0), (2, 1.0), (2, 0.0), (3, 12.25), (3, 0.5)] {
        metrics.custom.record(index, value, 1_000 + index as u64);
    }
    ResultsFile {
        meta: meta(2),
        metrics,
        thresholds: None,
        self_check: None,
        active_clients: None,
        capacity: None,
    }
}

#[test]
fn a_file_reads_back_to_the_same_bytes_and_figures() {
    let mut file = sample(20_000, 2_000);
    file.thresholds = Some(serde_json::json!([{"metric": "p95", "ok": true}]));
    file.active_clients = Some(vec![3, 50, 48, 0]);
    let bytes = file.to_bytes();
    let back = ResultsFile::from_bytes(&bytes).unwrap();
    assert_eq!(back.meta, file.meta);
    assert_eq!(back.thresholds, file.thresholds);
    assert_eq!(back.self_check, None);
    assert_eq!(back.active_clients, file.active_clients);
    assert_eq!(back.metrics.checks, file.metrics.checks);
    assert_eq!(back.metrics.sessions, file.metrics.sessions);
    assert_eq!(
        back.metrics.sessions_per_second,
        file.metrics.sessions_per_second
    );
    for (b, f) in back.metrics.tags.iter().zip(&file.metrics.tags) {
        assert_eq!(b.latency, f.latency);
        assert_eq!(b.series, f.series);
        assert_eq!(b.errors, f.errors);
        // Per tag, what the summary's `tags[]` shows: status codes, error kinds, bytes.
        assert!(f.status.get(503) > 0 && f.error_count() > 0 && f.bytes_sent > 0);
        assert_eq!(
            b.status.iter().collect::<Vec<_>>(),
            f.status.iter().collect::<Vec<_>>()
        );
        assert_eq!(
            (b.bytes_sent, b.bytes_received, b.body_bytes),
            (f.bytes_sent, f.bytes_received, f.body_bytes)
        );
        assert_eq!(b.latency_by_second.len(), f.latency_by_second.len());
        assert_eq!(b.latency_corrected, f.latency_corrected);
        assert_eq!(b.tls, f.tls);
        assert_eq!(b.decoded_body_bytes, f.decoded_body_bytes);
    }
    assert!(file.metrics.tags[0].latency_corrected.count() > 0);
    assert_eq!(back.metrics.vus.seconds, file.metrics.vus.seconds);
    assert_eq!(
        back.metrics.iteration_duration,
        file.metrics.iteration_duration
    );
    assert_eq!(back.metrics.self_check.lag, file.metrics.self_check.lag);
    assert_eq!(
        back.metrics.self_check.cpu_ns,
        file.metrics.self_check.cpu_ns
    );
    assert_eq!(back.metrics.connections_tls, 3);
    assert_eq!(back.metrics.custom.metrics.len(), 4);
    assert_eq!(
        extra_codec::encode_extra(&back.metrics),
        extra_codec::encode_extra(&file.metrics)
    );
    assert_eq!(back.to_bytes(), bytes);
}

#[test]
fn requests_cut_off_at_the_end_keep_their_second_and_old_files_still_read() {
    let file = sample(2_000, 1_000);
    let bytes = file.to_bytes();
    let back = ResultsFile::from_bytes(&bytes).unwrap();
    assert_eq!(back.metrics.tags[1].series.seconds[40].interrupted, 1);
    assert_eq!(back.metrics.tags[0].series.seconds[1].interrupted, 1);
    assert_eq!(back.metrics.series().seconds.len(), 41);
    // A file from before INTR: the same figures, no per-second interrupted counts.
    let old: Vec<_> = container::read(&bytes)
        .unwrap()
        .into_iter()
        .filter(|s| s.kind != INTERRUPTED)
        .map(|s| (s.kind, s.payload.to_vec()))
        .collect();
    let old = ResultsFile::from_bytes(&container::write(&old)).unwrap();
    assert_eq!(old.metrics.tags[1].interrupted(), 1);
    assert!(old
        .metrics
        .tags
        .iter()
        .all(|t| t.series.seconds.iter().all(|b| b.interrupted == 0)));
    assert_eq!(old.metrics.tags[1].latency, file.metrics.tags[1].latency);
}

#[test]
fn merging_two_halves_equals_the_whole_run_exactly() {
    let mut halves = [sample(0, 1000), sample(0, 1000)];
    let mut whole = sample(0, 1000);
    for i in 0..30_000u64 {
        record(&mut halves[i.is_multiple_of(3) as usize].metrics, i, 1000);
        record(&mut whole.metrics, i, 1000);
    }
    // Both halves and the whole counted one check pass and five sessions each.
    whole.metrics.merge(&sample(0, 1000).metrics);
    let parts: Vec<ResultsFile> = halves
        .iter()
        .map(|h| ResultsFile::from_bytes(&h.to_bytes()).unwrap())
        .collect();
    let merged = merge(&parts, &["a".into(), "b".into()]).unwrap();
    let merged = ResultsFile::from_bytes(&merged.to_bytes()).unwrap();
    assert_eq!(merged.meta.threads, 4);
    assert_eq!(merged.meta.merged_from, vec!["a", "b"]);
    // Both parts come from runs with the same request-id prefix here; it stays.
    assert_eq!(merged.meta.request_id_prefix.as_deref(), Some("1a2b3c4d-"));
    // Same histograms, counters and series, so the measurement sections are byte-identical.
    assert_eq!(
        metrics_codec::encode_totals(&merged.metrics),
        metrics_codec::encode_totals(&whole.metrics)
    );
    assert_eq!(
        metrics_codec::encode_series(&merged.metrics),
        metrics_codec::encode_series(&whole.metrics)
    );
    assert_eq!(
        extra_codec::encode_extra(&merged.metrics),
        extra_codec::encode_extra(&whole.metrics)
    );
    assert_eq!(merged.metrics.checks, whole.metrics.checks);
    assert_eq!(
        merged.metrics.sessions_per_second,
        whole.metrics.sessions_per_second
    );
    assert_eq!(
        merged.metrics.tags[0].latency.count(),
        whole.metrics.tags[0].latency.count()
    );
}

/// A segment that started `late_ms` after the test's origin and, from its own second 0 on,
/// got `per_second[k]` responses of `latency_us` in its second k, with `vus[k]` VUs.
fn offset_part(late_ms: u64, per_second: &[u64], latency_us: u64, vus: &[u64]) -> ResultsFile {
    let mut file = sample(0, 1);
    file.metrics = RunMetrics::new(2).with_checks([("ok", false)]);
    for (second, &n) in per_second.iter().enumerate() {
        for _ in 0..n {
            file.metrics.record_response(&ResponseRecord {
                tag: 0,
                second: second as u64,
                latency: Duration::from_micros(latency_us),
                phases: PhaseTimings::default(),
                status: 200,
                bytes_sent: 10,
                bytes_received: 20,
                body_bytes: 0,
                decoded_body_bytes: 0,
                expected_interval: None,
            });
            file.metrics.record_session_start(second as u64);
        }
    }
    for (second, &n) in vus.iter().enumerate() {
        file.metrics.vus.set(second as u64, n, n);
    }
    for tag in &mut file.metrics.tags {
        tag.latency_by_second.seal();
    }
    file.active_clients = Some(vus.to_vec());
    let origin = 1_700_000_000_000_000_000;
    file.meta.started_at_unix_ns = origin + late_ms * 1_000_000;
    file.meta.ended_at_unix_ns =
        file.meta.started_at_unix_ns + per_second.len() as u64 * 1_000_000_000;
    file.meta.elapsed_ns = per_second.len() as u64 * 1_000_000_000;
    // Through the file format, as `barrage merge` reads them.
    ResultsFile::from_bytes(&file.to_bytes()).unwrap()
}

#[test]
fn merged_seconds_are_wall_clock_seconds() {
    // b starts 1.003 s after a, c 2.6 s after (nearest whole second: 3), and a is not first.
    let a = offset_part(0, &[5, 5, 5, 5], 1_000, &[2, 2, 2, 2]);
    let b = offset_part(1_003, &[7, 7], 2_000, &[3, 3]);
    let c = offset_part(2_600, &[11], 4_000, &[4]);
    let names = ["b".to_string(), "a".into(), "c".into()];
    let merged = merge(&[b, a, c], &names).unwrap();
    let merged = ResultsFile::from_bytes(&merged.to_bytes()).unwrap();
    let tag = &merged.metrics.tags[0];
    let responses: Vec<u64> = tag.series.seconds.iter().map(|s| s.responses).collect();
    assert_eq!(responses, vec![5, 5 + 7, 5 + 7, 5 + 11]);
    assert_eq!(tag.latency.count(), 20 + 14 + 11);
    // Each wall second's latency histogram holds exactly the parts that ran in it.
    let expected = |latencies: &[(u64, u64)]| {
        let mut h = barrage_metrics::LatencyHistogram::new();
        for &(n, micros) in latencies {
            (0..n).for_each(|_| h.record_micros(micros));
        }
        h
    };
    let second = |s: u64| tag.latency_by_second.decoded(s);
    assert_eq!(second(0), expected(&[(5, 1_000)]));
    assert_eq!(second(2), expected(&[(5, 1_000), (7, 2_000)]));
    assert_eq!(second(3), expected(&[(5, 1_000), (11, 4_000)]));
    let started: Vec<u64> = merged
        .metrics
        .sessions_per_second
        .iter()
        .map(|s| s.started)
        .collect();
    assert_eq!(started, vec![5, 12, 12, 16]);
    // Gauges add up per wall second.
    let vus: Vec<u64> = merged.metrics.vus.seconds.iter().map(|s| s.vus).collect();
    assert_eq!(vus, vec![2, 5, 5, 6]);
    assert_eq!(merged.active_clients, Some(vec![2, 5, 5, 6]));
    assert_eq!(merged.meta.started_at_unix_ns, 1_700_000_000_000_000_000);
    assert_eq!(merged.meta.merged_from, names);
}

/// Segment `index` of 2 of one test, run from `local_addrs` against `target`.
fn segment_part(index: u64, local_addrs: &str, target: &str) -> ResultsFile {
    let mut part = offset_part(index, &[3], 1_000, &[1]);
    let mut plan = sample_plan();
    plan.target = barrage_plan::Target::parse(target).unwrap();
    plan.options.segment = Some(barrage_plan::Segment::equal(index, 2));
    plan.options.connections.local_addrs = vec![local_addrs.parse().unwrap()];
    part.meta.plan = plan;
    part.meta.segment = Some(SegmentRun {
        index,
        count: 2,
        start_at_unix_ns: None,
        start_offset_ns: None,
        clock_source: None,
    });
    part
}

#[test]
fn segments_from_their_own_source_addresses_are_one_test() {
    let parts = [
        segment_part(0, "127.10.0.1", "http://127.0.0.1:1"),
        segment_part(1, "127.10.1.1", "http://127.0.0.1:1"),
    ];
    let merged = merge(&parts, &["a".into(), "b".into()]).unwrap();
    assert_eq!(merged.metrics.tags[0].responses(), 6);
    let options = &merged.meta.plan.options;
    assert_eq!(options.segment, None, "{options:?}");
    assert!(options.connections.local_addrs.is_empty(), "{options:?}");
    // Another target is another test.
    let other = [
        segment_part(0, "127.10.0.1", "http://127.0.0.1:1"),
        segment_part(1, "127.10.1.1", "http://127.0.0.1:2"),
    ];
    let error = merge(&other, &["a".into(), "b".into()]).unwrap_err();
    assert!(error.to_string().contains("ran another plan"), "{error}");
}

#[test]
fn merging_runs_a_day_apart_is_refused() {
    let a = offset_part(0, &[1], 1_000, &[1]);
    let b = offset_part(86_400_000, &[1], 1_000, &[1]);
    let error = merge(&[a, b], &["a.brr".into(), "b.brr".into()]).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("b.brr ends 24 h after a.brr started"),
        "{text}"
    );
    assert!(text.contains("at most a day"), "{text}");
}

#[test]
fn merging_runs_with_other_request_id_prefixes_keeps_none() {
    let a = sample(10, 10);
    let mut b = sample(10, 10);
    b.meta.request_id_prefix = Some("99999999-".into());
    let merged = merge(&[a, b], &["a.brr".into(), "b.brr".into()]).unwrap();
    assert_eq!(merged.meta.request_id_prefix, None);
}

#[test]
fn meta_written_before_the_request_id_prefix_still_reads() {
    let mut json = serde_json::to_value(meta(2)).unwrap();
    assert!(json
        .as_object_mut()
        .unwrap()
        .remove("request_id_prefix")
        .is_some());
    let old: RunMeta = serde_json::from_value(json).unwrap();
    assert_eq!(old.request_id_prefix, None);
    assert_eq!(old.tags, meta(2).tags);
}

#[test]
fn merging_files_of_different_plans_is_refused() {
    let a = sample(10, 10);
    let mut b = sample(10, 10);
    b.meta.tags = vec!["x".into(), "y".into()];
    let error = merge(&[a, b], &["a.brr".into(), "b.brr".into()]).unwrap_err();
    assert!(error.to_string().contains("not the same plan"), "{error}");
}

#[test]
fn damaged_files_give_one_line_never_a_panic() {
    let bytes = sample(3_000, 1_000).to_bytes();
    let one_line = |e: ResultsError| {
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text}");
        text
    };
    // Every truncation.
    for len in 0..bytes.len() {
        let e = ResultsFile::from_bytes(&bytes[..len]).unwrap_err();
        let text = one_line(e);
        assert!(
            text.contains("truncated") || text.contains("not a barrage results file"),
            "{len}: {text}"
        );
    }
    // A flipped bit anywhere.
    for at in (0..bytes.len()).step_by(7) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        match ResultsFile::from_bytes(&flipped) {
            Err(e) => {
                one_line(e);
            }
            Ok(_) => panic!("a bit flipped at byte {at} was not noticed"),
        }
    }
    assert!(matches!(
        ResultsFile::from_bytes(b"PK\x03\x04 a zip file"),
        Err(ResultsError::NotResults)
    ));
    let mut newer = bytes.clone();
    newer[8] = 9;
    let e = ResultsFile::from_bytes(&newer).unwrap_err();
    assert_eq!(
        e.to_string(),
        "results format version 9 is not supported (this barrage reads version 2)"
    );
    // A file of the previous format (plan stored untyped) is refused in one line.
    let mut older = bytes.clone();
    older[8] = 1;
    let e = ResultsFile::from_bytes(&older).unwrap_err();
    assert_eq!(
        e.to_string(),
        "results format version 1 was written by an older barrage, whose plan this one cannot read; report it with that barrage, or run the test again"
    );
    // The plan comes back typed, as it was written.
    let back = ResultsFile::from_bytes(&bytes).unwrap();
    assert_eq!(back.meta.plan, sample_plan());
}

#[test]
fn size_follows_seconds_and_tags_not_requests() {
    let light = sample(60 * 100, 100).to_bytes().len();
    let heavy = sample(60 * 10_000, 10_000).to_bytes().len();
    // A hundred times the requests over the same minute: a few times the bytes at most
    // (more distinct latencies per second), far from a hundred.
    assert!(heavy < light * 6, "light {light} B, heavy {heavy} B");
    // Per tag and second, a few hundred bytes to a few kB.
    let per_tag_second = heavy / (60 * 2);
    assert!(per_tag_second < 4_000, "{per_tag_second} B per tag-second");
}

#[test]
fn latency_per_status_reads_back_when_kept_and_is_absent_otherwise() {
    let mut metrics = RunMetrics::new(2).with_checks([("ok", false)]);
    metrics.latency_by_status = true;
    for i in 0..5_000 {
        record(&mut metrics, i, 1_000);
    }
    let mut file = sample(0, 1_000);
    file.metrics = metrics;
    let back = ResultsFile::from_bytes(&file.to_bytes()).unwrap();
    assert!(back.metrics.latency_by_status);
    for (mine, theirs) in back.metrics.tags.iter().zip(&file.metrics.tags) {
        let statuses = |t: &barrage_metrics::TagMetrics| {
            t.latency_by_status
                .iter()
                .map(|(s, h)| (*s, h.recorded().collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(statuses(mine), statuses(theirs));
        assert_eq!(mine.latency_by_status.len(), 2);
    }
    let plain = sample(2_000, 1_000);
    let back = ResultsFile::from_bytes(&plain.to_bytes()).unwrap();
    assert!(!back.metrics.latency_by_status);
    assert!(back
        .metrics
        .tags
        .iter()
        .all(|t| t.latency_by_status.is_empty()));
}

#[test]
fn response_callback_verdicts_read_back_merge_exactly_and_are_absent_otherwise() {
    let verdicts = |failed, passed, unjudged| barrage_metrics::VerdictOverrides {
        failed,
        passed,
        unjudged,
    };
    let mut file = sample(10, 10);
    file.metrics.tags[1].verdicts = verdicts(3, 2, 1);
    let back = ResultsFile::from_bytes(&file.to_bytes()).unwrap();
    assert_eq!(back.metrics.tags[1].verdicts, verdicts(3, 2, 1));
    assert_eq!(back.metrics.tags[0].verdicts, verdicts(0, 0, 0));
    assert_eq!(
        back.metrics.tags[1].failed_requests(),
        file.metrics.tags[1].failed_requests()
    );
    let mut other = sample(10, 10);
    other.metrics.tags[1].verdicts = verdicts(1, 1, 4);
    let merged = merge(&[file, other], &["a.brr".into(), "b.brr".into()]).unwrap();
    assert_eq!(merged.metrics.tags[1].verdicts, verdicts(4, 3, 5));
    let plain = sample(2_000, 1_000);
    assert!(!plain.to_bytes().windows(4).any(|w| w == b"VERD"));
}
