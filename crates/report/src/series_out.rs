//! Per-second outputs: the CSV time series (one row per second and tag) and the NDJSON line
//! streamed for each second while a run goes on.

use crate::summary::Summary;
use barrage_metrics::{ErrorKind, RunMetrics, SecondBucket};
use serde_json::{json, Map, Value};
use std::fmt::Write;

const CSV_HEADER: &str = "second,tag,requests,responses,errors,status_1xx,status_2xx,status_3xx,status_4xx,status_5xx,bytes_sent,bytes_received,mean_latency_ms,max_latency_ms,interrupted";

/// A CSV field, quoted when it needs to be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn mean_ms(bucket: &SecondBucket) -> f64 {
    if bucket.responses == 0 {
        0.0
    } else {
        bucket.latency_sum_us as f64 / bucket.responses as f64 / 1000.0
    }
}

/// One row per second and tag (seconds where a tag saw nothing are left out).
pub fn render_csv(summary: &Summary) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let seconds = summary
        .tags
        .iter()
        .map(|t| t.per_second.len())
        .max()
        .unwrap_or(0);
    for second in 0..seconds {
        for tag in &summary.tags {
            let Some(b) = tag.per_second.get(second) else {
                continue;
            };
            if b.is_empty() {
                continue;
            }
            let c = b.status_classes;
            let _ = writeln!(
                out,
                "{second},{},{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{}",
                csv_field(&tag.tag),
                b.responses + b.errors,
                b.responses,
                b.errors,
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                b.bytes_sent,
                b.bytes_received,
                mean_ms(b),
                b.latency_max_us as f64 / 1000.0,
                b.interrupted
            );
        }
    }
    out
}

fn bucket_json(b: &SecondBucket) -> Value {
    let errors: Map<String, Value> = ErrorKind::ALL
        .iter()
        .filter(|k| b.errors_by_kind[k.index()] > 0)
        .map(|k| (k.name().to_string(), json!(b.errors_by_kind[k.index()])))
        .collect();
    json!({
        "requests": b.responses + b.errors,
        "responses": b.responses,
        "errors": b.errors,
        "status_classes": b.status_classes,
        "errors_by_kind": errors,
        "bytes_sent": b.bytes_sent,
        "bytes_received": b.bytes_received,
        "mean_latency_ms": mean_ms(b),
        "max_latency_ms": b.latency_max_us as f64 / 1000.0,
        "interrupted": b.interrupted,
    })
}

/// The NDJSON line of `second`: all tags together, then each tag that saw a request.
pub fn ndjson_line(metrics: &RunMetrics, tags: &[String], second: usize) -> String {
    let mut total = SecondBucket::default();
    let mut per_tag = Map::new();
    for (i, tag) in metrics.tags.iter().enumerate() {
        let Some(b) = tag.series.seconds.get(second) else {
            continue;
        };
        if b.is_empty() {
            continue;
        }
        total.merge(b);
        let name = tags.get(i).map_or("?", String::as_str);
        per_tag.insert(name.to_string(), bucket_json(b));
    }
    let mut line = bucket_json(&total);
    line["second"] = json!(second);
    line["tags"] = Value::Object(per_tag);
    line.to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_a_row_per_second_and_tag() {
        let (info, metrics) = crate::summary::tests::sample();
        let csv = render_csv(&Summary::new(&info, &metrics));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 3, "{csv}");
        assert!(lines[1].starts_with("0,GET /,50,50,0,0,50,0,0,0,"), "{csv}");
        assert!(
            lines[2].starts_with("1,GET /,51,50,1,0,40,0,0,10,"),
            "{csv}"
        );
        assert_eq!(csv_field("a,b"), "\"a,b\"");
    }

    #[test]
    fn requests_cut_off_at_the_end_show_in_their_second() {
        let (info, mut metrics) = crate::summary::tests::sample();
        // A second with nothing but requests the end cut off still gets its row and line.
        metrics.record_interrupted(0, 2);
        metrics.record_interrupted(0, 2);
        let csv = render_csv(&Summary::new(&info, &metrics));
        let last = csv.lines().last().unwrap();
        assert!(last.starts_with("2,GET /,0,0,0,"), "{csv}");
        assert!(last.ends_with(",2"), "{csv}");
        let v: Value = serde_json::from_str(&ndjson_line(&metrics, &info.tags, 2)).unwrap();
        assert_eq!(v["interrupted"], 2);
        assert_eq!(v["tags"]["GET /"]["interrupted"], 2);
        assert_eq!(v["errors"], 0);
    }

    #[test]
    fn ndjson_lines_sum_the_tags_of_one_second() {
        let (info, metrics) = crate::summary::tests::sample();
        let line = ndjson_line(&metrics, &info.tags, 1);
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["second"], 1);
        assert_eq!(v["requests"], 51);
        assert_eq!(v["errors_by_kind"]["timeout"], 1);
        assert_eq!(v["tags"]["GET /"]["responses"], 50);
    }
}
