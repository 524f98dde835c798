//! How a replay's responses differ from the recording, per tag, in words: from replay's
//! status checks (`GET /x: status 200 as recorded`) and the tag's status codes —
//! "POST /orders: 12 % status differs: 200 recorded, 409 replayed".

use crate::summary::Summary;
use std::fmt::Write as _;

/// One line per tag whose replayed statuses differ from the recorded one; none when the run
/// was not a replay or every status was as recorded.
pub fn status_differences(summary: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    for check in &summary.checks {
        let Some((tag, recorded)) = barrage_plan::parse_status_check_name(&check.name) else {
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
        let mut replayed: Vec<(String, u64)> = Vec::new();
        if let Some(t) = summary.tags.iter().find(|t| t.tag == tag) {
            replayed.extend(
                t.status_codes
                    .iter()
                    .filter(|(status, _)| **status != recorded)
                    .map(|(status, n)| (status.to_string(), *n)),
            );
            if t.errors > 0 {
                replayed.push(("no response".to_string(), t.errors));
            }
        }
        let mut line = format!("{tag}: {share} % status differs: {recorded} recorded, ");
        match replayed.as_slice() {
            [] => line.push_str("other replayed"),
            [(status, _)] => {
                let _ = write!(line, "{status} replayed");
            }
            many => {
                let list: Vec<String> = many.iter().map(|(s, n)| format!("{s} ({n})")).collect();
                let _ = write!(line, "{} replayed", list.join(", "));
            }
        }
        lines.push(line);
    }
    lines
}

/// The text summary's section, after the checks.
pub fn render(summary: &Summary, out: &mut String) {
    let lines = status_differences(summary);
    if lines.is_empty() {
        return;
    }
    out.push_str("\ncompared with the recording\n");
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
}
