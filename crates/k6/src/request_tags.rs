//! Thresholds on a request tag, k6's `http_req_duration{name:login}` or
//! `http_reqs{my_tag:checkout}`: each such value becomes a request tag of the plan (barrage
//! keeps every `http_*` metric per request tag, exactly), and a request whose tag (its
//! `params.tags`, with k6's defaults `name` = `url` = the URL and `method`) has that value
//! is recorded under it; other requests under [`REQUEST_TAG`]. One tag key per script: a
//! request then has one value, so one request tag, and the totals stay exact.

use crate::options::REQUEST_TAG;
use crate::K6Error;

/// k6's system tags that are not a request's own (`params.tags`, `name`, `url`, `method`):
/// filters on them are refused rather than silently never matching.
const UNSUPPORTED_KEYS: &[&str] = &[
    "expected_response",
    "group",
    "scenario",
    "proto",
    "error",
    "error_code",
    "check",
    "tls_version",
    "subproto",
    "ip",
    "vu",
    "iter",
    "service",
    "rpc_type",
    "grpc",
];

/// The request tag filtered on by the thresholds, and its values (the plan's tags after
/// [`REQUEST_TAG`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestTags {
    pub key: Option<String>,
    pub values: Vec<String>,
}

impl RequestTags {
    /// The plan's request tags.
    pub fn plan_tags(&self) -> Vec<String> {
        std::iter::once(REQUEST_TAG.to_string())
            .chain(self.values.iter().cloned())
            .collect()
    }

    /// Rewrites a threshold key `metric{key:value}` into barrage's `metric{tag:value}`,
    /// recording the tag; other keys come back unchanged.
    pub fn rewrite(&mut self, file: &str, key: &str) -> Result<String, K6Error> {
        let trimmed = key.trim();
        let Some(open) = trimmed.find('{') else {
            return Ok(key.to_string());
        };
        let Some(filter) = trimmed[open + 1..].strip_suffix('}') else {
            return Ok(key.to_string());
        };
        let Some((name, value)) = filter.split_once(':') else {
            return Ok(key.to_string());
        };
        let (name, value) = (name.trim(), value.trim());
        if name == "tag" || name == "status" || filter.contains(',') {
            return Ok(key.to_string());
        }
        let problem = |text: String| K6Error::Options(format!("{file}: threshold `{key}`: {text}"));
        if UNSUPPORTED_KEYS.contains(&name) {
            return Err(problem(format!(
                "filtering on k6's `{name}` tag is not supported yet (request tags from `params.tags`, `name`, `url` and `method` are)"
            )));
        }
        match &self.key {
            Some(known) if known != name => {
                return Err(problem(format!(
                    "thresholds filter on the tags `{known}` and `{name}`; one request tag key per script is supported"
                )))
            }
            _ => self.key = Some(name.to_string()),
        }
        if value == REQUEST_TAG {
            return Err(problem(format!(
                "`{REQUEST_TAG}` names barrage's untagged requests; pick another tag value"
            )));
        }
        if !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
        }
        Ok(format!("{}{{tag:{value}}}", &trimmed[..open]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tag_key_becomes_the_plans_request_tags() {
        let mut tags = RequestTags::default();
        assert_eq!(
            tags.rewrite("s.js", "http_req_duration{name:login}")
                .unwrap(),
            "http_req_duration{tag:login}"
        );
        assert_eq!(
            tags.rewrite("s.js", "http_reqs{name: home }").unwrap(),
            "http_reqs{tag:home}"
        );
        assert_eq!(
            tags.rewrite("s.js", "http_reqs{tag:x}").unwrap(),
            "http_reqs{tag:x}"
        );
        assert_eq!(tags.rewrite("s.js", "checks").unwrap(), "checks");
        assert_eq!(tags.plan_tags(), ["k6", "login", "home"]);
        let e = tags.rewrite("s.js", "http_reqs{kind:a}").unwrap_err();
        assert!(e.to_string().contains("`name` and `kind`"), "{e}");
        let e = RequestTags::default()
            .rewrite("s.js", "http_req_duration{expected_response:true}")
            .unwrap_err();
        assert!(e.to_string().starts_with("s.js: threshold"), "{e}");
    }
}
