//! The search as text (the step table, the knee, the verdict) and as a JSON document
//! (`docs/capacity.schema.json`).

use crate::search::{Level, Role, Search};
use std::fmt::Write;

/// The JSON document's format version.
pub const JSON_FORMAT: u32 = 2;

/// The search as JSON: `{"format": 2, "capacity": ...}` (2: the search has its `outcome`).
pub fn json(search: &Search) -> serde_json::Value {
    serde_json::json!({ "format": JSON_FORMAT, "capacity": search })
}

/// One progress line, printed as each step is judged.
pub fn level_line(search_kind: crate::LoadKind, level: &Level) -> String {
    format!(
        "step {:>10} {:<7} {:>9.1} req/s  p99 {:>9.2} ms  failed {:>6.2}%  {}{}",
        search_kind.text(level.load),
        role_text(level.role),
        level.merged.throughput,
        level.merged.p99_us as f64 / 1e3,
        level.merged.error_percent(),
        if level.met { "SLO met" } else { "SLO broken" },
        if level.generator_limit.is_some() {
            " (generator-limited)"
        } else {
            ""
        }
    )
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::Ladder => "step",
        Role::Confirm => "confirm",
        Role::Bisect => "bisect",
    }
}

fn band_text(b: &crate::Band, digits: usize, repeats: usize) -> String {
    if repeats > 1 {
        format!(
            "{:.d$}–{:.d$}–{:.d$} (±{:.1}%)",
            b.min,
            b.median,
            b.max,
            b.spread_percent / 2.0,
            d = digits
        )
    } else {
        format!("{:.d$}", b.median, d = digits)
    }
}

/// The text report: settings, the step table (bands when repeated), the knee and verdict.
pub fn text(search: &Search) -> String {
    let c = &search.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "capacity search: SLO {}; {} from {} by {} to {}; warm-up {}s + measure {}s per step; precision {}%; {} run(s) per step",
        c.slo.text,
        if c.kind == crate::LoadKind::Vus { "virtual users" } else { "arrival rate" },
        c.kind.text(c.start),
        c.growth.label(),
        c.kind.text(c.max),
        c.window.warmup_s,
        c.window.measure_s,
        c.precision * 100.0,
        c.repeat
    );
    let repeats = c.repeat as usize;
    let _ = writeln!(
        out,
        "\n  {:>12}  {:<7}  {:>24}  {:>9}  {:>9}  {:>24}  {:>9}  {:<10}  generator",
        "load",
        "why",
        if repeats > 1 {
            "req/s (min–med–max)"
        } else {
            "req/s"
        },
        "p50 ms",
        "p95 ms",
        if repeats > 1 {
            "p99 ms (min–med–max)"
        } else {
            "p99 ms"
        },
        "failed %",
        "SLO"
    );
    for (i, l) in search.levels.iter().enumerate() {
        let mark = if Some(i) == search.knee { "◆" } else { " " };
        let _ = writeln!(
            out,
            "{mark} {:>12}  {:<7}  {:>24}  {:>9.2}  {:>9.2}  {:>24}  {:>9.2}  {:<10}  {}",
            c.kind.text(l.load),
            role_text(l.role),
            band_text(&l.bands.throughput, 1, repeats),
            l.merged.p50_us as f64 / 1e3,
            l.merged.p95_us as f64 / 1e3,
            band_text(&l.bands.p99_ms, 2, repeats),
            l.merged.error_percent(),
            if l.met { "met" } else { "broken" },
            match &l.generator_limit {
                Some(_) => "LIMIT",
                None if !l.merged.generator.untrusted.is_empty() => "warned",
                None => "ok",
            }
        );
    }
    if let Some(k) = search.knee_level() {
        let _ = writeln!(
            out,
            "\nknee (◆): {} — throughput {} req/s, p50 {:.2} ms, p95 {:.2} ms, p99 {} ms, max {:.2} ms, {:.2}% failed",
            c.kind.text(k.load),
            band_text(&k.bands.throughput, 1, repeats),
            k.merged.p50_us as f64 / 1e3,
            k.merged.p95_us as f64 / 1e3,
            band_text(&k.bands.p99_ms, 2, repeats),
            k.merged.max_us as f64 / 1e3,
            k.merged.error_percent()
        );
    }
    let _ = writeln!(out, "\n{}", search.conclusion);
    if let Some(fix) = &search.fix {
        let _ = writeln!(out, "fix: {fix}");
    }
    for l in &search.levels {
        if let Some(limit) = &l.generator_limit {
            let _ = writeln!(out, "  at {}: {}", c.kind.text(l.load), limit.reason);
        }
        if l.merged.overrun_ms > 0 {
            let _ = writeln!(
                out,
                "  at {}: OVERRAN its wall-clock slot by {:.1} s",
                c.kind.text(l.load),
                l.merged.overrun_ms as f64 / 1e3
            );
        }
    }
    out
}
