//! The capacity search's HTML page: the verdict, the throughput–latency curve (the "hockey
//! stick": each step's p50/p95/p99 against its load, the SLO's limit and the knee), achieved
//! against offered load, and the step table with each step's percentiles and bands. Drawn with
//! the report's inline SVG charts: self-contained, no script or network needed.

use crate::search::{Level, Search, Verdict};
use barrage_report::{escape, page, Axis, Chart, Line, PALETTE};
use std::fmt::Write;

fn sorted_levels(search: &Search) -> Vec<&Level> {
    let mut levels: Vec<&Level> = search.levels.iter().collect();
    levels.sort_by(|a, b| a.load.total_cmp(&b.load));
    // One point per load: a repeated load (a confirmation) shows its last judgement.
    levels.dedup_by(|later, earlier| {
        if later.load == earlier.load {
            std::mem::swap(later, earlier);
            true
        } else {
            false
        }
    });
    levels
}

/// The curve: latency percentiles (log scale) against the load.
pub fn curve_svg(search: &Search) -> String {
    let levels = sorted_levels(search);
    let unit = search.config.kind.unit().trim();
    let ms = |us: u64| (us.max(1) as f64) / 1e3;
    let percentile_line = |name: &str, color, pick: fn(&Level) -> u64| Line {
        name: name.to_string(),
        color,
        points: levels.iter().map(|l| (l.load, ms(pick(l)))).collect(),
        dashed: false,
    };
    let mut lines = vec![
        percentile_line("p50", PALETTE[2], |l| l.merged.p50_us),
        percentile_line("p95", PALETTE[0], |l| l.merged.p95_us),
        percentile_line("p99", PALETTE[1], |l| l.merged.p99_us),
    ];
    let (low, high) = (
        levels.first().map_or(0.0, |l| l.load),
        levels.last().map_or(1.0, |l| l.load),
    );
    if let Some(limit) = search.config.slo.latency_limit_us() {
        lines.push(Line {
            name: format!("SLO {}", crate::slo::ms_text(limit)),
            color: PALETTE[3],
            points: vec![(low, limit / 1e3), (high, limit / 1e3)],
            dashed: true,
        });
    }
    if let Some(knee) = search.knee_level() {
        let (y0, y1) = levels
            .iter()
            .flat_map(|l| [ms(l.merged.p50_us), ms(l.merged.p99_us)])
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        lines.push(Line {
            name: "knee".into(),
            color: PALETTE[4],
            points: vec![(knee.load, y0), (knee.load, y1)],
            dashed: true,
        });
    }
    Chart {
        title: "Latency against load".into(),
        x_label: format!("load ({unit})"),
        y_label: "latency (ms, log)".into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Log,
        lines,
    }
    .to_svg()
}

/// Throughput achieved against the load offered: where it stops growing, the target saturates.
pub fn throughput_svg(search: &Search) -> String {
    let levels = sorted_levels(search);
    let unit = search.config.kind.unit().trim();
    let band = |pick: fn(&crate::Band) -> f64, name: &str, color, dashed| Line {
        name: name.to_string(),
        color,
        points: levels
            .iter()
            .map(|l| (l.load, pick(&l.bands.throughput)))
            .collect(),
        dashed,
    };
    let mut lines = vec![band(|b| b.median, "req/s (median)", PALETTE[0], false)];
    if search.config.repeat > 1 {
        lines.push(band(|b| b.min, "min", PALETTE[5], true));
        lines.push(band(|b| b.max, "max", PALETTE[5], true));
    }
    Chart {
        title: "Throughput against load".into(),
        x_label: format!("load ({unit})"),
        y_label: "responses per second".into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        lines,
    }
    .to_svg()
}

/// The whole page.
pub fn page_html(search: &Search, target: &str) -> String {
    let (word, class) = match search.verdict {
        Verdict::TargetCapacity => ("CAPACITY FOUND", "pass"),
        Verdict::HeldToMax => ("SLO HELD TO MAX", "pass"),
        Verdict::GeneratorBound => ("GENERATOR-BOUND", "fail"),
        Verdict::BrokenAtStart => ("SLO BROKEN AT START", "fail"),
    };
    let c = &search.config;
    let mut header = format!(
        r#"<header><div class="inner"><h1>capacity search<span class="verdict {class}">{word}</span></h1><dl class="facts">"#
    );
    let knee = search
        .knee_level()
        .map_or("none".to_string(), |k| c.kind.text(k.load));
    for (k, v) in [
        ("target", target.to_string()),
        ("SLO", c.slo.text.clone()),
        ("knee", knee),
        ("steps run", search.levels.len().to_string()),
        ("runs per step", c.repeat.to_string()),
        (
            "window",
            format!(
                "{}s warm-up + {}s measured",
                c.window.warmup_s, c.window.measure_s
            ),
        ),
    ] {
        let _ = write!(header, "<div><dt>{k}</dt><dd>{}</dd></div>", escape(&v));
    }
    let _ = write!(
        header,
        "</dl><ul class=\"reasons\"><li>{}</li>{}</ul></div></header>",
        escape(&search.conclusion),
        search
            .fix
            .as_ref()
            .map_or(String::new(), |f| format!("<li>fix: {}</li>", escape(f)))
    );
    let mut body = String::new();
    let _ = write!(
        body,
        "<section><h2>Throughput–latency curve</h2>{}{}</section>",
        curve_svg(search),
        throughput_svg(search)
    );
    body.push_str("<section><h2>Steps</h2><table><thead><tr>");
    for h in [
        "#",
        "load",
        "why",
        "req/s",
        "p50 ms",
        "p90 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "failed %",
        "spread %",
        "SLO",
        "generator",
    ] {
        let _ = write!(body, "<th>{h}</th>");
    }
    body.push_str("</tr></thead><tbody>");
    for (i, l) in search.levels.iter().enumerate() {
        let repeats = l.runs.len();
        let req = if repeats > 1 {
            format!(
                "{:.1} ({:.1}–{:.1})",
                l.bands.throughput.median, l.bands.throughput.min, l.bands.throughput.max
            )
        } else {
            format!("{:.1}", l.merged.throughput)
        };
        let m = &l.merged;
        let _ = write!(
            body,
            "<tr{}><td>{}</td><td>{}</td><td>{:?}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.1}</td><td>{}</td><td>{}</td></tr>",
            if Some(i) == search.knee { " class=\"knee\" style=\"font-weight:bold\"" } else { "" },
            i + 1,
            escape(&c.kind.text(l.load)),
            l.role,
            req,
            m.p50_us as f64 / 1e3,
            m.p90_us as f64 / 1e3,
            m.p95_us as f64 / 1e3,
            m.p99_us as f64 / 1e3,
            m.max_us as f64 / 1e3,
            m.error_percent(),
            l.bands.throughput.spread_percent,
            if l.met { "met".to_string() } else { escape(&l.breaches.join("; ")) },
            l.generator_limit
                .as_ref()
                .map_or("ok".to_string(), |g| escape(&g.reason))
        );
    }
    body.push_str("</tbody></table></section>");
    page("barrage capacity search", &header, &body)
}
