//! Automatic correlation: a value a recorded response returned (a JSON field, a relative
//! `Location`) that later requests of the same flow send back is extracted from the live
//! response and substituted into those requests, so each client sends its own (what
//! Speedscale calls smart_replace). Decided once, from the recording; applied per client by
//! the engine's extractions and session variables.

use crate::recording::{Flow, RecordedRequest};
use barrage_plan::Extractor;

/// Strings shorter than this are too likely to occur by chance (`"ok"`, `"admin"`).
const MIN_STRING: usize = 8;
/// Numeric ids shorter than this are too likely to occur by chance.
const MIN_NUMBER_DIGITS: usize = 3;

/// A value to extract from one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Correlation {
    pub var: String,
    pub extractor: Extractor,
    /// The value as recorded.
    pub recorded: String,
}

/// What correlation does to one flow: per request, the extractions to run on its response
/// and the recorded values in it to replace by variables (longest first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowCorrelation {
    pub extractions: Vec<Vec<Correlation>>,
    pub substitutions: Vec<Vec<(String, String)>>,
}

impl FlowCorrelation {
    /// No correlation: every request as recorded.
    pub fn none(flow: &Flow) -> FlowCorrelation {
        FlowCorrelation {
            extractions: vec![Vec::new(); flow.requests.len()],
            substitutions: vec![Vec::new(); flow.requests.len()],
        }
    }

    /// Finds the correlations of `flow`.
    pub fn find(flow: &Flow) -> FlowCorrelation {
        let mut result = FlowCorrelation::none(flow);
        let texts: Vec<String> = flow.requests.iter().map(request_text).collect();
        // value → variable, the latest response that returned the value winning.
        let mut live: Vec<(String, String)> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (i, request) in flow.requests.iter().enumerate() {
            let mut subs: Vec<(String, String)> = live
                .iter()
                .filter(|(value, _)| texts[i].contains(value.as_str()))
                .cloned()
                .collect();
            subs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
            result.substitutions[i] = subs;
            for (value, name, extractor) in candidates(request) {
                let sent_before = texts[..=i].iter().any(|t| t.contains(value.as_str()));
                let used_later = flow.requests[i + 1..]
                    .iter()
                    .zip(&texts[i + 1..])
                    .any(|(r, t)| substitutable(&value, r, t));
                if sent_before || !used_later {
                    continue;
                }
                if result.extractions[i].iter().any(|c| c.recorded == value) {
                    continue;
                }
                let var = unique_name(&name, &mut names);
                result.extractions[i].push(Correlation {
                    var: var.clone(),
                    extractor,
                    recorded: value.clone(),
                });
                live.retain(|(v, _)| *v != value);
                live.push((value, var));
            }
        }
        result
    }
}

/// Whether `value` occurs in `text` (of `request`) where a variable can take its place: not
/// as the start of the path, which a placeholder cannot be.
fn substitutable(value: &str, request: &RecordedRequest, text: &str) -> bool {
    match request.path.strip_prefix(value) {
        Some(_) => text[value.len()..].contains(value),
        None => text.contains(value),
    }
}

/// Everything of a request a recorded value can occur in.
fn request_text(request: &RecordedRequest) -> String {
    let mut text = request.path.clone();
    for (name, value) in &request.headers {
        text.push('\n');
        text.push_str(name);
        text.push_str(": ");
        text.push_str(value);
    }
    if let Some(body) = &request.body {
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(body));
    }
    text
}

/// Values of a response that could be handed back: JSON leaves and a relative `Location`.
fn candidates(request: &RecordedRequest) -> Vec<(String, String, Extractor)> {
    let mut found = Vec::new();
    let response = &request.response;
    let is_json =
        response.content_type == "application/json" || response.content_type.ends_with("+json");
    if let (true, Some(body)) = (is_json, &response.body) {
        if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
            walk(&json, "$", "", "", &mut found);
        }
    }
    if let Some(location) = &response.location {
        // Only a relative location says the same thing once the host is mapped; it is
        // substituted where it appears after the start of a path (a query, a header, a body).
        if location.starts_with('/') && location.len() >= MIN_STRING {
            found.push((
                location.clone(),
                "location".to_string(),
                Extractor::Header {
                    name: "Location".to_string(),
                },
            ));
        }
    }
    found
}

