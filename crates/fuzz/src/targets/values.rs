//! Text that users and scripts give as values: target URLs (`Target::split_url`) and
//! durations (`parse_duration`, used by flags, scripts and plans).

use barrage_plan::{parse_duration, Target};

/// A URL: what parses has a host and a path starting with `/`, and its origin parses again
/// to itself.
pub fn url(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    if let Ok((target, path)) = Target::split_url(&text) {
        assert!(!target.host.is_empty(), "{text:?} parsed without a host");
        assert!(path.starts_with('/'), "{text:?} gave path {path:?}");
        let _ = target.authority();
    }
}

/// A duration: what parses is finite and parses the same with surrounding spaces.
pub fn duration(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    if let Ok(duration) = parse_duration(&text) {
        assert_eq!(parse_duration(&format!(" {text} ")), Ok(duration));
    }
}
