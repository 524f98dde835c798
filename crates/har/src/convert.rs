//! `barrage convert har`: a recording written as a DSL test case a person can read and edit —
//! one session per flow, think times from the recorded gaps, tags from method and path
//! pattern (static assets by kind), kept headers, bodies inline or in files beside the
//! script, and correlated values as extractions and `session.getVar`.

use crate::correlate::{split, FlowCorrelation, Piece};
use crate::recording::{Flow, RecordedRequest, Recording};
use barrage_plan::Extractor;
use std::fmt::Write as _;

/// Request bodies larger than this (or not UTF-8 text) go to a file beside the script.
pub const INLINE_BODY_LIMIT: usize = 2048;

#[derive(Debug, Clone, PartialEq)]
pub struct ConvertOptions {
    /// File name of the script (without directory), to name body files after it.
    pub script_stem: String,
    /// The HAR file as named on the command line, for the header comment.
    pub source: String,
    pub correlate: bool,
}

/// The converted test case: the script and the body files to write beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub script: String,
    /// (file name, bytes), relative to the script's directory.
    pub files: Vec<(String, Vec<u8>)>,
}

pub fn convert(recording: &Recording, options: &ConvertOptions) -> Converted {
    let mut out = String::new();
    let mut files = Vec::new();
    let count: usize = recording.flows.iter().map(|f| f.requests.len()).sum();
    let _ = writeln!(
        out,
        "// Converted by `barrage convert har` from {} ({count} request{} in {} flow{}).",
        options.source,
        plural(count),
        recording.flows.len(),
        plural(recording.flows.len()),
    );
    out.push_str(
        "// Each flow is a session; waits are the recorded gaps. Edit freely: the target\n\
         // (or --target), the arrival phases, and what to keep.\n",
    );
    if recording.skipped > 0 {
        let _ = writeln!(
            out,
            "// {} request{} to skipped hosts left out.",
            recording.skipped,
            plural(recording.skipped)
        );
    }
    let _ = writeln!(
        out,
        "definition.setTarget({});",
        js_string(&recording.target.to_string())
    );
    // The other origins of a recording spanning several: their requests name them by URL.
    for origin in recording.other_origins() {
        let _ = writeln!(out, "definition.addTarget({});", js_string(&origin));
    }
    out.push_str("definition.setArrivalPhases([{ duration: 10, rate: 1 }]);\n");
    out.push_str("definition.setTestOptions({ cookies: true });\n");
    if recording.requests().any(|r| r.static_kind.is_some()) {
        out.push_str(EXCLUDE_TAGS);
    }
    for flow in &recording.flows {
        let correlation = if options.correlate {
            FlowCorrelation::find(flow)
        } else {
            FlowCorrelation::none(flow)
        };
        out.push('\n');
        write_session(&mut out, &mut files, flow, &correlation, options);
    }
    Converted { script: out, files }
}

/// Written when the recording has static assets: the test option `exclude_tags` leaves
/// requests out by tag, matched as `--exclude-tags` matches ([`barrage_plan::tag_matches`]).
const EXCLUDE_TAGS: &str = "
// Requests whose tag is listed in exclude_tags, or begins with the listed words, are left
// out: [\"static\"] skips every static asset, [\"static image\"] images only.
definition.setTestOptions({ exclude_tags: [] });
";

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn write_session(
    out: &mut String,
    files: &mut Vec<(String, Vec<u8>)>,
    flow: &Flow,
    correlation: &FlowCorrelation,
    options: &ConvertOptions,
) {
    let _ = writeln!(
        out,
        "definition.session({}, function (session) {{",
        js_string(&flow.name)
    );
    for (i, request) in flow.requests.iter().enumerate() {
        if !request.think.is_zero() {
            let _ = writeln!(out, "  session.wait({});", seconds(request.think));
        }
        let subs = &correlation.substitutions[i];
        let _ = writeln!(
            out,
            "  session.{}({}, {{",
            request.method.as_str().to_ascii_lowercase(),
            path_literal(request.origin.as_ref(), &request.path, subs)
        );
        let _ = writeln!(out, "    tag: {},", js_string(&request.tag));
        write_headers(out, request, subs);
        write_body(out, files, request, subs, options);
        write_extraction(out, &correlation.extractions[i]);
        out.push_str("  });\n");
    }
    out.push_str("});\n");
}

fn seconds(d: std::time::Duration) -> String {
    // Whole milliseconds; `{}` of a float prints `1` for 1.0 and `0.058` for 0.058.
    format!("{}", d.as_millis() as f64 / 1000.0)
}

