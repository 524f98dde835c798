//! k6's end-of-test data for a run: the object `handleSummary(data)` receives (`root_group`
//! with checks by group path, `options`, `state`, `metrics` with `type`, `contains`,
//! `values` and `thresholds: {expr: {ok}}`), and the older `--summary-export` file (the
//! same figures, values flat on each metric, checks and groups keyed by name, thresholds
//! `{expr: failed}` as k6 writes them). Group and check ids are the md5 of their path, as
//! in k6.

use crate::k6_metrics::MetricSummary;
use crate::Summary;
use barrage_metrics::CheckCounts;
use barrage_plan::MetricKind;
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

/// Which of k6's two shapes to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum K6DataShape {
    /// `handleSummary(data)`'s argument.
    HandleSummary,
    /// The `--summary-export` file.
    SummaryExport,
}

/// The run as k6 hands it to `handleSummary` or writes it with `--summary-export`.
pub fn k6_summary_data(summary: &Summary, shape: K6DataShape) -> Value {
    let mut metrics = Map::new();
    for metric in &summary.k6.metrics {
        let key = metric.name.clone();
        metrics.insert(key.clone(), metric_value(summary, metric, &key, shape));
    }
    // Submetrics, as k6 lists them: those a threshold filters to, under the key as written.
    for threshold in &summary.k6.thresholds {
        let key = &threshold.metric;
        if metrics.contains_key(key) {
            continue;
        }
        if let Some(metric) = summary.k6.metric_of_key(key).filter(|m| m.tag.is_some()) {
            metrics.insert(key.clone(), metric_value(summary, metric, key, shape));
        }
    }
    let root_group = group_value(&summary.checks, shape);
    match shape {
        K6DataShape::HandleSummary => json!({
            "root_group": root_group,
            "options": {
                "summaryTrendStats": summary.k6.trend_stats,
                "summaryTimeUnit": "",
                "noColor": false,
            },
            "state": {
                "isStdOutTTY": false,
                "isStdErrTTY": false,
                "testRunDurationMs": summary.total_s * 1000.0,
            },
            "metrics": metrics,
        }),
        K6DataShape::SummaryExport => json!({ "root_group": root_group, "metrics": metrics }),
    }
}

fn metric_value(summary: &Summary, metric: &MetricSummary, key: &str, shape: K6DataShape) -> Value {
    let mut values = Map::new();
    for (name, value) in &metric.values {
        // Trends carry their count in barrage's summary; k6's values have none.
        if metric.kind == MetricKind::Trend && name == "count" {
            continue;
        }
        values.insert(name.clone(), json!(value));
    }
    let contains = if metric.is_time {
        "time"
    } else if metric.name.starts_with("data_") {
        "data"
    } else {
        "default"
    };
    let thresholds: Map<String, Value> = summary
        .k6
        .thresholds
        .iter()
        .filter(|t| t.metric == key)
        .map(|t| {
            let verdict = match shape {
                K6DataShape::HandleSummary => json!({ "ok": t.passed }),
                // k6's export says whether the threshold failed.
                K6DataShape::SummaryExport => json!(!t.passed),
            };
            (t.expression.clone(), verdict)
        })
        .collect();
    match shape {
        K6DataShape::HandleSummary => {
            let mut out = Map::new();
            out.insert("type".into(), json!(metric.kind.name()));
            out.insert("contains".into(), json!(contains));
            out.insert("values".into(), Value::Object(values));
            if !thresholds.is_empty() {
                out.insert("thresholds".into(), Value::Object(thresholds));
            }
            Value::Object(out)
        }
        K6DataShape::SummaryExport => {
            if metric.kind == MetricKind::Rate {
                // The export names the rate `value`.
                if let Some(rate) = values.remove("rate") {
                    values.insert("value".into(), rate);
                }
            }
            if !thresholds.is_empty() {
                values.insert("thresholds".into(), Value::Object(thresholds));
            }
            Value::Object(values)
        }
    }
}

/// A node of the group tree: checks and subgroups by path.
#[derive(Default)]
struct Group {
    name: String,
    path: String,
    checks: Vec<(String, u64, u64)>,
    groups: Vec<Group>,
}

impl Group {
    fn child(&mut self, name: &str) -> &mut Group {
        let index = match self.groups.iter().position(|g| g.name == name) {
            Some(i) => i,
            None => {
                self.groups.push(Group {
                    name: name.to_string(),
                    path: format!("{}::{name}", self.path),
                    ..Group::default()
                });
                self.groups.len() - 1
            }
        };
        &mut self.groups[index]
    }
}

fn id(path: &str) -> String {
    Md5::digest(path.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// barrage names a check in a group `group::sub::name`; k6 keeps groups as a tree.
fn group_value(checks: &[CheckCounts], shape: K6DataShape) -> Value {
    let mut root = Group::default();
    for check in checks {
        let mut parts: Vec<&str> = check.name.split("::").collect();
        let name = parts.pop().unwrap_or_default();
        let mut group = &mut root;
        for part in parts {
            group = group.child(part);
        }
        group
            .checks
            .push((name.to_string(), check.passed, check.failed));
    }
    render_group(&root, shape)
}

fn render_group(group: &Group, shape: K6DataShape) -> Value {
    let check = |(name, passes, fails): &(String, u64, u64)| {
        let path = format!("{}::{name}", group.path);
        json!({ "name": name, "path": path, "id": id(&path), "passes": passes, "fails": fails })
    };
    let (checks, groups) = match shape {
        K6DataShape::HandleSummary => (
            Value::Array(group.checks.iter().map(check).collect()),
            Value::Array(
                group
                    .groups
                    .iter()
                    .map(|g| render_group(g, shape))
                    .collect(),
            ),
        ),
        K6DataShape::SummaryExport => (
            Value::Object(
                group
                    .checks
                    .iter()
                    .map(|c| (c.0.clone(), check(c)))
                    .collect(),
            ),
            Value::Object(
                group
                    .groups
                    .iter()
                    .map(|g| (g.name.clone(), render_group(g, shape)))
                    .collect(),
            ),
        ),
    };
    json!({
        "name": group.name,
        "path": group.path,
        "id": id(&group.path),
        "groups": groups,
        "checks": checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_become_k6s_group_tree_with_md5_ids() {
        let checks = vec![
            CheckCounts {
                name: "is 200".into(),
                fatal: false,
                passed: 2,
                failed: 0,
                failed_values: Vec::new(),
            },
            CheckCounts {
                name: "g::inner".into(),
                fatal: false,
                passed: 0,
                failed: 2,
                failed_values: Vec::new(),
            },
        ];
        let tree = group_value(&checks, K6DataShape::HandleSummary);
        // The values k6 v1.8.1 gave for the same checks.
        assert_eq!(tree["id"], "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(tree["checks"][0]["path"], "::is 200");
        assert_eq!(tree["checks"][0]["id"], "b90917b286da7eb763f41c72548efc6d");
        assert_eq!(tree["groups"][0]["path"], "::g");
        assert_eq!(tree["groups"][0]["id"], "652e756c89643c3ada0b451cbd88a9d3");
        assert_eq!(tree["groups"][0]["checks"][0]["fails"], 2);
        let export = group_value(&checks, K6DataShape::SummaryExport);
        assert_eq!(export["checks"]["is 200"]["passes"], 2);
        assert_eq!(
            export["groups"]["g"]["checks"]["inner"]["path"],
            "::g::inner"
        );
    }
}
