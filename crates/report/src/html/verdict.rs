//! The verdict part of the HTML report: the verdict word with its reasons (failed thresholds,
//! no response at all, an untrustworthy generator, an interrupted run), the threshold table
//! (metric, rule, observed, ✓/✗), the self-check warning, and the custom metrics.

use super::escape;
use crate::{K6Summary, Summary};
use std::fmt::Write;

/// Whether no request got a response although some were sent (exit code 1).
pub fn unanswered(summary: &Summary) -> bool {
    summary.responses == 0 && summary.requests + summary.interrupted_requests > 0
}

/// Whether the run passed, as the exit code says: no threshold failed or stopped the run, and
/// some request got a response. Failed checks are reported but, as in k6, do not fail it.
pub fn passed(summary: &Summary) -> bool {
    !(summary.k6.thresholds_failed()
        || summary.k6.aborted_by_threshold.is_some()
        || unanswered(summary))
}

/// The verdict word, its CSS class, and the reasons behind it (empty for a clean pass).
pub fn verdict(summary: &Summary) -> (&'static str, &'static str, Vec<String>) {
    let mut reasons = Vec::new();
    if unanswered(summary) {
        reasons.push(format!(
            "no request got a response ({} sent)",
            summary.requests + summary.interrupted_requests
        ));
    }
    let failed = summary.k6.thresholds.iter().filter(|t| !t.passed).count();
    if failed > 0 {
        reasons.push(format!(
            "{failed} of {} thresholds failed",
            summary.k6.thresholds.len()
        ));
    }
    if let Some(reason) = &summary.k6.aborted_by_threshold {
        reasons.push(format!("stopped early: {reason}"));
    }
    let passed = passed(summary);
    if !summary.trustworthy {
        reasons.push(format!(
            "the generator's own figures say its latency numbers cannot be trusted: {}",
            summary.trust_reasons.join("; ")
        ));
    }
    if summary.interrupted {
        reasons.push("the run was stopped before its planned end".into());
    }
    if summary.interrupted_requests > 0 {
        reasons.push(format!(
            "{} requests were still open when the run ended, never answered",
            summary.interrupted_requests
        ));
    }
    let (word, class) = if !passed {
        ("FAIL", "fail")
    } else if !summary.trustworthy {
        ("UNTRUSTWORTHY", "untrusted")
    } else if summary.interrupted {
        ("INTERRUPTED", "interrupted")
    } else {
        ("PASS", "pass")
    };
    (word, class, reasons)
}

/// The reasons as a list under the header.
pub fn reasons_list(reasons: &[String]) -> String {
    if reasons.is_empty() {
        return String::new();
    }
    let mut out = String::from(r#"<ul class="reasons">"#);
    for reason in reasons {
        let _ = write!(out, "<li>{}</li>", escape(reason));
    }
    out.push_str("</ul>");
    out
}

/// The threshold table: metric, rule, observed, ✓/✗.
pub fn thresholds(k6: &K6Summary) -> String {
    if k6.thresholds.is_empty() {
        return "<p>The plan sets no thresholds.</p>".into();
    }
    let mut out = String::from(
        "<table><thead><tr><th></th><th>metric</th><th>rule</th><th>observed</th></tr></thead><tbody>",
    );
    for t in &k6.thresholds {
        let (mark, class) = if t.passed {
            ("✓", "ok")
        } else {
            ("✗", "bad")
        };
        let _ = write!(
            out,
            r#"<tr class="{class}"><td class="mark">{mark}</td><td>{}</td><td><code>{}</code>{}</td><td>{}</td></tr>"#,
            escape(&t.metric),
            escape(&t.expression),
            if t.abort_on_fail {
                " (abortOnFail)"
            } else {
                ""
            },
            escape(&k6.observed_text(t))
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The self-check warning with its reasons; nothing when the figures can be trusted.
pub fn trust_warning(summary: &Summary) -> String {
    if summary.trustworthy {
        return String::new();
    }
    let mut out = String::from(
        r#"<div class="card warning"><strong>⚠ These latency figures cannot be trusted.</strong> The load generator measured itself and found:<ul>"#,
    );
    for reason in &summary.trust_reasons {
        let _ = write!(out, "<li>{}</li>", escape(reason));
    }
    out.push_str("</ul>Give barrage more CPU (fewer other processes, more threads) or less load, and run again.</div>");
    out
}

/// Custom metrics (`definition.metric`, `session.add`) with their values.
pub fn custom_metrics(k6: &K6Summary) -> String {
    let custom: Vec<_> = k6
        .metrics
        .iter()
        .filter(|m| !crate::k6_metrics::BUILT_IN_METRICS.contains(&m.name.as_str()))
        .collect();
    if custom.is_empty() {
        return "<p>The plan defines no custom metrics.</p>".into();
    }
    let mut out = String::from(
        "<table><thead><tr><th>metric</th><th>type</th><th>values</th></tr></thead><tbody>",
    );
    for m in custom {
        let values: Vec<String> = m
            .values
            .iter()
            .map(|(stat, v)| format!("{stat}={}", K6Summary::shown(m, stat, *v)))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&m.name),
            escape(&format!("{:?}", m.kind).to_lowercase()),
            escape(&values.join("  "))
        );
    }
    out.push_str("</tbody></table>");
    out
}