/// The path with substituted values as `:var` placeholders; a value at the very start, or
/// followed by a character that would continue the placeholder's name, stays as recorded.
pub fn path_pieces(path: &str, subs: &[(String, String)]) -> Vec<Piece> {
    // A value the path starts with (a whole recorded `Location`) can never be a placeholder;
    // leaving it out lets the shorter values inside it be substituted.
    let subs: Vec<(String, String)> = subs
        .iter()
        .filter(|(value, _)| !path.starts_with(value.as_str()))
        .cloned()
        .collect();
    let subs = subs.as_slice();
    let pieces = split(path, subs);
    let value_of = |var: &str| {
        subs.iter()
            .find(|(_, v)| v == var)
            .map(|(value, _)| value.clone())
            .unwrap_or_default()
    };
    let mut out: Vec<Piece> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let piece = match piece {
            Piece::Var(var) => {
                let continues = matches!(pieces.get(i + 1), Some(Piece::Text(next))
                    if next.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
                if i == 0 || continues {
                    Piece::Text(value_of(var))
                } else {
                    piece.clone()
                }
            }
            text => text.clone(),
        };
        match (out.last_mut(), piece) {
            (Some(Piece::Text(prev)), Piece::Text(text)) => prev.push_str(&text),
            (_, piece) => out.push(piece),
        }
    }
    out
}

/// The request's path as a JS string, with its origin before it (an absolute URL) when it
/// goes to another than the test's target.
fn path_literal(
    origin: Option<&barrage_plan::Target>,
    path: &str,
    subs: &[(String, String)],
) -> String {
    let origin = origin.map(ToString::to_string).unwrap_or_default();
    let text: String = std::iter::once(origin)
        .chain(
            path_pieces(path, subs)
                .into_iter()
                .map(|piece| match piece {
                    Piece::Text(text) => text,
                    Piece::Var(var) => format!(":{var}"),
                }),
        )
        .collect();
    js_string(&text)
}

/// A JS expression for text with substituted values: literals joined with `session.getVar`.
fn js_expression(text: &str, subs: &[(String, String)]) -> String {
    split(text, subs)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => js_string(&text),
            Piece::Var(var) => format!("session.getVar({})", js_string(&var)),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

fn write_headers(out: &mut String, request: &RecordedRequest, subs: &[(String, String)]) {
    if request.headers.is_empty() {
        return;
    }
    out.push_str("    headers: {\n");
    for (name, value) in &request.headers {
        let _ = writeln!(
            out,
            "      {}: {},",
            js_key(name),
            js_expression(value, subs)
        );
    }
    out.push_str("    },\n");
}

fn write_body(
    out: &mut String,
    files: &mut Vec<(String, Vec<u8>)>,
    request: &RecordedRequest,
    subs: &[(String, String)],
    options: &ConvertOptions,
) {
    let Some(body) = &request.body else {
        return;
    };
    match std::str::from_utf8(body) {
        Ok(text)
            if text.len() <= INLINE_BODY_LIMIT
                || split(text, subs).iter().any(|p| matches!(p, Piece::Var(_))) =>
        {
            let _ = writeln!(out, "    payload: {},", js_expression(text, subs));
        }
        _ => {
            let name = format!("{}.body-{}.bin", options.script_stem, request.entry);
            let _ = writeln!(out, "    payload_from_file: {},", js_string(&name));
            files.push((name, body.clone()));
        }
    }
}

fn write_extraction(out: &mut String, correlations: &[crate::correlate::Correlation]) {
    if correlations.is_empty() {
        return;
    }
    out.push_str("    extraction: {\n");
    for (kind, pick) in [("jsonpath", 0), ("header", 1)] {
        let of_kind: Vec<_> = correlations
            .iter()
            .filter_map(|c| match (&c.extractor, pick) {
                (Extractor::JsonPath { path }, 0) => Some((&c.var, path)),
                (Extractor::Header { name }, 1) => Some((&c.var, name)),
                _ => None,
            })
            .collect();
        if of_kind.is_empty() {
            continue;
        }
        let fields: Vec<String> = of_kind
            .iter()
            .map(|(var, source)| format!("{}: {}", js_key(var), js_string(source)))
            .collect();
        let _ = writeln!(out, "      {kind}: {{ {} }},", fields.join(", "));
    }
    out.push_str("    },\n");
}

/// A JavaScript string literal (JSON's syntax, which JavaScript reads the same).
pub fn js_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

fn js_key(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        name.to_string()
    } else {
        js_string(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_values_that_cannot_be_placeholders() {
        let subs = vec![("abc12345".to_string(), "id".to_string())];
        assert_eq!(path_literal(None, "/o/abc12345/x", &subs), "\"/o/:id/x\"");
        assert_eq!(
            path_literal(None, "/o/abc12345x", &subs),
            "\"/o/abc12345x\""
        );
        assert_eq!(
            path_pieces("abc12345/x", &subs),
            vec![Piece::Text("abc12345/x".into())]
        );
    }

    #[test]
    fn expressions_join_literals_and_variables() {
        let subs = vec![("tok3n-value".to_string(), "token".to_string())];
        assert_eq!(
            js_expression("Bearer tok3n-value", &subs),
            "\"Bearer \" + session.getVar(\"token\")"
        );
        assert_eq!(js_key("Content-Type"), "\"Content-Type\"");
        assert_eq!(js_key("Accept"), "Accept");
    }
}
