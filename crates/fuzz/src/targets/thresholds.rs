//! The threshold expression parser (k6 syntax: `p(95)<200`, keys like
//! `http_req_duration{tag:ping}`), which scripts and JSON plans feed.

use barrage_plan::{parse_expression, parse_key, Threshold};

/// A threshold key and expression, split at the first newline.
pub fn expression(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let (key, expression) = text
        .split_once('\n')
        .unwrap_or(("http_req_duration", &text));
    let _ = parse_key(key);
    if let Ok((aggregation, _, value)) = parse_expression(expression) {
        assert!(!value.is_nan(), "{expression:?} parsed to NaN");
        let _ = aggregation.label();
    }
    let _ = Threshold::parse(key, expression);
}
