//! hey's text layout: Summary, response time histogram, latency distribution, details,
//! status codes and errors — so hey users read barrage's output without relearning it.

use crate::summary::Summary;
use std::fmt::Write;

const BAR_WIDTH: u64 = 40;

fn secs(s: f64) -> String {
    format!("{s:.4} secs")
}

/// Renders `summary` in hey's layout.
pub fn render_hey(summary: &Summary) -> String {
    let mut out = String::new();
    let l = &summary.latency;
    let _ = writeln!(out, "\nSummary:");
    let _ = writeln!(out, "  Total:\t{}", secs(summary.total_s));
    let _ = writeln!(out, "  Slowest:\t{}", secs(l.max_us as f64 / 1e6));
    let _ = writeln!(out, "  Fastest:\t{}", secs(l.min_us as f64 / 1e6));
    let _ = writeln!(out, "  Average:\t{}", secs(l.mean_us / 1e6));
    let _ = writeln!(out, "  Requests/sec:\t{:.4}", summary.requests_per_second);
    let _ = writeln!(out, "  ");
    let _ = writeln!(out, "  Total data:\t{} bytes", summary.total_data_bytes);
    let _ = writeln!(
        out,
        "  Size/request:\t{} bytes",
        summary.size_per_request_bytes
    );
    if summary.interrupted {
        let _ = writeln!(
            out,
            "  (interrupted: figures cover the part of the run that was done)"
        );
    }

    if !summary.histogram.is_empty() {
        let _ = writeln!(out, "\nResponse time histogram:");
        let peak = summary
            .histogram
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(0)
            .max(1);
        for bucket in &summary.histogram {
            let bar = "■".repeat((bucket.count * BAR_WIDTH / peak) as usize);
            let _ = writeln!(out, "  {:.4} [{}]\t|{}", bucket.upper_s, bucket.count, bar);
        }
    }

    if l.count > 0 {
        let _ = writeln!(out, "\nLatency distribution:");
        for &(p, v) in &l.percentiles {
            let label = if p >= 100.0 {
                "max".to_string()
            } else {
                format!("{p}%")
            };
            let _ = writeln!(out, "  {label} in {}", secs(v as f64 / 1e6));
        }
    }

    let _ = writeln!(out, "\nDetails (average, fastest, slowest):");
    for (key, label) in [
        ("connect", "DNS+dialup"),
        ("dns", "DNS-lookup"),
        ("tls", "TLS handshake"),
        ("write", "req write"),
        ("wait", "resp wait"),
        ("read", "resp read"),
    ] {
        if key == "dns" {
            // The target's name is resolved once before the run, never per request.
            let _ = writeln!(
                out,
                "  {label}:\t{}, {}, {}",
                secs(0.0),
                secs(0.0),
                secs(0.0)
            );
            continue;
        }
        // Plain-HTTP runs have no handshakes; hey's layout stays as it was for them.
        let Some(phase) = summary
            .details
            .get(key)
            .filter(|p| key != "tls" || p.count > 0)
        else {
            continue;
        };
        // As hey: averages are per request, and a request on a reused connection spent no
        // time connecting (so the fastest is 0 when any connection was reused).
        let requests = l.count.max(phase.count);
        let (average, fastest) = if phase.count < requests {
            (phase.average_s * phase.count as f64 / requests as f64, 0.0)
        } else {
            (phase.average_s, phase.fastest_s)
        };
        let _ = writeln!(
            out,
            "  {label}:\t{}, {}, {}",
            secs(average),
            secs(fastest),
            secs(phase.slowest_s)
        );
    }

    let _ = writeln!(out, "\nStatus code distribution:");
    for (status, count) in &summary.status_codes {
        let _ = writeln!(out, "  [{status}]\t{count} responses");
    }
    if summary.interrupted_requests > 0 {
        let _ = writeln!(
            out,
            "  [interrupted]\t{} requests still open when the run ended, never answered",
            summary.interrupted_requests
        );
    }

    if !summary.errors_by_kind.is_empty() {
        let _ = writeln!(out, "\nError distribution:");
        for (kind, count) in &summary.errors_by_kind {
            let description = barrage_metrics::ErrorKind::ALL
                .iter()
                .find(|k| k.name() == kind)
                .map_or("", |k| k.description());
            let _ = writeln!(out, "  [{count}]\t{kind}: {description}");
        }
    }

    let vus = &summary.vus_peak;
    if vus.vus < vus.vus_max {
        // Clients start progressively (and an open model starts them as needed): a run
        // that never had all of them going says how many it got to.
        let _ = writeln!(
            out,
            "\nClients:\t{} of {} running at once at most",
            vus.vus, vus.vus_max
        );
    }
    if let Some(prefix) = &summary.request_id_prefix {
        let _ = writeln!(out, "\nRequest ids:\t{prefix}* (X-Request-Id header)");
    }
    summary.self_check.render(&summary.trust_reasons, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Summary;

    #[test]
    fn layout_has_every_hey_section() {
        let (info, metrics) = crate::summary::tests::sample();
        let text = render_hey(&Summary::new(&info, &metrics));
        for needle in [
            "Summary:",
            "Total:\t2.0000 secs",
            "Requests/sec:\t50.0000",
            "Total data:\t2000 bytes",
            "Size/request:\t20 bytes",
            "Response time histogram:",
            "Latency distribution:",
            "  10% in ",
            "  99.9% in ",
            "  max in ",
            // One connection for 100 requests: its 0.2 ms averages to 2 µs per request.
            "DNS+dialup:\t0.0000 secs, 0.0000 secs, 0.0002 secs",
            "req write:",
            "resp wait:",
            "resp read:",
            "[200]\t90 responses",
            "[503]\t10 responses",
            "Error distribution:",
            "[1]\ttimeout: request timed out",
            "\nRequest ids:\t1a2b3c4d-* (X-Request-Id header)\n",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
        assert_eq!(text.matches('|').count(), 11, "hey's eleven histogram rows");
        assert!(text.contains("DNS-lookup:\t0.0000 secs"), "{text}");
        assert!(!text.contains("Clients:"), "all started: {text}");
    }

    #[test]
    fn clients_that_never_started_are_counted() {
        let (info, metrics) = crate::summary::tests::sample();
        let mut summary = Summary::new(&info, &metrics);
        summary.vus_peak.vus = 5376;
        summary.vus_peak.vus_max = 1_000_000;
        let text = render_hey(&summary);
        assert!(
            text.contains("\nClients:\t5376 of 1000000 running at once at most\n"),
            "{text}"
        );
    }
}