/// Collects the leaves of `json` worth correlating; `key` is the member holding this value,
/// `parent` the one holding that (a bare `id` is named after its object: `user_id`).
fn walk(
    json: &serde_json::Value,
    path: &str,
    key: &str,
    parent: &str,
    found: &mut Vec<(String, String, Extractor)>,
) {
    let name = || {
        if key.eq_ignore_ascii_case("id") && !parent.is_empty() {
            var_name(&format!("{parent}_{key}"))
        } else {
            var_name(key)
        }
    };
    match json {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                walk(v, &format!("{path}{}", member(k)), k, key, found);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}[{i}]"), key, parent, found);
            }
        }
        serde_json::Value::String(s) if s.len() >= MIN_STRING && !s.contains(['\n', '\r']) => {
            found.push((s.clone(), name(), json_path(path)));
        }
        serde_json::Value::Number(n) if n.is_u64() => {
            let text = n.to_string();
            let id_key = key.to_ascii_lowercase().ends_with("id");
            if id_key && text.len() >= MIN_NUMBER_DIGITS {
                found.push((text, name(), json_path(path)));
            }
        }
        _ => {}
    }
}

fn json_path(path: &str) -> Extractor {
    Extractor::JsonPath {
        path: path.to_string(),
    }
}

/// A JSONPath member selector: `.name` when the key is a plain name, else `['key']`.
fn member(key: &str) -> String {
    let plain = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{key}")
    } else {
        format!("['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// A session variable name from a JSON key: letters, digits and `_`, starting with a letter.
fn var_name(key: &str) -> String {
    let mut name: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert_str(0, "value_");
    }
    name
}

fn unique_name(base: &str, taken: &mut Vec<String>) -> String {
    let name = std::iter::once(base.to_string())
        .chain((2..).map(|n| format!("{base}_{n}")))
        .find(|n| !taken.contains(n))
        .expect("an unused name exists");
    taken.push(name.clone());
    name
}

/// A piece of a request text after substitution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Var(String),
}

/// Splits `text` at every occurrence of a substituted value (longest values first, as
/// `substitutions` is ordered).
pub fn split(text: &str, substitutions: &[(String, String)]) -> Vec<Piece> {
    let mut pieces = vec![Piece::Text(text.to_string())];
    for (value, var) in substitutions {
        pieces = pieces
            .into_iter()
            .flat_map(|piece| match piece {
                Piece::Text(text) => {
                    let mut out = Vec::new();
                    let mut rest = text.as_str();
                    while let Some(at) = rest.find(value.as_str()) {
                        if at > 0 {
                            out.push(Piece::Text(rest[..at].to_string()));
                        }
                        out.push(Piece::Var(var.clone()));
                        rest = &rest[at + value.len()..];
                    }
                    if !rest.is_empty() {
                        out.push(Piece::Text(rest.to_string()));
                    }
                    out
                }
                var => vec![var],
            })
            .collect();
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_replaces_every_occurrence() {
        let subs = vec![("abc123xyz".to_string(), "token".to_string())];
        assert_eq!(
            split("/p?t=abc123xyz&u=abc123xyz", &subs),
            vec![
                Piece::Text("/p?t=".into()),
                Piece::Var("token".into()),
                Piece::Text("&u=".into()),
                Piece::Var("token".into()),
            ]
        );
        assert_eq!(split("none", &subs), vec![Piece::Text("none".into())]);
    }

    #[test]
    fn json_members_and_names() {
        assert_eq!(member("access_token"), ".access_token");
        assert_eq!(member("x-id"), "['x-id']");
        assert_eq!(var_name("x-id"), "x_id");
        assert_eq!(var_name("1st"), "value_1st");
        let mut taken = vec![];
        assert_eq!(unique_name("id", &mut taken), "id");
        assert_eq!(unique_name("id", &mut taken), "id_2");
    }
}
