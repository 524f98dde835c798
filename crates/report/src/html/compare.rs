//! The comparison page: overlaid latency percentile curves of every run (coloured by group)
//! and the per-tag delta tables with each group's min–max band.

use super::{escape, page, timeline, Axis, Chart, Line, PALETTE};
use crate::compare::{deltas, Group, Rule};
use barrage_results::ResultsFile;
use std::fmt::Write;

/// One run to draw: its group (index into the groups) and its results.
#[derive(Debug)]
pub struct ComparedRun<'a> {
    pub group: usize,
    pub label: String,
    pub results: &'a ResultsFile,
}

pub fn render_compare_html(groups: &[Group], runs: &[ComparedRun<'_>], rules: &[Rule]) -> String {
    let mut body = String::new();
    let lines: Vec<Line> = runs
        .iter()
        .map(|run| Line {
            name: format!("{} · {}", groups[run.group].label, run.label),
            color: PALETTE[run.group % PALETTE.len()],
            points: timeline::percentile_curve(&run.results.metrics.total().latency),
            dashed: run.group == 0,
        })
        .collect();
    let chart = Chart {
        title: "Latency by percentile, every run (baseline dashed)".into(),
        x_label: "percentile".into(),
        y_label: "latency (ms)".into(),
        x_axis: Axis::Percentile,
        y_axis: Axis::Log,
        lines,
    }
    .to_svg();
    let _ = write!(
        body,
        r#"<h2>Latency curves</h2><div class="card">{chart}</div>"#
    );
    if let Some((baseline, others)) = groups.split_first() {
        for group in others {
            let _ = write!(
                body,
                "<h2>{} vs {} (baseline)</h2><table><thead><tr><th>tag</th><th>metric</th><th class=\"num\">baseline mean</th><th class=\"num\">baseline min–max</th><th class=\"num\">{} mean</th><th class=\"num\">{} min–max</th><th class=\"num\">change</th><th></th></tr></thead><tbody>",
                escape(&group.label),
                escape(&baseline.label),
                escape(&group.label),
                escape(&group.label)
            );
            for d in deltas(baseline, group) {
                let broken = rules.iter().any(|r| r.broken_by(&d));
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}–{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}–{:.3}</td><td class=\"num\">{:+.1}%</td><td>{}</td></tr>",
                    escape(&d.tag),
                    d.metric,
                    d.baseline.mean,
                    d.baseline.min,
                    d.baseline.max,
                    d.candidate.mean,
                    d.candidate.min,
                    d.candidate.max,
                    d.change_pct,
                    if broken { "<strong>REGRESSION</strong>" } else { "" }
                );
            }
            body.push_str("</tbody></table>");
        }
    }
    body.push_str(r#"<p class="note">rps in requests/s, latencies in ms, errors% of requests. A band is the min–max over the group's runs.</p>"#);
    let names: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    let header = format!(
        r#"<header><div class="inner"><h1>barrage comparison</h1><p>{}</p></div></header>"#,
        escape(&names.join(" vs "))
    );
    page("barrage — comparison", &header, &body)
}
