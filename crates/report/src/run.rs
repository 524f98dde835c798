//! The `barrage run` text summary: sessions, arrivals planned against achieved, a per-tag
//! latency table, status codes and errors.

use crate::summary::Summary;
use std::fmt::Write;

/// Formats microseconds for a table cell: µs below 1 ms, ms below 10 s, else seconds.
fn duration_cell(us: u64) -> String {
    match us {
        0..=999 => format!("{us}µs"),
        1_000..=9_999_999 => format!("{:.2}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

fn percentile(stats: &barrage_metrics::LatencyStats, p: f64) -> String {
    duration_cell(stats.percentile(p).unwrap_or(0))
}

/// `200: 90  503: 10`, or `(none)`.
fn status_codes(codes: &std::collections::BTreeMap<u16, u64>) -> String {
    if codes.is_empty() {
        return "(none)".into();
    }
    let codes: Vec<String> = codes.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    codes.join("  ")
}

/// Renders a scenario run's summary.
pub fn render_run(summary: &Summary) -> String {
    render_run_as(summary, false)
}

/// Renders a k6 script's run: the k6 sections in k6 v1's layout (see `k6_layout.rs`).
pub fn render_k6_run(summary: &Summary) -> String {
    render_run_as(summary, true)
}

fn render_run_as(summary: &Summary, k6_v1: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} → {}  ({:.1} s, {} worker thread{}){}",
        summary.name,
        summary.target,
        summary.total_s,
        summary.threads,
        if summary.threads == 1 { "" } else { "s" },
        if summary.interrupted {
            "  [interrupted]"
        } else {
            ""
        }
    );
    let s = &summary.sessions;
    let _ = writeln!(
        out,
        "\nsessions   started {}  completed {}  failed {}  interrupted {}  dropped {}",
        s.started, s.completed, s.failed, s.interrupted, s.dropped
    );
    if summary.vus_peak.vus_max > 0 {
        let _ = writeln!(
            out,
            "vus        peak {} running at once, {} allocated (per second in the JSON `vus`)",
            summary.vus_peak.vus, summary.vus_peak.vus_max
        );
    }
    if let Some(a) = &summary.arrivals {
        let deviation = if a.planned > 0.0 {
            (a.achieved as f64 / a.planned - 1.0) * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "arrivals   planned {:.0} ({:.1}/s)  achieved {} ({:.1}/s, {deviation:+.1}%)",
            a.planned, a.planned_per_second, a.achieved, a.achieved_per_second
        );
    }
    let _ = writeln!(
        out,
        "requests   {}  ({:.1}/s)  responses {}  errors {}  data received {} bytes",
        summary.requests,
        summary.requests as f64 / summary.total_s.max(f64::MIN_POSITIVE),
        summary.responses,
        summary.errors,
        summary.bytes_received
    );
    let _ = writeln!(
        out,
        "connections opened {}  (TLS {}, HTTP/2 {})  response bodies {} bytes, {} decoded",
        summary.connections_opened,
        summary.connections_tls,
        summary.connections_h2,
        summary.total_data_bytes,
        summary.decoded_data_bytes
    );
    if let Some(prefix) = &summary.request_id_prefix {
        let _ = writeln!(out, "request ids {prefix}*  (X-Request-Id header)");
    }
    if let Some(segments) = &summary.segments {
        let _ = writeln!(out, "{}", segments_line(segments));
    }

    if k6_v1 {
        crate::k6_layout::render_k6_v1(&summary.k6, &summary.checks, summary.total_s, &mut out);
    } else {
        crate::k6::render_thresholds(&summary.k6, &mut out);
        crate::k6::render_checks(&summary.checks, &mut out);
        crate::recorded::render(summary, &mut out);
        crate::k6::render_metrics(&summary.k6, &mut out);
    }

    let header = [
        "tag", "count", "rate/s", "min", "p50", "p90", "p95", "p99", "p99.9", "max", "errors",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for tag in &summary.tags {
        let l = &tag.latency;
        rows.push(vec![
            tag.tag.clone(),
            tag.requests.to_string(),
            format!(
                "{:.1}",
                tag.requests as f64 / summary.total_s.max(f64::MIN_POSITIVE)
            ),
            duration_cell(l.min_us),
            percentile(l, 50.0),
            percentile(l, 90.0),
            percentile(l, 95.0),
            percentile(l, 99.0),
            percentile(l, 99.9),
            duration_cell(l.max_us),
            tag.errors.to_string(),
        ]);
        if let Some(c) = &tag.latency_corrected {
            rows.push(vec![
                "  corrected".into(),
                c.count.to_string(),
                String::new(),
                duration_cell(c.min_us),
                percentile(c, 50.0),
                percentile(c, 90.0),
                percentile(c, 95.0),
                percentile(c, 99.0),
                percentile(c, 99.9),
                duration_cell(c.max_us),
                String::new(),
            ]);
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let _ = writeln!(out);
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "\nlatency is measured from each request's intended start (raw)"
    );
    if summary.latency_corrected.is_some() {
        let _ = writeln!(
            out,
            "`corrected` rows: corrected for coordinated omission, a request slower than its VU's\nmean iteration time also counts for the requests the VU could not send meanwhile"
        );
    }

    let _ = writeln!(
        out,
        "\nstatus codes  {}",
        status_codes(&summary.status_codes)
    );
    if summary.tags.len() > 1 {
        // Per tag, names aligned under the codes above when they fit.
        let width = summary
            .tags
            .iter()
            .map(|t| t.tag.chars().count())
            .max()
            .unwrap_or(0)
            .max(10);
        for tag in &summary.tags {
            let line = format!("  {:<width$}  {}", tag.tag, status_codes(&tag.status_codes));
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    let errors: Vec<String> = summary
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect();
    let _ = writeln!(
        out,
        "errors        {}",
        if errors.is_empty() {
            "(none)".into()
        } else {
            errors.join("  ")
        }
    );
    if summary.interrupted_requests > 0 {
        let per_tag = summary.interrupted_by_tag();
        let _ = writeln!(
            out,
            "interrupted   {} requests still open when the run ended, never answered{}",
            summary.interrupted_requests,
            if per_tag.is_empty() {
                String::new()
            } else {
                format!(" ({})", per_tag.join("  "))
            }
        );
    }
    summary.self_check.render(&summary.trust_reasons, &mut out);
    out
}

/// One line on a merge of segments: how many, how far apart they started, which were
/// untrustworthy.
pub fn segments_line(segments: &barrage_results::MergedSegments) -> String {
    let untrusted = if segments.untrustworthy.is_empty() {
        "all trustworthy".to_string()
    } else {
        format!("untrustworthy: {}", segments.untrustworthy.join(", "))
    };
    format!(
        "segments   {} merged, starts within {:.1} ms, {untrusted}",
        segments.count,
        segments.start_spread_ns as f64 / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{PlannedArrivals, Summary};

    #[test]
    fn an_interrupted_run_rates_its_arrivals_over_the_time_it_ran() {
        let (mut info, mut metrics) = crate::summary::tests::sample();
        metrics.sessions.started = 50;
        metrics.sessions.dropped = 0;
        info.elapsed = std::time::Duration::from_secs(1);
        info.planned_arrivals = Some(PlannedArrivals {
            expected: 100.0,
            seconds: 2.0,
        });
        let text = render_run(&Summary::new(&info, &metrics));
        assert!(
            text.contains("arrivals   planned 100 (50.0/s)  achieved 50 (50.0/s, -50.0%)"),
            "{text}"
        );
    }

    #[test]
    fn run_summary_has_sessions_arrivals_and_a_row_per_tag() {
        let (mut info, mut metrics) = crate::summary::tests::sample();
        metrics.sessions.started = 98;
        metrics.sessions.dropped = 2;
        metrics.checks.push(barrage_metrics::CheckCounts {
            name: "token present".into(),
            fatal: true,
            passed: 97,
            failed: 1,
            failed_values: Vec::new(),
        });
        info.planned_arrivals = Some(PlannedArrivals {
            expected: 100.0,
            seconds: 2.0,
        });
        let text = render_run(&Summary::new(&info, &metrics));
        assert!(text.contains("sessions   started 98"), "{text}");
        assert!(text.contains("dropped 2"), "{text}");
        assert!(
            text.contains("arrivals   planned 100 (50.0/s)  achieved 100 (50.0/s, +0.0%)"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.starts_with("GET /"))
            .expect("a row for the tag");
        assert!(row.contains("101"), "{row}");
        assert!(
            text.contains("\nstatus codes  200: 90  503: 10\nerrors "),
            "one tag: no per-tag lines\n{text}"
        );
        assert!(text.contains("timeout: 1"), "{text}");
        assert!(
            text.contains("✗ token present (assert)\n     ↳  99% — ✓ 97 / ✗ 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "connections opened 1  (TLS 0, HTTP/2 0)  response bodies 2000 bytes, 2000 decoded"
            ),
            "{text}"
        );
        assert!(text.contains("  METRICS"), "{text}");
        assert!(
            text.contains("\nrequest ids 1a2b3c4d-*  (X-Request-Id header)\n"),
            "{text}"
        );
        assert_eq!(duration_cell(999), "999µs");
        assert_eq!(duration_cell(20_500), "20.50ms");
        assert_eq!(duration_cell(12_000_000), "12.00s");
    }

    #[test]
    fn several_tags_get_a_status_code_line_each() {
        let (mut info, mut metrics) = crate::summary::tests::sample();
        info.tags.push("missing".into());
        metrics.tags.push(barrage_metrics::TagMetrics::default());
        metrics.record_response(&barrage_metrics::ResponseRecord {
            tag: 1,
            second: 0,
            latency: std::time::Duration::from_micros(800),
            expected_interval: None,
            phases: Default::default(),
            status: 404,
            bytes_sent: 40,
            bytes_received: 60,
            body_bytes: 10,
            decoded_body_bytes: 10,
        });
        let text = render_run(&Summary::new(&info, &metrics));
        assert!(
            text.contains(
                "\nstatus codes  200: 90  404: 1  503: 10\n  GET /       200: 90  503: 10\n  missing     404: 1\nerrors "
            ),
            "{text}"
        );
    }
}
