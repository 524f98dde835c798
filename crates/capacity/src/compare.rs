//! Capacity searches compared (`barrage compare` on two capacity results files): the knee's
//! load, throughput and p99, baseline against candidate, and `--fail-on` rules on them
//! (`capacity:-10%` fails when the capacity falls by more than 10 %).

use crate::search::Search;
use std::fmt::Write;

/// The figures compared: the knee's load, its median throughput and its p99 (ms).
pub const METRICS: [&str; 3] = ["capacity", "knee_rps", "knee_p99"];

/// Whether a `--fail-on` rule names a capacity figure.
pub fn is_capacity_rule(rule: &str) -> bool {
    rule.split_once(':')
        .is_some_and(|(m, _)| METRICS.iter().any(|k| k.eq_ignore_ascii_case(m.trim())))
}

/// A rule on a capacity figure: fail when it changes past `limit_pct` (sign gives the side).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub metric: &'static str,
    pub limit_pct: f64,
}

impl Rule {
    pub fn parse(rule: &str) -> Result<Rule, String> {
        let (metric, limit_pct) = barrage_report::compare::parse_rule(rule, &METRICS)?;
        Ok(Rule { metric, limit_pct })
    }
}

fn figures(search: &Search) -> [f64; 3] {
    match search.knee_level() {
        Some(k) => [
            k.load,
            k.bands.throughput.median,
            k.merged.p99_us as f64 / 1e3,
        ],
        None => [0.0, 0.0, 0.0],
    }
}

/// The comparison as text, and the rules broken (as lines).
pub fn compare(
    baseline: (&str, &Search),
    candidates: &[(&str, &Search)],
    rules: &[Rule],
) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut broken = Vec::new();
    let base = figures(baseline.1);
    let _ = writeln!(out, "capacity (the knee of each search):");
    let _ = writeln!(
        out,
        "  {:<20} {:>14} {:>12} {:>12}  verdict",
        "run", "capacity", "knee req/s", "knee p99"
    );
    let row = |out: &mut String, label: &str, s: &Search, f: [f64; 3]| {
        let _ = writeln!(
            out,
            "  {:<20} {:>14} {:>12.1} {:>10.2}ms  {:?}",
            label,
            s.config.kind.text(f[0]),
            f[1],
            f[2],
            s.verdict
        );
    };
    row(&mut out, baseline.0, baseline.1, base);
    for (label, search) in candidates {
        let f = figures(search);
        row(&mut out, label, search, f);
        for (m, metric) in METRICS.iter().enumerate() {
            let change = if base[m] == 0.0 {
                if f[m] == 0.0 {
                    0.0
                } else {
                    f64::INFINITY.copysign(f[m])
                }
            } else {
                (f[m] - base[m]) / base[m] * 100.0
            };
            let _ = writeln!(out, "    {metric}: {change:+.1}%");
            for rule in rules.iter().filter(|r| r.metric == *metric) {
                let breaks = if rule.limit_pct > 0.0 {
                    change > rule.limit_pct
                } else {
                    change < rule.limit_pct
                };
                if breaks {
                    broken.push(format!(
                        "{label}: {metric} changed {change:+.1}% (rule {metric}:{:+}%)",
                        rule.limit_pct
                    ));
                }
            }
        }
        if search.config.slo != baseline.1.config.slo {
            let _ = writeln!(
                out,
                "    warning: searched with another SLO ({} vs {})",
                search.config.slo.text, baseline.1.config.slo.text
            );
        }
    }
    (out, broken)
}
