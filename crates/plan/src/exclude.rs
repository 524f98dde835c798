//! Leaving requests out by tag: the one matching rule (a script's `exclude_tags`, `replay` and
//! `convert har --exclude-tags`) and what a plan records of what was left out.

use serde::{Deserialize, Serialize};

/// Whether `tag` is matched by an exclusion `pattern`: the same tag, or its first words
/// (`static` matches `static css` and `static image`; `GET /api` does not match
/// `GET /api/items`).
pub fn tag_matches(tag: &str, pattern: &str) -> bool {
    let pattern = pattern.trim();
    !pattern.is_empty()
        && (tag == pattern
            || tag
                .strip_prefix(pattern)
                .is_some_and(|rest| rest.starts_with(' ')))
}

/// Whether `tag` is matched by one of `patterns`.
pub fn excluded_by(tag: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| tag_matches(tag, p))
}

/// Request definitions left out when the plan was built: the tags asked for and how many
/// requests they left out (those requests are not in the sessions; this says they existed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exclusion {
    pub tags: Vec<String>,
    pub requests: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_the_tag_or_its_first_words() {
        assert!(tag_matches("asset", "asset"));
        assert!(tag_matches("static css", "static"));
        assert!(tag_matches("static css", " static css "));
        assert!(!tag_matches("static", "static css"));
        assert!(!tag_matches("statics", "static"));
        assert!(!tag_matches("GET /api/items", "GET /api"));
        assert!(!tag_matches("asset", ""));
        assert!(excluded_by("exclude", &["asset".into(), "exclude".into()]));
        assert!(!excluded_by("kept", &["asset".into()]));
    }
}
