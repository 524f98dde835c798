//! HTML tables of the report: per-tag statistics, status codes, error kinds, checks and
//! asserts, test configuration, and the optional thresholds / self-check sections.

use super::escape;
use crate::Summary;
use barrage_results::RunMeta;
use std::fmt::Write;

fn ms(us: u64) -> String {
    match us {
        0..=999 => format!("{:.3} ms", us as f64 / 1e3),
        1_000..=99_999 => format!("{:.2} ms", us as f64 / 1e3),
        _ => format!("{:.0} ms", us as f64 / 1e3),
    }
}

fn table(head: &[&str], rows: &[Vec<String>], numeric_from: usize) -> String {
    let mut out = String::from("<table><thead><tr>");
    for (i, h) in head.iter().enumerate() {
        let class = if i >= numeric_from {
            r#" class="num""#
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i >= numeric_from {
                r#" class="num""#
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

pub fn per_tag(summary: &Summary) -> String {
    let head = [
        "tag", "requests", "rate/s", "errors", "min", "p50", "p90", "p95", "p99", "p99.9", "max",
        "mean",
    ];
    let seconds = summary.total_s.max(f64::MIN_POSITIVE);
    let mut rows = Vec::new();
    let mut all = vec![(
        "all tags".to_string(),
        summary.requests,
        summary.errors,
        &summary.latency,
    )];
    all.extend(
        summary
            .tags
            .iter()
            .map(|t| (t.tag.clone(), t.requests, t.errors, &t.latency)),
    );
    for (name, requests, errors, l) in all {
        let p = |q: f64| ms(l.percentile(q).unwrap_or(0));
        rows.push(vec![
            name,
            requests.to_string(),
            format!("{:.1}", requests as f64 / seconds),
            errors.to_string(),
            ms(l.min_us),
            p(50.0),
            p(90.0),
            p(95.0),
            p(99.0),
            p(99.9),
            ms(l.max_us),
            format!("{:.3} ms", l.mean_us / 1e3),
        ]);
    }
    table(&head, &rows, 1)
}

/// Status codes with their share; with several tags, a column of responses per tag too.
pub fn status_codes(summary: &Summary) -> String {
    if summary.status_codes.is_empty() {
        return "<p>No responses.</p>".into();
    }
    let total: u64 = summary.status_codes.values().sum();
    let per_tag = if summary.tags.len() > 1 {
        summary.tags.as_slice()
    } else {
        &[]
    };
    let rows: Vec<Vec<String>> = summary
        .status_codes
        .iter()
        .map(|(code, n)| {
            let mut row = vec![
                code.to_string(),
                n.to_string(),
                format!("{:.2}%", *n as f64 * 100.0 / total as f64),
            ];
            row.extend(
                per_tag
                    .iter()
                    .map(|t| t.status_codes.get(code).copied().unwrap_or(0).to_string()),
            );
            row
        })
        .collect();
    let mut head = vec!["status", "responses", "share"];
    head.extend(per_tag.iter().map(|t| t.tag.as_str()));
    table(&head, &rows, 1)
}

/// Error kinds, and the requests still open when the run ended (per tag when several).
pub fn error_kinds(summary: &Summary) -> String {
    if summary.errors_by_kind.is_empty() && summary.interrupted_requests == 0 {
        return "<p>No errors.</p>".into();
    }
    let mut rows: Vec<Vec<String>> = summary
        .errors_by_kind
        .iter()
        .map(|(kind, n)| {
            let description = barrage_metrics::ErrorKind::ALL
                .iter()
                .find(|k| k.name() == kind)
                .map_or("", |k| k.description());
            vec![kind.clone(), description.to_string(), n.to_string()]
        })
        .collect();
    if summary.interrupted_requests > 0 {
        let per_tag = summary.interrupted_by_tag();
        let mut meaning = "still open when the run ended, never answered".to_string();
        if !per_tag.is_empty() {
            meaning += &format!(" ({})", per_tag.join(", "));
        }
        rows.push(vec![
            "interrupted".into(),
            meaning,
            summary.interrupted_requests.to_string(),
        ]);
    }
    table(&["kind", "meaning", "count"], &rows, 2)
}

pub fn checks(summary: &Summary) -> String {
    if summary.checks.is_empty() {
        return "<p>The plan has no checks or asserts.</p>".into();
    }
    let rows: Vec<Vec<String>> = summary
        .checks
        .iter()
        .map(|c| {
            vec![
                if c.failed == 0 { "✓" } else { "✗" }.to_string(),
                if c.fatal { "assert" } else { "check" }.to_string(),
                c.name.clone(),
                c.passed.to_string(),
                c.failed.to_string(),
            ]
        })
        .collect();
    table(&["", "kind", "name", "passed", "failed"], &rows, 3)
}

pub fn configuration(meta: &RunMeta, summary: &Summary) -> String {
    let mut rows = vec![
        vec!["test".to_string(), meta.name.clone()],
        vec!["command".into(), meta.command.clone()],
        vec!["target".into(), meta.target.clone()],
    ];
    if let Some(script) = &meta.script {
        rows.push(vec!["definition".into(), script.clone()]);
    }
    let plan = serde_json::to_value(&meta.plan).unwrap_or_default();
    for part in ["workload", "options"] {
        if let Some(value) = plan.get(part) {
            flatten(part, value, &mut rows);
        }
    }
    for (flag, value) in &meta.overrides {
        rows.push(vec![format!("--{flag}"), value.clone()]);
    }
    rows.push(vec![
        "seed".into(),
        meta.seed.map_or("random".into(), |s| s.to_string()),
    ]);
    rows.push(vec!["worker threads".into(), meta.threads.to_string()]);
    if let Some(prefix) = &meta.request_id_prefix {
        rows.push(vec!["X-Request-Id".into(), format!("{prefix}*")]);
    }
    if let Some(segments) = &summary.segments {
        rows.push(vec![
            "segments".into(),
            crate::run::segments_line(segments)
                .trim_start_matches("segments")
                .trim()
                .to_string(),
        ]);
    }
    if let Some(segment) = &meta.segment {
        rows.push(vec![
            "segment".into(),
            format!(
                "{}/{}{}",
                segment.index,
                segment.count,
                segment.start_offset_ns.map_or(String::new(), |ns| format!(
                    ", started {:+.1} ms from --start-at",
                    ns as f64 / 1e6
                ))
            ),
        ]);
    }
    rows.push(vec![
        "sessions".into(),
        format!(
            "started {}, completed {}, failed {}, interrupted {}, dropped {}",
            summary.sessions.started,
            summary.sessions.completed,
            summary.sessions.failed,
            summary.sessions.interrupted,
            summary.sessions.dropped
        ),
    ]);
    rows.push(vec![
        "connections opened".into(),
        summary.connections_opened.to_string(),
    ]);
    let m = &meta.machine;
    rows.push(vec![
        "machine".into(),
        format!("{} ({} CPUs, {} {})", m.hostname, m.cpus, m.os, m.kernel),
    ]);
    rows.push(vec!["barrage".into(), meta.barrage_version.clone()]);
    if !meta.merged_from.is_empty() {
        rows.push(vec!["merged from".into(), meta.merged_from.join(", ")]);
    }
    table(&["setting", "value"], &rows, 2)
}

/// A JSON section the report does not model (thresholds, self-check): a list of objects as a
/// table of their keys, anything else as formatted text.
/// A JSON value as readable rows: one `a.b.c` → plain value per leaf (lists of plain values
/// joined by commas, lists of objects numbered), empty parts left out.
fn flatten(key: &str, value: &serde_json::Value, rows: &mut Vec<Vec<String>>) {
    use serde_json::Value;
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&format!("{key}.{k}"), v, rows);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&format!("{key}[{}]", i + 1), item, rows);
            }
        }
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) => {
            let text: Vec<String> = items.iter().map(plain).collect();
            rows.push(vec![key.to_string(), text.join(", ")]);
        }
        other => rows.push(vec![key.to_string(), plain(other)]),
    }
}

/// A plain JSON value without quotes.
fn plain(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn json_section(value: &serde_json::Value) -> String {
    if let Some(items) = value.as_array().filter(|a| a.iter().all(|v| v.is_object())) {
        let mut keys: Vec<String> = Vec::new();
        for item in items {
            for key in item.as_object().into_iter().flat_map(|o| o.keys()) {
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|item| {
                keys.iter()
                    .map(|k| match &item[k] {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Null => String::new(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .collect();
        let head: Vec<&str> = keys.iter().map(String::as_str).collect();
        return table(&head, &rows, usize::MAX);
    }
    format!(
        "<pre>{}</pre>",
        escape(&serde_json::to_string_pretty(value).unwrap_or_default())
    )
}
