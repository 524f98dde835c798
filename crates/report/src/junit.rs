//! JUnit XML for CI systems: every threshold rule and every check is a test case; a failed
//! threshold or a check with any failure is a `<failure>` with the observed figures.

use crate::summary::Summary;
use std::fmt::Write;

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no place for other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// One `<testcase>`: a name and, when it failed, why.
struct Case {
    name: String,
    failure: Option<String>,
}

fn suite(out: &mut String, name: &str, classname: &str, cases: &[Case], seconds: f64) {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{seconds:.3}\">",
        escape(name),
        cases.len()
    );
    for case in cases {
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\"",
            escape(&case.name),
            escape(classname)
        );
        match &case.failure {
            None => {
                let _ = writeln!(out, "/>");
            }
            Some(message) => {
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\"/>\n    </testcase>",
                    escape(message)
                );
            }
        }
    }
    let _ = writeln!(out, "  </testsuite>");
}

/// The summary's thresholds and checks as a JUnit document.
pub fn render_junit(summary: &Summary) -> String {
    let thresholds: Vec<Case> = summary
        .k6
        .thresholds
        .iter()
        .map(|t| Case {
            name: format!("{} {}", t.metric, t.expression),
            failure: (!t.passed).then(|| {
                format!(
                    "{} {} failed: observed {}",
                    t.metric,
                    t.expression,
                    t.observed.map_or("no data".into(), |v| format!("{v}"))
                )
            }),
        })
        .collect();
    let checks: Vec<Case> = summary
        .checks
        .iter()
        .map(|c| Case {
            name: c.name.clone(),
            failure: (c.failed > 0)
                .then(|| format!("{} of {} failed", c.failed, c.passed + c.failed)),
        })
        .collect();
    let total = thresholds.len() + checks.len();
    let failures = thresholds
        .iter()
        .chain(checks.iter())
        .filter(|c| c.failure.is_some())
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"barrage {}\" tests=\"{total}\" failures=\"{failures}\" time=\"{:.3}\">",
        escape(&summary.name),
        summary.total_s
    );
    suite(
        &mut out,
        "thresholds",
        "barrage.thresholds",
        &thresholds,
        summary.total_s,
    );
    suite(
        &mut out,
        "checks",
        "barrage.checks",
        &checks,
        summary.total_s,
    );
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::ThresholdResult;

    #[test]
    fn thresholds_and_checks_become_test_cases() {
        let (info, mut metrics) = crate::summary::tests::sample();
        metrics.checks = vec![barrage_metrics::CheckCounts {
            name: "status <400 & \"ok\"".into(),
            fatal: false,
            passed: 3,
            failed: 1,
            failed_values: Vec::new(),
        }];
        let mut summary = Summary::new(&info, &metrics);
        summary.k6.thresholds = vec![
            ThresholdResult {
                metric: "http_req_duration".into(),
                expression: "p(95)<200".into(),
                observed: Some(1.5),
                passed: true,
                abort_on_fail: false,
            },
            ThresholdResult {
                metric: "http_req_failed".into(),
                expression: "rate<0.01".into(),
                observed: Some(0.1),
                passed: false,
                abort_on_fail: false,
            },
        ];
        let xml = render_junit(&summary);
        assert!(xml.contains("tests=\"3\" failures=\"2\""), "{xml}");
        assert!(
            xml.contains("<testcase name=\"http_req_duration p(95)&lt;200\" classname=\"barrage.thresholds\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains(
                "<failure message=\"http_req_failed rate&lt;0.01 failed: observed 0.1\"/>"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("name=\"status &lt;400 &amp; &quot;ok&quot;\"")
                && xml.contains("1 of 4 failed"),
            "{xml}"
        );
    }
}
