//! The HTML report: one self-contained file (inline CSS, inline SVG drawn in Rust, a few
//! lines of inline script for the tag selector) — no network, readable on a laptop, printable.

mod charts;
mod compare;
mod tables;
mod timeline;
mod verdict;

pub use charts::{Axis, Chart, Line, PALETTE};
pub use compare::{render_compare_html, ComparedRun};

use crate::Summary;
use barrage_results::ResultsFile;
use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:0;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}
header{background:#fff;border-bottom:1px solid #dde1e7;padding:16px 24px}
header .inner{max-width:1100px;margin:0 auto}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 10px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:600;color:#fff;margin-left:8px;font-size:14px;vertical-align:middle}
.pass{background:#2e7d32}.fail{background:#c62828}.interrupted{background:#ef6c00}.untrusted{background:#ad1457}
ul.reasons{margin:8px 0 0;padding-left:20px}ul.reasons li{margin:2px 0}
.warning{border-color:#ad1457;background:#fdf0f5}
tr.bad td{background:#fdecea}td.mark{font-weight:700;width:1.5em}tr.ok td.mark{color:#2e7d32}tr.bad td.mark{color:#c62828}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:4px 16px;margin:8px 0 0}
dl.facts div{display:flex;gap:6px}dl.facts dt{color:#5b6474}dl.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 14px;margin:10px 0;break-inside:avoid}
svg.chart{width:100%;height:auto;display:block}
svg .title{font-weight:600;font-size:13px}svg .tick,svg .legend{font-size:11px;fill:#444}svg .axis{font-size:11px;fill:#5b6474}
svg .grid{stroke:#e3e6eb;stroke-width:1}svg path.line{fill:none;stroke-width:1.6}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{padding:4px 8px;border-bottom:1px solid #e6e8ec;text-align:left;vertical-align:top}
th{background:#f0f2f5}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.controls{margin:4px 0}pre{white-space:pre-wrap;font-size:12px}
.note{color:#5b6474;font-size:12px}
@media print{body{background:#fff}header,.card{border:none}.controls{display:none}[hidden]{display:block!important}main{max-width:none;padding:0 8px}}
"#;

/// Marks the page ready after the tag selector is wired: the browser test looks for it, so a
/// script error shows up as a missing marker.
pub(crate) const SCRIPT: &str = r#"(function(){
var select=document.getElementById('latency-tag');
if(select){select.addEventListener('change',function(){
document.querySelectorAll('.latency-tag').forEach(function(d){d.hidden=d.getAttribute('data-tag')!==select.value;});});}
var drawn=document.querySelectorAll('svg path.series').length;
document.body.setAttribute('data-ready','charts:'+drawn);
})();"#;

fn time_chart(title: &str, y_label: &str, lines: Vec<Line>) -> String {
    Chart {
        title: title.into(),
        x_label: "seconds since start".into(),
        y_label: y_label.into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        lines,
    }
    .to_svg()
}

fn line(name: &str, color: &'static str, points: Vec<(f64, f64)>) -> Line {
    Line {
        name: name.into(),
        color,
        points,
        dashed: false,
    }
}

/// Latency percentile lines over time.
fn latency_chart(title: &str, l: timeline::LatencyLines) -> String {
    time_chart(
        title,
        "latency (ms)",
        vec![
            line("p50", PALETTE[0], l.p50),
            line("p90", PALETTE[2], l.p90),
            line("p99", PALETTE[4], l.p99),
            line("max", PALETTE[1], l.max),
        ],
    )
}

/// Whether the run passed, as its exit code says (see [`verdict::passed`]).
pub fn passed(_results: &ResultsFile, summary: &Summary) -> bool {
    verdict::passed(summary)
}

fn header(results: &ResultsFile, summary: &Summary) -> String {
    let meta = &results.meta;
    let (word, class, reasons) = verdict::verdict(summary);
    let mut facts = vec![
        ("target", meta.target.clone()),
        ("date", barrage_results::utc_text(meta.started_at_unix_ns)),
        ("duration", format!("{:.1} s", summary.total_s)),
        ("requests", summary.requests.to_string()),
        ("rate", format!("{:.1}/s", summary.requests_per_second)),
        ("errors", summary.errors.to_string()),
        (
            "interrupted requests",
            summary.interrupted_requests.to_string(),
        ),
        (
            "p99",
            format!(
                "{:.2} ms",
                summary.latency.percentile(99.0).unwrap_or(0) as f64 / 1e3
            ),
        ),
    ];
    if let Some(a) = &summary.arrivals {
        facts.push((
            "arrivals",
            format!("{} of {:.0} planned", a.achieved, a.planned),
        ));
    }
    let mut out = format!(
        r#"<header><div class="inner"><h1>{}<span class="verdict {class}">{word}</span></h1><dl class="facts">"#,
        escape(&meta.name)
    );
    for (k, v) in facts {
        let _ = write!(out, "<div><dt>{k}</dt><dd>{}</dd></div>", escape(&v));
    }
    out.push_str("</dl>");
    out.push_str(&verdict::reasons_list(&reasons));
    out.push_str("</div></header>");
    out
}

/// Renders the report of one run.
pub fn render_html(results: &ResultsFile, summary: &Summary) -> String {
    let meta = &results.meta;
    let mut body = String::new();
    body.push_str(&verdict::trust_warning(summary));
    let _ = write!(
        body,
        r#"<h2>Thresholds</h2>{}<h2>Checks and asserts</h2>{}<h2>Custom metrics</h2>{}"#,
        verdict::thresholds(&summary.k6),
        tables::checks(summary),
        verdict::custom_metrics(&summary.k6)
    );
    let differences = crate::recorded::differences(summary);
    if !differences.is_empty() {
        body.push_str("<h2>Compared with the recording</h2><ul class=\"card\">");
        for line in &differences {
            let _ = write!(body, "<li>{}</li>", escape(line));
        }
        body.push_str("</ul>");
    }
    if let Some(s) = &results.self_check {
        let _ = write!(
            body,
            r#"<h2>Generator self-check</h2><div class="card">{}</div>"#,
            tables::json_section(s)
        );
    }

    body.push_str("<h2>Over time</h2>");
    let per_second = &summary.per_second;
    let rates = time_chart(
        "Requests and errors per second",
        "per second",
        vec![
            line(
                "requests/s",
                PALETTE[0],
                timeline::rate(per_second, |b| b.responses + b.errors),
            ),
            line(
                "errors/s",
                PALETTE[1],
                timeline::rate(per_second, |b| b.errors),
            ),
        ],
    );
    let _ = write!(body, r#"<div class="card">{rates}</div>"#);

    let (all_lines, tag_lines) = timeline::latency_lines(&results.metrics);
    body.push_str(r#"<div class="card"><div class="controls"><label>Latency of <select id="latency-tag"><option value="all">all tags</option>"#);
    for (i, name) in meta.tags.iter().enumerate() {
        let _ = write!(body, r#"<option value="{i}">{}</option>"#, escape(name));
    }
    body.push_str("</select></label></div>");
    let _ = write!(
        body,
        r#"<div class="latency-tag" data-tag="all">{}</div>"#,
        latency_chart("Latency over time, all tags", all_lines)
    );
    for ((i, name), lines) in meta.tags.iter().enumerate().zip(tag_lines) {
        let _ = write!(
            body,
            r#"<div class="latency-tag" data-tag="{i}" hidden>{}</div>"#,
            latency_chart(&format!("Latency over time, {name}"), lines)
        );
    }
    body.push_str(r#"<p class="note">Percentiles per time window come from that window's merged histograms, never from averaged percentiles; latency counts from each request's intended start.</p></div>"#);

    let in_flight = time_chart(
        "Requests in flight (average, by Little's law)",
        "requests",
        vec![line(
            "in flight",
            PALETTE[3],
            timeline::in_flight(per_second),
        )],
    );
    let _ = write!(body, r#"<div class="card">{in_flight}</div>"#);

    if let Some(active) = results.active_clients.as_ref().filter(|a| !a.is_empty()) {
        let w = timeline::window(active.len());
        let points = active
            .chunks(w)
            .enumerate()
            .map(|(i, chunk)| {
                (
                    (i * w) as f64,
                    chunk.iter().copied().max().unwrap_or(0) as f64,
                )
            })
            .collect();
        let chart = time_chart(
            "Active clients (peak of 4 samples per second)",
            "clients",
            vec![line("active clients", PALETTE[5], points)],
        );
        let _ = write!(body, r#"<div class="card">{chart}</div>"#);
    }

    if let Some(planned) = timeline::planned_arrivals(&meta.plan, per_second.len()) {
        let mut lines = vec![Line {
            dashed: true,
            ..line("planned arrivals/s", PALETTE[4], planned)
        }];
        let achieved = &results.metrics.sessions_per_second;
        if !achieved.is_empty() {
            let w = timeline::window(achieved.len());
            let points = achieved
                .chunks(w)
                .enumerate()
                .map(|(i, chunk)| {
                    let sum: u64 = chunk.iter().map(|s| s.started + s.dropped).sum();
                    ((i * w) as f64, sum as f64 / chunk.len() as f64)
                })
                .collect();
            lines.push(line("achieved arrivals/s", PALETTE[2], points));
        }
        let chart = time_chart("Arrival rate: planned and achieved", "arrivals/s", lines);
        let _ = write!(body, r#"<div class="card">{chart}</div>"#);
    }

    body.push_str("<h2>Latency distribution</h2>");
    let total = results.metrics.total();
    let histogram = charts::histogram_svg(
        "Latency histogram (log scale)",
        "latency (ms)",
        &timeline::log_bins(&total.latency, 60),
    );
    let _ = write!(body, r#"<div class="card">{histogram}</div>"#);
    let mut curves = vec![line(
        "all tags",
        PALETTE[0],
        timeline::percentile_curve(&total.latency),
    )];
    if results.metrics.tags.len() > 1 {
        for (i, tag) in results.metrics.tags.iter().enumerate() {
            curves.push(line(
                &meta.tags[i],
                PALETTE[(i + 1) % PALETTE.len()],
                timeline::percentile_curve(&tag.latency),
            ));
        }
    }
    let curve = Chart {
        title: "Latency by percentile (HdrHistogram plot)".into(),
        x_label: "percentile".into(),
        y_label: "latency (ms)".into(),
        x_axis: Axis::Percentile,
        y_axis: Axis::Log,
        lines: curves,
    }
    .to_svg();
    let _ = write!(body, r#"<div class="card">{curve}</div>"#);

    let _ = write!(
        body,
        r#"<h2>Per tag</h2>{}<h2>Status codes</h2>{}<h2>Errors</h2>{}<h2>Test configuration</h2>{}"#,
        tables::per_tag(summary),
        tables::status_codes(summary),
        tables::error_kinds(summary),
        tables::configuration(meta, summary)
    );
    page(
        &format!("barrage — {}", meta.name),
        &header(results, summary),
        &body,
    )
}

/// The page around a header and a body.
pub fn page(title: &str, header: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>{header}<main>{body}<p class=\"note\">Generated by barrage. Self-contained: no network access needed.</p></main><script>{SCRIPT}</script></body></html>\n",
        escape(title)
    )
}

#[cfg(test)]
mod tests;
