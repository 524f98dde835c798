//! How a replay's responses differ from the recording, per tag, in words, from replay's
//! comparison checks (see `barrage_plan::parse_comparison_check_name`): statuses from the
//! tag's status codes — "POST /orders: 12 % status differs: 200 recorded, 409 replayed" —,
//! content types and JSON shapes from the values the checks kept when they failed —
//! "GET /x: 40 % content type differs: application/json recorded, text/html replayed",
//! "GET /x: 40 % JSON shape differs: key `id` number recorded, string replayed".

use crate::summary::Summary;
use barrage_metrics::{CheckCounts, FailedValue};
use barrage_plan::Comparison;
use std::fmt::Write as _;

/// One line per comparison check (status, content type, JSON shape) of a tag whose replayed
/// responses differ from the recorded ones; none when the run was not a replay or every
/// response was as recorded.
pub fn differences(summary: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    for check in &summary.checks {
        let Some((tag, comparison)) = barrage_plan::parse_comparison_check_name(&check.name) else {
            continue;
        };
        let compared = check.passed + check.failed;
        if check.failed == 0 || compared == 0 {
            continue;
        }
        let share = 100.0 * check.failed as f64 / compared as f64;
        let share = if share < 1.0 {
            format!("{share:.1}")
        } else {
            format!("{share:.0}")
        };
        let said = match comparison {
            Comparison::Status(recorded) => status(summary, tag, recorded),
            Comparison::ContentType(recorded) => content_type(check, recorded),
            Comparison::JsonShape => json_shape(check),
        };
        lines.push(format!("{tag}: {share} % {said}"));
    }
    lines
}

/// `VALUE replayed`, or `A (3), B (1) replayed` for several.
fn replayed(values: &[(String, u64)]) -> String {
    match values {
        [] => "other replayed".to_string(),
        [(value, _)] => format!("{value} replayed"),
        many => {
            let list: Vec<String> = many.iter().map(|(v, n)| format!("{v} ({n})")).collect();
            format!("{} replayed", list.join(", "))
        }
    }
}

/// Adds `count` to `value` in `values`, keeping first-seen order.
fn tally(values: &mut Vec<(String, u64)>, value: String, count: u64) {
    match values.iter_mut().find(|(v, _)| *v == value) {
        Some((_, n)) => *n += count,
        None => values.push((value, count)),
    }
}

fn status(summary: &Summary, tag: &str, recorded: u16) -> String {
    let mut statuses: Vec<(String, u64)> = Vec::new();
    if let Some(t) = summary.tags.iter().find(|t| t.tag == tag) {
        statuses.extend(
            t.status_codes
                .iter()
                .filter(|(status, _)| **status != recorded)
                .map(|(status, n)| (status.to_string(), *n)),
        );
        if t.errors > 0 {
            statuses.push(("no response".to_string(), t.errors));
        }
    }
    format!(
        "status differs: {recorded} recorded, {}",
        replayed(&statuses)
    )
}

/// The media type of a `Content-Type` value, without parameters, lower case; `none` when the
/// response had none.
fn media_type(value: &str) -> String {
    let media = value.split(';').next().unwrap_or("").trim();
    if media.is_empty() {
        "none".to_string()
    } else {
        media.to_ascii_lowercase()
    }
}

fn content_type(check: &CheckCounts, recorded: &str) -> String {
    let mut types = Vec::new();
    for FailedValue { actual, count, .. } in &check.failed_values {
        tally(&mut types, media_type(actual), *count);
    }
    format!(
        "content type differs: {recorded} recorded, {}",
        replayed(&types)
    )
}

fn json_shape(check: &CheckCounts) -> String {
    let mut said: Vec<(String, u64)> = Vec::new();
    for value in &check.failed_values {
        if let Some(difference) = barrage_plan::shape_difference(&value.expected, &value.actual) {
            tally(&mut said, difference, value.count);
        }
    }
    let mut line = "JSON shape differs".to_string();
    match said.as_slice() {
        [] => {}
        [(one, _)] => {
            let _ = write!(line, ": {one}");
        }
        many => {
            let list: Vec<String> = many.iter().map(|(d, n)| format!("{d} ({n})")).collect();
            let _ = write!(line, ": {}", list.join("; "));
        }
    }
    line
}

/// The text summary's section, after the checks.
pub fn render(summary: &Summary, out: &mut String) {
    let lines = differences(summary);
    if lines.is_empty() {
        return;
    }
    out.push_str("\ncompared with the recording\n");
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
}
